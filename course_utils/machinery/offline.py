"""Offline state in one place: the switches that keep the Hugging Face stack off the network,
the stand-in names that need no network at all, and the one-line error for what is missing.

    configure_offline(True)      # before transformers/datasets are imported; returns what it set
    is_offline()                 # HF_HUB_OFFLINE is on
    raise MissingAssetError(missing_asset_message(["t5-small"]))   # one line that names the fix
"""

from __future__ import annotations

import os
import sys

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
# A model name "standin:<name>" is a tiny stand-in built from a config on this machine (standins.py).
STANDIN_PREFIX = "standin:"


class MissingAssetError(RuntimeError):
    """A model or data set needed offline is not in the local Hugging Face cache (``missing_asset_message``)."""


def missing_asset_message(names: list[str]) -> str:
    """One line: what is missing, and the command that fetches it."""
    return (
        f"Not in the local Hugging Face cache and the Hub is off (HF_HUB_OFFLINE=1): "
        f"{', '.join(names)}. Run `course prefetch --profile full` on a machine with internet access."
    )


def configure_offline(offline: bool) -> dict[str, str]:
    """Set the offline switches when ``offline``; return the variables this call changed."""
    if not offline:
        return {}
    changed = {k: v for k, v in OFFLINE_VARIABLES.items() if os.environ.get(k) != v}
    late = [m for m in _EARLY_READERS if m in sys.modules]
    if changed and late:
        raise RuntimeError(
            f"{', '.join(late)} was imported before the offline switches were set, so it would "
            "still try the network. Restart the kernel and run the set-up cell first."
        )
    os.environ.update(changed)
    return changed


def is_offline() -> bool:
    """True when the Hugging Face Hub must not be contacted (HF_HUB_OFFLINE set)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}
