"""What this machine offers (lesson 00): the device, its memory and bf16, and a matmul rate.

Written by `python -m course_utils.export` from the cells marked #@save in
notebooks/00_gpu_check.ipynb: edit them there, then rerun the command (tests/test_export.py checks it).
"""


import os
import platform
import time
from importlib import metadata

GIB = 1024 ** 3


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe_device() -> dict:
    """The accelerator torch will use (CUDA, MPS or CPU) and what it can do."""
    import psutil
    import torch  # here, not at the top: the course's session set-up runs this before torch may be imported

    info = {"device": "cpu", "gpu_count": 0, "gpu_name": "", "gpu_memory_gib": 0.0,
            "bf16_supported": False, "cpu_name": _cpu_name(),
            "cpu_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "ram_gib": round(psutil.virtual_memory().total / GIB, 1)}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(device="cuda", gpu_count=torch.cuda.device_count(), gpu_name=props.name,
                    gpu_memory_gib=round(props.total_memory / GIB, 1),
                    bf16_supported=torch.cuda.is_bf16_supported(including_emulation=False))  # native, not emulated
    elif torch.backends.mps.is_available():
        info.update(device="mps", gpu_count=1, gpu_name="Apple GPU (MPS)")
    return info


# A product that measures the card rather than the launch of its kernels: 2 x 8192^3 = 1.1 TFLOP each,
# about 1.4 ms on an H100 in bf16; 1024^3 products finish in microseconds, less than their launch.
MATMUL_SIZE = {"cuda": 8192, "mps": 4096, "cpu": 1024}


def matmul_tflops(device: str = "cpu", dtype_name: str = "float32", size: int | None = None,
                  min_seconds: float = 0.5) -> float:
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
            return 2 * size ** 3 * products / seconds / 1e12


LIBRARIES = ("torch", "transformers", "datasets", "accelerate", "deepspeed", "evaluate", "tokenizers")


def library_versions(names: tuple[str, ...] = LIBRARIES) -> dict[str, str]:
    """Installed version of each library, or 'not installed'."""
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def deepspeed_ops() -> dict[str, bool]:
    """For each DeepSpeed C++/CUDA op: can it be JIT-built here? (What `ds_report` prints.)"""
    from deepspeed.ops.op_builder.all_ops import ALL_OPS
    from deepspeed.ops.op_builder.builder import probe_is_compatible

    return {name: bool(probe_is_compatible(builder, False)) for name, builder in sorted(ALL_OPS.items())}


def ninja_available() -> bool:
    """DeepSpeed JIT-compiles its ops with ninja; without it no op can be built."""
    from torch.utils.cpp_extension import is_ninja_available

    return bool(is_ninja_available())


def compile_check(device: str, backend: str = "inductor") -> dict:
    """Can ``torch.compile`` build and run kernels on ``device``? Lesson 04 compiles its model on a GPU,
    and inductor needs a C++ compiler (and Triton on a GPU) to do it: this finds out in seconds instead
    of at the first pretraining step. Returns {"compiles", "seconds", "error"}."""
    import torch

    def scaled_gelu(x):
        return torch.nn.functional.gelu(x) * 2.0

    start = time.perf_counter()
    try:
        x = torch.randn(64, 64, device=device)
        compiled = torch.compile(scaled_gelu, backend=backend, fullgraph=True)
        ok = torch.allclose(compiled(x), scaled_gelu(x), atol=1e-5)
        error = "" if ok else "the compiled function gave other values than the eager one"
    except Exception as exc:  # noqa: BLE001 - any failure to build is the answer
        ok, error = False, " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    return {"compiles": bool(ok), "seconds": round(time.perf_counter() - start, 2), "error": error}
