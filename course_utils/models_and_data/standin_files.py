"""The shipped stand-ins on disk: where they are, their MANIFEST.json, and the check that each is whole.

    path = standin_path("t5-small")    # standins/t5-small, its files checked against its manifest
    damaged_files(path)                # the files missing or changed since the build: [] when whole

The stand-ins are built by ``python -m course_utils.standins --rebuild`` (``course_utils/standins/``) and shipped
in ``standins/<name>/``: safetensors, config, tokenizer, a model card and MANIFEST.json, which holds the sha256 of
every file beside it. Loading one checks those hashes once per process and change of the folder, so a missing or
damaged weight file stops the course with one line that names the file and the command that restores it. Whether
a stand-in is still what its recipe, code and data would build is the business of ``standins.fingerprint``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

from course_utils.machinery.offline import MissingAssetError
from course_utils.machinery.paths import repo_root

MANIFEST = "MANIFEST.json"
REBUILD = "python -m course_utils.standins --rebuild"
RESTORE = "git checkout -- standins/"


def standins_dir() -> Path:
    """Where the course's stand-ins are: ``standins/`` in the repository, or COURSE_STANDINS_DIR (another build)."""
    chosen = os.environ.get("COURSE_STANDINS_DIR")
    return Path(chosen).resolve() if chosen else repo_root() / "standins"


class StandInError(MissingAssetError):
    """A shipped stand-in is missing or damaged; the message names the file and the command that restores it."""


def read_manifest(folder: Path) -> dict:
    return json.loads((Path(folder) / MANIFEST).read_text())


def file_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file in ``folder`` but the manifest and the model card, by name."""
    skip = {MANIFEST, "README.md"}
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(Path(folder).iterdir())
        if p.is_file() and p.name not in skip
    }


def damaged_files(folder: Path) -> list[str]:
    """The files of ``folder``'s manifest that are missing or whose bytes differ from it."""
    expected = read_manifest(folder)["files"]
    found = file_hashes(folder)
    return [name for name, digest in expected.items() if found.get(name) != digest]


@functools.lru_cache(maxsize=None)
def _checked(folder: Path, stamp: tuple) -> None:
    if not (folder / MANIFEST).exists():
        raise StandInError(
            f"The stand-in in {folder} has no {MANIFEST}: restore it with `{RESTORE}{folder.name}` "
            f"or build it with `{REBUILD} {folder.name}`."
        )
    damaged = damaged_files(folder)
    if damaged:
        raise StandInError(
            f"The stand-in {folder.name} is damaged: {', '.join(str(folder / n) for n in damaged)} is missing or "
            f"differs from its {MANIFEST}. Restore it with `{RESTORE}{folder.name}` or rebuild it with "
            f"`{REBUILD} {folder.name}`."
        )


def standin_path(name: str) -> Path:
    """The folder of the stand-in ``name``, its files checked against its manifest (once per process and change)."""
    root = standins_dir()
    folder = root / name
    if not folder.is_dir():
        known = (
            sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []
        )
        raise StandInError(
            f"No stand-in called {name!r} in {root} (known: {', '.join(known) or 'none'}). A known one that is "
            f"missing: restore it with `{RESTORE}{name}` or build it with `{REBUILD} {name}`."
        )
    stamp = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.iterdir()))
    _checked(folder, stamp)
    return folder
