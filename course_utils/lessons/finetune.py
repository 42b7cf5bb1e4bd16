"""Lesson 01's fine-tune as one command, which lessons 02 and 04 launch: its config, the run, its figures.

The notebook of lesson 01 shows the code cell by cell (``sentiment_trainer.py`` is written from its
cells); the same fine-tune runs from the command line, so ``deepspeed``, ``torchrun`` or
``accelerate launch`` can start it on several processes (lesson 02, ``launch.py``):

    python -m course_utils.lessons.finetune --help
    python -m course_utils.lessons.finetune --model-name standin:t5-small --data-path data/imdb \\
        --output-dir outputs/cli_run --num-train-epochs 1

It prints one JSON line with the losses, the time, the peak memory and the accuracy of the saved model.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from transformers import TrainerCallback

from course_utils.from_notebooks.sentiment_trainer import (
    add_label_words,
    build_trainer,
    count_answer_tokens,
    generate_answers,
    save,
    score_answers,
    tokenize_pairs,
    write_answers,
)
from course_utils.lessons.zero import (
    DeepSpeedConfigError,
    deepspeed_config_path,
    launcher_environment,
    load_deepspeed_config,
)
from course_utils.machinery.configs import (
    DataSource,
    InputError,
    argument_parser,
    run_command,
    setting,
)
from course_utils.machinery.hardware import resolve_precision
from course_utils.machinery.memory import accumulation_steps_that_fit, peak_memory, reset_peak_memory
from course_utils.machinery.metrics import training_losses
from course_utils.machinery.moved import deprecated_alias
from course_utils.machinery.offline import MissingAssetError
from course_utils.machinery.profiles import sized_by_profile
from course_utils.machinery.quiet import quiet_library_notices
from course_utils.models_and_data.data import load_imdb
from course_utils.models_and_data.models import load_model, load_tokenizer


@dataclass(frozen=True)
class FinetuneConfig:
    """Everything that defines one fine-tuning run; the profile fills in names and sizes."""

    model_name: str = setting("t5-small", "Hub id, local folder, or standin:<name>")
    data_path: str = setting("stanfordnlp/imdb", "Hub id or a folder of <split>.jsonl files")
    data_config: str | None = setting(None, "the Hub data set's config name (IMDB has none)")
    output_dir: str = setting("outputs/finetune", "the saved model, trainer_state.json, TensorBoard events")
    task_prefix: str = setting(
        "sst2 sentence: ",
        "T5's released checkpoints learned SST-2 with this prefix and the "
        "answers positive/negative: reusing it makes the 'before' accuracy a real zero-shot one",
    )
    max_source_length: int = setting(512, "T5 was pretrained on 512-token inputs")
    num_train_epochs: float = setting(1.0, "passes over the training rows; one is enough for a released T5")
    per_device_batch_size: int = setting(16, "rows per forward pass on each process (the original course's 16)")
    gradient_accumulation_steps: int = setting(1, "micro-batches summed into one optimizer step")
    learning_rate: float = setting(3e-4, "a common choice for T5 fine-tuning with AdamW")
    warmup_fraction: float = setting(0.1, "share of all steps in which the rate rises linearly from 0")
    seed: int = setting(42, "model initialisation (where random), data order and row sampling")
    max_train_rows: int | None = setting(None, "None: the whole split; else a seeded random sample of this many")
    test_rows: int | None = setting(
        None, "test rows scored after training: None, the whole split; else a seeded sample"
    )
    group_by_length: bool = setting(True, "batches of similar lengths pad (and so waste) little")
    precision: str = setting("auto", "bf16, fp32, or auto: bf16 where the GPU supports it, else fp32; never fp16")
    logging_steps: int = setting(10, "optimizer steps between loss lines (and TensorBoard points)")
    generate_batch_size: int = setting(64, "reviews per generate call when the answers are scored")
    deepspeed: str | None = setting(
        None, "a DeepSpeed JSON config: a path, or a name in deepspeed_configs/ (lesson 02)"
    )
    attn_implementation: str | None = setting(None, "None: the library default (SDPA); eager on small CPUs")

    @property
    def model_dir(self) -> Path:
        """Where the run saves its model and tokenizer: ``<output_dir>/model``."""
        return Path(self.output_dir) / "model"

    @property
    def data(self) -> DataSource:
        """The reviews this run reads (``data_path`` and ``data_config``, flat for the command line)."""
        return DataSource(self.data_path, self.data_config)

    @classmethod
    def for_profile(cls, profile, output_dir: str, **changes) -> FinetuneConfig:
        """Lesson 01's fine-tune as ``profile`` sizes it (``profile.finetune``), then ``changes``; the
        precision resolved for this machine. Lessons 02 and 04 repeat it, changing only ``changes``."""
        config = sized_by_profile(cls, profile, "t5_small", profile.imdb, output_dir, "finetune", **changes)
        return dataclasses.replace(config, precision=resolve_precision(config.precision))


@dataclass(frozen=True)
class FinetuneResult:
    train_loss: float  # mean training loss over the run (Trainer's figure)
    final_loss: float  # the last logged loss
    train_seconds: float
    steps: int
    losses: list[tuple[int, float]] = field(default_factory=list)  # (step, loss) every logging_steps
    peak_memory_mib: float = 0.0  # see memory.peak_memory: this run's peak
    peak_memory_kind: str = ""  # "cuda_max_allocated" or "process_peak_rss"


def deepspeed_path(config: FinetuneConfig) -> str | None:
    """The run's DeepSpeed config file: ``deepspeed`` as a path, or a config's name (zero2, ...)."""
    if not config.deepspeed or os.path.exists(config.deepspeed):
        return config.deepspeed
    return str(deepspeed_config_path(config.deepspeed))


def check_deepspeed(config: FinetuneConfig) -> None:
    """Fail before any work when the run's DeepSpeed config disagrees with its batch sizes, processes or precision."""
    if config.deepspeed:
        load_deepspeed_config(
            config.deepspeed,
            world_size=int(os.environ.get("WORLD_SIZE", "1")),
            per_device_batch_size=config.per_device_batch_size,
            gradient_accumulation_steps=config.gradient_accumulation_steps,
            precision=config.precision,
        )


def train(trainer) -> FinetuneResult:
    """``trainer.train()`` and its figures, with the peak memory of this run alone."""
    reset_peak_memory()
    start = time.perf_counter()
    output = trainer.train()
    seconds = time.perf_counter() - start
    memory, kind = peak_memory()
    losses = training_losses(trainer.state.log_history)
    return FinetuneResult(
        train_loss=float(output.training_loss),
        final_loss=float(losses[-1][1]) if losses else float(output.training_loss),
        train_seconds=seconds,
        steps=int(trainer.state.global_step),
        losses=losses,
        peak_memory_mib=memory,
        peak_memory_kind=kind,
    )


def report_deepspeed(engine, echo=print) -> None:
    """What DeepSpeed's engine says it did, for the run's log: its ZeRO stage, its optimizer (ZeRO's wrapper around
    the Trainer's), where the optimizer states live, and DeepSpeed's own memory lines (``see_memory_usage``)."""
    from deepspeed.runtime.utils import see_memory_usage

    def device(offload) -> str:  # an offload section's device, "none" when there is none
        return str(getattr(getattr(offload, "device", None), "value", None) or "none")

    echo(
        f"DeepSpeed: ZeRO stage {engine.zero_optimization_stage()}; optimizer {type(engine.optimizer).__name__} "
        f"around {type(engine.basic_optimizer).__name__}; optimizer states offloaded to: "
        f"{device(engine.zero_offload_optimizer())}; weights offloaded to: {device(engine.zero_offload_param())}"
    )
    echo("DeepSpeed memory after training:")
    see_memory_usage("", force=True)  # DeepSpeed prints MA (allocated), Max_MA, CA (cached) and the CPU's memory


STEPS_FILE = "steps.json"  # what the run used at every optimizer step (StepRecord), for lesson 02's comparison


def step_settings(trainer) -> dict:
    """What the next optimizer step of ``trainer`` will use: the optimizer that does the arithmetic and its settings
    per parameter group, the learning rate, the gradient clipping and the loss scale. Under DeepSpeed these are read
    from DeepSpeed's engine, which steps, clips and scales by itself; otherwise from the Trainer's own."""
    engine = getattr(trainer.accelerator, "deepspeed_engine_wrapped", None)
    engine = engine.engine if engine is not None else None
    optimizer = engine.basic_optimizer if engine is not None else trainer.optimizer.optimizer
    groups = [
        {key: group[key] for key in ("lr", "betas", "eps", "weight_decay", "amsgrad") if key in group}
        for group in (engine.optimizer if engine is not None else trainer.optimizer).param_groups
    ]
    scaler = trainer.accelerator.scaler
    loss_scale = (
        getattr(engine.optimizer, "loss_scale", 1.0) if engine is not None else (scaler.get_scale() if scaler else 1.0)
    )
    return {
        "optimizer": type(optimizer).__name__,
        "learning_rate": groups[0]["lr"],
        "groups": [{key: list(v) if isinstance(v, tuple) else v for key, v in g.items()} for g in groups],
        "gradient_clipping": engine.gradient_clipping() if engine is not None else trainer.args.max_grad_norm,
        "loss_scale": float(loss_scale),
    }


class StepRecord(TrainerCallback):
    """A Trainer callback that records, before every optimizer step, what that step will use (``step_settings``),
    and writes the list to ``<output_dir>/steps.json`` at the end: two runs said to differ in one argument can be
    compared step by step (lesson 02)."""

    def __init__(self, trainer, path):
        self.trainer, self.path, self.steps = trainer, Path(path), []

    def on_step_begin(self, args, state, control, **kwargs):
        self.steps.append({"step": state.global_step + 1, **step_settings(self.trainer)})

    def on_train_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.path.write_text(json.dumps(self.steps))


def with_accumulation_steps_that_fit(config: FinetuneConfig, parameters: int, answer_tokens: int) -> FinetuneConfig:
    """``config`` with the same rows per optimizer step, cut into micro-batches that fit this GPU's memory
    (``memory.accumulation_steps_that_fit``; e.g. T5 v1.1 base at 16 x 512 in fp32 on a 16 GB card: 8 rows x 2).
    Without a GPU, or under DeepSpeed (whose config fixes the batch), unchanged."""
    if config.deepspeed:
        return config
    rows = config.per_device_batch_size * config.gradient_accumulation_steps
    tokens = config.max_source_length + answer_tokens
    steps = accumulation_steps_that_fit(rows, 1, parameters, tokens, config.precision)
    if steps is None:  # no GPU: the batch as asked
        return config
    return dataclasses.replace(config, per_device_batch_size=rows // steps, gradient_accumulation_steps=steps)


def fine_tune(config: FinetuneConfig, echo=print) -> dict:
    """The whole recipe: load, prepare, train, save, reload, measure accuracy. Returns figures."""
    config = dataclasses.replace(
        config, precision=resolve_precision(config.precision), deepspeed=deepspeed_path(config)
    )
    check_deepspeed(config)
    if config.deepspeed:  # one process without a launcher: DeepSpeed still needs ranks and an address
        chosen = launcher_environment()
        if chosen:
            echo(f"launcher variables set for a single process: {chosen}")
    splits, dropped = load_imdb(config.data, config.max_train_rows, config.test_rows, config.seed)
    splits = add_label_words(splits)  # 0/1 -> negative/positive, the words T5 writes
    for reason, count in dropped.items():
        echo(f"left out: {count} rows ({reason})")
    tokenizer = load_tokenizer(config.model_name)
    # Under DeepSpeed the model stays on the CPU until DeepSpeed places it: ZeRO-3 and offload exist so
    # that a model too large for one GPU never has to sit on one whole.
    model = load_model(
        config.model_name, device="cpu" if config.deepspeed else None, attn_implementation=config.attn_implementation
    )
    answer_tokens = count_answer_tokens(tokenizer)  # training targets and generated answers alike
    fitted = with_accumulation_steps_that_fit(config, model.num_parameters(), answer_tokens)
    if fitted != config:
        echo(
            f"{config.per_device_batch_size} rows per step do not fit this GPU's memory at once: "
            f"{fitted.per_device_batch_size} rows x {fitted.gradient_accumulation_steps} accumulation instead"
        )
        config = fitted
    train_set = tokenize_pairs(
        splits["train"], tokenizer, "text", "label_text", config.task_prefix, config.max_source_length, answer_tokens
    )
    trainer = build_trainer(config, model, tokenizer, train_set)
    trainer.add_callback(StepRecord(trainer, Path(config.output_dir) / STEPS_FILE))
    result = train(trainer)
    if config.deepspeed and trainer.is_world_process_zero():
        report_deepspeed(trainer.model_wrapped, echo)
    figures = {**dataclasses.asdict(result), "processes": int(os.environ.get("WORLD_SIZE", "1"))}
    # Every process saves: under ZeRO-3 the sharded weights are gathered collectively, and the
    # Trainer itself lets only the main process write.
    model_dir = save(trainer, tokenizer, config.model_dir)
    if config.deepspeed:  # the reload below is a plain load in one process, not a ZeRO-3 partitioned one
        from transformers.integrations.deepspeed import unset_hf_deepspeed_config

        unset_hf_deepspeed_config()
    if trainer.is_world_process_zero():
        reloaded = load_model(str(model_dir), attn_implementation=config.attn_implementation)
        answers = generate_answers(
            reloaded,
            load_tokenizer(str(model_dir)),
            splits["test"]["text"],
            config.task_prefix,
            config.max_source_length,
            answer_tokens,
            config.generate_batch_size,
        )
        score = score_answers(answers, splits["test"]["label_text"])
        figures.update(
            accuracy=score.accuracy,
            unknown_answers=score.unknown,
            answers_file=str(
                write_answers(Path(config.output_dir) / ANSWERS_FILE, answers, splits["test"]["label_text"])
            ),
        )
    return figures


ANSWERS_FILE = "answers.json"  # each held-out review's answer and truth (write_answers), for lessons 02 and 05


PROG = "python -m course_utils.lessons.finetune"


def _parser():
    parser = argument_parser(FinetuneConfig, PROG, "Fine-tune T5 on IMDB sentiment (text-to-text).")
    parser.add_argument(
        "--local_rank",
        "--local-rank",
        type=int,
        default=-1,
        help="set by the deepspeed launcher; read from the environment otherwise",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = vars(_parser().parse_args(argv))
    args.pop("local_rank")

    def body() -> int:
        quiet_library_notices()
        figures = fine_tune(FinetuneConfig(**args))
        if os.environ.get("RANK", "0") == "0":  # one result line, from the process that measured accuracy
            print(json.dumps(figures), flush=True)
        return 0

    return run_command(body, PROG, (InputError, MissingAssetError, DeepSpeedConfigError, FileNotFoundError))


if __name__ == "__main__":
    sys.exit(main())


fitting_batch = deprecated_alias(with_accumulation_steps_that_fit, "course_utils.finetune.fitting_batch")
run = deprecated_alias(fine_tune, "course_utils.finetune.run")
