"""Run the course's notebooks in order with papermill and write a report of their figures.

    course run [--profile smoke|full] [--only 01,03] [--output-dir DIR] [--labs]

Executed copies go to ``outputs/<profile>/`` next to ``metrics.json`` and ``report.md``.
A failing notebook does not stop the run: the others still execute, the report names the
notebook, cell and error, and the command exits non-zero.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from course_utils.machinery.configs import InputError
from course_utils.machinery.metrics import forget_metrics, read_metrics
from course_utils.machinery.provenance import run_provenance, stamp

REPORT_FILE = "report.md"
KERNEL_NAME = "course-python"  # a kernelspec of our own: "python3" may name another interpreter


@dataclass(frozen=True)
class NotebookFailure:
    """Where and how a notebook stopped."""

    cell_index: int | None  # position of the failing cell in the executed notebook
    execution_count: int | None  # the number Jupyter shows next to that cell
    error: str  # "ValueError: label 7 in row 12 is not 0 or 1"

    def describe(self) -> str:
        where = f"cell {self.cell_index}" if self.cell_index is not None else "before any cell ran"
        if self.execution_count is not None:
            where += f" (In [{self.execution_count}])"
        return f"{where}: {self.error}"


@dataclass(frozen=True)
class NotebookResult:
    name: str  # notebook file name without .ipynb
    output_path: Path  # the executed copy (written even when it fails)
    seconds: float
    failure: NotebookFailure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


LESSON_PATTERN = "[0-9][0-9]_*.ipynb"
LAB_PATTERN = "[0-9][0-9]L_*.ipynb"  # the labs' solutions, notebooks/labs/solutions/01L_name.ipynb


def is_lab(name: str) -> bool:
    return name[2:4] == "L_"


def student_labs(notebooks_dir: Path) -> list[Path]:
    """The labs' student copies, ``notebooks/labs/NNL_name.ipynb``, in order (what a student fills in)."""
    return sorted((Path(notebooks_dir) / "labs").glob(LAB_PATTERN))


def find_notebooks(notebooks_dir: Path, only: list[str] | None = None, labs: bool = False) -> list[Path]:
    """Numbered lessons (``NN_name.ipynb``) in order, then with ``labs`` the labs' solutions (``NNL_name.ipynb`` in
    ``labs/solutions``); ``only`` keeps those whose number (``01``, ``01L``) or name is listed."""
    found = sorted(Path(notebooks_dir).glob(LESSON_PATTERN))
    if labs:
        found += sorted((Path(notebooks_dir) / "labs" / "solutions").glob(LAB_PATTERN))
    wanted = [w.strip() for w in only or [] if w.strip()]
    if not wanted:
        return found

    def number(path: Path) -> str:
        return path.stem.split("_", 1)[0]

    chosen = [p for p in found if number(p) in wanted or p.stem in wanted]
    missing = [w for w in wanted if not any(number(p) == w or p.stem == w for p in found)]
    if missing:
        known = ", ".join(p.stem for p in found) or "none"
        raise InputError(f"--only names no notebook: {', '.join(missing)} (notebooks: {known}).")
    return chosen


@contextlib.contextmanager
def _kernel_environment(variables: dict[str, str]):
    """Environment for the kernels papermill starts; restored afterwards."""
    saved = {k: os.environ.get(k) for k in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _failure_from(exc: BaseException) -> NotebookFailure:
    # papermill raises PapermillExecutionError with the failing cell's position and error.
    cell = getattr(exc, "cell_index", None)
    count = getattr(exc, "exec_count", None)
    name = getattr(exc, "ename", None) or type(exc).__name__
    value = getattr(exc, "evalue", None) or str(exc)
    value = value.strip().splitlines()[-1] if value.strip() else ""
    return NotebookFailure(cell_index=cell, execution_count=count, error=f"{name}: {value}")


def this_interpreter_kernel(folder: Path) -> dict[str, str]:
    """A kernelspec named KERNEL_NAME under ``folder`` that starts this very interpreter; the JUPYTER_PATH to find it.

    papermill's default kernel, "python3", is looked up along Jupyter's search path, where a
    user-level kernelspec can point at another Python with other packages. JUPYTER_PATH comes
    first on that path, and the name is the course's own. The kernel logs errors only: its one
    warning, that it talks to papermill over TCP on 127.0.0.1 without encryption, is about Jupyter's
    plumbing, not the notebook, and would open every notebook's output.
    """
    spec = folder / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}", "--log-level=ERROR"],
                "display_name": f"course ({sys.executable})",
                "language": "python",
            }
        )
    )
    return {"JUPYTER_PATH": os.pathsep.join([str(folder), os.environ.get("JUPYTER_PATH", "")]).rstrip(os.pathsep)}


def run_notebook(
    path: Path,
    output_path: Path,
    parameters: dict,
    cell_timeout: int | None,
    progress: bool,
    provenance: dict | None = None,
) -> NotebookResult:
    """Execute one notebook into ``output_path``; never raises for an error inside the notebook. ``provenance``
    (``provenance.run_provenance``) is stamped into the executed copy, failed or not."""
    import nbformat
    import papermill  # imported here so that `course --help` stays fast

    start = time.perf_counter()
    failure = None
    try:
        papermill.execute_notebook(
            str(path),
            str(output_path),
            parameters=parameters,
            cwd=str(path.parent),
            kernel_name=KERNEL_NAME,
            progress_bar=progress,
            execution_timeout=cell_timeout,
        )
    except Exception as exc:  # noqa: BLE001 - any failure is reported, then the run goes on
        failure = _failure_from(exc)
    if provenance is not None and output_path.exists():
        executed = nbformat.read(output_path, as_version=4)
        stamp(executed, {**provenance, "seconds": round(time.perf_counter() - start, 1)})
        nbformat.write(executed, output_path)
    return NotebookResult(path.stem, output_path, time.perf_counter() - start, failure)


def run_course(
    notebooks: list[Path],
    profile_name: str,
    output_dir: Path,
    cell_timeout: int | None = None,
    progress: bool | None = None,
    echo=print,
    quick: bool = False,
) -> list[NotebookResult]:
    """Run ``notebooks`` one after another into ``output_dir``; return one result each.

    ``quick`` caps rows and steps (profiles.QUICK_CAPS) and keeps everything else.
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    forget_metrics(output_dir, [p.stem for p in notebooks])
    progress = sys.stderr.isatty() if progress is None else progress
    # The kernel must be this interpreter, whatever `python` means on PATH.
    # No TensorBoard server from an unattended run: the notebook prints the command instead.
    env = {
        "COURSE_PROFILE": profile_name,
        "COURSE_OUTPUT_DIR": str(output_dir),
        "COURSE_SHOW_TENSORBOARD": "0",
        "COURSE_QUICK": "1" if quick else "0",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    results = []
    provenance = run_provenance(profile_name, quick)
    with (
        tempfile.TemporaryDirectory(prefix="course-kernel-") as kernels,
        _kernel_environment({**env, **this_interpreter_kernel(Path(kernels))}),
    ):
        for i, path in enumerate(notebooks, start=1):
            echo(f"[{i}/{len(notebooks)}] {path.stem} ...", flush=True)
            params = {"PROFILE": profile_name, "OUTPUT_DIR": str(output_dir), "QUICK": "1" if quick else "0"}
            result = run_notebook(path, output_dir / path.name, params, cell_timeout, progress, provenance)
            status = "ok" if result.ok else f"FAILED at {result.failure.describe()}"
            echo(f"[{i}/{len(notebooks)}] {path.stem}: {status} ({result.seconds:.1f} s)", flush=True)
            results.append(result)
    return results


def _format_value(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def render_report(
    results: list[NotebookResult], metrics: dict, profile_name: str, quick: bool = False, when: str | None = None
) -> str:
    """The markdown report: a summary table, each notebook's figures, then the failures. The labs' time is
    counted apart from the lessons'. ``when`` the notebooks ran (default: now)."""
    failed = [r for r in results if not r.ok]
    total = sum(r.seconds for r in results)
    labs_total = sum(r.seconds for r in results if is_lab(r.name))
    split = (
        f" (lessons {total - labs_total:.1f} s, labs {labs_total:.1f} s)" if labs_total and labs_total != total else ""
    )
    when = when or datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    title = f"# Course run: profile `{profile_name}`" + (", quick" if quick else "")
    note = (
        [
            "**A quick run** (`--quick`): full architectures and settings, rows and steps capped "
            "(`course_utils/machinery/profiles.py`, `QUICK_CAPS`). Its figures check the set-up; they measure nothing "
            "worth comparing.",
            "",
        ]
        if quick
        else []
    )
    lines = [
        title,
        "",
        *note,
        f"{when}. {len(results)} notebook(s), {len(failed)} failed, {total:.1f} s in all{split}.",
        "",
        "| notebook | status | time (s) | figures |",
        "|---|---|---:|---:|",
    ]
    for r in results:
        n_fig = len(metrics.get(r.name, {}).get("figures", {}))
        lines.append(f"| {r.name} | {'ok' if r.ok else 'FAILED'} | {r.seconds:.1f} | {n_fig} |")
    for r in results:
        figures = metrics.get(r.name, {}).get("figures", {})
        lines += ["", f"## {r.name}", ""]
        if not figures:
            lines.append("No figures recorded.")
            continue
        lines += ["| figure | value | unit |", "|---|---:|---|"]
        lines += [f"| {k} | {_format_value(v['value'])} | {v['unit']} |" for k, v in figures.items()]
    if failed:
        lines += ["", "## Failures", ""]
        lines += [f"- **{r.name}**, {r.failure.describe()} (executed copy: `{r.output_path.name}`)" for r in failed]
    return "\n".join(lines) + "\n"


def write_report(results: list[NotebookResult], output_dir: Path, profile_name: str, quick: bool = False) -> Path:
    path = output_dir / REPORT_FILE
    path.write_text(render_report(results, read_metrics(output_dir), profile_name, quick), encoding="utf-8")
    return path
