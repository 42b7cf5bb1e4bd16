"""What fits in GPU memory, the accumulation that follows, and each run's own peak (course_utils/machinery/memory.py)."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from course_utils.machinery.memory import accumulation_steps, peak_memory, reset_peak_memory, rows_that_fit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rehearsal"))
from hub_repos import PUBLISHED_PARAMETERS  # noqa: E402

T5_V11_BASE = 247_577_856


def current_rss_mib() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.parametrize(
    "gib, precision, rows_per_pass",
    [
        (14.6, "fp32", 4),
        (15.8, "fp32", 8),  # T4 and V100 16 GB: fp32, no native bf16
        (22.0, "bf16", 16),
        (39.4, "bf16", 32),
        (44.5, "bf16", 64),
        (79.1, "bf16", 128),
        (139.8, "bf16", 128),
    ],
)
def test_the_accumulation_rule_counts_the_precision_the_card_trains_in(gib, precision, rows_per_pass):
    fitting = rows_that_fit(gib, T5_V11_BASE, 512 + 114, precision)
    assert 128 // accumulation_steps(128, 1, fitting) == rows_per_pass
    per_row = {"fp32": 0.84, "bf16": 0.5}[precision]
    # What the chosen micro-batch needs by the rule's own figures stays inside 90 % of the card.
    assert rows_per_pass * per_row + 16 * T5_V11_BASE / 2**30 + 3.0 <= 0.9 * gib


@pytest.mark.skipif(reset_peak_memory() != "process_peak_rss", reason="this kernel cannot reset the peak RSS")
def test_a_run_reports_its_own_peak_not_an_earlier_one(tmp_path):
    from course_utils.lessons.finetune import train

    block = torch.ones(3 * 2**30, dtype=torch.uint8)  # 3 GiB, touched, then freed
    del block
    baseline = current_rss_mib()
    trainer = SimpleNamespace(
        train=lambda: SimpleNamespace(training_loss=1.0),
        state=SimpleNamespace(log_history=[{"loss": 1.0, "step": 1}], global_step=1),
    )
    result = train(trainer)
    assert result.peak_memory_kind == "process_peak_rss"
    assert result.peak_memory_mib < baseline + 1024, (result.peak_memory_mib, baseline)  # not the 3 GiB block
    assert peak_memory()[0] >= current_rss_mib() - 1  # the peak is at least what is resident now


@pytest.mark.parametrize("gib, steps", [(22.0, 8), (39.4, 4), (44.5, 2), (79.1, 1), (139.8, 1)])
def test_accumulation_follows_the_gpu_memory(gib, steps):
    # 24 GB, 40 GB and 48 GB cards, an 80 GB A100/H100 and an H200, as torch reports them (GiB), in bf16.
    fitting = rows_that_fit(gib, PUBLISHED_PARAMETERS["google/t5-v1_1-base"], 512 + 114, "bf16")
    assert accumulation_steps(128, 1, fitting) == steps
    assert accumulation_steps(128, 8, fitting) == 1  # 16 rows per GPU fit everywhere
