"""The device a run trains on and the precision it trains in: the one rule for bf16, fp32 and TF32.

    training_device()                 # torch.device("cuda") on a GPU node, else "cpu"
    resolve_precision("auto")         # "bf16" on a GPU with native bf16, else "fp32"; never fp16
    require_gpu(info)                 # raises NoGPUError with what to do, when info shows no CUDA GPU
    with tf32(True): ...              # TF32 matmuls inside the block, the previous setting after it

What the machine offers (its name, memory, library versions) is lesson 00's ``device_report``.
"""

from __future__ import annotations

import contextlib
import os

from course_utils.machinery.configs import InputError

PRECISIONS = ("auto", "bf16", "fp32")
FP16_REFUSAL = "T5's activations overflow fp16 (NaN losses); use bf16 or fp32."


class NoGPUError(RuntimeError):
    """The profile asks for a GPU and none is visible."""


def native_bf16() -> bool:
    """True when the CUDA GPU computes in bf16 natively (compute capability 8.0, Ampere, or newer).

    ``torch.cuda.is_bf16_supported()`` alone also says True on a V100 or T4, which only emulate
    bf16 (slowly): ``including_emulation=False`` asks the real question.
    """
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported(including_emulation=False))


def resolve_precision(precision: str) -> str:
    """ "bf16" or "fp32" for a run asking for ``precision`` ("auto", "bf16" or "fp32").

    "auto" is bf16 on a GPU with native bf16, else fp32. fp16 is refused (FP16_REFUSAL), and so is an
    explicit bf16 on a CUDA GPU that only emulates it (V100, T4): that would train, many times slower.
    """
    import torch

    check_precision(precision)
    if precision == "auto":
        return "bf16" if native_bf16() else "fp32"
    if precision == "bf16" and torch.cuda.is_available() and not native_bf16():
        raise InputError(
            f"precision='bf16', but {torch.cuda.get_device_name()} has no native bf16 (compute "
            "capability 8.0, Ampere, or newer) and would emulate it slowly; use 'fp32' or 'auto'."
        )
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

        build = (
            ""
            if torch.version.cuda
            else f" This torch ({torch.__version__}) is a CPU-only build: on a GPU node, install the CUDA build "
            "(see environment.yml)."
        )
        raise NoGPUError(
            f"No CUDA GPU is visible (device: {info['device']}).{build} The full profile is meant for a GPU: "
            "run it on a GPU node, set REQUIRE_GPU=0 to run it here anyway (slowly), or use the smoke "
            "profile (COURSE_PROFILE=smoke) on this machine."
        )


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
