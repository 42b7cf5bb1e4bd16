"""What this machine offers the course: device, GPU memory, bf16, precision, library versions, DeepSpeed ops.

    info = describe_device()          # {"device": "cuda", "gpu_name": "NVIDIA H100 ...", ...}
    require_gpu(info)                 # raises NoGPUError with what to do, when there is none
    training_device()                 # torch.device("cuda") on a GPU node, else "cpu"
    resolve_precision("auto")         # "bf16" on a GPU with native bf16, else "fp32"; never fp16
    library_versions()                # {"torch": "2.13.0+cpu", "transformers": "5.23.0", ...}
    deepspeed_ops()                   # {"cpu_adam": True, "fused_adam": False, ...}
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

    "auto" is bf16 on a GPU with native bf16, else fp32. fp16 is refused (FP16_REFUSAL).
    """
    check_precision(precision)
    if precision == "auto":
        return "bf16" if native_bf16() else "fp32"
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


def matmul_tflops(device: str = "cpu", dtype_name: str = "float32", size: int = 1024,
                  repeats: int = 10) -> float:
    """Measured dense matmul throughput in TFLOP/s: one (size x size) @ (size x size) costs 2·size³ FLOPs."""
    import time

    import torch

    dtype = getattr(torch, dtype_name)
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    torch.matmul(a, b)  # warm-up: kernel selection and allocation are not what we measure
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        torch.matmul(a, b)
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return 2 * size ** 3 * repeats / seconds / 1e12


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


def peak_memory() -> tuple[float, str]:
    """(MiB, what was measured): the CUDA allocator's peak on a GPU, else the process's peak RSS.

    The process figure counts everything since the process started (Python, libraries, data),
    which is why lesson 02 runs each fine-tune in a process of its own.
    """
    import resource

    import torch

    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20, "cuda_max_allocated"
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux (bytes on macOS)
    return (kib / 2**10 if platform.system() == "Linux" else kib / 2**20), "process_peak_rss"
