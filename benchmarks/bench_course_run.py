"""Time `course run` in the smoke profile and print each notebook's time.

    python benchmarks/bench_course_run.py [--only 00,01] [--budget 720]

Runs the notebooks into a temporary folder (outputs/ is left alone) and prints a table of
wall times from the runner, the total, and the total against the budget (12 minutes for the
whole course on 2 cores). Exits 1 if a notebook failed; the budget is reported, not enforced.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from course_utils.paths import notebooks_dir
from course_utils.runner import find_notebooks, run_course


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated notebook numbers (default: all)")
    parser.add_argument("--budget", type=float, default=720.0, help="seconds the whole run should take")
    args = parser.parse_args(argv)
    notebooks = find_notebooks(notebooks_dir(), args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="course-bench-") as out:
        start = time.perf_counter()
        results = run_course(notebooks, "smoke", Path(out), progress=False, echo=lambda *a, **k: None)
        wall = time.perf_counter() - start
    print(f"{'notebook':<34} {'status':<7} {'seconds':>8}")
    for r in results:
        print(f"{r.name:<34} {'ok' if r.ok else 'FAILED':<7} {r.seconds:>8.1f}")
    print(f"{'total (wall, incl. kernel starts)':<34} {'':<7} {wall:>8.1f}")
    print(f"budget {args.budget:.0f} s: {'within' if wall <= args.budget else 'OVER'} "
          f"({wall / args.budget:.0%} of it)")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    from results import recorded

    sys.exit(recorded("bench_course_run", main))
