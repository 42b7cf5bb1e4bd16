"""Everything a pretraining loop does besides forward, backward and step: the plan, the data, held-out NLL,
logging, checkpoints and stop signals, in one object the loop calls (nanoT5's ``maybe_*``).

    with PretrainRun(config) as run:                      # Accelerate, TF32, SIGTERM handling, this run's peak
        plan = run.make_plan(model)                      # micro-batch and accumulation for this GPU's memory
        model, optimizer = run.prepare(model, optimizer, scheduler)   # onto the device; compiled where the plan says
        step, batches = run.start_data(model, tokenizer)  # 0, or a checkpoint's step restored; the workers start
        ...                                               # the loop: see loop.pretrain (notebook 04)
        result = run.finish(model, tokenizer)             # final NLL, the model saved, result.json with the plan

The config is the caller's and stays as it is; what this machine makes of it is ``run.plan``
(``config.plan``), which an out-of-memory step replaces with a halved one. Every ``logging_steps``
steps the run prints a line in nanoT5's shape:

    [train] Step 100 out of 65536 | Loss --> 4.219 | Grad_l2 --> 1.204 | Weights_l2 --> 7042.931 | Lr --> 0.010 | Seconds_per_step --> 0.560 |
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

from course_utils.machinery.hardware import resolve_precision, tf32
from course_utils.machinery.memory import reset_peak_memory
from course_utils.machinery.moved import deprecated_alias
from course_utils.machinery.paths import repo_root
from course_utils.pretraining.checkpoints import StopSignals, maybe_resume, save_checkpoint
from course_utils.pretraining.config import (
    PretrainConfig,
    PretrainPlan,
    PretrainResult,
    check_config,
    finished_run,
    plan,
    write_result,
)
from course_utils.pretraining.data import CorruptedBatches, batch_loader, held_out_batches, start_batches, stop_batches


class PretrainRun:
    """One pretraining run's support; ``with`` it, so that what it sets up (TF32, signal handlers, TensorBoard, the
    data workers) ends with it, and so does whatever it had set up when its set-up fails halfway."""

    plan_for = staticmethod(plan)  # PretrainRun.plan_for(config, world_size, parameters, device): what make_plan makes

    def __init__(self, config: PretrainConfig, echo=print):
        self.config, self.echo = config, echo  # the caller's config, never changed: the machine's choices are the plan
        self.plan: PretrainPlan | None = None
        self.result: PretrainResult | None = None
        self.loader, self.held_out = None, []
        self._stack = contextlib.ExitStack()
        self._window_losses, self._window_seconds = [], []

    def __enter__(self) -> PretrainRun:
        try:
            self._set_up()
        except BaseException:
            self._stack.close()  # whatever was set up before the failure is undone: TF32 as it was, and so on
            raise
        return self

    def _set_up(self) -> None:
        import torch
        from accelerate import Accelerator

        self._stack.enter_context(tf32(self.config.tf32))  # for this run only: the process's own setting afterwards
        precision = resolve_precision(self.config.precision)
        self.accelerator = Accelerator(
            mixed_precision="bf16" if precision == "bf16" else "no",
            cpu=not torch.cuda.is_available(),
            log_with="tensorboard",
            project_dir=self.config.output_dir,
        )
        self._stack.callback(self._finish_trackers)
        check_config(self.config, self.accelerator.num_processes)
        reset_peak_memory()  # this run's peak, not an earlier one's
        self.signals = self._stack.enter_context(StopSignals())

    def _finish_trackers(self) -> None:
        # Close TensorBoard as end_training would, but keep the launcher's process group: Accelerate's
        # state outlives one run, and a second run in this process (the optimizer race) needs the group.
        for tracker in self.accelerator.trackers:
            tracker.finish()

    def __exit__(self, *exc) -> None:
        self._stack.close()  # the data workers stop, TensorBoard closes, the signals and TF32 are as they were

    def make_plan(self, model) -> PretrainPlan:
        """The plan for this machine (``config.plan``): the micro-batch and the accumulation for this GPU's memory,
        the precision, compile and TF32; the run's result starts with it."""
        world = self.accelerator.num_processes
        self.plan = plan(self.config, world, model.num_parameters(), self.accelerator.device)
        if self.accelerator.is_main_process:
            self.echo(
                f"{self.config.batch_size} rows per step = {self.plan.micro_batch} per forward pass x "
                f"{self.plan.gradient_accumulation_steps} accumulation x {world} process(es); "
                f"{self.config.data_workers} data worker(s) per process"
            )
        self.result = PretrainResult(steps=0, processes=world, plan=self.plan)
        return self.plan

    plan_batch = deprecated_alias(make_plan, "course_utils.pretraining.run.PretrainRun.plan_batch")

    def prepare(self, model, optimizer, scheduler):
        """(model, optimizer) on the run's device, the model compiled where the plan says; the scheduler is
        checkpointed with them but stepped by the loop (Accelerate would step it once per process)."""
        import torch

        model, optimizer = self.accelerator.prepare(model, optimizer)
        self.accelerator.register_for_checkpointing(scheduler)
        if self.plan.compile:
            # Dynamo keeps the compiled versions of earlier runs' models, and every prepared model shares
            # Accelerate's forward wrapper: after 8 versions (recompile_limit) new ones silently run eager.
            torch._dynamo.reset()
            model = torch.compile(model, backend=self.config.compile_backend)
        return model, optimizer

    def start_data(self, model, tokenizer):
        """(the step to start after, endless batches): 0 and the held-out NLL of the random start, or, resuming, a
        checkpoint's step with its state, history and data position restored. The data workers start here."""
        rank, world = self.accelerator.process_index, self.accelerator.num_processes
        # Not accelerator.prepare(loader): each process already reads its own share of the documents.
        self.loader = batch_loader(
            CorruptedBatches.for_config(self.config, tokenizer, "train", self.config.seed, rank, world),
            self.config.data_workers,
            pin_memory=self.accelerator.device.type == "cuda",
        )
        self._stack.callback(stop_batches, self.loader)
        self.held_out = held_out_batches(self.config, tokenizer, rank, world)
        step, history = maybe_resume(self.accelerator, self.config, self.loader, self.echo)
        if history:  # the losses, NLLs and timings of the steps before the checkpoint
            result = self.result
            result.train_losses, result.train_seconds = history.train_losses, history.train_seconds
            result.timed_steps, result.first_step_seconds = history.timed_steps, history.first_step_seconds
            result.eval_nll, result.eval_nll_other_input = history.eval_nll, history.eval_nll_other_input
        self.accelerator.init_trackers("tensorboard")
        batches = start_batches(self.loader)  # the workers start where they left off
        batches = self._first_checksummed(batches)
        self.result.steps, self._first_step = step, step + 1
        if step == 0:
            self.evaluate(model, 0)
        return step, batches

    def retry_on_oom(self, step, optimizer):
        """``step(micro_batch)``, the loop's forward and backward over this step's rows in micro-batches of
        ``micro_batch`` rows; when one runs out of GPU memory in a single process, the same step again with a new
        plan: micro-batches half as large, twice as many (the result records it), the peak memory measured afresh."""
        import torch

        while True:
            try:
                return step(self.plan.micro_batch)
            except torch.OutOfMemoryError as error:
                optimizer.zero_grad(set_to_none=True)
                if self.accelerator.num_processes > 1 or self.plan.micro_batch < 2 or self.plan.micro_batch % 2:
                    # Other processes cannot learn of it without a collective: stop with what to set.
                    raise RuntimeError(
                        f"Out of GPU memory with {self.plan.micro_batch} rows per forward pass; rerun "
                        "with --gradient-accumulation-steps set to twice the accumulation above."
                    ) from error
                del error  # its traceback holds the step's activations
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                self.plan = self.result.plan = self.plan.halved()
                reset_peak_memory()  # the peak of the plan that failed is not this plan's
                self.echo(
                    f"Out of GPU memory: accumulating twice as many micro-batches of {self.plan.micro_batch} "
                    "rows from now on."
                )

    def _first_checksummed(self, batches):
        """``batches``, the first one's checksum gathered from every process on its way (are the shards distinct?)."""
        batch = next(batches)
        self.result.first_batch_checksums = _gathered_checksum(
            self.accelerator, batch["input_ids"][: self.plan.micro_batch]
        )
        yield batch
        yield from batches

    def maybe_log(self, step: int, loss, grad_norm, scheduler, model, seconds: float) -> None:
        """The step's loss and time noted (a job's first step, which compiles, timed apart); every ``logging_steps``
        steps and at the last, the window's means to TensorBoard, the log and the result."""
        self.result.steps = step
        if step == self._first_step:
            self.result.first_step_seconds.append(seconds)
        else:
            self.result.train_seconds += seconds
            self.result.timed_steps += 1
            self._window_seconds.append(seconds)
        self._window_losses.append(loss)
        if step % self.config.logging_steps and step != self.last_step:
            return
        import torch

        seconds = self._window_seconds or [seconds]
        loss_mean = self.accelerator.reduce(torch.stack(self._window_losses).mean(), "mean").item()
        figures = {
            "train/loss": loss_mean,
            "train/grad_l2": float(grad_norm),
            "train/lr": scheduler.get_last_lr()[0],
            "train/weights_l2": weights_l2(model),
            "train/seconds_per_step": sum(seconds) / len(seconds),
        }
        self.accelerator.log(figures, step=step)
        if self.accelerator.is_main_process:
            self.echo(
                log_line(
                    step,
                    self.config.total_steps,
                    loss_mean,
                    figures["train/grad_l2"],
                    figures["train/weights_l2"],
                    figures["train/lr"],
                    figures["train/seconds_per_step"],
                )
            )
        self.result.train_losses.append((step, loss_mean))
        self._window_losses, self._window_seconds = [], []

    @staticmethod
    def load_finished(output_dir, model_name: str | None = None) -> tuple[PretrainConfig, PretrainResult] | None:
        """(config, result) of a run in ``output_dir`` that reached its total_steps and saved its model, else None;
        ``model_name``, when given, must be the architecture it pretrained (``config.finished_run``).
        A relative ``output_dir`` is read from the repository's root, where the recipe's command writes it."""
        return finished_run(repo_root() / output_dir, model_name)

    @property
    def last_step(self) -> int:
        return self.config.stop_at_step or self.config.total_steps

    def maybe_evaluate(self, step: int, model) -> None:
        """Held-out NLL every ``eval_every`` steps and at the recipe's last step."""
        if (self.config.eval_every and step % self.config.eval_every == 0) or step == self.config.total_steps:
            self.evaluate(model, step)

    def evaluate(self, model, step: int) -> None:
        """Held-out NLL per target token (all targets are equally long), with own and with another row's
        inputs, averaged over processes; into the result and TensorBoard."""
        import torch

        scores = input_reliance(model, self.held_out, self.accelerator.device, self.plan.micro_batch)
        mean = {
            name: self.accelerator.reduce(torch.tensor(value, device=self.accelerator.device), "mean").item()
            for name, value in scores.items()
        }
        self.result.eval_nll[step], self.result.eval_nll_other_input[step] = (
            mean["own input"],
            mean["another row's input"],
        )
        self.accelerator.log(
            {"eval/nll": mean["own input"], "eval/nll_other_input": mean["another row's input"]}, step=step
        )

    def checkpoint_if_signalled(self, step: int) -> bool:
        """Once any process got SIGTERM or SIGUSR1: a checkpoint of this step, a line on how to resume, and True
        (every process stops at the same step); else False."""
        if not self.signals.requested(self.accelerator):
            return False
        self.result.stopped_by = self.signals.received or "a signal to another process"
        path = save_checkpoint(self.accelerator, self.config, self.loader, self.result, step)
        if self.accelerator.is_main_process:
            self.echo(
                f"Stopped by {self.result.stopped_by} after step {step} of {self.config.total_steps}; checkpoint "
                f"{path}. Resume with the same command and --resume true (or auto)."
            )
        return True

    def maybe_save_checkpoint(self, step: int) -> None:
        """A checkpoint every ``checkpoint_every`` steps and at the run's last step."""
        every = self.config.checkpoint_every
        if step == self.last_step or (every and step % every == 0):
            save_checkpoint(self.accelerator, self.config, self.loader, self.result, step)

    def finish(self, model, tokenizer) -> PretrainResult:
        """The result: seconds per step over the timed steps of every job; unless a signal stopped the run
        (its checkpoint holds it), the last NLL, the model saved to ``<output_dir>/model`` and result.json
        (the config as asked, the result with the plan it ended with)."""
        result, config = self.result, self.config
        timed = (
            (result.train_seconds, result.timed_steps)
            if result.timed_steps
            else (sum(result.first_step_seconds), len(result.first_step_seconds))
        )  # a run of first steps only
        result.seconds_per_step = timed[0] / timed[1] if timed[1] else float("nan")
        if not result.stopped_by:
            if result.steps == config.total_steps and config.total_steps not in result.eval_nll:
                self.evaluate(model, config.total_steps)
            result.model_dir = self._save_model(model, tokenizer)
            if self.accelerator.is_main_process:
                write_result(config, result)
        return result

    def _save_model(self, model, tokenizer) -> str:
        model_dir = Path(self.config.output_dir) / "model"
        self.accelerator.wait_for_everyone()
        if self.accelerator.is_main_process:
            self.accelerator.unwrap_model(model).save_pretrained(str(model_dir))
            tokenizer.save_pretrained(str(model_dir))
        self.accelerator.wait_for_everyone()
        return str(model_dir)


def _gathered_checksum(accelerator, input_ids) -> list[int]:
    import torch

    checksum = torch.tensor([int(input_ids.long().sum())], device=accelerator.device)
    return [int(c) for c in accelerator.gather(checksum)]


def split_rows(batch: dict, rows: int) -> list[dict]:
    """``batch`` cut into parts of ``rows`` rows: a step's micro-batches (every tensor is (rows, length)).

    The loop's ``train_step`` (lesson 04's cell, ``from_notebooks/pretraining_loop.py``) writes the same split inline
    rather than calling this, because the lesson shows how a step is cut; ``tests/pretraining/test_run.py`` holds the two
    to the same parts."""
    return [{key: value[i : i + rows] for key, value in batch.items()} for i in range(0, len(batch["labels"]), rows)]


def input_reliance(model, batches: list[dict], device=None, micro_batch: int | None = None) -> dict[str, float]:
    """Held-out NLL per target token with each row's own input, and with the next row's input instead.

    Span corruption hides words the input's context points to. A model that has only learnt the
    targets' own patterns (which sentinels, which common words) scores about the same either way;
    the gap opens once it reads the input, which is what a downstream task needs from the encoder.
    Each batch goes through the model ``micro_batch`` rows at a time (None: whole); every target
    has the same length, so the mean over equal parts is the batch's mean.
    """
    import torch

    if any(len(b["input_ids"]) < 2 for b in batches):
        raise ValueError("input_reliance swaps inputs between rows, so every batch needs at least 2 rows.")
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    scores = {"own input": [], "another row's input": []}
    with torch.no_grad():
        for b in batches:
            for name, shift in (("own input", 0), ("another row's input", 1)):
                inputs = {
                    "input_ids": b["input_ids"].roll(shift, dims=0),
                    "labels": b["labels"],
                }  # row i gets row i-1's input
                for part in split_rows(inputs, micro_batch or len(b["labels"])):
                    scores[name].append(float(model(**{k: v.to(device) for k, v in part.items()}).loss))
    model.train(was_training)
    return {name: sum(values) / len(values) for name, values in scores.items()}


def weights_l2(model) -> float:
    import torch

    return math.sqrt(sum(float(torch.sum(p.detach().float() ** 2)) for p in model.parameters()))


def log_line(step: int, total: int, loss: float, grad: float, weights: float, lr: float, seconds: float) -> str:
    """nanoT5's progress line."""
    return (
        f"[train] Step {step} out of {total} | Loss --> {loss:.3f} | Grad_l2 --> {grad:.3f} | "
        f"Weights_l2 --> {weights:.3f} | Lr --> {lr:.3f} | Seconds_per_step --> {seconds:.3f} |"
    )
