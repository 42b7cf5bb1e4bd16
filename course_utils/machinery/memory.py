"""Memory: how many rows fit in a GPU's memory, and the peak a run reached.

    rows = rows_that_fit(79.1, 247_577_856, 512 + 114, "bf16")   # rows per forward pass on an 80 GB card
    steps = accumulation_steps(128, 1, rows)                       # the fewest accumulation steps that fit
    steps = accumulation_steps_that_fit(128, 1, 247_577_856, 626, "bf16")  # the same on this process's GPU
    reset_peak_memory()                                            # at the start of a run ...
    mib, kind = peak_memory()                                      # ... and its peak at the end

The peak is the CUDA allocator's on a GPU and the process's resident memory on a CPU; both are
reset at the start of each run, so a run never reports an earlier run's peak.
"""

from __future__ import annotations

import platform
import resource
from pathlib import Path

from course_utils.machinery.moved import deprecated_alias

# Activation memory of one row of T5 v1.1 base at 512 inputs / 114 targets, by precision. Measured on a
# CPU (SDPA): 0.63 GiB under bf16 autocast and 0.84 GiB in fp32, each with about 0.19 GiB of attention
# intermediates that CUDA's fused kernels do not keep; so about 0.5 GiB in bf16 on a GPU. The fp32 figure
# keeps the CPU measurement until a GPU measures it: `make gpu-check` prints the peak per micro-batch row.
ROW_GIB_T5_BASE = {"bf16": 0.5, "fp32": 0.84}
T5_BASE_PARAMETERS, T5_BASE_TOKENS = 247_577_856, 512 + 114
# The CUDA context, cuBLAS workspaces and the allocator's fragmentation: memory no tensor of ours holds.
BUFFERS_GIB = 3.0


def rows_that_fit(gpu_gib: float, parameters: int, tokens_per_row: int, precision: str = "bf16") -> int:
    """Rows per forward pass that fit in ``gpu_gib``: 90 % of it, less the buffers and 16 bytes per parameter
    of model states (fp32 weights, gradients and Adam's two moments), shared by the activations, which scale
    with the model's size and the row's length from ``ROW_GIB_T5_BASE[precision]``."""
    states_gib = 16 * parameters / 2**30
    per_row = ROW_GIB_T5_BASE[precision] * (parameters / T5_BASE_PARAMETERS) * (tokens_per_row / T5_BASE_TOKENS)
    return max(int((0.9 * gpu_gib - BUFFERS_GIB - states_gib) / per_row), 1)


def accumulation_steps(rows_per_step: int, world_size: int, fitting_rows: int) -> int:
    """The fewest accumulation steps (a divisor of the per-process rows) whose micro-batch has at most
    ``fitting_rows`` rows: the one choice both lesson 01's fine-tune and lesson 04's pretraining make."""
    per_process = rows_per_step // world_size
    for steps in range(1, per_process + 1):
        if per_process % steps == 0 and per_process // steps <= fitting_rows:
            return steps
    return per_process


def accumulation_steps_that_fit(
    rows_per_step: int, world_size: int, parameters: int, tokens_per_row: int, precision: str
) -> int | None:
    """``accumulation_steps`` for this process's GPU (``rows_that_fit`` of its memory); None without a GPU, where
    there is no memory to fit and the caller keeps what it was asked."""
    gib = gpu_gib()
    if not gib:
        return None
    return accumulation_steps(rows_per_step, world_size, rows_that_fit(gib, parameters, tokens_per_row, precision))


def gpu_gib() -> float:
    """Memory of this process's GPU in GiB; 0.0 without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return 0.0
    return torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory / 2**30


_STATUS, _CLEAR_REFS = Path("/proc/self/status"), Path("/proc/self/clear_refs")


def reset_peak_memory() -> str:
    """Start a new peak: the CUDA allocator's on a GPU; on Linux also the process's peak resident set
    (writing 5 to /proc/self/clear_refs). Returns what was reset ("" where nothing could be)."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
        return "cuda_max_allocated"
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return ""
    return "process_peak_rss"


def peak_memory() -> tuple[float, str]:
    """(MiB, what was measured) since the last ``reset_peak_memory``: the CUDA allocator's peak on a GPU,
    else the process's peak resident memory (VmHWM; since the process started where it cannot be reset).

    The process figure counts Python, the libraries and the data too, which is why lesson 02 runs each
    fine-tune in a process of its own.
    """
    import torch

    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20, "cuda_max_allocated"
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**10, "process_peak_rss"  # kB
    except OSError:
        pass
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux (bytes on macOS)
    return (kib / 2**10 if platform.system() == "Linux" else kib / 2**20), "process_peak_rss"


choose_accumulation = deprecated_alias(accumulation_steps, "course_utils.memory.choose_accumulation")
