"""`course grade` on a made-up class: every submission gets exactly its marks and its note, the sandbox holds, and
the course's files and the network are left alone.

The class is written by code from the labs' solutions and student copies (``fixture_class``), so it follows the
labs when they change: for lab 00L the solution, the untouched copy, a partial answer, a loop that never ends, a
connection to a server this test runs on 127.0.0.1, an allocation without end, a kernel that exits, invalid JSON,
lab 05L's notebook, printed ✔ lines, an edited check cell, a patched check module, reordered cells, a deleted
answer cell and a PDF; for lab 05L the solution, the untouched copy and a partial answer.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, course_command

from course_utils.labs import grading

pytestmark = pytest.mark.slow
LABS = ROOT / "notebooks" / "labs"
CELL_TIMEOUT = 20  # seconds: the loop's cell stops here
MEMORY_GIB = 6


def notebook(lab: str, solution: bool) -> dict:
    folder = LABS / "solutions" if solution else LABS
    return json.loads(next(folder.glob(f"{lab}_*.ipynb")).read_text())


def answer_cells(lab: str) -> list[int]:
    """Indices of the lab's answer cells, in order (the cells with a stub in the student copy)."""
    return [i for i, role in enumerate(grading.read_lab(lab).roles) if role == "answer"]


def cell_of(lab: str, check: str) -> int:
    layout = grading.read_lab(lab)
    return next(i for i, name in layout.item_of_cell.items() if name == check)


def with_source(nb: dict, index: int, source: str) -> dict:
    changed = copy.deepcopy(nb)
    changed["cells"][index]["source"] = source
    return changed


def solved(lab: str, tasks: list[int], questions: list[int]) -> dict:
    """The student copy with the solution's answers to these tasks (by answer cell) and questions (1, 2, 3)."""
    student, solution = notebook(lab, False), notebook(lab, True)
    for k in tasks:
        index = answer_cells(lab)[k]
        student["cells"][index] = copy.deepcopy(solution["cells"][index])
    layout = grading.read_lab(lab)
    for index, name in layout.item_of_cell.items():
        if name.startswith("q") and int(name[1:]) in questions:
            student["cells"][index] = copy.deepcopy(solution["cells"][index])
    return student


def fixture_class(folder: Path, port: int) -> dict[str, tuple[dict, str]]:
    """Writes the class into ``folder`` (00L/ and 05L/); returns, per lab and student, the items expected to pass
    and a fragment of the expected note ("" for none)."""
    s00 = notebook("00L", True)
    answers = answer_cells("00L")
    items00 = [item.name for item in grading.read_lab("00L").items]
    everything = set(items00)
    task2 = "training_state_bytes"
    crash = with_source(s00, answers[1], "import os\nos._exit(7)")
    loop = with_source(s00, answers[1], "while True:\n    pass")
    network = with_source(
        s00,
        answers[0],
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
        + "".join(s00["cells"][answers[0]]["source"]),
    )
    memory = with_source(s00, answers[2], "hoard = []\nwhile True:\n    hoard.append(bytearray(200_000_000))")
    printed = notebook("00L", False)
    for index in answers:
        printed["cells"][index]["source"] = "print('✔ all right: every check passed')"
    for index in grading.read_lab("00L").item_of_cell:
        printed["cells"][index]["source"] = "print('✔ right')"
    edited = solved("00L", [0], [])
    edited["cells"][cell_of("00L", task2)]["source"] = "print('✔ training_state_bytes: right')"
    patched = solved("00L", [], [])
    patched["cells"][answers[0]]["source"] = (
        "from course_utils.labs import check, what_fits\n"
        "check.parameter_count = lambda *a, **k: print('✔ parameter_count')\n"
        "what_fits.parameter_count = lambda *a, **k: None\n"
        "import course_utils.labs.verdict as verdict\n"
        "verdict.CheckFailed = type('Never', (Exception,), {})\n"
    )
    if grading.namespaces_available(folder):  # where files are not protected, the test does not try to change them
        for target in (ROOT / "course_utils" / "labs" / "check.py", folder / "escaped.txt"):
            patched["cells"][answers[0]]["source"] += f"try:\n    open({str(target)!r}, 'a').write('# patched')\n"
            patched["cells"][answers[0]]["source"] += "except OSError:\n    pass\n"
    reordered = copy.deepcopy(s00)
    reordered["cells"] = reordered["cells"][::-1]
    deleted = copy.deepcopy(s00)
    del deleted["cells"][answers[2]]
    class00 = {
        "solution": (s00, everything, ""),
        "untouched": (notebook("00L", False), set(), ""),
        "partial": (solved("00L", [0, 2], [1]), {"parameter_count", "rows_that_fit", "q1"}, ""),
        "loops_forever": (loop, everything - {task2}, f"ran past its {CELL_TIMEOUT} s limit"),
        "calls_the_network": (network, everything - {"parameter_count"}, "tried to open a network connection"),
        "hoards_memory": (memory, everything - {"rows_that_fit"}, f"ran out of memory (its cap is {MEMORY_GIB} GiB)"),
        "crashes_the_kernel": (crash, {"parameter_count"}, "the kernel died at cell"),
        "invalid_json": ("{ not json", set(), "not a notebook: invalid JSON at line 1, column 3"),
        "wrong_lab": (notebook("05L", True), set(), "the wrong lab: this is lab 05L's notebook, not 00L's"),
        "prints_checkmarks": (printed, set(), "was edited: the course's ran"),
        "edits_a_check": (edited, {"parameter_count"}, f"the check cell of {task2} was edited"),
        "patches_the_checks": (patched, set(), ""),
        "reordered": (reordered, everything, "cells reordered"),
        "deleted_a_cell": (deleted, everything - {"rows_that_fit"}, "the answer cell of Task 3"),
        "sent_a_pdf": (b"%PDF-1.4", set(), "not a notebook: sent_a_pdf.pdf"),
    }
    items05 = {item.name for item in grading.read_lab("05L").items}
    class05 = {
        "solution": (notebook("05L", True), items05, ""),
        "untouched": (notebook("05L", False), set(), ""),
        "partial": (solved("05L", [0, 2], [1, 2]), {"bootstrap_difference", "cohen_kappa", "q1", "q2"}, ""),
    }
    expected = {}
    for lab, members in (("00L", class00), ("05L", class05)):
        (folder / lab).mkdir(parents=True)
        for student, (content, passes, note) in members.items():
            name = f"{student}.pdf" if isinstance(content, bytes) else f"{student}.ipynb"
            path = folder / lab / name
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content if isinstance(content, str) else json.dumps(content, indent=1))
            expected[lab, student] = (passes, note)
    return expected


class CountingServer:
    """A TCP server on 127.0.0.1 that counts the connections it accepts: the sandbox must let none through."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted += 1
            connection.close()


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    skip = {".git", ".cache", "outputs", ".venv", ".venv-hub", ".venv-latest", ".venv-node", ".ruff_cache"}
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip and d != "__pycache__"]
        for name in filenames:
            path = Path(dirpath) / name
            stat = path.stat()
            found[str(path.relative_to(root))] = (stat.st_size, stat.st_mtime_ns)
    return found


def grade_class(lab: str, folder: Path, out: Path, *extra) -> subprocess.CompletedProcess:
    command = course_command(
        "grade", lab, folder, "--output-dir", out, "--jobs", 2, "--cell-timeout", CELL_TIMEOUT,
        "--memory-gib", MEMORY_GIB, *(extra or ("--timeout", 240)),
    )  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=1800)


def test_a_class_gets_exactly_its_marks_and_notes(tmp_path, netguard_log):
    server = CountingServer()
    expected = fixture_class(tmp_path / "class", server.port)
    assert len([key for key in expected if key[0] == "00L"]) + len([k for k in expected if k[0] == "05L"]) >= 12
    before = snapshot(ROOT)
    temporary = set(Path(tempfile.gettempdir()).glob("course-grade-*"))
    for lab in ("00L", "05L"):
        result = grade_class(lab, tmp_path / "class" / lab, tmp_path / "grades" / lab)
        assert result.returncode == 0, result.stderr[-3000:]
        rows = list(csv.DictReader(open(tmp_path / "grades" / lab / "grades.csv")))
        items = [item.name for item in grading.read_lab(lab).items]
        assert [row["student"] for row in rows] == sorted(s for (lab_, s) in expected if lab_ == lab)
        for row in rows:
            passes, note = expected[lab, row["student"]]
            got = {name for name in items if row[name] == "1"}
            assert got == passes, (lab, row["student"], got, row["note"])
            assert int(row["total"]) == len(passes) and int(row["max"]) == len(items)
            assert note in row["note"], (lab, row["student"], row["note"])
            if not note:
                assert row["note"] == "", (lab, row["student"], row["note"])
            feedback = (tmp_path / "grades" / lab / "feedback" / f"{row['student']}.md").read_text()
            assert f"**{len(passes)} of {len(items)}** points." in feedback
    assert not (tmp_path / "class" / "escaped.txt").exists(), "a submission wrote outside its working folder"
    assert server.accepted == 0, "a submission reached the server outside the sandbox"
    assert snapshot(ROOT) == before, "grading created or changed a file of the course"
    assert set(Path(tempfile.gettempdir()).glob("course-grade-*")) == temporary, "a working folder was left behind"
    assert not netguard_log.read_text().strip(), "the grading run tried to connect to the network"
    feedback = (tmp_path / "grades" / "00L" / "feedback" / "edits_a_check.md").read_text()
    assert "training_state_bytes" in feedback and "not done: Task 2" in feedback
    summary = (tmp_path / "grades" / "00L" / "summary.md").read_text()
    passed = sum("parameter_count" in passes for (lab, _), (passes, _) in expected.items() if lab == "00L")
    rate = f"| {passed} of 15 | {passed / 15:.0%} |"
    assert f"| Task 1 · T5's parameters from its config (parameter_count) {rate}" in summary, summary
    assert (tmp_path / "grades" / "00L" / "pass_rate.png").stat().st_size > 5_000

    # A second run grades nothing again; a changed check makes it say so and grade again.
    again = grade_class("05L", tmp_path / "class" / "05L", tmp_path / "grades" / "05L")
    assert "3 submissions, 3 graded before, 0 to grade" in again.stdout, again.stdout
    handed_in = tmp_path / "class" / "05L" / "untouched.ipynb"
    handed_in.write_text(handed_in.read_text() + "\n")  # handed in again
    anew = grade_class("05L", tmp_path / "class" / "05L", tmp_path / "grades" / "05L")
    assert "3 submissions, 2 graded before, 1 to grade" in anew.stdout, anew.stdout
    assert "The checks changed" not in anew.stdout
    saved = tmp_path / "grades" / "05L" / "results" / "partial.json"
    record = json.loads(saved.read_text())
    saved.write_text(json.dumps({**record, "fingerprint": "older checks"}))
    regraded = grade_class("05L", tmp_path / "class" / "05L", tmp_path / "grades" / "05L")
    assert "The checks changed since 1 submission(s) were graded: they were graded again." in regraded.stdout
    assert "**The checks changed**" in (tmp_path / "grades" / "05L" / "summary.md").read_text()


def test_a_zip_of_folders_is_unpacked_and_bad_input_gets_rows(tmp_path):
    import zipfile

    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("export/ada_12/00L_what_fits.ipynb", json.dumps(notebook("00L", True)))
        out.writestr("export/ben_13/notes.txt", "nothing")
        out.writestr("export/cy_14/a.ipynb", json.dumps(notebook("00L", False)))
        out.writestr("export/cy_14/b.ipynb", json.dumps(notebook("00L", False)))
    found = grading.find_submissions(archive, "00L", tmp_path / "unpacked")
    assert [(s, p.name if p else None, n) for s, p, n in found] == [
        ("ada_12", "00L_what_fits.ipynb", ""),
        ("ben_13", None, "no notebook in the folder"),
        ("cy_14", None, "several notebooks, none of them 00L's: a.ipynb, b.ipynb"),
    ]
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as out:
        out.writestr("../outside.ipynb", "{}")
    with pytest.raises(grading.InputError, match="would unpack outside its folder"):
        grading.find_submissions(evil, "00L", tmp_path / "unpacked-evil")
    assert not (tmp_path / "outside.ipynb").exists()


def test_an_unknown_lab_is_one_line(tmp_path):
    result = subprocess.run(course_command("grade", "09L", tmp_path), capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert (
        result.stderr.strip() == "course grade: no lab '09L' in notebooks/labs/ (labs: 00L, 01L, 02L, 03L, 04L, 05L)."
    )


def test_a_question_takes_only_the_letter_from_the_submission():
    lab = grading.read_lab("00L")
    index = next(i for i, name in lab.item_of_cell.items() if name == "q1")
    assert (
        grading.question_source(lab, index, 'q1 = "b"\nprint("✔ question 1")')
        == "q1 = 'b'\ncheck.question(\"00L\", 1, q1)"
    )
    assert grading.question_source(lab, index, "q1 = compute()") == 'q1 = ...\ncheck.question("00L", 1, q1)'
    assert grading.question_source(lab, index, "q1 = (") == 'q1 = ...\ncheck.question("00L", 1, q1)'


if __name__ == "__main__":  # python tests/labs/test_grading.py DIR: write the class there, to look at
    print(fixture_class(Path(sys.argv[1]), 9))


def test_a_submission_that_outlasts_its_time_limit_is_stopped_and_keeps_what_it_earned(tmp_path):
    """A loop that swallows the cell's alarm: only the submission's own limit stops it (its process group killed)."""
    stubborn = with_source(
        notebook("00L", True),
        answer_cells("00L")[1],
        "import time\nwhile True:\n    try:\n        time.sleep(1)\n    except BaseException:\n        pass",
    )
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "stubborn.ipynb").write_text(json.dumps(stubborn))
    start = time.monotonic()
    result = grade_class("00L", tmp_path / "class", tmp_path / "grades", "--timeout", 45)
    assert result.returncode == 0, result.stderr[-3000:]
    assert time.monotonic() - start < 120
    (row,) = csv.DictReader(open(tmp_path / "grades" / "grades.csv"))
    assert row["parameter_count"] == "1" and row["total"] == "1", row
    assert row["note"].startswith("stopped after the 45 s a submission may take at cell"), row["note"]
