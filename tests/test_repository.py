"""Repository hygiene: clean notebooks, parameters from the environment, matching dependency lists."""

import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
HF_IMPORT = re.compile(r"^\s*(from|import)\s+(transformers|datasets|evaluate|huggingface_hub)\b", re.M)


def test_there_are_numbered_notebooks():
    assert NOTEBOOKS and all(re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", p.name) for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path):
    cells = json.loads(path.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert all(not c["outputs"] and c["execution_count"] is None for c in code)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_parameters_come_from_the_environment_before_any_hf_import(path):
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    tagged = [i for i, c in enumerate(cells) if "parameters" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1
    params = "".join(cells[tagged[0]]["source"])
    assert 'os.environ.get("COURSE_PROFILE", "smoke")' in params and "COURSE_OUTPUT_DIR" in params
    sources = ["".join(c["source"]) for c in cells]
    setup = next(i for i, s in enumerate(sources) if "start_session(" in s)
    first_hf = next((i for i, s in enumerate(sources) if HF_IMPORT.search(s)), len(sources))
    assert tagged[0] < setup < first_hf


def test_nbstripout_hook_is_configured():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    assert any(h["id"] == "nbstripout" for repo in config["repos"] for h in repo["hooks"])


def _requirement_pins(requirements):
    return {re.split(r"[=<>~!]", r, maxsplit=1)[0].strip().lower(): r.replace(" ", "") for r in requirements}


def test_environment_yml_lists_the_same_packages_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = _requirement_pins(project["dependencies"] + project["optional-dependencies"]["dev"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_lists = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    assert "python=3.11" in env["dependencies"] and len(pip_lists) == 1
    assert _requirement_pins(pip_lists[0]) == wanted


def test_torch_is_pinned_to_the_cpu_wheel_version():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "torch==2.13.0" in project["dependencies"]


def test_ci_calls_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make course" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
