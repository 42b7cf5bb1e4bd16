"""`course grade LAB SUBMISSIONS`: a class's lab notebooks graded by the course's own checks, each in a sandbox.

    course grade 03L submissions/            # a folder of .ipynb files, or of one folder per student
    course grade 00L export.zip --jobs 2     # the .zip a learning platform exports
    -> outputs/grades/<lab>/grades.csv, feedback/<student>.md, summary.md, pass_rate.png, provenance.json

What a grade rests on: the grader builds each submission's notebook itself, from a fresh copy of the lab's student
copy in ``notebooks/labs/``: the submission gives only its answer cells (matched by cell id) and the letters of
its questions; the set-up, the inputs and the check cells are the course's. The cells run in a process of their
own (``grade_worker.py``), which imports the checks afresh before each check and reports each check's outcome to
the grader; nothing the submission prints is read. Every task is graded: a failed one scores 0, and the next runs.

The sandbox, per submission: a time limit for the submission and one per cell (the profile's ``grading``, or
``--timeout`` and ``--cell-timeout``), a memory cap (``--memory-gib``, as RLIMIT_AS), no network (a network
namespace, ``unshare --net``, where the machine allows one; in every case an audit hook refuses connections), and a
working directory of its own, in memory, gone afterwards. With namespaces, the root file system and the repository
(and with it the checks) are mounted read-only, and the other submissions' folders are hidden. Out of reach, as for nbgrader and
otter-grader: code that patches Python itself (its import system, its audit hooks, the interpreter's frames).
"""

from __future__ import annotations

import ast
import csv
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from course_utils.machinery.configs import InputError
from course_utils.machinery.paths import notebooks_dir, repo_root
from course_utils.machinery.provenance import commit
from course_utils.machinery.runner import student_labs

STUB = "raise NotImplementedError("
CHECK_CALL = re.compile(r"^check\.(\w+)\(")
QUESTION_CALL = re.compile(r"check\.question\(\s*\"(\w+)\"\s*,\s*(\d+)\s*,\s*(q\d+)\s*\)")
TASK_HEADING = re.compile(r"^###\s+(Task\b.*?)\s*$", re.M)
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
RESULTS = "results"  # one JSON per student: what a second run skips


@dataclass(frozen=True)
class GradeSettings:
    """One grading run, settled before it starts."""

    lab: str  # "03L"
    submissions: Path  # a folder of notebooks, of folders, or a .zip
    out_dir: Path  # outputs/grades/<lab>
    jobs: int  # submissions graded at once
    timeout_s: int  # a submission's time limit
    cell_timeout_s: int  # a cell's
    memory_gib: float  # a submission's memory cap
    profile: str = "smoke"
    force: bool = False  # grade again what a previous run graded with the same checks


@dataclass(frozen=True)
class Item:
    """What earns a point: a task's check or a question."""

    name: str  # the check's name ("parameter_count") or the question's variable ("q1")
    label: str  # "Task 1 · T5's parameters from its config", "Question 1"


@dataclass
class Lab:
    """A lab as its student copy lays it out: cells with their roles, and the items they are graded on."""

    name: str  # "03L"
    path: Path
    notebook: dict
    items: list[Item]
    roles: list[str]  # per cell: markdown, given, answer, check, question
    item_of_cell: dict[int, str]  # cell index -> item name (checks, questions)
    task_of_cell: dict[int, str]  # answer cell index -> its task's heading

    @property
    def answer_ids(self) -> list[str]:
        return [self.notebook["cells"][i]["id"] for i, role in enumerate(self.roles) if role in ("answer", "question")]


@dataclass
class Outcome:
    """One student's grade: each item's verdict, and what went wrong around them."""

    student: str
    verdicts: dict[str, tuple[bool, str]] = field(default_factory=dict)  # item -> (passed, message)
    notes: list[str] = field(default_factory=list)
    fingerprint: str = ""  # the checks' (checks_fingerprint)
    submitted: str = ""  # the submission's (submission_fingerprint): a new hand-in is graded again

    def to_json(self) -> dict:
        return {
            "student": self.student,
            "verdicts": self.verdicts,
            "notes": self.notes,
            "fingerprint": self.fingerprint,
            "submitted": self.submitted,
        }

    @classmethod
    def from_json(cls, data: dict) -> Outcome:
        verdicts = {k: (bool(v[0]), str(v[1])) for k, v in data["verdicts"].items()}
        return cls(data["student"], verdicts, list(data["notes"]), data["fingerprint"], data.get("submitted", ""))


class BadSubmission(Exception):
    """A submission that cannot be graded; its message is the row's note."""


def lab_number(path: Path) -> str:
    return path.name.split("_")[0]  # "03L"


def lab_path(lab: str) -> Path:
    labs = student_labs(notebooks_dir())
    found = [path for path in labs if lab_number(path) == lab]
    if not found:
        raise InputError(f"no lab {lab!r} in notebooks/labs/ (labs: {', '.join(map(lab_number, labs))}).")
    return found[0]


def read_lab(lab: str) -> Lab:
    """The lab's student copy, each code cell given its role: the answer cells are those with a stub."""
    path = lab_path(lab)
    notebook = json.loads(path.read_text(encoding="utf-8"))
    roles, items, item_of_cell, task_of_cell, task = [], [], {}, {}, ""
    for index, cell in enumerate(notebook["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] != "code":
            headings = TASK_HEADING.findall(source)
            task = headings[-1] if headings else task
            roles.append("markdown")
            continue
        question = QUESTION_CALL.search(source)
        check = CHECK_CALL.match(source.strip())
        if question:
            roles.append("question")
            name = question.group(3)
            items.append(Item(name, f"Question {question.group(2)}"))
            item_of_cell[index] = name
        elif check:
            roles.append("check")
            name = check.group(1)
            items.append(Item(name, f"{task} ({name})" if task else name))
            item_of_cell[index] = name
        elif STUB in source:
            roles.append("answer")
            task_of_cell[index] = task
        else:
            roles.append("given")
    return Lab(lab, path, notebook, items, roles, item_of_cell, task_of_cell)


def submission_fingerprint(path: Path | None, note: str) -> str:
    """What a submission handed in: its bytes, or the reason there is nothing to read."""
    return hashlib.sha256(path.read_bytes() if path is not None else note.encode()).hexdigest()[:16]


def checks_fingerprint(lab: Lab) -> str:
    """What the verdicts depend on: the lab's student copy and the checks' code (labs/*.py)."""
    digest = hashlib.sha256(lab.path.read_bytes())
    for path in sorted((Path(__file__).parent).glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


# ---- the submissions ----


def student_name(text: str) -> str:
    return SAFE_NAME.sub("_", text).strip("_") or "unnamed"


def find_submissions(path: Path, lab: str, unpacked: Path) -> list[tuple[str, Path | None, str]]:
    """(student, notebook or None, note) for each submission in a folder or a .zip (unpacked into ``unpacked``),
    sorted by student."""
    if not path.exists():
        raise InputError(f"{path} does not exist: give a folder of notebooks, of folders, or a .zip.")
    if path.is_file():
        if not zipfile.is_zipfile(path):
            raise InputError(f"{path} is neither a folder nor a .zip.")
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                target = (unpacked / member).resolve()
                if not target.is_relative_to(unpacked.resolve()):
                    raise InputError(f"{path}: {member!r} would unpack outside its folder; not unpacked.")
            archive.extractall(unpacked)
        entries = [p for p in unpacked.iterdir() if not p.name.startswith(("__MACOSX", "."))]
        path = entries[0] if len(entries) == 1 and entries[0].is_dir() else unpacked
    found = []
    for entry in sorted(path.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            notebooks = sorted(entry.rglob("*.ipynb"))
            notebooks = [p for p in notebooks if ".ipynb_checkpoints" not in p.parts]
            chosen = [p for p in notebooks if p.name.startswith(lab)] or notebooks
            if len(chosen) == 1:
                found.append((student_name(entry.name), chosen[0], ""))
            elif not chosen:
                found.append((student_name(entry.name), None, "no notebook in the folder"))
            else:
                names = ", ".join(p.name for p in chosen)
                found.append((student_name(entry.name), None, f"several notebooks, none of them {lab}'s: {names}"))
        elif entry.suffix == ".ipynb":
            found.append((student_name(entry.stem), entry, ""))
        else:
            found.append((student_name(entry.stem), None, f"not a notebook: {entry.name}"))
    names = [student for student, _, _ in found]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise InputError(f"two submissions have the same student name: {', '.join(sorted(duplicates))}; rename one.")
    return found


def read_submission(path: Path) -> dict:
    """The submission as a notebook dict; BadSubmission naming what is wrong."""
    import nbformat

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise BadSubmission("not a notebook: the file is not text") from None
    except json.JSONDecodeError as err:
        raise BadSubmission(f"not a notebook: invalid JSON at line {err.lineno}, column {err.colno}") from None
    try:
        notebook = nbformat.convert(nbformat.from_dict(data), 4)
        nbformat.validate(notebook)
    except Exception as err:  # noqa: BLE001 - nbformat raises several kinds
        raise BadSubmission(f"not a Jupyter notebook ({type(err).__name__})") from None
    return notebook


def question_source(lab: Lab, index: int, submitted: str) -> str:
    """The course's question cell with the submission's letter: only a ``qN = "..."`` string is taken from it."""
    course = "".join(lab.notebook["cells"][index]["source"])
    name = lab.item_of_cell[index]
    letter = None
    try:
        for node in ast.parse(submitted).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
                if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    letter = node.value.value
    except SyntaxError:
        pass
    answer = f"{name} = {letter!r}" if letter is not None else f"{name} = ..."
    return re.sub(rf"^{name}\s*=.*$", lambda _: answer, course, count=1, flags=re.M)


def plan(lab: Lab, submission: dict, other_labs: dict[str, set[str]]) -> tuple[list[dict], list[str]]:
    """The cells to run, in the lab's order (the course's cells, the submission's answers), and notes on what the
    submission changed; BadSubmission when it has none of the lab's answer cells."""
    cells = {cell.get("id"): cell for cell in submission["cells"] if cell.get("id")}
    ids = set(lab.answer_ids)
    if not ids & set(cells):
        for other, other_ids in other_labs.items():
            if other != lab.name and len(other_ids & set(cells)) >= max(1, len(other_ids) // 2):
                raise BadSubmission(f"the wrong lab: this is lab {other}'s notebook, not {lab.name}'s")
        raise BadSubmission(f"none of lab {lab.name}'s answer cells: was it made from the lab's student copy?")
    notes, planned = [], []
    order = [cid for cid in (c.get("id") for c in submission["cells"]) if cid in ids]
    if order != [cid for cid in lab.answer_ids if cid in order]:
        notes.append("cells reordered: graded in the lab's order")
    for index, cell in enumerate(lab.notebook["cells"]):
        role = lab.roles[index]
        if role == "markdown":
            continue
        source = "".join(cell["source"])
        entry = {"index": index, "kind": role, "source": source}
        submitted = cells.get(cell["id"])
        if role == "answer":
            if submitted is None:
                notes.append(f"the answer cell of {lab.task_of_cell[index] or f'cell {index}'} is missing")
                entry["source"] = f"raise RuntimeError('the answer cell of this task was deleted')\n{source}"
            else:
                entry["source"] = "".join(submitted["source"])
        elif role == "question":
            entry["item"] = lab.item_of_cell[index]
            entry["source"] = question_source(lab, index, "".join(submitted["source"]) if submitted else "")
        elif role == "check":
            entry["item"] = lab.item_of_cell[index]
            if submitted is not None and "".join(submitted["source"]).strip() != source.strip():
                notes.append(f"the check cell of {lab.item_of_cell[index]} was edited: the course's ran")
        planned.append(entry)
    return planned, notes


# ---- the sandbox ----


def namespaces_available(grades: Path) -> bool:
    """Whether the sandbox's namespaces work here: `unshare --net --mount` (root) and the mounts of SANDBOX_SCRIPT,
    tried once on empty folders. A machine that allows the one but not the other gets no namespaces at all."""
    if not shutil.which("unshare") or os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory(prefix="course-grade-probe-") as base:
        env = dict(os.environ, REPO=str(repo_root()), GRADES=str(grades), BASE=base)
        try:
            probe = subprocess.run(
                sandbox_command(["true"], isolated=True), capture_output=True, timeout=30, env=env, cwd=base
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
    return probe.returncode == 0


# In the submission's namespaces: the root file system and the repository read-only, the grades, every other
# working folder and /dev/shm hidden under empty in-memory folders, and a working folder of its own in memory.
SANDBOX_SCRIPT = """set -e
mount --make-rprivate /
mount -o remount,bind,ro /
mount --bind "$REPO" "$REPO" && mount -o remount,bind,ro "$REPO"
mount -t tmpfs tmpfs "$GRADES"
mount -t tmpfs tmpfs "$BASE"
if [ -d /dev/shm ]; then mount -t tmpfs tmpfs /dev/shm; fi
mkdir "$BASE/work" && cd "$BASE/work"
exec "$@"
"""


def sandbox_command(worker: list[str], isolated: bool) -> list[str]:
    if not isolated:
        return worker
    return ["unshare", "--net", "--mount", "--", "sh", "-c", SANDBOX_SCRIPT, "sandbox", *worker]


def _limits(memory_bytes: int):
    def apply() -> None:
        import resource

        os.setsid()  # its own process group: a timeout kills everything it started
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def run_sandboxed(settings: GradeSettings, cells: list[dict], base: Path, isolated: bool, log: Path) -> dict:
    """Run the planned cells in a sandbox; what the worker reported, and how the process ended."""
    work = base / "work"
    work.mkdir(parents=True, exist_ok=True)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("COURSE_", "JUPYTER", "PAPERMILL")) or key == "COURSE_NETGUARD_LOG"
    }
    env.update(
        COURSE_PROFILE=settings.profile,
        COURSE_OUTPUT_DIR="outputs",
        COURSE_CACHE_DIR="cache",
        COURSE_QUICK="0",
        HOME=str(base / "work"),
        TMPDIR=str(base / "work"),
        MPLBACKEND="Agg",
        MPLCONFIGDIR=str(base / "work" / ".matplotlib"),
        PYTHONDONTWRITEBYTECODE="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        REPO=str(repo_root()),
        GRADES=str(settings.out_dir),
        BASE=str(base),
    )
    read_end, write_end = os.pipe()
    worker = [sys.executable, "-m", "course_utils.labs.grade_worker", str(write_end)]
    started = time.monotonic()
    with open(log, "w") as log_file:
        process = subprocess.Popen(
            sandbox_command(worker, isolated),
            stdin=subprocess.PIPE,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=work,
            env=env,
            pass_fds=(write_end,),
            preexec_fn=_limits(int(settings.memory_gib * 2**30)),
        )
        os.close(write_end)
        records: list[dict] = []

        def read() -> None:
            with os.fdopen(read_end) as stream:
                for line in stream:
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError:
                        records.append({"garbled": line[:200]})

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            process.stdin.write(json.dumps({"cells": cells, "cell_timeout": settings.cell_timeout_s}).encode())
            process.stdin.close()
        except BrokenPipeError:
            pass
        timed_out = False
        try:
            process.wait(timeout=settings.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        reader.join(timeout=30)
    return {
        "records": records,
        "returncode": process.returncode,
        "timed_out": timed_out,
        "seconds": time.monotonic() - started,
    }


def outcome_of(lab: Lab, student: str, ran: dict, notes: list[str], settings: GradeSettings) -> Outcome:
    """Each item's verdict from what the worker reported; an item it never reached scores 0 with the reason."""
    outcome = Outcome(student, notes=list(notes))
    records = ran["records"]
    started = None
    for record in records:
        if "started" in record:
            started = record["started"]
        elif "item" in record:
            outcome.verdicts[record["item"]] = (bool(record["passed"]), record["message"])
        elif record.get("kind") == "answer" and record.get("error", "").startswith("CellTimeout"):
            outcome.notes.append(f"cell {record['cell']} ran past its {settings.cell_timeout_s} s limit")
        if record.get("network"):
            outcome.notes.append("tried to open a network connection, refused by the sandbox")
        if record.get("memory"):
            outcome.notes.append(f"ran out of memory (its cap is {settings.memory_gib:g} GiB)")
        if "garbled" in record:
            outcome.notes.append("the worker's report was garbled: the submission wrote into it")
    done = any(record.get("done") for record in records)
    if not done:
        where = f" at cell {started}" if started is not None else ""
        if ran["timed_out"]:
            outcome.notes.append(f"stopped after the {settings.timeout_s} s a submission may take{where}")
        elif ran["returncode"] in (-signal.SIGKILL, 137):
            outcome.notes.append(f"killed{where} (out of memory or a signal)")
        else:
            outcome.notes.append(f"the kernel died{where} (exit status {ran['returncode']})")
    reason = outcome.notes[-1] if not done else "not reached"
    for item in lab.items:
        outcome.verdicts.setdefault(item.name, (False, f"not graded: {reason}"))
    outcome.notes = list(dict.fromkeys(outcome.notes))  # each note once, in order
    return outcome


def grade_one(
    settings: GradeSettings,
    lab: Lab,
    student: str,
    path: Path | None,
    note: str,
    isolated: bool,
    other_labs: dict[str, set[str]],
    fingerprint: str,
) -> Outcome:
    """One submission's outcome; never raises for anything the submission holds."""

    def zero(reason: str) -> Outcome:
        outcome = Outcome(student, {item.name: (False, f"not graded: {reason}") for item in lab.items}, [reason])
        outcome.fingerprint = fingerprint
        return outcome

    if path is None:
        return zero(note)
    try:
        cells, notes = plan(lab, read_submission(path), other_labs)
    except BadSubmission as err:
        return zero(str(err))
    logs = settings.out_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix=f"course-grade-{student}-"))
    try:
        ran = run_sandboxed(settings, cells, base, isolated, logs / f"{student}.txt")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    outcome = outcome_of(lab, student, ran, notes, settings)
    outcome.fingerprint = fingerprint
    return outcome


# ---- the gradebook ----


def write_gradebook(settings: GradeSettings, lab: Lab, outcomes: list[Outcome], provenance: dict) -> None:
    out = settings.out_dir
    names = [item.name for item in lab.items]
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *names, "total", "max", "note"])
        for outcome in outcomes:
            points = [int(outcome.verdicts[name][0]) for name in names]
            writer.writerow([outcome.student, *points, sum(points), len(names), "; ".join(outcome.notes)])
    feedback = out / "feedback"
    feedback.mkdir(exist_ok=True)
    for outcome in outcomes:
        total = sum(outcome.verdicts[name][0] for name in names)
        lines = [f"# Lab {lab.name}: feedback for {outcome.student}", "", f"**{total} of {len(names)}** points.", ""]
        if outcome.notes:
            lines += ["What the grader noticed:", "", *(f"- {note}" for note in outcome.notes), ""]
        lines += ["| | task | verdict |", "|---|---|---|"]
        for item in lab.items:
            passed, message = outcome.verdicts[item.name]
            verdict = "right" if passed else message.replace("|", "\\|") or "wrong"
            lines.append(f"| {'✔' if passed else '✘'} | {item.label} | {verdict} |")
        (feedback / f"{outcome.student}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rates = {item.name: sum(o.verdicts[item.name][0] for o in outcomes) / max(1, len(outcomes)) for item in lab.items}
    chart = pass_rate_chart(lab, rates, out / "pass_rate.png")
    lines = [
        f"# Lab {lab.name}: {len(outcomes)} submissions",
        "",
        f"Graded {provenance['graded']} with the course at commit `{provenance['commit']}`, checks fingerprint "
        f"`{provenance['checks_fingerprint']}`; sandbox: {provenance['sandbox']}.",
        "",
    ]
    if provenance.get("regraded"):
        lines += [
            f"**The checks changed** since {provenance['regraded']} submission(s) were last graded: regraded.",
            "",
        ]
    lines += ["| task | passed | pass rate |", "|---|---:|---:|"]
    for item in lab.items:
        passed = sum(o.verdicts[item.name][0] for o in outcomes)
        lines.append(f"| {item.label} | {passed} of {len(outcomes)} | {rates[item.name]:.0%} |")
    lines += ["", f"![pass rate per task]({chart.name})", ""]
    (out / "summary.md").write_text("\n".join(lines), encoding="utf-8")
    (out / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n", encoding="utf-8")


def pass_rate_chart(lab: Lab, rates: dict[str, float], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 0.45 * len(rates) + 1.2))
    names = list(rates)[::-1]
    axis.barh(names, [rates[n] * 100 for n in names], color="#1f5f8b")
    axis.set_xlim(0, 100)
    axis.set_xlabel("submissions that passed (%)")
    axis.set_title(f"Lab {lab.name}: where the class got stuck")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def grade(settings: GradeSettings, echo=print) -> list[Outcome]:
    """Grade every submission (skipping those graded before with the same checks, unless ``force``) and write the
    gradebook; the outcomes in student order."""
    from tqdm.auto import tqdm

    lab = read_lab(settings.lab)
    other_labs = {
        lab_number(path): set(read_lab(lab_number(path)).answer_ids) for path in student_labs(notebooks_dir())
    }
    fingerprint = checks_fingerprint(lab)
    settings.out_dir.mkdir(parents=True, exist_ok=True)
    isolated = namespaces_available(settings.out_dir)
    saved = settings.out_dir / RESULTS
    saved.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="course-grade-unpacked-") as unpacked:
        found = find_submissions(settings.submissions, settings.lab, Path(unpacked))
        outcomes: dict[str, Outcome] = {}
        todo, regraded = [], 0
        for student, path, note in found:
            previous = saved / f"{student}.json"
            if previous.exists() and not settings.force:
                earlier = Outcome.from_json(json.loads(previous.read_text(encoding="utf-8")))
                if earlier.fingerprint == fingerprint and earlier.submitted == submission_fingerprint(path, note):
                    outcomes[student] = earlier
                    continue
                regraded += earlier.fingerprint != fingerprint
            todo.append((student, path, note))
        echo(
            f"Lab {lab.name}: {len(found)} submissions, {len(found) - len(todo)} graded before, {len(todo)} to grade "
            f"with {settings.jobs} at a time ({'namespaces' if isolated else 'no namespaces: audit hook only'})",
            flush=True,
        )
        with ThreadPoolExecutor(max_workers=settings.jobs) as pool:
            futures = {
                pool.submit(grade_one, settings, lab, s, p, n, isolated, other_labs, fingerprint): s for s, p, n in todo
            }
            for future in tqdm(as_completed(futures), total=len(futures), desc="grading", unit="submission"):
                outcome = future.result()
                outcome.submitted = submission_fingerprint(*next((p, n) for s, p, n in todo if s == outcome.student))
                outcomes[outcome.student] = outcome
                (saved / f"{outcome.student}.json").write_text(json.dumps(outcome.to_json()), encoding="utf-8")
    ordered = [outcomes[student] for student, _, _ in found]
    provenance = {
        "lab": lab.name,
        "graded": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "checks_fingerprint": fingerprint,
        "sandbox": (
            "network and mount namespaces (unshare --net --mount), repository read-only, working folder in memory"
            if isolated
            else "no namespaces on this machine: an audit hook refuses connections, a temporary working folder"
        )
        + f"; {settings.timeout_s} s a submission, {settings.cell_timeout_s} s a cell, {settings.memory_gib:g} GiB",
        "regraded": regraded,
    }
    if regraded:
        echo(f"The checks changed since {regraded} submission(s) were graded: they were graded again.", flush=True)
    write_gradebook(settings, lab, ordered, provenance)
    echo(f"Gradebook: {settings.out_dir / 'grades.csv'}", flush=True)
    return ordered
