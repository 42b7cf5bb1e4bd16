"""``python -m course_utils.standins``: list, check or rebuild the shipped stand-ins.

    python -m course_utils.standins                          # each one: parameters, size, up to date or stale
    python -m course_utils.standins --check                  # exit 1 when one is stale or damaged, naming the fix
    python -m course_utils.standins --rebuild                # all of them, into standins/ (resumable after a kill)
    python -m course_utils.standins --rebuild gpt2 --seed 1 --out /tmp/seed1   # another build, elsewhere

A rebuild keeps its work in .cache/standin-builds/ and goes on from there when it is started again; it writes the
same weights on the same machine and thread count. Point the course at another build with COURSE_STANDINS_DIR.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from course_utils.machinery.offline import configure_offline
from course_utils.machinery.quiet import quiet_library_notices, quiet_progress_bars
from course_utils.models_and_data.standin_files import REBUILD, damaged_files, read_manifest, standins_dir
from course_utils.standins.specs import STANDINS


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m course_utils.standins", description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 when a shipped stand-in is stale or damaged")
    p.add_argument("--rebuild", nargs="*", metavar="NAME", help="build these stand-ins again (none named: all)")
    p.add_argument("--seed", type=int, default=None, help="another seed for the weights and batches (a new build)")
    p.add_argument("--out", type=Path, default=None, help="where to write (default: standins/ or COURSE_STANDINS_DIR)")
    p.add_argument("--work", type=Path, default=None, help="where the work in progress lives (default: .cache/)")
    return p


def status(folder: Path) -> str:
    """One line on the stand-in in ``folder``: its size and whether it is whole and current."""
    from course_utils.standins.fingerprint import (
        stale,  # imports transformers: after main() has set the offline switches
    )

    if not (folder / "MANIFEST.json").exists():
        return f"{folder.name}: missing (build it: {REBUILD} {folder.name})"
    damaged = damaged_files(folder)
    if damaged:
        return f"{folder.name}: damaged ({', '.join(damaged)}): git checkout -- {folder} or {REBUILD} {folder.name}"
    changed = stale(folder)
    record = read_manifest(folder)
    size = sum(p.stat().st_size for p in folder.iterdir()) / 2**20
    state = (
        f"stale ({', '.join(changed)} changed since it was built): {REBUILD} {folder.name}" if changed else "up to date"
    )
    return f"{folder.name}: {record['parameters']:,} parameters, {size:.1f} MiB, seed {record['seed']}, {state}"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    configure_offline(True)  # everything is local: nothing is downloaded, and no library tries to
    quiet_progress_bars(hub=True)  # the build's own bars only, not a bar for every weight file loaded or saved
    quiet_library_notices()
    out = args.out or standins_dir()
    if args.rebuild is not None:
        from course_utils.standins.build import build  # imports transformers: after the offline switches are set

        for name in args.rebuild or list(STANDINS):
            print(f"{name}: {build(name, out, seed=args.seed, work=args.work)}", flush=True)
    lines = [status(out / name) for name in STANDINS]
    print("\n".join(lines))
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 2**20 if out.exists() else 0
    print(f"{out}: {total:.1f} MiB in all")
    if args.check and any(not line.endswith("up to date") for line in lines):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
