"""Time `course run --labs` in the smoke profile and print each notebook's time, the labs counted apart.

    python benchmarks/bench_course_run.py [--only 00,01,01L] [--budget 780] [--lab-budget 120] [--fresh-cache]

Runs the lessons, then the labs' solutions, into a temporary folder (outputs/ is left alone) and
prints a table of wall times from the runner, the lessons' total against the course's budget (13
minutes on 2 cores) and each lab against its own (2 minutes). Exits 1 if a notebook failed; the
budgets are reported, not enforced. ``--fresh-cache`` builds the stand-ins and lesson 03's warm-ups
afresh in a temporary cache, as the first run of a fresh clone does (about a minute more).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from course_utils.machinery.paths import notebooks_dir
from course_utils.machinery.runner import find_notebooks, is_lab, run_course


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated notebook numbers (default: all)")
    parser.add_argument(
        "--budget", type=float, default=780.0, help="seconds the lessons should take (13 minutes with lesson 05)"
    )
    parser.add_argument("--lab-budget", type=float, default=120.0, help="seconds each lab should take")
    parser.add_argument(
        "--fresh-cache",
        action="store_true",
        help="an empty stand-in and warm-up cache (COURSE_CACHE_DIR), as in a fresh clone",
    )
    args = parser.parse_args(argv)
    notebooks = find_notebooks(notebooks_dir(), args.only.split(","), labs=True)
    with tempfile.TemporaryDirectory(prefix="course-bench-") as out:
        if args.fresh_cache:
            os.environ["COURSE_CACHE_DIR"] = str(Path(out) / "cache")  # the kernels inherit it
        start = time.perf_counter()
        results = run_course(notebooks, "smoke", Path(out), progress=False, echo=lambda *a, **k: None)
        wall = time.perf_counter() - start
    print(f"{'notebook':<34} {'status':<7} {'seconds':>8}")
    for r in results:
        print(f"{r.name:<34} {'ok' if r.ok else 'FAILED':<7} {r.seconds:>8.1f}")
    labs = sum(r.seconds for r in results if is_lab(r.name))
    lessons = wall - labs  # the lessons' share of the wall time, kernel starts included
    print(f"{'total (wall, incl. kernel starts)':<34} {'':<7} {wall:>8.1f}")
    print(f"{'  lessons':<34} {'':<7} {lessons:>8.1f}")
    print(f"{'  labs':<34} {'':<7} {labs:>8.1f}")
    print(
        f"lessons against the budget of {args.budget:.0f} s: {'within' if lessons <= args.budget else 'OVER'} "
        f"({lessons / args.budget:.0%} of it)"
    )
    slowest = max((r for r in results if is_lab(r.name)), key=lambda r: r.seconds, default=None)
    if slowest:
        print(
            f"slowest lab {slowest.name}: {slowest.seconds:.1f} s, "
            f"{'within' if slowest.seconds <= args.lab_budget else 'OVER'} its budget of {args.lab_budget:.0f} s"
        )
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    from results import recorded

    sys.exit(recorded("bench_course_run", main))
