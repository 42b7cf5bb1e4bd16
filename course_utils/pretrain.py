"""Pretrain a T5 v1.1 from random weights with span corruption, the nanoT5 way (lesson 04).

The notebook calls ``pretrain``; long runs use the command line, on one process or several:

    python -m course_utils.pretrain --help
    python -m course_utils.pretrain --model-name standin:t5-v1_1-base --data-path data/c4 \\
        --input-length 128 --batch-size 16 --total-steps 200 --warmup-steps 20 --data-workers 1 --output-dir outputs/pt
    accelerate launch --num_processes 8 -m course_utils.pretrain --output-dir outputs/t5_base_c4

Every ``log_every`` steps it prints a line in nanoT5's shape:

    [train] Step 100 out of 65536 | Loss --> 4.219 | Grad_l2 --> 1.204 | Weights_l2 --> 7042.931 | Lr --> 0.010 | Seconds_per_step --> 0.560 |

and writes the same figures to TensorBoard (``<output_dir>/tensorboard``). The batches are made
in ``data_workers`` DataLoader processes (``pretrain_data.py``). A run can be stopped and resumed
from its last checkpoint (``--resume true``), which keeps the data workers' positions too, and
continues exactly where it was; ``--resume auto`` resumes when there is a complete checkpoint and
starts afresh when there is none (what a requeued job script wants).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from .configs import InputError, argument_parser, checked_replace, run_command
from .hardware import check_precision, quiet_library_notices, resolve_precision, tf32
from .memory import choose_accumulation, gpu_gib, reset_peak_memory, rows_that_fit
from .models import load_seq2seq_model, load_tokenizer, model_options, seq2seq_from_config
from .offline import MissingAssetError
from .optim import build_optimizer, build_scheduler
from .pretrain_data import (CorruptedBatches, TextSource, batch_loader, loader_state, restore_loader, start_batches,
                           stop_batches)
from .span_corruption import compute_input_and_target_lengths, span_corruption_collator


@dataclass(frozen=True)
class PretrainConfig:
    """One pretraining run. The defaults are nanoT5's whole T5-base recipe; the command runs them as they are."""

    model_name: str = "google/t5-v1_1-base"  # its config and tokenizer; weights are random unless from_pretrained
    from_pretrained: bool = False          # True: continue from the checkpoint's weights instead
    data_path: str = "allenai/c4"          # Hub id (streamed), a folder, a file or a glob of .txt/.jsonl/.parquet
    data_config: str | None = "en"         # the Hub data set's config name (C4's English part)
    text_column: str = "text"              # the column holding each document's text (.jsonl, .parquet, Hub)
    output_dir: str = "outputs/pretrain"   # checkpoints, the final model, TensorBoard events, result.json
    input_length: int = 512                # encoder tokens per row, as T5 was pretrained
    noise_density: float = 0.15            # share of tokens hidden (T5 paper)
    mean_noise_span_length: float = 3.0    # average tokens per hidden span (T5 paper)
    batch_size: int = 128                  # rows per optimizer step, over all processes and accumulation
    gradient_accumulation_steps: int = 0   # 0: the fewest that fit the GPU's memory (1 on a CPU); or a number
    total_steps: int = 65536               # 2^16 steps x 128 rows x 568 tokens = 4.8 B tokens
    optimizer: str = "adamwscale"          # or "adafactor" (the original T5 recipe), or "adamw" (plain, for comparison)
    learning_rate: float = 2e-2            # large, which the RMS scaling makes safe
    weight_decay: float = 0.0              # nanoT5 found none best with the RMS-scaled AdamW
    lr_scheduler: str = "cosine"           # or "inverse_sqrt" (legacy)
    warmup_steps: int = 10000              # steps in which the rate rises to its peak (about 15 % of the recipe)
    final_learning_rate: float = 1e-5      # the cosine's floor
    grad_clip: float = 1.0                 # the gradients' global L2 norm is cut to this before each step
    precision: str = "auto"                # "auto": bf16 where the GPU supports it, else fp32; never fp16
    tf32: bool = True                      # TF32 matmuls on Ampere+ GPUs during the run (no effect elsewhere)
    compile: bool = True                   # torch.compile on a GPU (nanoT5's fastest setting with bf16); skipped on a CPU
    # torch.compile's backend. On a CPU only another backend than inductor compiles (e.g. "aot_eager", which
    # builds no kernels: the tests use it); inductor's CPU kernels cost more to build than they save here.
    compile_backend: str = "inductor"
    log_every: int = 100                   # steps between progress lines (and TensorBoard points)
    eval_every: int = 5000                 # 0: evaluate only at the start and the end
    eval_batches: int = 100                # held-out micro-batches per evaluation
    checkpoint_every: int = 5000           # 0: a checkpoint only at the end; 5,000 steps are about 45 min on an A100
    keep_checkpoints: int = 2              # the newest complete checkpoints kept under <output_dir>/checkpoints
    # true: continue from the newest complete checkpoint (an error when there is none); auto: continue
    # from it when there is one, else start afresh (a requeued job); false: start afresh
    resume: bool | str = False
    stop_at_step: int = 0                  # 0: run to total_steps; else stop there (checkpointed), e.g. at a job's time limit
    seed: int = 2137                       # the random weights, the data order and the noise masks (nanoT5's seed)
    attn_implementation: str | None = None  # None: the library default (SDPA); "eager" on small CPUs
    shuffle_block: int = 10000             # documents shuffled together; a resume reads at most one block again
    data_workers: int = 8                  # DataLoader processes per training process that tokenize and corrupt (nanoT5: 8); 0: none


@dataclass
class PretrainResult:
    steps: int
    train_losses: list[tuple[int, float]] = field(default_factory=list)   # (step, mean loss since last log)
    eval_nll: dict[int, float] = field(default_factory=dict)              # step -> held-out NLL per target token
    eval_nll_other_input: dict[int, float] = field(default_factory=dict)  # the same, each row given another row's input
    seconds_per_step: float = float("nan")                                # over the timed steps, all jobs
    model_dir: str = ""
    processes: int = 1
    gradient_accumulation_steps: int = 1
    train_seconds: float = 0.0                                            # wall time of the timed steps, all jobs
    timed_steps: int = 0                                                  # every step but each job's first
    first_step_seconds: list[float] = field(default_factory=list)         # each job's first step: compiling, warm-up
    stopped_by: str = ""                                                  # "SIGTERM" or "SIGUSR1" when a signal stopped it
    first_batch_checksums: list[int] = field(default_factory=list)        # one per process: are shards distinct?


def resolve_accumulation(config: PretrainConfig, world_size: int, parameters: int,
                         precision: str = "bf16") -> PretrainConfig:
    """``config`` with gradient_accumulation_steps chosen from the GPU's memory when it is 0
    (``memory.rows_that_fit``), so every GPU runs the same global batch.

    For example, batch 128 of T5 v1.1 base on one GPU in bf16: 24 GB -> 8 steps of 16 rows, 40 GB -> 4 of 32,
    48 GB -> 2 of 64, 80 GB -> 1 of 128; in fp32, a 16 GB V100 -> 16 of 8, a T4 -> 32 of 4.
    A step that still runs out of memory doubles the accumulation (see ``_train``).
    """
    if config.gradient_accumulation_steps:
        return config
    gib = gpu_gib()
    if not gib:
        return dataclasses.replace(config, gradient_accumulation_steps=1)
    tokens = config.input_length + collator_lengths(config)[1]
    steps = choose_accumulation(config.batch_size, world_size, rows_that_fit(gib, parameters, tokens, precision))
    return dataclasses.replace(config, gradient_accumulation_steps=steps)


def collator_lengths(config: PretrainConfig) -> tuple[int, int]:
    """(raw row length, target length) for ``config``'s input length and noise settings."""
    return compute_input_and_target_lengths(config.input_length, config.noise_density, config.mean_noise_span_length)


def check_config(config: PretrainConfig, world_size: int) -> None:
    """Fail before any work when the batch arithmetic or a choice cannot work."""
    if config.batch_size % world_size:
        raise InputError(f"batch_size {config.batch_size} is not divisible by {world_size} processes.")
    per_step = max(config.gradient_accumulation_steps, 1) * world_size
    if config.batch_size % per_step:
        raise InputError(f"batch_size {config.batch_size} is not divisible by gradient_accumulation_steps "
                         f"{config.gradient_accumulation_steps} x {world_size} processes; pick a multiple of {per_step}.")
    check_precision(config.precision)
    if config.keep_checkpoints < 1:
        raise InputError(f"keep_checkpoints must be at least 1 (the one a resume starts from), got {config.keep_checkpoints}.")
    if config.data_workers < 0 or config.shuffle_block < 1:
        raise InputError(f"data_workers must be 0 or more and shuffle_block at least 1, got {config.data_workers} "
                         f"and {config.shuffle_block}.")
    if not 0 <= config.warmup_steps <= config.total_steps:
        raise InputError(f"warmup_steps {config.warmup_steps} must lie between 0 and total_steps {config.total_steps}.")
    if config.resume not in RESUME_CHOICES:
        raise InputError(f"resume must be true, false or auto, got {config.resume!r}.")


RESUME_CHOICES = (True, False, "auto")


def compiles(config: PretrainConfig, device) -> bool:
    """Whether the run compiles its model: on a GPU when ``compile`` says so; on a CPU only with a backend
    other than inductor (compiling inductor's CPU kernels costs more than it saves at these sizes)."""
    return config.compile and (device.type == "cuda" or config.compile_backend != "inductor")


def build_model(config: PretrainConfig):
    """T5 from ``model_name``'s config with random weights (or its weights, with from_pretrained).

    T5 v1.1 keeps its untied output layer either way (see models.seq2seq_from_config).
    """
    options = model_options(config.attn_implementation)
    if config.from_pretrained:
        return load_seq2seq_model(config.model_name, **options)
    # nanoT5 pretrains without dropout.
    return seq2seq_from_config(config.model_name, config_changes={"dropout_rate": 0.0}, **options)


def initial_model(config: PretrainConfig):
    """The weights a run starts from: seeded, so the same config always gives the same start."""
    from accelerate.utils import set_seed

    set_seed(config.seed)
    return build_model(config)


def fill_spans(model, tokenizer, input_ids, max_new_tokens: int) -> list[str]:
    """What ``model`` writes for each corrupted input: sentinels followed by its guesses."""
    import torch

    model.eval()
    with torch.no_grad():
        output = model.generate(input_ids=input_ids.to(model.device), max_new_tokens=max_new_tokens, do_sample=False)
    texts = tokenizer.batch_decode(output, skip_special_tokens=False)  # keep the sentinels visible
    return [t.replace(tokenizer.pad_token, "").strip() or "(nothing but padding)" for t in texts]


def save_initial_weights(config: PretrainConfig, folder: str | os.PathLike) -> str:
    """Save the seeded random weights that ``config``'s pretraining starts from, with the tokenizer: the
    "random init" start of lesson 04's payoff."""
    initial_model(config).save_pretrained(str(folder))
    load_tokenizer(config.model_name).save_pretrained(str(folder))
    return str(folder)


def evaluate(model, accelerator, batches: list[dict], step: int, result: PretrainResult, micro_batch: int) -> None:
    """Held-out NLL per target token (all targets are equally long), with own and with another row's
    inputs, averaged over processes; into ``result`` and TensorBoard."""
    import torch

    scores = input_reliance(model, batches, accelerator.device, micro_batch)
    mean = {name: accelerator.reduce(torch.tensor(value, device=accelerator.device), "mean").item()
            for name, value in scores.items()}
    result.eval_nll[step], result.eval_nll_other_input[step] = mean["own input"], mean["another row's input"]
    accelerator.log({"eval/nll": mean["own input"], "eval/nll_other_input": mean["another row's input"]}, step=step)


def collator_for(config: PretrainConfig, tokenizer):
    """(span-corruption collator, raw row length) for ``config``'s input length and noise settings."""
    return span_corruption_collator(tokenizer, config.input_length, config.noise_density, config.mean_noise_span_length)


def micro_batch_size(config: PretrainConfig, world_size: int) -> int:
    """Rows per forward pass on each process (accumulation 0, not yet chosen, counts as 1)."""
    return config.batch_size // (max(config.gradient_accumulation_steps, 1) * world_size)


def split_rows(batch: dict, rows: int) -> list[dict]:
    """``batch`` cut into parts of ``rows`` rows: a step's micro-batches (every tensor is (rows, length))."""
    return [{key: value[i:i + rows] for key, value in batch.items()} for i in range(0, len(batch["labels"]), rows)]


def corrupted_batches(config: PretrainConfig, tokenizer, split: str, seed: int, rank: int = 0,
                      world_size: int = 1) -> CorruptedBatches:
    """This process's endless batches of ``split``: ``batch_size / world_size`` corrupted rows each."""
    collator, raw_length = collator_for(config, tokenizer)
    source = TextSource(config.data_path, config.data_config, split, config.text_column)
    return CorruptedBatches(source, tokenizer, collator, raw_length, config.batch_size // world_size, seed, rank,
                            world_size, config.shuffle_block)


def held_out_batches(config: PretrainConfig, tokenizer, rank: int = 0, world_size: int = 1) -> list[dict]:
    """The fixed held-out batches a run evaluates on: ``eval_batches`` of the validation split, noise seed 0,
    read in this process (the same whatever data_workers is)."""
    return list(islice(corrupted_batches(config, tokenizer, "validation", 0, rank, world_size), config.eval_batches))


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
                inputs = {"input_ids": b["input_ids"].roll(shift, dims=0), "labels": b["labels"]}  # row i gets row i-1's input
                for part in split_rows(inputs, micro_batch or len(b["labels"])):
                    scores[name].append(float(model(**{k: v.to(device) for k, v in part.items()}).loss))
    model.train(was_training)
    return {name: sum(values) / len(values) for name, values in scores.items()}


def weights_l2(model) -> float:
    import torch

    return math.sqrt(sum(float(torch.sum(p.detach().float() ** 2)) for p in model.parameters()))


def log_line(step: int, total: int, loss: float, grad: float, weights: float, lr: float, seconds: float) -> str:
    """nanoT5's progress line."""
    return (f"[train] Step {step} out of {total} | Loss --> {loss:.3f} | Grad_l2 --> {grad:.3f} | "
            f"Weights_l2 --> {weights:.3f} | Lr --> {lr:.3f} | Seconds_per_step --> {seconds:.3f} |")


def checkpoints_dir(config: PretrainConfig) -> Path:
    return Path(config.output_dir) / "checkpoints"


def complete_checkpoints(config: PretrainConfig) -> list[Path]:
    """The finished checkpoints, oldest first: ``step-NNNNNNN`` folders (a folder gets that name only when complete)."""
    folder = checkpoints_dir(config)
    found = [p for p in folder.glob("step-*") if (p / "progress.json").exists()] if folder.is_dir() else []
    return sorted(found, key=lambda p: int(p.name.removeprefix("step-")))


def data_state_file(folder: Path, rank: int) -> Path:
    return folder / f"data_state_{rank}.json"


def save_checkpoint(accelerator, config: PretrainConfig, step: int, result: PretrainResult, loader) -> Path:
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
        (partial / "progress.json").write_text(json.dumps({"step": step, "result": dataclasses.asdict(result)}))
        if final.exists():  # this very step was saved before (a resumed run that stopped again at once)
            shutil.rmtree(partial)
        else:
            os.replace(partial, final)
        for old in complete_checkpoints(config)[:-config.keep_checkpoints]:
            shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()
    return final


def maybe_save_checkpoint(accelerator, config: PretrainConfig, step: int, result: PretrainResult, loader,
                          force: bool = False) -> None:
    """A checkpoint every ``checkpoint_every`` steps (and when ``force``)."""
    if force or (config.checkpoint_every and step % config.checkpoint_every == 0):
        save_checkpoint(accelerator, config, step, result, loader)


def maybe_resume(accelerator, config: PretrainConfig, result: PretrainResult, loader, echo=print) -> int:
    """The step to start from: 0, or the newest complete checkpoint's step (its state, the data
    stream's position and the run's history restored). With ``resume="auto"`` a folder without a
    complete checkpoint (none yet, or only one a kill left half-written) means a fresh start; it says which."""
    if not config.resume:
        return 0
    found = complete_checkpoints(config)
    if not found and config.resume == "auto":
        if accelerator.is_main_process:
            echo(f"resume auto: no complete checkpoint in {checkpoints_dir(config)}; starting from step 0")
        return 0
    if not found:
        raise FileNotFoundError(f"resume=True but {checkpoints_dir(config)} holds no complete checkpoint; "
                                "start without resume, or resume auto to start afresh when there is none.")
    if config.resume == "auto" and accelerator.is_main_process:
        echo(f"resume auto: resuming from {found[-1]}")
    accelerator.load_state(str(found[-1]))
    data_state = data_state_file(found[-1], accelerator.process_index)
    if not data_state.exists():
        raise FileNotFoundError(f"{found[-1]} holds no data position for process {accelerator.process_index}: "
                                "resume with as many processes as the run that saved it, or start without resume.")
    restore_loader(loader, json.loads(data_state.read_text()), str(found[-1]))
    progress = json.loads((found[-1] / "progress.json").read_text())
    saved = result_from_json(progress["result"])
    result.train_losses, result.train_seconds = saved.train_losses, saved.train_seconds
    result.timed_steps, result.first_step_seconds = saved.timed_steps, saved.first_step_seconds
    result.eval_nll, result.eval_nll_other_input = saved.eval_nll, saved.eval_nll_other_input
    return progress["step"]


def result_from_json(saved: dict) -> PretrainResult:
    """A PretrainResult from ``dataclasses.asdict`` after a JSON round trip (string keys, lists for tuples)."""
    figures = dict(saved)
    for name in ("eval_nll", "eval_nll_other_input"):
        figures[name] = {int(step): value for step, value in figures[name].items()}
    figures["train_losses"] = [tuple(pair) for pair in figures["train_losses"]]
    return PretrainResult(**figures)


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


def pretrain(config: PretrainConfig, echo=print) -> PretrainResult:
    """Run (or resume) pretraining; return the losses, held-out NLLs and the saved model's folder."""
    with tf32(config.tf32):  # for this run only: the process's own setting afterwards
        return _pretrain(config, echo)


def _pretrain(config: PretrainConfig, echo) -> PretrainResult:
    import torch
    from accelerate import Accelerator

    precision = resolve_precision(config.precision)
    accelerator = Accelerator(mixed_precision="bf16" if precision == "bf16" else "no",
                              cpu=not torch.cuda.is_available(), log_with="tensorboard",
                              project_dir=config.output_dir)
    rank, world = accelerator.process_index, accelerator.num_processes
    check_config(config, world)
    reset_peak_memory()  # this run's peak, not an earlier one's
    tokenizer = load_tokenizer(config.model_name)
    model = initial_model(config)
    config = resolve_accumulation(config, world, model.num_parameters(), precision)
    check_config(config, world)
    if accelerator.is_main_process:
        echo(f"{config.batch_size} rows per step = {micro_batch_size(config, world)} per forward pass "
             f"x {config.gradient_accumulation_steps} accumulation x {world} process(es); "
             f"{config.data_workers} data worker(s) per process")
    optimizer = build_optimizer(config.optimizer, model, config.learning_rate, config.weight_decay)
    scheduler = build_scheduler(config.lr_scheduler, optimizer, config.warmup_steps, config.total_steps,
                                config.final_learning_rate)
    # The scheduler is stepped here once per optimizer step; Accelerate would step it once per process.
    model, optimizer = accelerator.prepare(model, optimizer)
    accelerator.register_for_checkpointing(scheduler)
    if compiles(config, accelerator.device):
        # Dynamo keeps the compiled versions of earlier runs' models, freed or not, and every prepared model
        # shares Accelerate's forward wrapper: after 8 versions (recompile_limit) new ones silently run eager.
        torch._dynamo.reset()
        model = torch.compile(model, backend=config.compile_backend)
    result = PretrainResult(steps=0, processes=world, gradient_accumulation_steps=config.gradient_accumulation_steps)
    # Not accelerator.prepare(loader): each process already reads its own share of the documents.
    loader = batch_loader(corrupted_batches(config, tokenizer, "train", config.seed, rank, world),
                          config.data_workers, pin_memory=accelerator.device.type == "cuda")
    start_step = maybe_resume(accelerator, config, result, loader, echo)
    accelerator.init_trackers("tensorboard")
    batches = start_batches(loader)  # the workers start here, from the restored position
    held_out = held_out_batches(config, tokenizer, rank, world)
    result.steps = start_step
    if start_step == 0:
        evaluate(model, accelerator, held_out, 0, result, micro_batch_size(config, world))
    try:
        with StopSignals() as signals:
            result = _train(config, accelerator, model, optimizer, scheduler, loader, batches, held_out, start_step,
                            result, echo, signals)
    finally:
        stop_batches(loader)
    # A step that ran out of memory doubled the accumulation: the run's config says what it trained with.
    config = dataclasses.replace(config, gradient_accumulation_steps=result.gradient_accumulation_steps)
    if not result.stopped_by:  # a stopped run has its checkpoint; the model is saved at the end
        if result.steps == config.total_steps and config.total_steps not in result.eval_nll:
            evaluate(model, accelerator, held_out, config.total_steps, result, micro_batch_size(config, world))
        result.model_dir = _save_model(accelerator, model, tokenizer, config)
        if accelerator.is_main_process:
            write_result(config, result)
    _finish_trackers(accelerator)
    return result


RESULT_FILE = "result.json"


def write_result(config: PretrainConfig, result: PretrainResult) -> Path:
    """``<output_dir>/result.json``: the run's config and figures, for ``finished_run`` and for people."""
    path = Path(config.output_dir) / RESULT_FILE
    path.write_text(json.dumps({"config": dataclasses.asdict(config), "result": dataclasses.asdict(result)}, indent=1))
    return path


def finished_run(output_dir: str | os.PathLike, model_name: str | None = None) -> tuple[PretrainConfig, PretrainResult] | None:
    """(config, result) of a run in ``output_dir`` that reached its total_steps and saved its model, else None.

    ``model_name``, when given, must be the architecture the run pretrained.
    """
    path = Path(output_dir) / RESULT_FILE
    if not path.exists():
        return None
    saved = json.loads(path.read_text())
    config = PretrainConfig(**saved["config"])
    result = result_from_json(saved["result"])
    done = result.steps >= config.total_steps and (Path(result.model_dir) / "config.json").exists()
    if not done or (model_name is not None and config.model_name != model_name):
        return None
    return config, result


def train_step(accelerator, model, batch: dict, micro_batch: int):
    """Forward and backward over ``batch`` (this process's rows of one step) in micro-batches of
    ``micro_batch`` rows, gradients summed, synchronised between processes at the last one; the mean loss."""
    parts = [{k: v.to(accelerator.device, non_blocking=True) for k, v in part.items()}
             for part in split_rows(batch, micro_batch)]
    step_loss = 0.0
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        with contextlib.nullcontext() if last else accelerator.no_sync(model):
            loss = model(**part).loss / len(parts)
            accelerator.backward(loss)
        step_loss += loss.detach()
    return step_loss


def fitting_train_step(accelerator, model, optimizer, batch: dict, micro_batch: int, echo) -> tuple:
    """(loss, micro_batch): ``train_step``, and when a micro-batch runs out of GPU memory in a single
    process, the same batch again in micro-batches half as large (twice the accumulation), saying so."""
    import torch

    while True:
        try:
            return train_step(accelerator, model, batch, micro_batch), micro_batch
        except torch.OutOfMemoryError as error:
            optimizer.zero_grad(set_to_none=True)
            if accelerator.num_processes > 1 or micro_batch < 2 or micro_batch % 2:
                # Other processes cannot learn of it without a collective: stop with what to set.
                raise RuntimeError(f"Out of GPU memory with {micro_batch} rows per forward pass; rerun with "
                                   "--gradient-accumulation-steps set to twice the accumulation above.") from error
            del error  # its traceback holds the step's activations
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            micro_batch //= 2
            echo(f"Out of GPU memory: accumulating twice as many micro-batches of {micro_batch} rows from now on.")


def _train(config, accelerator, model, optimizer, scheduler, loader, batches, held_out, start_step, result, echo,
           signals):
    model.train()
    window_losses, window_seconds = [], []
    last_step = config.stop_at_step or config.total_steps
    micro_batch = micro_batch_size(config, accelerator.num_processes)
    per_process = config.batch_size // accelerator.num_processes
    result.steps = start_step
    for step in range(start_step + 1, last_step + 1):
        step_start, first = time.perf_counter(), step == start_step + 1
        batch = next(batches)  # this process's rows of the step: (batch_size / processes, input_length)
        if first:
            result.first_batch_checksums = _gathered_checksum(accelerator, batch["input_ids"][:micro_batch])
        step_loss, micro_batch = fitting_train_step(accelerator, model, optimizer, batch, micro_batch, echo)
        result.gradient_accumulation_steps = per_process // micro_batch
        grad_norm = accelerator.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        seconds = time.perf_counter() - step_start
        # A job's first step compiles the training graph and warms the kernels up: timed apart.
        if first:
            result.first_step_seconds.append(seconds)
        else:
            result.train_seconds, result.timed_steps = result.train_seconds + seconds, result.timed_steps + 1
            window_seconds.append(seconds)
        result.steps = step
        window_losses.append(step_loss)
        if step % config.log_every == 0 or step == last_step:
            maybe_log(config, accelerator, step, window_losses, window_seconds or [seconds], grad_norm, scheduler,
                      model, result, echo)
            window_losses, window_seconds = [], []
        if (config.eval_every and step % config.eval_every == 0) or step == config.total_steps:
            evaluate(model, accelerator, held_out, step, result, micro_batch)
        if signals.requested(accelerator):
            result.stopped_by = signals.received or "a signal to another process"
            path = save_checkpoint(accelerator, config, step, result, loader)
            if accelerator.is_main_process:
                echo(f"Stopped by {result.stopped_by} after step {step} of {config.total_steps}; checkpoint {path}. "
                     "Resume with the same command and --resume true (or auto).")
            break
        maybe_save_checkpoint(accelerator, config, step, result, loader, force=step == last_step)
    # Over every job of the run, each job's first step left out; a run of first steps only has only those.
    timed = (result.train_seconds, result.timed_steps) if result.timed_steps else \
        (sum(result.first_step_seconds), len(result.first_step_seconds))
    result.seconds_per_step = timed[0] / timed[1] if timed[1] else float("nan")
    return result


def maybe_log(config, accelerator, step: int, losses: list, seconds: list[float], grad_norm, scheduler, model,
              result: PretrainResult, echo) -> None:
    """The window's mean loss and seconds per step (its timed steps) to TensorBoard, the log and ``result``."""
    import torch

    loss_mean = accelerator.reduce(torch.stack(losses).mean(), "mean").item()
    figures = {"train/loss": loss_mean, "train/grad_l2": float(grad_norm), "train/lr": scheduler.get_last_lr()[0],
               "train/weights_l2": weights_l2(model), "train/seconds_per_step": sum(seconds) / len(seconds)}
    accelerator.log(figures, step=step)
    if accelerator.is_main_process:
        echo(log_line(step, config.total_steps, loss_mean, figures["train/grad_l2"], figures["train/weights_l2"],
                      figures["train/lr"], figures["train/seconds_per_step"]))
    result.train_losses.append((step, loss_mean))


def _finish_trackers(accelerator) -> None:
    """Close TensorBoard, as ``end_training`` would, but keep the launcher's process group: Accelerate's
    state outlives one run, and a second run in this process (pretrain_variants) needs the group."""
    for tracker in accelerator.trackers:
        tracker.finish()


def _gathered_checksum(accelerator, input_ids) -> list[int]:
    import torch

    checksum = torch.tensor([int(input_ids.long().sum())], device=accelerator.device)
    return [int(c) for c in accelerator.gather(checksum)]


def _save_model(accelerator, model, tokenizer, config: PretrainConfig) -> str:
    model_dir = Path(config.output_dir) / "model"
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        accelerator.unwrap_model(model).save_pretrained(str(model_dir))
        tokenizer.save_pretrained(str(model_dir))
    accelerator.wait_for_everyone()
    return str(model_dir)


def pretrain_config(profile, output_dir: str, **changes) -> PretrainConfig:
    """Lesson 04's run: PretrainConfig's recipe with ``profile.pretrain``'s changes, then ``changes``."""
    config = PretrainConfig(model_name=profile.models["t5_v1_1_base"], data_path=profile.c4.path,
                            data_config=profile.c4.config, output_dir=output_dir,
                            attn_implementation=profile.attn_implementation)
    config = checked_replace(config, profile.pretrain, "Profile.pretrain setting")
    return checked_replace(config, changes, "pretraining setting")


def pretrain_variants(config: PretrainConfig, variants: dict[str, dict], echo=print) -> dict[str, PretrainResult]:
    """{name: result} of ``config``'s run once per variant, each changing only the settings it names
    (an optimizer, a schedule, ...) and writing to ``<output_dir>/<name>``. Every run starts from the
    same seeded weights and reads the same batches."""
    results = {}
    for name, changes in variants.items():
        folder = Path(config.output_dir) / name.replace(" ", "_").replace("+", "and")
        results[name] = pretrain(checked_replace(config, {**changes, "output_dir": str(folder)}, "variant setting"),
                                 echo=lambda _: None)
        nll = results[name].eval_nll
        echo(f"{name}: held-out NLL {nll[0]:.3f} -> {nll[max(nll)]:.3f} after {max(nll)} steps")
    return results


# nanoT5's finding, in two runs: the same model, data and peak rate, with and without the RMS scaling.
RACE = {"AdamW + RMS scaling": {"optimizer": "adamwscale"}, "plain AdamW": {"optimizer": "adamw"}}
RACE_EVAL_BATCHES = 10


def optimizer_race(config: PretrainConfig, steps: int, output_dir: str, echo=print) -> dict[str, PretrainResult]:
    """``RACE``'s two runs of ``config`` cut to ``steps`` (at most its own), with a tenth of them
    (at most its own warm-up) warming up, the cosine schedule, and six evaluations on at most
    ``RACE_EVAL_BATCHES`` held-out batches (the recipe's 100 would cost as much as the race's steps)."""
    steps = min(steps, config.total_steps)
    short = dataclasses.replace(config, output_dir=output_dir, total_steps=steps, lr_scheduler="cosine",
                                warmup_steps=min(config.warmup_steps, steps // 10), eval_every=max(steps // 6, 1),
                                eval_batches=min(config.eval_batches, RACE_EVAL_BATCHES), log_every=max(steps // 6, 1),
                                checkpoint_every=0, resume=False, stop_at_step=0)
    return pretrain_variants(short, RACE, echo)


PROG = "python -m course_utils.pretrain"


def _parser():
    return argument_parser(PretrainConfig, PROG, "Pretrain a T5 with span corruption (nanoT5's recipe).")


def main(argv: list[str] | None = None) -> int:
    config = PretrainConfig(**vars(_parser().parse_args(argv)))
    return run_command(lambda: _main(config), PROG, (InputError, MissingAssetError, FileNotFoundError))


def _main(config: PretrainConfig) -> int:
    quiet_library_notices()
    result = pretrain(config)
    from accelerate import PartialState

    PartialState().destroy_process_group()  # the end of the process: its launcher's group is done
    if os.environ.get("RANK", "0") == "0":  # one result line, the figures result.json holds
        print(json.dumps(dataclasses.asdict(result)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
