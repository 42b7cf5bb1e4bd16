"""Explicit set-up for a notebook: offline switches, one GPU, the GPU requirement, output folder, the session.

Hugging Face libraries read their offline switches when they are imported, and CUDA reads
CUDA_VISIBLE_DEVICES when it starts, so a notebook calls ``start_session`` *before*
importing transformers, datasets or torch:

    session = start_session(PROFILE, OUTPUT_DIR, quick=QUICK == "1", require_gpu=REQUIRE_GPU)
    profile = session.profile

In the full profile it stops with a clear message when no GPU is visible (``REQUIRE_GPU="0"``
runs anyway). Nothing happens at import time; calling it twice is harmless.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from course_utils.machinery.hardware import require_gpu as stop_without_gpu
from course_utils.machinery.machine import describe_device
from course_utils.machinery.offline import configure_offline, is_offline
from course_utils.machinery.paths import output_dir as default_output_dir
from course_utils.machinery.profiles import Profile, get_profile
from course_utils.machinery.quiet import quiet_library_notices, quiet_progress_bars


@dataclass(frozen=True)
class Session:
    """What a notebook needs to know about its run: the profile and where figures go."""

    profile: Profile
    output_dir: Path
    environment: dict[str, str] = field(default_factory=dict)  # variables this call set


def one_gpu() -> dict[str, str]:
    """Let this process see only the first of its GPUs; return the variable this call set, if any.

    A notebook is one process. When it sees several GPUs the Trainer wraps the model in
    nn.DataParallel, which multiplies the batch and makes lesson 02 compare DataParallel with
    one-GPU ZeRO. Several GPUs are for the launchers (lesson 02's commands), one process each.
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    first = "0" if visible is None else visible.split(",")[0].strip()
    if visible == first:
        return {}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raise RuntimeError(
            "CUDA started before the session could limit this notebook to one GPU. "
            "Restart the kernel and run the set-up cell first."
        )
    os.environ["CUDA_VISIBLE_DEVICES"] = first
    return {"CUDA_VISIBLE_DEVICES": first}


def gpu_required(profile: Profile, override: str = "") -> bool:
    """The profile's choice, unless ``override`` (a notebook's REQUIRE_GPU parameter) is "1" or "0"."""
    if override not in ("", "0", "1"):
        raise ValueError(f"REQUIRE_GPU must be '1', '0' or empty (the profile decides), got {override!r}.")
    return profile.require_gpu if override == "" else override == "1"


def start_session(
    profile_name: str = "smoke",
    output_dir: str | os.PathLike | None = None,
    quick: bool = False,
    require_gpu: str = "",
    check_gpu: bool = True,
    seed: str = "",
) -> Session:
    """Set up a notebook run: pick the profile (capped when ``quick``; ``seed``, a number as text, the seed of every
    training run, or "" for each config's own), go offline if it says so, leave progress
    bars to training and generation, keep one GPU, stop when a required GPU is missing (unless ``check_gpu`` is
    False), create the output folder."""
    profile = get_profile(profile_name, quick=quick, **({"seed": int(seed)} if str(seed).strip() else {}))
    # Smoke is always offline. In full, HF_HUB_OFFLINE=1 (a compute node without internet) switches
    # the other libraries off too: datasets, for one, would otherwise still report loads over the network.
    changed = configure_offline(profile.offline or is_offline())
    changed.update(quiet_progress_bars(hub=is_offline()))  # before the libraries read them: bars for real work only
    changed.update(one_gpu())
    changed.update(quiet_library_notices())  # after one_gpu: it asks torch whether there is a GPU
    if check_gpu and gpu_required(profile, require_gpu):
        stop_without_gpu(describe_device())
    out = default_output_dir(profile.name, output_dir or None)
    out.mkdir(parents=True, exist_ok=True)
    return Session(profile=profile, output_dir=out, environment=changed)
