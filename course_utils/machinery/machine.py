"""What this machine is (lesson 00): the device torch will use, a measured matmul rate, DeepSpeed's ops.

    device = describe_device()                        # {"device": "cuda", "gpu_name": ..., "bf16_supported": ...}
    tflops = matmul_tflops(device["device"], "bfloat16", MATMUL_SIZE[device["device"]])
    ops, missing = deepspeed_ops()                     # {op: buildable here?}, libraries the probe did not find

Notebook 00 calls these and explains what they ask; the GPU node check (``tools/gpu_check.py``) runs
them on a bare GPU node.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

GIB = 1024**3
# A product that measures the card rather than the launch of its kernels: 2 x 8192^3 = 1.1 TFLOP each,
# about 1.4 ms on an H100 in bf16; 1024^3 products finish in microseconds, less than their launch.
MATMUL_SIZE = {"cuda": 8192, "mps": 4096, "cpu": 1024}


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpus_on_node() -> int:
    """How many NVIDIA GPUs the machine has, as ``nvidia-smi`` lists them: a count that CUDA_VISIBLE_DEVICES does
    not change (a notebook keeps one GPU, ``environment.one_gpu``); 0 without nvidia-smi."""
    if not shutil.which("nvidia-smi"):
        return 0
    try:
        listed = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(line.startswith("GPU ") for line in listed.splitlines())


def describe_device() -> dict:
    """The accelerator torch will use (CUDA, MPS or CPU) and what it can do. ``gpu_count`` counts the machine's
    GPUs, ``gpus_visible`` those this process may use."""
    import psutil
    import torch  # here, not at the top: the course's session set-up runs this before torch may be imported

    info = {
        "device": "cpu",
        "gpu_count": gpus_on_node(),
        "gpus_visible": 0,
        "gpu_name": "",
        "gpu_memory_gib": 0.0,
        "bf16_supported": False,
        "cpu_name": cpu_name(),
        "cpu_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "ram_gib": round(psutil.virtual_memory().total / GIB, 1),
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(
            device="cuda",
            gpu_count=max(info["gpu_count"], torch.cuda.device_count()),
            gpus_visible=torch.cuda.device_count(),
            gpu_name=props.name,
            gpu_memory_gib=round(props.total_memory / GIB, 1),
            bf16_supported=torch.cuda.is_bf16_supported(including_emulation=False),  # native, not emulated
        )
    elif torch.backends.mps.is_available():
        info.update(device="mps", gpu_count=1, gpus_visible=1, gpu_name="Apple GPU (MPS)")
    return info


def matmul_tflops(
    device: str = "cpu", dtype_name: str = "float32", size: int | None = None, min_seconds: float = 0.5
) -> float:
    """Measured dense matmul throughput in TFLOP/s: one (size x size) @ (size x size) costs 2·size³ FLOPs.

    ``size`` defaults to ``MATMUL_SIZE[device]``. After a warm-up (kernel choice, allocation), products
    run in rounds until ``min_seconds`` have passed, waiting for the GPU at the end of each round.
    """
    import torch

    size = size or MATMUL_SIZE.get(device, 1024)
    dtype = getattr(torch, dtype_name)
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)

    def wait() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    torch.matmul(a, b)  # warm-up: kernel selection and allocation are not what we measure
    wait()
    products, start = 0, time.perf_counter()
    while True:
        for _ in range(10):
            torch.matmul(a, b)
        wait()
        products += 10
        seconds = time.perf_counter() - start
        if seconds >= min_seconds:
            return 2 * size**3 * products / seconds / 1e12


@contextlib.contextmanager
def captured_output(into: list[str]):
    """Inside the block, what this process and its children write to stdout and stderr (the file descriptors,
    so a compiler's messages too) is appended to ``into`` instead of being shown."""
    with tempfile.TemporaryFile(mode="w+b") as sink:
        saved = [os.dup(1), os.dup(2)]
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(AttributeError, ValueError):
                stream.flush()
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield into
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            sink.seek(0)
            into.append(sink.read().decode(errors="replace"))


def deepspeed_ops() -> tuple[dict[str, bool], list[str]]:
    """({op: can DeepSpeed JIT-build it here?}, [libraries the linker could not find while probing]).

    This is ``ds_report``'s "compatible" column, for the op builders of the accelerator DeepSpeed chose (CUDA on a
    GPU node, CPU elsewhere). Probing test-compiles small programs; a missing library makes the linker print
    ``cannot find -l<name>`` and ``collect2: error``, which says only that the op needing it cannot be built.
    Those lines are kept out of the output and returned as the library names.
    """
    from deepspeed.ops.op_builder.all_ops import ALL_OPS
    from deepspeed.ops.op_builder.builder import probe_is_compatible

    output: list[str] = []
    with captured_output(output):
        ops = {name: bool(probe_is_compatible(builder, False)) for name, builder in sorted(ALL_OPS.items())}
    return ops, sorted(set(re.findall(r"cannot find -l(\w+)", "".join(output))))


def ninja_available() -> bool:
    """DeepSpeed JIT-compiles its ops with ninja; without it no op can be built."""
    from torch.utils.cpp_extension import is_ninja_available

    return bool(is_ninja_available())
