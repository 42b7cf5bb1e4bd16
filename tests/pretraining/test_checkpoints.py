"""Pretraining checkpoints that survive a cluster: kills mid-save, SIGKILL at random moments, SIGTERM,
and a resume with no steps left (issue 14, section 4). Each interrupted run must end equal to an
uninterrupted one: the same held-out NLL and the same weights, within 1e-5."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from course_utils.from_notebooks.pretraining_loop import pretrain
from course_utils.pretraining.checkpoints import complete_checkpoints
from course_utils.pretraining.config import PretrainConfig

pytestmark = pytest.mark.slow
STEPS = 12


@pytest.fixture(scope="module")
def settings(tiny_pretraining) -> dict:
    """The shared toy run (tests/conftest.py), 12 steps long, logging and saving a checkpoint at every step, with two
    data workers whose positions each checkpoint must keep."""
    return {**tiny_pretraining, "total_steps": STEPS, "logging_steps": 1, "checkpoint_every": 1, "data_workers": 2}


def command(settings: dict, output_dir: Path, resume: bool) -> list[str]:
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in settings.items() if v is not None]
    return [
        sys.executable,
        "-m",
        "course_utils.pretraining",
        *flags,
        f"--output-dir={output_dir}",
        f"--resume={'true' if resume else 'false'}",
    ]


def final_state(output_dir: Path) -> tuple[dict, dict]:
    """(held-out NLL by step, weights) of a finished run."""
    saved = json.loads((output_dir / "result.json").read_text())["result"]
    return saved["eval_nll"], load_file(str(output_dir / "model" / "model.safetensors"))


def assert_same_run(output_dir: Path, reference_dir: Path) -> None:
    nll, weights = final_state(output_dir)
    reference_nll, reference_weights = final_state(reference_dir)
    assert nll.keys() == reference_nll.keys()
    assert list(nll.values()) == pytest.approx(list(reference_nll.values()), rel=1e-5)
    assert weights.keys() == reference_weights.keys()
    for name, tensor in weights.items():
        torch.testing.assert_close(tensor, reference_weights[name], rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def uninterrupted(settings, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("uninterrupted")
    subprocess.run(command(settings, out, resume=False), check=True, capture_output=True, text=True, timeout=600)
    return out


def test_a_kill_in_the_middle_of_a_save_leaves_the_last_checkpoint_whole(
    settings, tmp_path, monkeypatch, uninterrupted
):
    from accelerate import Accelerator

    original = Accelerator.save_state

    def dies_while_saving_step_6(self, output_dir=None, **kwargs):
        original(self, output_dir, **kwargs)
        if output_dir.endswith("step-0000006"):
            raise KeyboardInterrupt("killed while saving step 6")  # files written, never published

    monkeypatch.setattr(Accelerator, "save_state", dies_while_saving_step_6)
    config = PretrainConfig(**settings, output_dir=str(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        pretrain(config, echo=lambda _: None)
    assert [p.name for p in complete_checkpoints(config)] == ["step-0000004", "step-0000005"]  # keep_checkpoints=2
    assert (tmp_path / "checkpoints" / ".incomplete-step-0000006").is_dir()
    monkeypatch.setattr(Accelerator, "save_state", original)
    pretrain(PretrainConfig(**{**settings, "resume": True}, output_dir=str(tmp_path)), echo=lambda _: None)
    assert not (tmp_path / "checkpoints" / ".incomplete-step-0000006").exists()  # cleared by the next save of step 6
    assert [p.name for p in complete_checkpoints(config)] == ["step-0000011", "step-0000012"]
    assert_same_run(tmp_path, uninterrupted)


def test_many_sigkills_at_random_moments_then_resume_give_the_uninterrupted_run(settings, tmp_path, uninterrupted):
    chance = random.Random(14)
    kills, torn = 0, 0
    while True:
        resume = (tmp_path / "checkpoints").is_dir() and bool(list((tmp_path / "checkpoints").glob("step-*")))
        process = subprocess.Popen(
            command(settings, tmp_path, resume), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        if kills < 4:
            for line in process.stdout:  # wait until training runs
                if line.startswith("[train] Step"):
                    break
            if kills % 2:  # then kill as soon as a checkpoint is being written: mid-save
                while process.poll() is None and not any((tmp_path / "checkpoints").glob(".incomplete-*")):
                    time.sleep(0.001)
            else:  # or at a random moment
                time.sleep(chance.uniform(0.0, 0.4))
            process.kill()
            process.wait()
            kills += 1
            torn += any((tmp_path / "checkpoints").glob(".incomplete-*"))
            continue
        process.stdout.read()
        assert process.wait(timeout=600) == 0
        break
    print(f"{kills} kills, {torn} of them left a half-written checkpoint behind")
    assert torn >= 1  # some kills really landed in the middle of a save
    assert_same_run(tmp_path, uninterrupted)


def test_sigterm_checkpoints_says_how_to_resume_and_exits_0(settings, tmp_path, uninterrupted):
    # In a session of its own, so that the signal can go to every process of the run, data workers
    # included, as a cluster's job limit or a preemption sends it.
    process = subprocess.Popen(
        command(settings, tmp_path, resume=False),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    for line in process.stdout:
        if line.startswith("[train] Step 2 "):
            os.killpg(process.pid, signal.SIGTERM)
            break
    rest = process.stdout.read()
    assert process.wait(timeout=300) == 0
    stopped = [line for line in rest.splitlines() if line.startswith("Stopped by SIGTERM after step")]
    assert len(stopped) == 1 and "--resume true" in stopped[0], rest
    step = int(stopped[0].split("after step ")[1].split()[0])
    assert step < STEPS and complete_checkpoints(PretrainConfig(**settings, output_dir=str(tmp_path)))[-1].name == (
        f"step-{step:07d}"
    )
    resumed = subprocess.run(command(settings, tmp_path, resume=True), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert_same_run(tmp_path, uninterrupted)


def test_a_resumed_run_with_no_steps_left_still_evaluates_and_reports(settings, uninterrupted):
    result = pretrain(
        PretrainConfig(**{**settings, "resume": True}, output_dir=str(uninterrupted)), echo=lambda _: None
    )
    reference, _ = final_state(uninterrupted)
    assert result.steps == STEPS and result.eval_nll[STEPS] == pytest.approx(reference[str(STEPS)], rel=1e-5)
    assert sorted(result.eval_nll) == [0, 4, 8, 12]  # the whole run's history, from the checkpoint
    assert 0 < result.seconds_per_step < float("inf")
