"""The machine report behind notebook 00."""

import pytest
import torch

from course_utils.hardware import NoGPUError, require_gpu
from course_utils.device_report import library_versions
from course_utils.machine import captured_output, deepspeed_ops, describe_device, matmul_tflops


def test_describe_device_matches_torch():
    info = describe_device()
    assert info["device"] == (
        "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    )
    assert info["cpu_cores"] >= 1 and info["ram_gib"] > 0
    if info["device"] == "cpu":
        assert info["gpu_count"] == 0 and info["bf16_supported"] is False


def test_require_gpu_stops_with_advice_on_a_cpu():
    with pytest.raises(NoGPUError, match="smoke"):
        require_gpu({"device": "cpu"})
    require_gpu({"device": "cuda"})  # no error


def test_library_versions_are_the_installed_ones():
    versions = library_versions(("torch", "surely-not-a-package"))
    # A CUDA wheel's torch.__version__ carries a local suffix ("2.11.0+cu130") that its metadata does not.
    assert versions["surely-not-a-package"] == "not installed"
    assert versions["torch"].split("+")[0] == torch.__version__.split("+")[0]


def test_matmul_throughput_is_the_products_flops_over_the_measured_time(monkeypatch):
    import time

    clock = iter([10.0, 10.5])  # the timed loop: start, and the end of its one round of 10 products
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    # 10 products of 128 x 128 by 128 x 128, 2 * 128^3 FLOPs each, in 0.5 s
    assert matmul_tflops("cpu", "float32", size=128, min_seconds=0.5) == 10 * 2 * 128**3 / 0.5 / 1e12


def test_deepspeed_reports_its_cpu_ops_and_names_the_libraries_the_probe_missed():
    ops, missing = deepspeed_ops()
    assert "cpu_adam" in ops and all(isinstance(v, bool) for v in ops.values())
    assert all(isinstance(name, str) and name.isidentifier() for name in missing)
    if not ops.get("async_io", True):  # no libaio on this machine: the probe's linker error becomes its name
        assert "aio" in missing


def test_captured_output_takes_what_a_child_process_writes_to_the_file_descriptors(capfd):
    import subprocess
    import sys

    caught = []
    with captured_output(caught):
        subprocess.run([sys.executable, "-c", "import sys; print('to stdout'); print('to stderr', file=sys.stderr)"])
    assert "to stdout" in caught[0] and "to stderr" in caught[0]
    assert "to std" not in "".join(capfd.readouterr())  # nothing reached the real descriptors


def test_the_gpu_count_is_the_nodes_though_this_process_sees_one(monkeypatch):
    # An 8-GPU node on which the notebook's set-up has kept one GPU (CUDA_VISIBLE_DEVICES=0): nvidia-smi still lists 8.
    import subprocess

    import course_utils.machine as machine

    listing = "".join(f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i})\n" for i in range(8))
    monkeypatch.setattr(machine.shutil, "which", lambda name: "/usr/bin/nvidia-smi" if name == "nvidia-smi" else None)
    monkeypatch.setattr(machine.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, listing, ""))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert machine.gpus_on_node() == 8 and describe_device()["gpu_count"] == 8
    monkeypatch.setattr(machine.shutil, "which", lambda name: None)
    assert machine.gpus_on_node() == 0  # no nvidia-smi: no NVIDIA GPU to count
