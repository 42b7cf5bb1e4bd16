"""make test's two lanes (tests/conftest.py): the lessons in order on one worker, the rehearsal first on the
other, any other file whole on one worker, each worker with its share of the cores."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import AFTER_THE_LESSONS, ROOT, lane_order, pytest_xdist_make_scheduler, share_the_cores
from xdist.remote import Producer

from course_utils.machinery.runner import find_notebooks, is_lab

NOTEBOOKS = [p.relative_to(ROOT).as_posix() for p in find_notebooks(ROOT / "notebooks", labs=True)]
LESSON_NOTEBOOKS = [path for path in NOTEBOOKS if not is_lab(Path(path).name)]
SOLUTIONS = [path for path in NOTEBOOKS if is_lab(Path(path).name)]
MODULES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py"))


class Worker:
    """What the scheduler needs of a worker: it records the tests it is sent."""

    def __init__(self, name: str):
        self.gateway = type("Gateway", (), {"id": name})()
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices):
        self.sent.extend(indices)

    def shutdown(self):
        self.shutting_down = True


def makefile_lanes() -> list[str]:
    return re.search(r"^LANES := (.*)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()


def scheduled(collection: list[str]) -> list[list[str]]:
    """The first tests each of two workers is sent, by the scheduler conftest.py gives pytest-xdist."""
    from _pytest.config import _prepareconfig

    config = _prepareconfig([*makefile_lanes(), "-p", "no:cacheprovider"])
    config.option.tx = ["popen"] * 2  # what xdist's own configure makes of -n 2
    scheduler = pytest_xdist_make_scheduler(config, Producer("lanes", enabled=False))
    workers = [Worker("gw0"), Worker("gw1")]
    for worker in workers:
        scheduler.add_node(worker)
    for worker in workers:
        scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    return [[collection[i] for i in worker.sent] for worker in workers]


def test_the_makefile_asks_for_the_lanes_the_scheduler_serves():
    lanes = makefile_lanes()
    assert lanes[:2] == ["-n", "2"] and "--no-loadscope-reorder" in lanes
    assert lanes[lanes.index("--dist") + 1] == "loadscope"  # the one --dist conftest.py's scheduler answers


def test_the_lessons_go_in_order_to_one_worker_and_the_rehearsal_to_the_other():
    # As pytest collects them (testpaths: tests, then notebooks), two tests or cells a file.
    collected = [f"{path}::{name}" for path in MODULES + LESSON_NOTEBOOKS + SOLUTIONS for name in ("a", "b")]
    assert len(LESSON_NOTEBOOKS) == 6 and "tests/test_rehearsal.py" in MODULES
    in_lane_order = sorted(collected, key=lambda nodeid: lane_order(nodeid.split("::")[0]))
    first, second = scheduled(in_lane_order)
    lessons = [nodeid for nodeid in collected if nodeid.split("::")[0] in LESSON_NOTEBOOKS]
    assert first[: len(lessons)] == lessons  # 00 to 05, each notebook's cells in order, all on one worker
    after = [f"{path}::{name}" for path in AFTER_THE_LESSONS for name in ("a", "b")]
    assert first[len(lessons) : len(lessons) + len(after)] == after  # then what reads their outputs, in their lane
    assert second[:2] == ["tests/test_rehearsal.py::a", "tests/test_rehearsal.py::b"]
    files_of = [{nodeid.split("::")[0] for nodeid in lane} for lane in (first, second)]
    assert not files_of[0] & files_of[1]  # no file split between the workers


def test_without_loadscope_pytest_xdist_keeps_its_own_scheduler():
    from _pytest.config import _prepareconfig

    config = _prepareconfig(["-n", "2", "--dist", "load", "-p", "no:cacheprovider"])
    assert pytest_xdist_make_scheduler(config, Producer("lanes", enabled=False)) is None


@pytest.fixture
def threads_restored(monkeypatch):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)  # monkeypatch puts back what was there
    saved = torch.get_num_threads()
    yield
    torch.set_num_threads(saved)


@pytest.mark.parametrize(("cores", "workers", "threads"), [(2, 2, 1), (16, 2, 8), (1, 2, 1), (8, 3, 2)])
def test_each_worker_takes_its_share_of_the_cores(monkeypatch, threads_restored, cores, workers, threads):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    share_the_cores(workers)
    assert torch.get_num_threads() == threads
    assert os.environ["OMP_NUM_THREADS"] == os.environ["MKL_NUM_THREADS"] == str(threads)  # for what it starts


def test_pytest_runs_these_tests_without_pytest_xdist_as_on_a_gpu_node():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
            "-q",
            "tests/machinery/test_environment.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


TRIES = """
import socket


def test_tries_the_network():
    try:
        socket.create_connection(("93.184.216.34", 80), timeout=2)
    except OSError:
        pass  # blocked and logged by tests/netguard: the test passes, the run must not
"""


@pytest.mark.slow
def test_a_connection_tried_in_a_worker_fails_the_whole_run(tmp_path):
    (tmp_path / "test_tries.py").write_text(TRIES)
    (tmp_path / "test_idle.py").write_text("def test_idle():\n    pass\n")  # a unit for the other worker
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    # As from a shell: no log or outputs folder of this session's, conftest.py loaded as a plugin by name.
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_NETGUARD_LOG", "COURSE_OUTPUT_DIR")}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), env.get("PYTHONPATH", "")]), TMPDIR=str(tmp_path))
    command = [sys.executable, "-m", "pytest", "-p", "conftest", *makefile_lanes(), "-p", "no:cacheprovider"]
    done = subprocess.run(
        command + ["test_tries.py", "test_idle.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert "2 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.returncode == 1 and "Network connections were attempted" in done.stderr, done.stderr[-2000:]
    (work,) = tmp_path.glob("course-tests-*")  # a failed run keeps its folder, to look into
    assert "93.184.216.34" in (work / "network-attempts.log").read_text()


def test_the_test_session_sees_one_gpu_at_most():
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    assert visible is not None and "," not in visible  # set by tests/conftest.py before CUDA starts
