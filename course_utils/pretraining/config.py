"""A pretraining run's settings, the plan they come to on a machine, and the run's record.

    config = PretrainConfig.for_profile(profile, output_dir="outputs/04_pretrain")  # nanoT5's recipe, sized
    check_config(config, world_size=1)                  # the batch arithmetic and the choices, before any work
    planned = plan(config, world_size=1, parameters=247_577_856, device=torch.device("cuda"))
    planned.micro_batch, planned.gradient_accumulation_steps, planned.precision, planned.compile, planned.tf32
    finished = finished_run("outputs/t5_base_c4")       # (config, result) of a run that reached its end, or None

The config is what the caller asked for and never changes after it is made; everything a machine decides (the
precision behind "auto", the accumulation behind 0, whether TF32 and torch.compile apply) is in the plan, and
a step that runs out of GPU memory makes a new plan. The result records the plan the run ended with.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from course_utils.machinery.configs import DataSource, InputError, setting
from course_utils.machinery.hardware import check_precision, resolve_precision
from course_utils.machinery.memory import accumulation_steps_that_fit
from course_utils.machinery.moved import deprecated_alias
from course_utils.machinery.profiles import sized_by_profile
from course_utils.pretraining.span_corruption import compute_input_and_target_lengths


@dataclass(frozen=True)
class PretrainConfig:
    """One pretraining run. The defaults are nanoT5's whole T5-base recipe; the command runs them as they are."""

    model_name: str = setting(
        "google/t5-v1_1-base", "its config and tokenizer; weights are random unless from_pretrained"
    )
    from_pretrained: bool = setting(False, "True: continue from the checkpoint's weights instead")
    data_path: str = setting("allenai/c4", "Hub id (streamed), a folder, a file or a glob of .txt/.jsonl/.parquet")
    data_config: str | None = setting("en", "the Hub data set's config name (C4's English part)")
    text_column: str = setting("text", "the column holding each document's text (.jsonl, .parquet, Hub)")
    output_dir: str = setting("outputs/pretrain", "checkpoints, the final model, TensorBoard events, result.json")
    input_length: int = setting(512, "encoder tokens per row, as T5 was pretrained")
    noise_density: float = setting(0.15, "share of tokens hidden (T5 paper)")
    mean_noise_span_length: float = setting(3.0, "average tokens per hidden span (T5 paper)")
    batch_size: int = setting(128, "rows per optimizer step, over all processes and accumulation")
    gradient_accumulation_steps: int = setting(0, "0: the fewest that fit the GPU's memory (1 on a CPU); or a number")
    total_steps: int = setting(65536, "2^16 steps x 128 rows x 568 tokens = 4.8 B tokens")
    optimizer: str = setting(
        "adamwscale", 'or "adafactor" (the original T5 recipe), or "adamw" (plain, for comparison)'
    )
    learning_rate: float = setting(2e-2, "large, which the RMS scaling makes safe")
    weight_decay: float = setting(0.0, "nanoT5 found none best with the RMS-scaled AdamW")
    lr_scheduler: str = setting("cosine", 'or "inverse_sqrt" (legacy)')
    warmup_steps: int = setting(10000, "steps in which the rate rises to its peak (about 15 % of the recipe)")
    final_learning_rate: float = setting(1e-5, "the cosine's floor")
    grad_clip: float = setting(1.0, "the gradients' global L2 norm is cut to this before each step")
    precision: str = setting("auto", '"auto": bf16 where the GPU supports it, else fp32; never fp16')
    tf32: bool = setting(True, "TF32 matmuls on Ampere+ GPUs during the run (no effect elsewhere)")
    compile: bool = setting(True, "torch.compile on a GPU (nanoT5's fastest setting with bf16); skipped on a CPU")
    compile_backend: str = setting(
        "inductor",
        "torch.compile's backend. On a CPU only another backend than inductor compiles (e.g. \"aot_eager\", which builds no kernels: the tests use it); inductor's CPU kernels cost more to build than they save here.",
    )
    logging_steps: int = setting(100, "steps between progress lines (and TensorBoard points)")
    eval_every: int = setting(5000, "0: evaluate only at the start and the end")
    eval_batches: int = setting(100, "held-out micro-batches per evaluation")
    checkpoint_every: int = setting(5000, "0: a checkpoint only at the end; 5,000 steps are about 45 min on an A100")
    keep_checkpoints: int = setting(2, "the newest complete checkpoints kept under <output_dir>/checkpoints")
    resume: bool | str = setting(
        False,
        "true: continue from the newest complete checkpoint (an error when there is none); auto: continue from it when there is one, else start afresh (a requeued job); false: start afresh",
    )
    stop_at_step: int = setting(0, "0: run to total_steps; else stop there (checkpointed), e.g. at a job's time limit")
    seed: int = setting(2137, "the random weights, the data order and the noise masks (nanoT5's seed)")
    attn_implementation: str | None = setting(None, 'None: the library default (SDPA); "eager" on small CPUs')
    shuffle_block: int = setting(10000, "documents shuffled together; a resume reads at most one block again")
    data_workers: int = setting(
        8, "DataLoader processes per training process that tokenize and corrupt (nanoT5: 8); 0: none"
    )

    @property
    def data(self) -> DataSource:
        """The text this run reads: ``data_path``, ``data_config`` and ``text_column`` (flat, for the command line)."""
        return DataSource(self.data_path, self.data_config, self.text_column)

    @classmethod
    def for_profile(cls, profile, output_dir: str, **changes) -> PretrainConfig:
        """Lesson 04's run: the recipe with ``profile.pretrain``'s changes, then ``changes``."""
        return sized_by_profile(cls, profile, "t5_v1_1_base", profile.c4, output_dir, "pretrain", **changes)


RESUME_CHOICES = (True, False, "auto")


def check_config(config: PretrainConfig, world_size: int, gradient_accumulation_steps: int | None = None) -> None:
    """Fail before any work when the batch arithmetic or a choice cannot work (``gradient_accumulation_steps``: a
    plan's, when one is made; else the config's)."""
    if config.batch_size % world_size:
        raise InputError(f"batch_size {config.batch_size} is not divisible by {world_size} processes.")
    accumulation = gradient_accumulation_steps or config.gradient_accumulation_steps
    per_step = max(accumulation, 1) * world_size
    if config.batch_size % per_step:
        raise InputError(
            f"batch_size {config.batch_size} is not divisible by gradient_accumulation_steps "
            f"{accumulation} x {world_size} processes; pick a multiple of {per_step}."
        )
    check_precision(config.precision)
    if config.keep_checkpoints < 1:
        raise InputError(
            f"keep_checkpoints must be at least 1 (the one a resume starts from), got {config.keep_checkpoints}."
        )
    if config.data_workers < 0 or config.shuffle_block < 1:
        raise InputError(
            f"data_workers must be 0 or more and shuffle_block at least 1, got {config.data_workers} "
            f"and {config.shuffle_block}."
        )
    if not 0 <= config.warmup_steps <= config.total_steps:
        raise InputError(f"warmup_steps {config.warmup_steps} must lie between 0 and total_steps {config.total_steps}.")
    if config.resume not in RESUME_CHOICES:
        raise InputError(f"resume must be true, false or auto, got {config.resume!r}.")


@dataclass(frozen=True)
class PretrainPlan:
    """What a config comes to on this machine: its "auto" choices made, its GPU-only settings where they apply."""

    precision: str  # "bf16" or "fp32": the config's "auto" resolved for this device
    tf32: bool  # TF32 matmuls in effect: the config asks for them and a CUDA GPU runs
    compile: bool  # torch.compile in effect (a GPU, or another backend than inductor)
    gradient_accumulation_steps: int  # the config's 0 chosen from the GPU's memory (1 on a CPU)
    micro_batch: int  # rows per forward pass on each process

    def halved(self) -> PretrainPlan:
        """The plan after running out of GPU memory: micro-batches half as large, twice as many of them."""
        return dataclasses.replace(
            self, micro_batch=self.micro_batch // 2, gradient_accumulation_steps=self.gradient_accumulation_steps * 2
        )


def plan(config: PretrainConfig, world_size: int, parameters: int, device) -> PretrainPlan:
    """The plan a run of ``config`` follows on ``world_size`` processes of ``device`` for a model of ``parameters``;
    an accumulation that cannot split the batch is refused (``check_config``)."""
    precision = resolve_precision(config.precision)
    accumulation = planned_accumulation_steps(config, world_size, parameters, precision)
    check_config(config, world_size, accumulation)
    return PretrainPlan(
        precision=precision,
        tf32=bool(config.tf32 and device.type == "cuda"),
        compile=compiles(config, device),
        gradient_accumulation_steps=accumulation,
        micro_batch=config.batch_size // (accumulation * world_size),
    )


@dataclass
class PretrainResult:
    steps: int
    train_losses: list[tuple[int, float]] = field(default_factory=list)  # (step, mean loss since last log)
    eval_nll: dict[int, float] = field(default_factory=dict)  # step -> held-out NLL per target token
    eval_nll_other_input: dict[int, float] = field(default_factory=dict)  # the same, each row given another row's input
    seconds_per_step: float = float("nan")  # over the timed steps, all jobs
    model_dir: str = ""
    processes: int = 1
    train_seconds: float = 0.0  # wall time of the timed steps, all jobs
    timed_steps: int = 0  # every step but each job's first
    first_step_seconds: list[float] = field(default_factory=list)  # each job's first step: compiling, warm-up
    stopped_by: str = ""  # "SIGTERM" or "SIGUSR1" when a signal stopped it
    first_batch_checksums: list[int] = field(default_factory=list)  # one per process: are shards distinct?
    plan: PretrainPlan | None = None  # the plan the run ended with

    @property
    def gradient_accumulation_steps(self) -> int:
        """Micro-batches per step in the plan the run ended with (more than planned after running out of memory)."""
        return self.plan.gradient_accumulation_steps if self.plan else 0


def planned_accumulation_steps(
    config: PretrainConfig, world_size: int, parameters: int, precision: str = "bf16"
) -> int:
    """``config``'s gradient_accumulation_steps, or, when it is 0, the fewest that fit this GPU's memory
    (``memory.accumulation_steps_that_fit``), so every GPU runs the same global batch; 1 without a GPU.

    For example, batch 128 of T5 v1.1 base on one GPU in bf16: 24 GB -> 8 steps of 16 rows, 40 GB -> 4 of 32,
    48 GB -> 2 of 64, 80 GB -> 1 of 128; in fp32, a 16 GB V100 -> 16 of 8, a T4 -> 32 of 4.
    A step that still runs out of memory doubles the accumulation (``PretrainPlan.halved``).
    """
    if config.gradient_accumulation_steps:
        return config.gradient_accumulation_steps
    tokens = config.input_length + collator_lengths(config)[1]
    return accumulation_steps_that_fit(config.batch_size, world_size, parameters, tokens, precision) or 1


def collator_lengths(config: PretrainConfig) -> tuple[int, int]:
    """(raw row length, target length) for ``config``'s input length and noise settings."""
    return compute_input_and_target_lengths(config.input_length, config.noise_density, config.mean_noise_span_length)


def compiles(config: PretrainConfig, device) -> bool:
    """Whether the run compiles its model: on a GPU when ``compile`` says so; on a CPU only with a backend
    other than inductor (compiling inductor's CPU kernels costs more than it saves at these sizes)."""
    return config.compile and (device.type == "cuda" or config.compile_backend != "inductor")


RESULT_FILE = "result.json"


def write_result(config: PretrainConfig, result: PretrainResult) -> Path:
    """``<output_dir>/result.json``: the run's config and figures, for ``finished_run`` and for people."""
    path = Path(config.output_dir) / RESULT_FILE
    path.write_text(json.dumps({"config": dataclasses.asdict(config), "result": dataclasses.asdict(result)}, indent=1))
    return path


def finished_run(
    output_dir: str | os.PathLike, model_name: str | None = None
) -> tuple[PretrainConfig, PretrainResult] | None:
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


def result_from_json(saved: dict) -> PretrainResult:
    """A PretrainResult from ``dataclasses.asdict`` after a JSON round trip (string keys, lists for tuples)."""
    figures = dict(saved)
    for name in ("eval_nll", "eval_nll_other_input"):
        figures[name] = {int(step): value for step, value in figures[name].items()}
    figures["train_losses"] = [tuple(pair) for pair in figures["train_losses"]]
    figures["plan"] = PretrainPlan(**figures["plan"]) if figures.get("plan") else None
    return PretrainResult(**figures)


choose_accumulation_steps = deprecated_alias(
    planned_accumulation_steps, "course_utils.pretraining.config.choose_accumulation_steps"
)
