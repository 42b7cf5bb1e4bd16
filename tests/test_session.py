"""Set-up is an explicit call: offline switches, the output folder, and nothing at import."""

import json
import os
import subprocess
import sys

import pytest

from course_utils.environment import start_session
from course_utils.offline import OFFLINE_VARIABLES, configure_offline


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
import course_utils, course_utils.cli, course_utils.data, course_utils.environment, course_utils.hardware
import course_utils.metrics, course_utils.models, course_utils.paths, course_utils.hub
import course_utils.profiles, course_utils.runner, course_utils.standins
heavy = [m for m in ("torch", "transformers", "datasets", "deepspeed", "papermill") if m in sys.modules]
print(json.dumps({"env_changed": dict(os.environ) != before, "threads": threading.active_count() - threads,
                  "heavy": heavy}))
"""
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_VARIABLES}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout) == {"env_changed": False, "threads": 0, "heavy": []}
