"""What this machine offers the course: device, GPU memory, bf16, precision, library versions, DeepSpeed ops.

    info = describe_device()          # {"device": "cuda", "gpu_name": "NVIDIA H100 ...", ...}
    require_gpu(info)                 # raises NoGPUError with what to do, when there is none
    training_device()                 # torch.device("cuda") on a GPU node, else "cpu"
    resolve_precision("auto")         # "bf16" on a GPU with native bf16, else "fp32"; never fp16
    library_versions()                # {"torch": "2.13.0+cpu", "transformers": "5.23.0", ...}
    deepspeed_ops()                   # {"cpu_adam": True, "fused_adam": False, ...}
    compile_check("cuda")             # {"compiles": True, "seconds": 9.1, ...}: can torch.compile build kernels?
    with tf32(True): ...              # TF32 matmuls inside the block, the previous setting after it
"""

from __future__ import annotations

import contextlib
import logging
import os
import platform
from importlib import metadata

from .configs import InputError

LIBRARIES = ("torch", "transformers", "datasets", "accelerate", "deepspeed", "evaluate", "tokenizers")
GIB = 1024 ** 3


PRECISIONS = ("auto", "bf16", "fp32")
FP16_REFUSAL = "T5's activations overflow fp16 (NaN losses); use bf16 or fp32."


class NoGPUError(RuntimeError):
    """The profile asks for a GPU and none is visible."""


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
    import torch

    info = {"device": "cpu", "gpu_count": 0, "gpu_name": "", "gpu_memory_gib": 0.0,
            "bf16_supported": False, "cpu_name": _cpu_name(),
            "cpu_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "ram_gib": round(psutil.virtual_memory().total / GIB, 1)}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(device="cuda", gpu_count=torch.cuda.device_count(), gpu_name=props.name,
                    gpu_memory_gib=round(props.total_memory / GIB, 1),
                    bf16_supported=native_bf16())
    elif torch.backends.mps.is_available():
        info.update(device="mps", gpu_count=1, gpu_name="Apple GPU (MPS)")
    return info


def native_bf16() -> bool:
    """True when the CUDA GPU computes in bf16 natively (compute capability 8.0, Ampere, or newer).

    ``torch.cuda.is_bf16_supported()`` alone also says True on a V100 or T4, which only emulate
    bf16 (slowly): ``including_emulation=False`` asks the real question.
    """
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported(including_emulation=False))


def resolve_precision(precision: str) -> str:
    """"bf16" or "fp32" for a run asking for ``precision`` ("auto", "bf16" or "fp32").

    "auto" is bf16 on a GPU with native bf16, else fp32. fp16 is refused (FP16_REFUSAL), and so is an
    explicit bf16 on a CUDA GPU that only emulates it (V100, T4): that would train, many times slower.
    """
    import torch

    check_precision(precision)
    if precision == "auto":
        return "bf16" if native_bf16() else "fp32"
    if precision == "bf16" and torch.cuda.is_available() and not native_bf16():
        raise InputError(f"precision='bf16', but {torch.cuda.get_device_name()} has no native bf16 (compute "
                         "capability 8.0, Ampere, or newer) and would emulate it slowly; use 'fp32' or 'auto'.")
    return precision


def check_precision(precision: str) -> None:
    """The one rule on precision settings, for every config that has one: auto, bf16 or fp32, never fp16."""
    if precision == "fp16":
        raise InputError(f"precision='fp16': {FP16_REFUSAL}")
    if precision not in PRECISIONS:
        raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}.")


def training_device():
    """The device this process trains, evaluates and generates on: its GPU, else the CPU.

    Under a launcher each process owns the GPU numbered by its LOCAL_RANK; a notebook (one
    process, one visible GPU) gets GPU 0.
    """
    import torch

    if not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))


def require_gpu(info: dict) -> None:
    """Stop with a message that says what to do when ``info`` shows no CUDA GPU."""
    if info["device"] != "cuda":
        import torch

        build = ("" if torch.version.cuda else
                 f" This torch ({torch.__version__}) is a CPU-only build: on a GPU node, install the CUDA build "
                 "(see environment.yml).")
        raise NoGPUError(
            f"No CUDA GPU is visible (device: {info['device']}).{build} The full profile is meant for a GPU: "
            "run it on a GPU node, set REQUIRE_GPU=0 to run it here anyway (slowly), or use the smoke "
            "profile (COURSE_PROFILE=smoke) on this machine.")


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


# A product that measures the card rather than the launch of its kernels: 2 x 8192^3 = 1.1 TFLOP each,
# about 1.4 ms on an H100 in bf16; 1024^3 products finish in microseconds, less than their launch.
MATMUL_SIZE = {"cuda": 8192, "mps": 4096, "cpu": 1024}


def matmul_tflops(device: str = "cpu", dtype_name: str = "float32", size: int | None = None,
                  min_seconds: float = 0.5) -> float:
    """Measured dense matmul throughput in TFLOP/s: one (size x size) @ (size x size) costs 2·size³ FLOPs.

    ``size`` defaults to ``MATMUL_SIZE[device]``. After a warm-up (kernel choice, allocation), products
    run in rounds until ``min_seconds`` have passed, waiting for the GPU at the end of each round.
    """
    import time

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


@contextlib.contextmanager
def tf32(enabled: bool):
    """TF32 matmuls and convolutions inside the block (Ampere and newer GPUs; no effect elsewhere), and
    the process's previous setting after it."""
    import torch

    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def compile_check(device: str, backend: str = "inductor") -> dict:
    """Can ``torch.compile`` build and run kernels on ``device``? Lesson 04 compiles its model on a GPU,
    and inductor needs a C++ compiler (and Triton on a GPU) to do it: this finds out in seconds instead
    of at the first pretraining step. Returns {"compiles", "seconds", "error"}."""
    import time

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


class DropMessages(logging.Filter):
    """A logging filter that drops records whose message contains one of ``fragments``."""

    def __init__(self, *fragments: str):
        super().__init__()
        self.fragments = fragments

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(fragment in record.getMessage() for fragment in self.fragments)


@contextlib.contextmanager
def messages_dropped(logger_name: str, *fragments: str):
    """While active, ``logger_name`` drops the records that contain one of ``fragments``."""
    logger, notice = logging.getLogger(logger_name), DropMessages(*fragments)
    logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)


# Library notices that say nothing a student can act on, by logger. accelerate's: a T5 checkpoint
# stores the embedding that encoder, decoder and `shared` share once, as safetensors requires, and
# says so at every save ("This should be OK"); the tests check the reload.
QUIET = {"accelerate.utils.other": ("Removed shared tensor",)}


def quiet_library_notices() -> dict[str, str]:
    """Silence the notices in ``QUIET``, and DeepSpeed's "Setting accelerator to CPU" where torch sees no
    CUDA GPU (by naming the CPU in DS_ACCELERATOR, unless it is set). Returns the variables it set;
    calling it again adds nothing."""
    import torch

    for name, fragments in QUIET.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, DropMessages) for f in logger.filters):
            logger.addFilter(DropMessages(*fragments))
    if "DS_ACCELERATOR" in os.environ or torch.cuda.is_available():
        return {}
    os.environ["DS_ACCELERATOR"] = "cpu"
    return {"DS_ACCELERATOR": "cpu"}


def training_flops(parameters: int, tokens: int) -> float:
    """FLOPs to train ``parameters`` weights on ``tokens`` tokens once: 6·N·D.

    Each token costs about 2 FLOPs per weight forward (a multiply and an add) and twice that
    backward (gradients for the activations and for the weights): 2 + 4 = 6 (Kaplan et al. 2020,
    "Scaling laws for neural language models", section 2.1). Attention's own cost and the
    embedding lookups are left out; count N without the embedding matrix.
    """
    return 6.0 * parameters * tokens
