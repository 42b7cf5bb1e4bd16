"""Explicit set-up for a notebook or script: offline switches, output folder, the session.

Hugging Face libraries read their offline switches when they are imported, so a notebook
calls ``start_session`` *before* importing transformers or datasets:

    session = start_session(PROFILE, OUTPUT_DIR)   # sets HF_HUB_OFFLINE=1 etc. in smoke
    profile = session.profile

Nothing happens at import time; calling it twice is harmless.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .paths import output_dir as default_output_dir
from .profiles import Profile, get_profile

# Every switch the Hugging Face stack reads to stay off the network.
OFFLINE_VARIABLES = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_EVALUATE_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}
# Modules that cache the switches at import time.
_EARLY_READERS = ("huggingface_hub", "transformers", "datasets", "evaluate")


@dataclass(frozen=True)
class Session:
    """What a notebook needs to know about its run: the profile and where figures go."""

    profile: Profile
    output_dir: Path
    environment: dict[str, str] = field(default_factory=dict)  # variables this call set


def configure_offline(offline: bool) -> dict[str, str]:
    """Set the offline switches when ``offline``; return the variables this call changed."""
    if not offline:
        return {}
    changed = {k: v for k, v in OFFLINE_VARIABLES.items() if os.environ.get(k) != v}
    late = [m for m in _EARLY_READERS if m in sys.modules]
    if changed and late:
        raise RuntimeError(
            f"{', '.join(late)} was imported before the offline switches were set, so it would "
            "still try the network. Restart the kernel and run the set-up cell first.")
    os.environ.update(changed)
    return changed


def is_offline() -> bool:
    """True when the Hugging Face Hub must not be contacted (HF_HUB_OFFLINE set)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def start_session(profile_name: str = "smoke", output_dir: str | os.PathLike | None = None) -> Session:
    """Set up a notebook run: pick the profile, go offline if it says so, create the output folder."""
    profile = get_profile(profile_name)
    changed = configure_offline(profile.offline)
    out = default_output_dir(profile.name, output_dir or None)
    out.mkdir(parents=True, exist_ok=True)
    return Session(profile=profile, output_dir=out, environment=changed)
