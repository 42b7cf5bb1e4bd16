"""Checkpoints that survive a kill, the resume from them, and the signals that stop a run cleanly.

    save_checkpoint(accelerator, config, loader, result, step)   # complete, or not there at all
    step, history = maybe_resume(accelerator, config, loader)       # 0 and None, or the newest complete checkpoint's
                                                                    # step and history, its state restored
    with StopSignals() as signals:      # SIGTERM / SIGUSR1: stop after this step
        ...
        if signals.requested(accelerator): ...

Each function is handed what it saves or restores: Accelerate's accelerator (the model, optimizer, schedule and
random states), the config (where and how many to keep), torchdata's loader (where every data worker is) and the
run's history so far (a ``PretrainResult``: losses, NLLs, timings). ``run.PretrainRun`` calls them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import threading
from pathlib import Path

from course_utils.machinery.configs import InputError
from course_utils.pretraining.config import PretrainConfig, PretrainResult, result_from_json


def loader_state(loader) -> dict:
    """What a checkpoint keeps of the data: every worker's position, and how many workers there were."""
    return {"data_workers": loader.num_workers, "loader": loader.state_dict()}


def restore_loader(loader, state: dict, where: str) -> None:
    """Put ``loader`` (not yet started) where ``loader_state`` found it; a different worker count is refused."""
    if state["data_workers"] != loader.num_workers:
        raise InputError(
            f"{where} was saved with data_workers={state['data_workers']}, and each worker reads its own "
            f"share of the documents: resume with --data-workers {state['data_workers']}."
        )
    loader.load_state_dict(state["loader"])


def checkpoints_dir(config: PretrainConfig) -> Path:
    return Path(config.output_dir) / "checkpoints"


def complete_checkpoints(config: PretrainConfig) -> list[Path]:
    """The finished checkpoints, oldest first: ``step-NNNNNNN`` folders (a folder gets that name only when complete)."""
    folder = checkpoints_dir(config)
    found = [p for p in folder.glob("step-*") if (p / "progress.json").exists()] if folder.is_dir() else []
    return sorted(found, key=lambda p: int(p.name.removeprefix("step-")))


def data_state_file(folder: Path, rank: int) -> Path:
    return folder / f"data_state_{rank}.json"


def save_checkpoint(accelerator, config: PretrainConfig, loader, history: PretrainResult, step: int) -> Path:
    """``save_state`` (model, optimizer, scheduler, RNGs), where each process's data stream is, and the
    run's history, published only when complete.

    Everything is written to ``.incomplete-step-N`` first and renamed to ``step-N`` last, in one atomic
    rename: a kill at any moment leaves the previous checkpoint whole. Then all but the newest
    ``keep_checkpoints`` go.
    """
    final = checkpoints_dir(config) / f"step-{step:07d}"
    partial = checkpoints_dir(config) / f".incomplete-step-{step:07d}"
    if accelerator.is_main_process:
        shutil.rmtree(partial, ignore_errors=True)  # what a kill in the middle of an earlier save left
        partial.mkdir(parents=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(partial))
    data_state_file(partial, accelerator.process_index).write_text(json.dumps(loader_state(loader)))
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        (partial / "progress.json").write_text(json.dumps({"step": step, "result": dataclasses.asdict(history)}))
        if final.exists():  # this very step was saved before (a resumed run that stopped again at once)
            shutil.rmtree(partial)
        else:
            os.replace(partial, final)
        for old in complete_checkpoints(config)[: -config.keep_checkpoints]:
            shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()
    return final


def maybe_resume(accelerator, config: PretrainConfig, loader, echo=print) -> tuple[int, PretrainResult | None]:
    """(0, None), or the newest complete checkpoint's step and the run's history it saved, with the accelerator's
    state and the data stream's position restored. With ``resume="auto"`` a folder without a complete checkpoint
    (none yet, or only one a kill left half-written) means a fresh start; it says which."""
    if not config.resume:
        return 0, None
    found = complete_checkpoints(config)
    if not found and config.resume == "auto":
        if accelerator.is_main_process:
            echo(f"resume auto: no complete checkpoint in {checkpoints_dir(config)}; starting from step 0")
        return 0, None
    if not found:
        raise FileNotFoundError(
            f"resume=True but {checkpoints_dir(config)} holds no complete checkpoint; "
            "start without resume, or resume auto to start afresh when there is none."
        )
    if config.resume == "auto" and accelerator.is_main_process:
        echo(f"resume auto: resuming from {found[-1]}")
    accelerator.load_state(str(found[-1]))
    data_state = data_state_file(found[-1], accelerator.process_index)
    if not data_state.exists():
        raise FileNotFoundError(
            f"{found[-1]} holds no data position for process {accelerator.process_index}: "
            "resume with as many processes as the run that saved it, or start without resume."
        )
    restore_loader(loader, json.loads(data_state.read_text()), str(found[-1]))
    progress = json.loads((found[-1] / "progress.json").read_text())
    return progress["step"], result_from_json(progress["result"])


class StopSignals:
    """While active, SIGTERM and SIGUSR1 ask the run to stop after the current step instead of killing it.

    A cluster sends SIGTERM at a job's time limit or on preemption, some seconds before SIGKILL;
    SLURM can send SIGUSR1 earlier (``--signal=USR1@120``). Outside the main thread (where Python
    cannot install handlers) it does nothing.
    """

    NAMES = ("SIGTERM", "SIGUSR1")

    def __init__(self):
        self.received, self._previous = "", {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for name in self.NAMES:
                self._previous[name] = signal.signal(getattr(signal, name), self._note)
        return self

    def _note(self, number, frame) -> None:
        self.received = signal.Signals(number).name

    def __exit__(self, *exc) -> None:
        for name, handler in self._previous.items():
            signal.signal(getattr(signal, name), handler)

    def requested(self, accelerator) -> bool:
        """True on every process once any process got a signal (processes must stop at the same step)."""
        import torch

        flag = torch.tensor([1.0 if self.received else 0.0], device=accelerator.device)
        return bool(accelerator.reduce(flag, "max").item()) if accelerator.num_processes > 1 else bool(self.received)
