"""Typed configs with checked overrides: an unknown or misspelt key is an error, not a no-op."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping


def checked_replace(config, overrides: Mapping, what: str = "setting"):
    """``dataclasses.replace(config, **overrides)``, refusing keys the dataclass does not have."""
    known = {f.name for f in dataclasses.fields(config)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"Unknown {what}(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}.")
    return dataclasses.replace(config, **overrides)
