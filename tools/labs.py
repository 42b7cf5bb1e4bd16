"""Write each lab's student copy from its solution notebook, and check that the copies are fresh (a maintainer's tool).

A lab has one source, its solution in ``notebooks/labs/solutions/``, with the answers marked in
otter-grader's syntax. The student copy in ``notebooks/labs/`` is written from it:

- the lines between ``# BEGIN SOLUTION`` and ``# END SOLUTION`` become one stub at their indentation,
  ``raise NotImplementedError("Task 2 · Mask the prompt: ...")``, named after the task's heading (the
  last markdown heading before the cell that starts with ``### Task``);
- a line ending in ``# SOLUTION`` keeps its left-hand side: ``q1 = "c"  # SOLUTION`` becomes ``q1 = ...``,
  which the question's check reports as not answered yet;
- outputs and execution counts are cleared.

    python tools/labs.py            # rewrite every student copy
    python tools/labs.py --check    # exit 1, naming the copy, when one differs from a fresh one
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

# What the grader (course grade) reads a student copy by: the stubs it leaves and the task headings it names them by.
from course_utils.labs.grading import STUB, TASK_HEADING

BEGIN, END, LINE = "# BEGIN SOLUTION", "# END SOLUTION", "# SOLUTION"
LAB_PATTERN = "[0-9][0-9]L_*.ipynb"


ROOT = Path(__file__).resolve().parent.parent


def labs_dir(root: Path | None = None) -> Path:
    return (root or ROOT) / "notebooks" / "labs"


def solution_notebooks(root: Path | None = None) -> list[Path]:
    return sorted((labs_dir(root) / "solutions").glob(LAB_PATTERN))


def stub(task: str, where: str) -> str:
    """The line that stands for a solution block in the student copy."""
    if not task:
        raise ValueError(
            f"{where}: a solution block comes before any '### Task' heading; the stub needs the task's name."
        )
    return f'{STUB}"{task}: write your code here, in place of this line")'


def student_source(source: str, task: str, where: str) -> str:
    """One code cell's source with its solution blocks and lines replaced."""
    out, inside = [], None
    for number, line in enumerate(source.split("\n"), start=1):
        marker = line.strip()
        if marker == BEGIN:
            if inside is not None:
                raise ValueError(f"{where}, line {number}: {BEGIN} inside another block.")
            inside = line[: len(line) - len(line.lstrip())]
            out.append(inside + stub(task, where))
        elif marker == END:
            if inside is None:
                raise ValueError(f"{where}, line {number}: {END} without {BEGIN}.")
            inside = None
        elif inside is not None:
            continue
        elif line.rstrip().endswith(LINE):
            code = line.rstrip()[: -len(LINE)].rstrip()
            if "=" not in code:
                raise ValueError(f"{where}, line {number}: '{LINE}' marks an assignment, 'name = answer'.")
            out.append(code.split("=", 1)[0].rstrip() + " = ...")
        else:
            out.append(line)
    if inside is not None:
        raise ValueError(f"{where}: {BEGIN} without {END}.")
    return "\n".join(out)


def student_notebook(solution: dict, name: str = "lab") -> dict:
    """The student copy of a solution notebook (a new dict; ``solution`` is left as it was)."""
    notebook = copy.deepcopy(solution)
    task = ""
    for index, cell in enumerate(notebook["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            headings = TASK_HEADING.findall(source)
            task = headings[-1] if headings else task
            continue
        if cell["cell_type"] != "code":
            continue
        new = student_source(source, task, f"{name}, cell {index}")
        cell["source"] = new.splitlines(keepends=True)
        cell["outputs"], cell["execution_count"] = [], None
    return notebook


def notebook_text(notebook: dict) -> str:
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def student_path(solution: Path) -> Path:
    return solution.parent.parent / solution.name


def stale_copies(root: Path | None = None) -> list[Path]:
    """Student copies that are missing or differ from a fresh generation."""
    stale = []
    for solution in solution_notebooks(root):
        fresh = notebook_text(student_notebook(json.loads(solution.read_text()), solution.name))
        target = student_path(solution)
        if not target.exists() or target.read_text() != fresh:
            stale.append(target)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/labs.py", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when a student copy differs")
    args = parser.parse_args(argv)
    stale = stale_copies()
    if args.check:
        for path in stale:
            print(f"{path} differs from its solution's fresh student copy: run python tools/labs.py", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        solution = path.parent / "solutions" / path.name
        path.write_text(notebook_text(student_notebook(json.loads(solution.read_text()), solution.name)))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
