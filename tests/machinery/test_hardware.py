"""The machine report behind notebook 00."""

import sys
import time

import pytest
import torch

from course_utils.from_notebooks.device_report import library_versions
from course_utils.machinery.configs import InputError
from course_utils.machinery.hardware import NoGPUError, require_gpu, resolve_precision, tf32, training_device
from course_utils.machinery.machine import captured_output, deepspeed_ops, describe_device, matmul_tflops


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

    caught = []
    with captured_output(caught):
        subprocess.run([sys.executable, "-c", "import sys; print('to stdout'); print('to stderr', file=sys.stderr)"])
    assert "to stdout" in caught[0] and "to stderr" in caught[0]
    assert "to std" not in "".join(capfd.readouterr())  # nothing reached the real descriptors


def test_the_gpu_count_is_the_nodes_though_this_process_sees_one(monkeypatch):
    # An 8-GPU node on which the notebook's set-up has kept one GPU (CUDA_VISIBLE_DEVICES=0): nvidia-smi still lists 8.
    import subprocess

    import course_utils.machinery.machine as machine

    listing = "".join(f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i})\n" for i in range(8))
    monkeypatch.setattr(machine.shutil, "which", lambda name: "/usr/bin/nvidia-smi" if name == "nvidia-smi" else None)
    monkeypatch.setattr(machine.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, listing, ""))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert machine.gpus_on_node() == 8 and describe_device()["gpu_count"] == 8
    monkeypatch.setattr(machine.shutil, "which", lambda name: None)
    assert machine.gpus_on_node() == 0  # no nvidia-smi: no NVIDIA GPU to count


def test_tf32_is_on_inside_the_block_and_as_it_was_after():
    torch.backends.cuda.matmul.allow_tf32 = False
    with tf32(True):
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    assert not torch.backends.cuda.matmul.allow_tf32


def test_an_explicit_bf16_on_a_gpu_without_native_bf16_is_refused(monkeypatch):
    import course_utils.machinery.hardware as hardware

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Tesla V100-SXM2-16GB")
    monkeypatch.setattr(hardware, "native_bf16", lambda: False)
    with pytest.raises(InputError, match="V100.*no native bf16.*'fp32' or 'auto'"):
        resolve_precision("bf16")
    assert resolve_precision("auto") == "fp32"
    monkeypatch.setattr(hardware, "native_bf16", lambda: True)
    assert resolve_precision("bf16") == "bf16"


def test_the_training_device_is_this_process_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert training_device() == torch.device("cuda", 0)
    monkeypatch.setenv("LOCAL_RANK", "3")  # under a launcher, each process owns its GPU
    assert training_device() == torch.device("cuda", 3)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert training_device() == torch.device("cpu")


def test_a_cpu_build_of_torch_is_named(monkeypatch):
    from course_utils.machinery.hardware import require_gpu

    monkeypatch.setattr(torch.version, "cuda", None)
    with pytest.raises(NoGPUError, match="CPU-only build"):
        require_gpu({"device": "cpu"})


@pytest.mark.parametrize("native, expected", [(False, "fp32"), (True, "bf16")])
def test_auto_precision_ignores_emulated_bf16(monkeypatch, native, expected):
    # A V100 or T4 emulates bf16: is_bf16_supported() says True unless emulation is excluded.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation or native)
    assert resolve_precision("auto") == expected
    assert resolve_precision("fp32") == "fp32"
