"""The notebook runner: order, parameters, failure handling and the report."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import course_command

from course_utils.machinery.runner import NotebookFailure, NotebookResult, find_notebooks, render_report

FIXTURES = Path(__file__).parents[1] / "fixtures" / "notebooks"


# The tests that start `course run` in a subprocess are marked slow; the rest are plain unit tests.
@pytest.fixture(scope="module")
def failing_run(tmp_path_factory):
    """`course run` over three fixture notebooks, the middle one failing on purpose."""
    out = tmp_path_factory.mktemp("run")
    proc = subprocess.run(
        course_command("run", "--notebooks-dir", str(FIXTURES), "--output-dir", str(out)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc, out


@pytest.mark.slow
def test_failing_notebook_makes_the_command_fail_and_names_cell_and_error(failing_run):
    proc, _ = failing_run
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAILED 01_fails: cell 4" in proc.stderr
    assert "ValueError: deliberate failure: label 7 in row 2" in proc.stderr


@pytest.mark.slow
def test_the_run_prints_progress_and_results_not_jupyters_plumbing(failing_run):
    proc, _ = failing_run
    assert "without encryption" not in proc.stdout + proc.stderr  # the kernel's TCP warning
    assert "[1/3] 00_records: ok" in proc.stdout and "[3/3] 02_after: ok" in proc.stdout


@pytest.mark.slow
def test_notebooks_after_the_failure_still_run(failing_run):
    proc, out = failing_run
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["02_after"]["figures"]["ran_after_failure"]["value"] is True
    assert "01_fails" not in metrics  # it failed before recording
    order = [line.split("]")[1].split()[0] for line in proc.stdout.splitlines() if line.endswith("...")]
    assert order == ["00_records", "01_fails", "02_after"]


@pytest.mark.slow
def test_report_lists_status_times_figures_and_the_failure(failing_run):
    _, out = failing_run
    report = (out / "report.md").read_text()
    assert "| 00_records | ok |" in report and "| 01_fails | FAILED |" in report and "| 02_after | ok |" in report
    assert "| answer | 42 | units |" in report
    assert "**01_fails**, cell 4" in report and "deliberate failure" in report
    assert "3 notebook(s), 1 failed" in report


@pytest.mark.slow
def test_executed_copies_are_kept_even_for_the_failure(failing_run):
    _, out = failing_run
    failed = json.loads((out / "01_fails.ipynb").read_text())
    errors = [o for c in failed["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors and errors[0]["ename"] == "ValueError"


@pytest.mark.slow
def test_parameters_reach_the_notebook_and_smoke_is_offline(failing_run):
    _, out = failing_run
    figures = json.loads((out / "metrics.json").read_text())["00_records"]["figures"]
    assert figures["profile_seen"]["value"] == "smoke"
    assert figures["hub_offline"]["value"] == "1"
    injected = json.loads((out / "00_records.ipynb").read_text())["cells"]
    assert any("injected-parameters" in c["metadata"].get("tags", []) for c in injected)


def test_only_selects_by_number_or_name_and_rejects_unknown():
    assert [p.stem for p in find_notebooks(FIXTURES, ["00", "02_after"])] == ["00_records", "02_after"]
    assert [p.stem for p in find_notebooks(FIXTURES)] == ["00_records", "01_fails", "02_after"]
    with pytest.raises(ValueError, match="--only names no notebook: 07"):
        find_notebooks(FIXTURES, ["07"])


@pytest.mark.slow
def test_unknown_only_exits_2_with_a_message(tmp_path):
    proc = subprocess.run(
        course_command("run", "--notebooks-dir", str(FIXTURES), "--only", "9", "--output-dir", str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "--only names no notebook: 9" in proc.stderr


def test_report_without_failures_has_no_failure_section():
    results = [NotebookResult("00_x", Path("00_x.ipynb"), 1.5)]
    report = render_report(results, {"00_x": {"figures": {"f": {"value": 0.123456, "unit": "s"}}}}, "smoke")
    assert "Failures" not in report and "| f | 0.1235 | s |" in report
    failure = NotebookFailure(None, None, "DeadKernelError: kernel died")
    assert failure.describe() == "before any cell ran: DeadKernelError: kernel died"


def test_labs_come_after_the_lessons_and_only_takes_their_numbers():
    from course_utils.machinery.paths import notebooks_dir

    lessons = [p.stem for p in find_notebooks(notebooks_dir())]
    everything = [p.stem for p in find_notebooks(notebooks_dir(), labs=True)]
    assert everything[: len(lessons)] == lessons and all(s[2:4] == "L_" for s in everything[len(lessons) :])
    assert [s[:3] for s in everything[len(lessons) :]] == ["00L", "01L", "02L", "03L", "04L", "05L"]
    assert lessons[-1].startswith("05_")  # lesson 05 reads what 01, 03 and 04 wrote: it runs after them
    chosen = find_notebooks(notebooks_dir(), ["01", "01L"], labs=True)
    assert [p.stem[:3] for p in chosen] == ["01_", "01L"] and chosen[1].parent.name == "solutions"


def test_the_report_counts_the_labs_time_apart():
    results = [NotebookResult("01_x", Path("01_x.ipynb"), 10.0), NotebookResult("01L_y", Path("01L_y.ipynb"), 2.5)]
    report = render_report(results, {}, "smoke")
    assert "12.5 s in all (lessons 10.0 s, labs 2.5 s)." in report and "| 01L_y | ok | 2.5 | 0 |" in report


@pytest.mark.slow
def test_notebooks_run_in_the_interpreter_that_runs_course(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    from course_utils.machinery.runner import KERNEL_NAME, run_course

    decoys = tmp_path / "user-data" / "kernels"
    for name in ("python3", KERNEL_NAME):  # user-level kernelspecs pointing at something else
        (decoys / name).mkdir(parents=True)
        (decoys / name / "kernel.json").write_text(
            json.dumps({"argv": ["/bin/false", "{connection_file}"], "display_name": "decoy", "language": "python"})
        )
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "user-data"))
    record = tmp_path / "interpreter.txt"
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(f"import sys\nopen({str(record)!r}, 'w').write(sys.executable)")],
        metadata={
            "kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"},
            "language_info": {"name": "python"},
        },
    )  # as the course's notebooks are stored
    nbformat.write(notebook, tmp_path / "00_which.ipynb")
    results = run_course([tmp_path / "00_which.ipynb"], "smoke", tmp_path / "out", echo=lambda *a, **k: None)
    assert results[0].ok, results[0].failure
    assert record.read_text() == sys.executable


def test_a_quick_report_says_so():
    from course_utils.machinery.runner import render_report

    assert "quick" in render_report([], {}, "full", quick=True).splitlines()[0]
    assert "quick" not in render_report([], {}, "full").lower()
