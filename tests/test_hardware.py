"""The hardware report behind notebook 00."""

import pytest
import torch

from course_utils.hardware import NoGPUError, require_gpu
from course_utils.device_report import deepspeed_ops, describe_device, library_versions, matmul_tflops


def test_describe_device_matches_torch():
    info = describe_device()
    assert info["device"] == ("cuda" if torch.cuda.is_available() else
                              "mps" if torch.backends.mps.is_available() else "cpu")
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
    assert matmul_tflops("cpu", "float32", size=128, min_seconds=0.5) == 10 * 2 * 128 ** 3 / 0.5 / 1e12


def test_deepspeed_reports_its_cpu_ops():
    ops = deepspeed_ops()
    assert "cpu_adam" in ops and all(isinstance(v, bool) for v in ops.values())


def test_library_notices_without_meaning_for_a_student_are_dropped_and_others_kept(monkeypatch, caplog):
    import logging

    from course_utils.quiet import QUIET, quiet_library_notices

    monkeypatch.setenv("DS_ACCELERATOR", "restored after the test")  # records the variable's state first
    monkeypatch.delenv("DS_ACCELERATOR")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert quiet_library_notices() == {"DS_ACCELERATOR": "cpu"}  # DeepSpeed then skips "Setting accelerator to CPU"
    assert quiet_library_notices() == {}                         # set once; a second call adds nothing
    caplog.set_level(logging.WARNING)
    for name, fragments in QUIET.items():
        logging.getLogger(name).warning(f"{fragments[0]} {{'decoder.embed_tokens.weight'}} while saving")
        logging.getLogger(name).warning("a notice that matters")
    assert [r.getMessage() for r in caplog.records] == ["a notice that matters"] * len(QUIET)
    assert all(len(logging.getLogger(name).filters) == 1 for name in QUIET)  # no filter added twice


def test_messages_are_dropped_only_inside_the_block(caplog):
    import logging

    from course_utils.quiet import messages_dropped

    caplog.set_level(logging.WARNING)
    logger = logging.getLogger("course_test.notices")
    with messages_dropped("course_test.notices", "both are present"):
        logger.warning("weights: but both are present in the checkpoints")
        logger.warning("kept inside")
    logger.warning("but both are present, after the block")
    assert [r.getMessage() for r in caplog.records] == ["kept inside", "but both are present, after the block"]
    assert logger.filters == []
