"""Test-session set-up: no network, and notebooks write their figures to a temporary folder.

Everything pytest starts (unit tests, nbval's kernels, subprocesses) inherits PYTHONPATH
with tests/netguard, whose sitecustomize refuses non-loopback connections and logs them.
The session fails if anything tried.

`make test` runs two lanes with pytest-xdist (-n 2 --dist loadscope): the lessons in order on one worker,
the full-size rehearsal first on the other, the rest wherever there is room. The workers share the
controller's log, write their notebooks' outputs to folders of their own and split the cores between them.
"""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUARD_DIR = Path(__file__).resolve().parent / "netguard"
LESSONS = ROOT / "notebooks"  # the lesson notebooks themselves; the labs' solutions are in notebooks/labs/
POINTS = "tests/test_lesson_points.py"  # reads what the lessons wrote: after them, in their lane
SITE = "tests/test_site_in_browser.py"  # builds the course's site from the lessons nbval ran: after them too, in their lane
AFTER_THE_LESSONS = (POINTS, SITE)
LESSONS_COLLECTED = pytest.StashKey[bool]()  # whether this session runs the lesson notebooks
collect_ignore = ["fixtures", "netguard", "rehearsal"]


def course_command(*args) -> list[str]:
    """The ``course`` command with ``args``, in this interpreter, as a subprocess's argument list."""
    return [sys.executable, "-m", "course_utils.machinery.cli", *map(str, args)]


def guarded_env(log: Path, **extra) -> dict:
    """A copy of os.environ for a subprocess with the network guard on, logging to ``log``."""
    log.touch()  # an empty log is the evidence: nothing tried to connect
    env = dict(os.environ, COURSE_NETGUARD_LOG=str(log), **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(GUARD_DIR), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def pytest_configure(config):
    from course_utils.machinery.environment import one_gpu

    # Before anything starts CUDA: on a node with several GPUs the Trainer would wrap DataParallel and
    # multiply the batch, and the step times would be DataParallel's. The notebooks keep one GPU too.
    one_gpu()
    worker = getattr(config, "workerinput", None)  # set in a pytest-xdist worker (make test's two lanes)
    if worker is None:  # this process owns the work folder and the log, and judges them at the end
        work = Path(tempfile.mkdtemp(prefix="course-tests-"))
        log = work / "network-attempts.log"
        config._course_work = work
        env = dict(COURSE_OUTPUT_DIR=str(work / "outputs"), COURSE_PROFILE="smoke", COURSE_SHOW_TENSORBOARD="0")
        os.environ.update(guarded_env(log, **env))
    else:  # a worker inherits the controller's environment: the same log, its own outputs, its share of the cores
        log = Path(os.environ["COURSE_NETGUARD_LOG"])
        os.environ["COURSE_OUTPUT_DIR"] = str(log.parent / f"outputs-{worker['workerid']}")
        share_the_cores(int(worker["workercount"]))
    config._course_netguard_log = log
    config.pluginmanager.register(NotebookCells(), "course-notebook-cells")
    sys.path.insert(0, str(GUARD_DIR))
    import sitecustomize  # noqa: F401 - installs the guard in this process too

    if getattr(sitecustomize, "_LOG", None) is None:  # another sitecustomize was imported first
        import importlib.util

        spec = importlib.util.spec_from_file_location("course_netguard", GUARD_DIR / "sitecustomize.py")
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def share_the_cores(workers: int) -> None:
    """Give this worker, and every process it starts (kernels, launches), its share of the CPU threads: two
    workers of two threads each on two cores would spin against each other in torch's OpenMP pool."""
    threads = max(1, len(os.sched_getaffinity(0)) // workers)
    os.environ.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    import torch

    torch.set_num_threads(threads)


def unit_of(path: str) -> str:
    """Where a test runs with make test's lanes: the lessons are one unit, run in order on one worker (05 reads
    what 01, 02, 03 and 04 wrote), and the test of their points joins it; any other file is a unit of its own (a
    notebook's cells share a kernel, a module's tests their fixtures)."""
    return "lessons" if (ROOT / path).parent == LESSONS or path in AFTER_THE_LESSONS else path


@pytest.hookimpl(optionalhook=True)  # a GPU node runs pytest without pytest-xdist
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's loadscope, with unit_of as the scope (its own xdist_group marks add nothing to a
    node id under pytest 9)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Lanes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid.split("::", 1)[0])

    return Lanes(config, log)


def lane_order(path: str) -> int:
    """The lessons first, the rehearsal next, then the rest: the scheduler hands out units in the workers'
    order (with --no-loadscope-reorder), so each lane starts on one of the two long ones."""
    if unit_of(path) == "lessons":
        return 1 if path in AFTER_THE_LESSONS else 0  # the tests of what they wrote after them, in their lane
    return 2 if path == "tests/test_rehearsal.py" else 3


def after_the_lessons(path: str) -> bool:
    return path in AFTER_THE_LESSONS


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The tests of what the lessons wrote after the lessons, in every run; in a worker, the items in lane_order too.
    Both sorts are stable, so each unit keeps its own order."""
    paths = [os.path.relpath(item.path, ROOT) for item in items]
    config.stash[LESSONS_COLLECTED] = any((ROOT / p).parent == LESSONS for p in paths)
    order = dict(zip(map(id, items), paths))
    items.sort(key=lambda item: after_the_lessons(order[id(item)]))
    if getattr(config, "workerinput", None) is not None:
        items.sort(key=lambda item: lane_order(order[id(item)]))


class NotebookCells:
    """What happens around each cell nbval runs. A plugin, not a conftest hook: a conftest's runtest hooks reach
    only the tests in its folder, and the notebooks are not in tests/.

    A cell must not show noise (tests/output_rules.py): the check runs on the smoke notebooks and the labs'
    solutions as nbval executes them, so it costs no run of its own. A lesson's cells are also kept, with their
    outputs, as the executed notebook (record_lesson_cell), failed or not."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        lesson = Path(item.path).parent == LESSONS
        try:
            result = yield
        except BaseException:
            if lesson and getattr(item, "test_outputs", None) is not None:
                record_lesson_cell(item, failed=True)
            raise
        if lesson and getattr(item, "test_outputs", None) is not None:
            record_lesson_cell(item, failed=False)
        outputs = getattr(item, "test_outputs", None)  # nbval's cell items keep the cell's outputs
        if outputs:
            from output_rules import noise

            problems = noise(outputs)
            if problems:
                raise AssertionError(f"{item.name} shows what a student should not read past: " + "; ".join(problems))
        return result


_RUN_PROVENANCE: dict = {}


def record_lesson_cell(item, failed: bool) -> None:
    """Keep a lesson cell's outputs in the notebook nbval is running; after its last code cell, or a cell that
    failed, write the notebook to the session's output folder as `course run` writes it (stamped with
    provenance.stamp), so that tests/test_site_in_browser.py builds the course's site from this very run. A notebook
    that stopped shows where: its later cells have no execution count."""
    import time

    import nbformat

    from course_utils.machinery.provenance import run_provenance, stamp

    notebook_item = item.parent
    if not _RUN_PROVENANCE:
        _RUN_PROVENANCE.update(run_provenance("smoke"))
    if not hasattr(notebook_item, "course_started"):
        notebook_item.course_started, notebook_item.course_count = time.perf_counter(), 0
    notebook_item.course_count += 1
    item.cell.outputs = [nbformat.from_dict(output) for output in item.test_outputs]
    item.cell.execution_count = notebook_item.course_count
    seconds = round(time.perf_counter() - notebook_item.course_started, 1)
    last = [cell for cell in notebook_item.nb.cells if cell.cell_type == "code"][-1]
    if not failed and item.cell is not last:
        return
    stamp(notebook_item.nb, {**_RUN_PROVENANCE, "seconds": seconds})
    folder = Path(os.environ["COURSE_OUTPUT_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook_item.nb, folder / Path(item.path).name)


def pytest_report_header(config):
    """The free disk where the tests write, first thing in the log (the rehearsal's needs: DISK_GB in
    tests/rehearsal/rehearse.py)."""
    folders = {"the repository": ROOT, "temporary files": Path(tempfile.gettempdir())}
    return "disk free: " + ", ".join(
        f"{shutil.disk_usage(path).free / 2**30:.1f} GiB for {name} ({path})" for name, path in folders.items()
    )


def pytest_sessionfinish(session, exitstatus):
    work = getattr(session.config, "_course_work", None)  # only where the folder was made: after every worker
    if work is None:
        return
    log = session.config._course_netguard_log
    if log.exists() and log.read_text().strip():
        sys.stderr.write(f"\nNetwork connections were attempted during the tests:\n{log.read_text()}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if session.exitstatus == pytest.ExitCode.OK:  # the notebooks' outputs; a failed session's stay
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(autouse=True)
def launcher_variables_restored():
    """Each test leaves the launcher's variables (RANK, LOCAL_RANK, ...) as it found them. A DeepSpeed
    fine-tune in this process sets them (zero.launcher_environment); leaked into later tests or
    nbval's kernels, LOCAL_RANK makes Accelerate treat a single process as a distributed run."""
    from course_utils.lessons.zero import LAUNCHER_VARIABLES

    saved = {name: os.environ.get(name) for name in LAUNCHER_VARIABLES}
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture
def netguard_log(request) -> Path:
    return request.config._course_netguard_log


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture
def transformers_notices():
    """The warnings transformers logs while the test runs (its loggers do not propagate to the root, so
    caplog does not see them)."""
    import logging

    seen: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: seen.append(record.getMessage())
    logger = logging.getLogger("transformers")
    logger.addHandler(handler)
    yield seen
    logger.removeHandler(handler)


@pytest.fixture(scope="session")
def tiny_pretraining():
    """The settings of a pretraining run at toy size on the shipped C4 sample (T5 v1.1's stand-in, rows of 32 tokens,
    8 steps of 8 rows, held-out NLL every 4): ``PretrainConfig(**tiny_pretraining, output_dir=...)``. A test changes
    what it needs, ``{**tiny_pretraining, "total_steps": 2}``; the mapping itself cannot be changed."""
    from types import MappingProxyType

    from course_utils.machinery.paths import data_dir

    return MappingProxyType(
        dict(
            model_name="standin:t5-v1_1-base",
            data_path=str(data_dir() / "c4"),
            data_config=None,
            input_length=32,
            batch_size=8,
            total_steps=8,
            warmup_steps=2,
            learning_rate=1e-2,
            logging_steps=2,
            eval_every=4,
            eval_batches=2,
            attn_implementation="eager",
            shuffle_block=100,
            data_workers=1,
        )
    )


@pytest.fixture
def hub_snapshot(tmp_path, monkeypatch):
    """A folder laid out like the Hub's repos, returned by the cache look-up, with the Hub switched off."""
    from course_utils.models_and_data import sources

    folder = tmp_path / "snapshot"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(sources, "cached_snapshot", lambda repo_id, repo_type, patterns: folder)
    return folder
