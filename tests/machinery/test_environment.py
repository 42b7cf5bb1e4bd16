"""Set-up is an explicit call: offline switches, the output folder, and nothing at import."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from course_utils.machinery.environment import gpu_required, one_gpu, start_session
from course_utils.machinery.hardware import NoGPUError
from course_utils.machinery.offline import OFFLINE_VARIABLES, configure_offline
from course_utils.machinery.profiles import get_profile


def test_offline_switches_are_set_and_reported(monkeypatch):
    for key in OFFLINE_VARIABLES:
        monkeypatch.delenv(key, raising=False)
    for name in ("huggingface_hub", "transformers", "datasets", "evaluate"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert configure_offline(True) == OFFLINE_VARIABLES
    assert all(os.environ[k] == v for k, v in OFFLINE_VARIABLES.items())
    assert configure_offline(True) == {}  # a second call changes nothing
    assert configure_offline(False) == {}


def test_switches_set_after_the_libraries_were_imported_is_an_error(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setitem(sys.modules, "transformers", object())
    with pytest.raises(RuntimeError, match="Restart the kernel"):
        configure_offline(True)


def test_start_session_creates_the_output_folder(tmp_path):
    session = start_session("smoke", tmp_path / "out")
    assert session.profile.name == "smoke" and session.output_dir == (tmp_path / "out").resolve()
    assert session.output_dir.is_dir()


@pytest.mark.slow
def test_importing_the_package_changes_nothing():
    code = """
import json, os, sys, threading
before = dict(os.environ); threads = threading.active_count()
import course_utils, course_utils.machinery.cli, course_utils.models_and_data.data, course_utils.machinery.environment, course_utils.machinery.hardware
import course_utils.machinery.metrics, course_utils.models_and_data.models, course_utils.machinery.paths, course_utils.models_and_data.hub
import course_utils.machinery.profiles, course_utils.machinery.runner, course_utils.standins
heavy = [m for m in ("torch", "transformers", "datasets", "deepspeed", "papermill") if m in sys.modules]
print(json.dumps({"env_changed": dict(os.environ) != before, "threads": threading.active_count() - threads,
                  "heavy": heavy}))
"""
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_VARIABLES}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout) == {"env_changed": False, "threads": 0, "heavy": []}


def test_the_full_session_stops_without_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(NoGPUError, match="REQUIRE_GPU=0"):
        start_session("full", tmp_path)
    assert start_session("full", tmp_path, require_gpu="0").profile.name == "full"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)  # restore what one_gpu set


def test_every_lesson_notebook_checks_the_gpu_in_its_set_up_cell():
    nbformat = pytest.importorskip("nbformat")  # imported here: `pytest -m gpu` collects this file on bare nodes
    for path in sorted((Path(__file__).parents[2] / "notebooks").glob("0[1-4]_*.ipynb")):
        code = "\n".join("".join(c["source"]) for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        assert 'start_session(PROFILE, OUTPUT_DIR, quick=QUICK == "1", require_gpu=REQUIRE_GPU, seed=SEED)' in code, (
            path.name
        )
        assert "check_gpu=False" not in code, path.name


def test_require_gpu_parameter_is_checked():
    full = get_profile("full")
    assert gpu_required(full) and not gpu_required(full, "0") and gpu_required(get_profile("smoke"), "1")
    with pytest.raises(ValueError, match="REQUIRE_GPU"):
        gpu_required(full, "yes")


@pytest.mark.parametrize("visible, chosen", [(None, "0"), ("3,5", "3"), (" 2 , 4", "2"), ("1", None), ("", None)])
def test_a_notebook_sees_one_gpu(monkeypatch, visible, chosen):
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert one_gpu() == ({} if chosen is None else {"CUDA_VISIBLE_DEVICES": chosen})
    assert os.environ["CUDA_VISIBLE_DEVICES"] == (visible if chosen is None else chosen)
    assert one_gpu() == {}  # a second call changes nothing
