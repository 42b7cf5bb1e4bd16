"""Where an executed notebook comes from: its profile, when it ran, the course's commit and the device.

    stamp(notebook, run_provenance("smoke"))   # into notebook.metadata["course"], as `course run` does
    provenance_of(notebook)                    # that record back; None for a notebook no run stamped

`course run` stamps every notebook it executes, and the test lane stamps the notebooks nbval ran, so that the
course's site (``machinery/site.py``) can say on each page what produced its figures.
"""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone

from course_utils.machinery.machine import describe_device
from course_utils.machinery.paths import repo_root

KEY = "course"  # the notebook-metadata key the record is kept under


def commit() -> str:
    """The course's commit, ``"4a68100e2b1c"``, with ``" (and uncommitted changes)"`` when the work tree differs from
    it; ``"unknown"`` outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=repo_root(), capture_output=True, text=True, timeout=20
        )
        if head.returncode != 0:
            return "unknown"
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=repo_root(),
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return head.stdout.strip() + (" (and uncommitted changes)" if changed else "")


def device_line() -> str:
    """The device the notebooks ran on, in words: ``"NVIDIA H100 80GB HBM3 (79.1 GiB)"`` or ``"CPU: AMD EPYC ...
    (2 cores)"``."""
    info = describe_device()
    if info["device"] == "cuda":
        return f"{info['gpu_name']} ({info['gpu_memory_gib']} GiB)"
    if info["device"] == "mps":
        return info["gpu_name"]
    return f"CPU: {info['cpu_name']} ({info['cpu_cores']} cores)"


def run_provenance(profile_name: str, quick: bool = False) -> dict:
    """What a run's notebooks share: profile, quick or not, commit and device (the time is stamped per notebook)."""
    return {"profile": profile_name, "quick": quick, "commit": commit(), "device": device_line()}


def stamp(notebook, record: dict) -> None:
    """Write ``record`` with the current time (UTC) into ``notebook``'s metadata (an nbformat node or a dict)."""
    executed = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    notebook["metadata"][KEY] = {**record, "executed": executed}


def provenance_of(notebook) -> dict | None:
    return notebook.get("metadata", {}).get(KEY)
