"""The device and its matmul rate (course_utils/machinery/machine.py)."""

import time

import pytest

from course_utils.machinery.machine import MATMUL_SIZE, matmul_tflops


def test_the_gpu_matmul_measures_the_card_not_kernel_launches(monkeypatch):
    assert MATMUL_SIZE["cuda"] >= 8192  # 1.1 TFLOP a product: milliseconds, not microseconds
    clock = iter([0.0, 0.1, 0.2, 0.3, 0.4, 0.6, 9.9])  # start, then the time after each round of 10
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    # Rounds run until 0.5 s have passed: 5 rounds of 10 products of 2 * 64^3 FLOPs in 0.6 s.
    assert matmul_tflops("cpu", "float32", size=64, min_seconds=0.5) == pytest.approx(50 * 2 * 64**3 / 0.6 / 1e12)
