"""What `course grade` costs: a class of 40 lab 00L submissions against one papermill run of the lab.

    python benchmarks/bench_grading.py [--students 40] [--jobs 2]

The class cycles through the solution, the untouched student copy and a copy with Task 1 solved. It is graded once
with `course grade 00L ... --jobs N` (fresh process, fresh gradebook), and the lab's solution is run once with
papermill as `course run --labs --only 00L` runs it. Prints the class's wall time, the time per submission (wall
time over students) and the ratio to papermill's time for the one notebook. Issue 41 asks for at most 1.5x.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import recorded

from course_utils.labs.grading import read_lab
from course_utils.machinery.paths import notebooks_dir
from course_utils.machinery.runner import run_course


def write_class(folder: Path, students: int) -> None:
    solution_path = next((notebooks_dir() / "labs" / "solutions").glob("00L_*.ipynb"))
    solution = json.loads(solution_path.read_text())
    student = json.loads(next((notebooks_dir() / "labs").glob("00L_*.ipynb")).read_text())
    partial = copy.deepcopy(student)
    first_answer = read_lab("00L").roles.index("answer")
    partial["cells"][first_answer] = copy.deepcopy(solution["cells"][first_answer])
    kinds = [solution, student, partial]
    for i in range(students):
        (folder / f"student_{i:02d}.ipynb").write_text(json.dumps(kinds[i % 3]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40, help="submissions in the class")
    parser.add_argument("--jobs", type=int, default=2, help="submissions graded at once")
    args = parser.parse_args()
    print(f"lab 00L, {args.students} submissions, --jobs {args.jobs}, on {len(os.sched_getaffinity(0))} cores")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "class").mkdir()
        write_class(work / "class", args.students)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "course_utils.machinery.cli", "grade", "00L", str(work / "class"), "--jobs",
             str(args.jobs), "--output-dir", str(work / "grades")],
            check=True, capture_output=True,
        )  # fmt: skip
        wall = time.perf_counter() - start
        rows = (work / "grades" / "grades.csv").read_text().splitlines()[1:]
        totals = sorted({int(row.split(",")[-3]) for row in rows})
        solution = next((notebooks_dir() / "labs" / "solutions").glob("00L_*.ipynb"))
        start = time.perf_counter()
        (result,) = run_course([solution], "smoke", work / "papermill", progress=False, echo=lambda *a, **k: None)
        papermill = time.perf_counter() - start
        assert result.ok, result.failure
    per_submission = wall / args.students
    print(f"course grade: {wall:.1f} s for {args.students} submissions (totals seen: {totals})")
    print(f"per submission: {per_submission:.2f} s")
    print(f"papermill, the lab's solution once: {papermill:.2f} s")
    print(f"ratio: {per_submission / papermill:.2f}x papermill's time (target: at most 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(recorded("bench_grading", main))
