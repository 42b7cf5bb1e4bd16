"""Where the course's files live: the repository, outputs and the stand-in cache.

Paths are found from this package's location, not the working directory, so a notebook
opened from ``notebooks/``, papermill and pytest all see the same folders.
"""

from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path:
    """The repository holding this package (the folder with ``pyproject.toml``)."""
    return Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    """The shipped sample data sets (``data/``)."""
    return repo_root() / "data"


def notebooks_dir() -> Path:
    return repo_root() / "notebooks"


def output_dir(profile_name: str, override: str | os.PathLike | None = None) -> Path:
    """``outputs/<profile>`` in the repository, unless ``override`` (or COURSE_OUTPUT_DIR) names another."""
    chosen = override or os.environ.get("COURSE_OUTPUT_DIR")
    return Path(chosen).resolve() if chosen else repo_root() / "outputs" / profile_name


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    """Where stand-ins are built and warm-ups kept, for reuse (COURSE_CACHE_DIR, else ``.cache/``)."""
    chosen = override or os.environ.get("COURSE_CACHE_DIR")
    return Path(chosen).resolve() if chosen else repo_root() / ".cache"
