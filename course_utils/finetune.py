"""Fine-tune a T5 model on IMDB sentiment with the Hugging Face Seq2SeqTrainer.

The notebook of lesson 01 calls these functions one by one; the same fine-tune runs from the
command line, so ``deepspeed``, ``torchrun`` or ``accelerate launch`` can start it on several
processes (lesson 02):

    python -m course_utils.finetune --help
    python -m course_utils.finetune --model-name standin:t5-small --data-path data/imdb \\
        --output-dir outputs/cli_run --num-train-epochs 1

It prints one JSON line with the final loss, the time and the accuracy of the saved model.

Lesson 02 repeats lesson 01's run under ZeRO, and lesson 04 from other starting weights:

    plain, zero = comparison_configs(profile, "outputs", "zero2")     # only output_dir and deepspeed differ
    figures = compare_starts(profile, {"pretrained": folder, "random init": other}, "outputs")
    print(margin_sentence(figures, "pretrained", "random init"))
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .configs import InputError, argument_parser, checked_replace, run_command
from .data import load_imdb
from .hardware import quiet_library_notices, resolve_precision
from .memory import choose_accumulation, gpu_gib, peak_memory, reset_peak_memory, rows_that_fit
from .models import load_seq2seq_model, load_tokenizer, model_options
from .offline import MissingAssetError
from .profiles import DataSource
from .sentiment import LABEL_WORDS, accuracy_report, classify, prepare_imdb, tokenize_for_seq2seq
from .zero import (DeepSpeedConfigError, deepspeed_config_path, launcher_environment, load_deepspeed_config,
                   without_launcher_variables)


@dataclass(frozen=True)
class FinetuneConfig:
    """Everything that defines one fine-tuning run; the profile fills in names and sizes."""

    model_name: str = "t5-small"          # Hub id, local folder, or standin:<name>
    data_path: str = "stanfordnlp/imdb"   # Hub id or a folder of <split>.jsonl files
    data_config: str | None = None        # the Hub data set's config name (IMDB has none)
    output_dir: str = "outputs/finetune"  # checkpoints, the saved model, TensorBoard events
    # T5's released checkpoints were trained on a task mixture that includes SST-2, with this
    # prefix and the answers "positive"/"negative": reusing it lets fine-tuning start from what
    # the model already knows, and makes the "before" accuracy a real zero-shot baseline.
    task_prefix: str = "sst2 sentence: "
    max_source_length: int = 512          # T5 was pretrained on 512-token inputs
    num_train_epochs: float = 1.0         # passes over the training rows; one is enough for a released T5
    per_device_batch_size: int = 16       # the original course's batch size
    gradient_accumulation_steps: int = 1  # micro-batches summed into one optimizer step
    learning_rate: float = 3e-4           # a common choice for T5 fine-tuning with AdamW
    warmup_fraction: float = 0.1          # share of all steps in which the rate rises linearly from 0
    seed: int = 42                        # model initialisation (where random), data order and row sampling
    max_train_rows: int | None = None     # None: the whole split; else a seeded random subset of this many
    max_eval_rows: int | None = None      # test rows scored after training (None: the whole split)
    group_by_length: bool = True          # batches of similar lengths pad (and so waste) little
    precision: str = "auto"               # "auto": bf16 where the GPU supports it, else fp32; never fp16
    logging_steps: int = 10               # optimizer steps between loss lines (and TensorBoard points)
    eval_batch_size: int = 64             # reviews classified per generate call after training
    deepspeed: str | None = None          # path to a DeepSpeed JSON config (lesson 02)
    attn_implementation: str | None = None  # None: the library default (SDPA); "eager" on small CPUs

    @property
    def tensorboard_dir(self) -> Path:
        return Path(self.output_dir) / "tensorboard"

    @property
    def model_dir(self) -> Path:
        return Path(self.output_dir) / "model"


def lesson_config(profile, output_dir: str, **changes) -> FinetuneConfig:
    """Lesson 01's fine-tune as ``profile`` sizes it (``profile.finetune``); lesson 02 repeats it, changing
    only ``changes``."""
    config = FinetuneConfig(model_name=profile.models["t5_small"], data_path=profile.imdb.path,
                            data_config=profile.imdb.config, output_dir=output_dir,
                            attn_implementation=profile.attn_implementation)
    config = checked_replace(config, profile.finetune, "Profile.finetune setting")
    return checked_replace(config, changes, "fine-tuning setting")


# Both runs of lesson 02's comparison train in fp32. With bf16 they would not train the same way: the
# plain Trainer's bf16 is autocast over fp32 weights, while DeepSpeed's bf16 keeps the weights themselves
# in bf16 (with fp32 copies inside the optimizer), so a loss gap would mix ZeRO with rounding.
COMPARISON_PRECISION = "fp32"


def comparison_configs(profile, output_root: str | os.PathLike, zero_name: str) -> tuple[FinetuneConfig, FinetuneConfig]:
    """Lesson 01's fine-tune twice, plain and under ``zero_name``: only output_dir and deepspeed differ."""
    plain = lesson_config(profile, output_dir=str(Path(output_root) / "02_plain"), precision=COMPARISON_PRECISION)
    zero = dataclasses.replace(plain, output_dir=str(Path(output_root) / f"02_{zero_name}"),
                               deepspeed=str(deepspeed_config_path(zero_name)))
    return plain, zero


@dataclass(frozen=True)
class FinetuneResult:
    train_loss: float                     # mean training loss over the run (Trainer's figure)
    final_loss: float                     # the last logged loss
    train_seconds: float
    steps: int
    log_history: list[dict]
    peak_memory_mib: float                # see memory.peak_memory: this run's peak
    peak_memory_kind: str                 # "cuda_max_allocated" or "process_peak_rss"


def answer_length(tokenizer) -> int:
    """Tokens the longest label word needs, with its end-of-sequence token: the training targets'
    length and the answers' max_new_tokens alike."""
    return max(len(tokenizer(word).input_ids) for word in LABEL_WORDS)


def checked_deepspeed_config(config: FinetuneConfig, precision: str) -> dict | None:
    """The run's DeepSpeed config as a dict, checked against its batch sizes, processes and precision."""
    if not config.deepspeed:
        return None
    return load_deepspeed_config(config.deepspeed, world_size=int(os.environ.get("WORLD_SIZE", "1")),
                                 per_device_batch_size=config.per_device_batch_size,
                                 gradient_accumulation_steps=config.gradient_accumulation_steps,
                                 precision=precision)


def training_arguments(config: FinetuneConfig):
    """Seq2SeqTrainingArguments with transformers 5 names (eval_strategy, use_cpu, ...)."""
    import torch
    from transformers import Seq2SeqTrainingArguments

    precision = resolve_precision(config.precision)
    return Seq2SeqTrainingArguments(
        output_dir=config.output_dir,
        num_train_epochs=config.num_train_epochs,
        per_device_train_batch_size=config.per_device_batch_size,
        per_device_eval_batch_size=config.eval_batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_fraction,  # transformers 5 reads a float below 1 as a share of all steps
        optim="adamw_torch",
        seed=config.seed, data_seed=config.seed,
        bf16=precision == "bf16", fp16=False,
        # Without use_cpu on a CPU-only machine, torchrun's processes size "auto" DeepSpeed
        # batches as if alone, and DeepSpeed rejects the config.
        use_cpu=not torch.cuda.is_available(),
        # Each process's loss is the mean over its own tokens, and DeepSpeed (or DDP) averages
        # the gradients: the standard data-parallel recipe. With the default (True) and use_cpu,
        # the Trainer multiplied every process's loss by the number of processes without
        # gathering the token counts, so the logged loss of a 2-process run came out doubled.
        average_tokens_across_devices=False,
        train_sampling_strategy="group_by_length" if config.group_by_length else "random",
        logging_steps=config.logging_steps,
        save_strategy="no",   # we save once, at the end, with save_model and save_state
        eval_strategy="no",   # accuracy is measured by generation, after training
        report_to="none",     # TensorBoard is attached explicitly so its folder is known
        deepspeed=checked_deepspeed_config(config, precision),
        disable_tqdm=False,
    )


def build_trainer(config: FinetuneConfig, model, tokenizer, train_dataset):
    """A Seq2SeqTrainer with dynamic padding (labels padded with -100) and TensorBoard logging."""
    from torch.utils.tensorboard import SummaryWriter
    from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer
    from transformers.integrations import TensorBoardCallback

    # Pads each batch to its own longest row; -100 labels are ignored by the loss.
    collator = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100)
    writer = SummaryWriter(log_dir=str(config.tensorboard_dir))
    return Seq2SeqTrainer(model=model, args=training_arguments(config), data_collator=collator,
                          train_dataset=train_dataset, processing_class=tokenizer,
                          callbacks=[TensorBoardCallback(tb_writer=writer)])


def train(trainer) -> FinetuneResult:
    """Run ``trainer.train()`` and return its figures, the peak memory of this run alone."""
    reset_peak_memory()
    start = time.perf_counter()
    output = trainer.train()
    seconds = time.perf_counter() - start
    memory, kind = peak_memory()
    losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    return FinetuneResult(train_loss=float(output.training_loss),
                          final_loss=float(losses[-1]) if losses else float(output.training_loss),
                          train_seconds=seconds, steps=int(trainer.state.global_step),
                          log_history=list(trainer.state.log_history),
                          peak_memory_mib=memory, peak_memory_kind=kind)


def save(trainer, tokenizer, model_dir: Path) -> Path:
    """Model and tokenizer into ``model_dir``; the trainer state (log history) next to them.

    Every process calls it (under ZeRO-3 the weights are gathered collectively), one writes, and
    all wait until the folder is whole: the main process reloads it next.
    """
    trainer.save_model(str(model_dir))  # the Trainer writes on the main process only
    if trainer.args.should_save:
        tokenizer.save_pretrained(str(model_dir))
    trainer.save_state()  # trainer_state.json in the run's output_dir (main process only)
    trainer.accelerator.wait_for_everyone()
    return model_dir


def fitting_batch(config: FinetuneConfig, parameters: int, target_tokens: int, precision: str) -> FinetuneConfig:
    """``config`` with the same rows per optimizer step, cut into micro-batches that fit this GPU's memory
    (``memory.rows_that_fit``; e.g. T5 v1.1 base at 16 x 512 in fp32 on a 16 GB card: 8 rows x 2). Without a
    GPU, or under DeepSpeed (whose config fixes the batch), unchanged."""
    gib = gpu_gib()
    if not gib or config.deepspeed:
        return config
    rows = config.per_device_batch_size * config.gradient_accumulation_steps
    fitting = rows_that_fit(gib, parameters, config.max_source_length + target_tokens, precision)
    steps = choose_accumulation(rows, 1, fitting)
    return dataclasses.replace(config, per_device_batch_size=rows // steps, gradient_accumulation_steps=steps)


def run(config: FinetuneConfig, echo=print) -> dict:
    """The whole recipe: load, prepare, train, save, reload, measure accuracy. Returns figures."""
    if config.deepspeed:  # one process without a launcher: DeepSpeed still needs ranks and an address
        chosen = launcher_environment()
        if chosen:
            echo(f"launcher variables set for a single process: {chosen}")
    splits, dropped = prepare_imdb(load_imdb(DataSource(config.data_path, config.data_config)),
                                   config.max_train_rows, config.max_eval_rows, config.seed)
    for reason, count in dropped.items():
        echo(f"left out: {count} rows ({reason})")
    tokenizer = load_tokenizer(config.model_name)
    # Under DeepSpeed the model stays on the CPU until DeepSpeed places it: ZeRO-3 and offload exist so
    # that a model too large for one GPU never has to sit on one whole.
    model = load_seq2seq_model(config.model_name, device="cpu" if config.deepspeed else None, **model_options(config.attn_implementation))
    answer_tokens = answer_length(tokenizer)  # training targets and generated answers alike
    fitted = fitting_batch(config, model.num_parameters(), answer_tokens, resolve_precision(config.precision))
    if fitted != config:
        echo(f"{config.per_device_batch_size} rows per step do not fit this GPU's memory at once: "
             f"{fitted.per_device_batch_size} rows x {fitted.gradient_accumulation_steps} accumulation instead")
        config = fitted
    train_set = tokenize_for_seq2seq(splits["train"], tokenizer, config.task_prefix,
                                     config.max_source_length, answer_tokens)
    trainer = build_trainer(config, model, tokenizer, train_set)
    result = train(trainer)
    figures = {"train_loss": result.train_loss, "final_loss": result.final_loss,
               "train_seconds": result.train_seconds, "steps": result.steps,
               "peak_memory_mib": result.peak_memory_mib, "peak_memory_kind": result.peak_memory_kind,
               "processes": int(os.environ.get("WORLD_SIZE", "1"))}
    # Every process saves: under ZeRO-3 the sharded weights are gathered collectively, and the
    # Trainer itself lets only the main process write.
    save(trainer, tokenizer, config.model_dir)
    if config.deepspeed:  # the reload below is a plain load in one process, not a ZeRO-3 partitioned one
        from transformers.integrations.deepspeed import unset_hf_deepspeed_config

        unset_hf_deepspeed_config()
    if trainer.is_world_process_zero():
        reloaded = load_seq2seq_model(str(config.model_dir), **model_options(config.attn_implementation))
        answers = classify(reloaded, load_tokenizer(str(config.model_dir)), splits["test"]["text"],
                           config.task_prefix, config.max_source_length, answer_tokens,
                           config.eval_batch_size)
        report = accuracy_report(answers, splits["test"]["label_text"])
        figures.update(accuracy=report.accuracy, unknown_answers=report.unknown)
    return figures


def cli_arguments(config: FinetuneConfig, relative_to: str | os.PathLike | None = None) -> list[str]:
    """The command-line flags that rebuild ``config`` in ``python -m course_utils.finetune``. Paths that
    exist are written relative to ``relative_to`` when given (the folder the command runs in on every node)."""
    arguments = []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if value is None:
            continue
        if relative_to is not None and isinstance(value, str) and os.path.exists(value):
            value = os.path.relpath(value, relative_to)
        arguments += ["--" + f.name.replace("_", "-"), str(value).lower() if isinstance(value, bool) else str(value)]
    return arguments


def launch_command(config: FinetuneConfig, processes: int = 1) -> list[str]:
    """This fine-tune as a command: one plain process, or ``processes`` under torchrun."""
    launcher = [] if processes == 1 else ["-m", "torch.distributed.run", "--standalone",
                                          f"--nproc_per_node={processes}"]
    return [sys.executable, *launcher, "-m", "course_utils.finetune", *cli_arguments(config)]


def cluster_command(config: FinetuneConfig, launcher: str, gpus_per_node: int, nodes: int = 1,
                    master_addr: str = "node-a", relative_to: str | os.PathLike | None = None) -> str:
    """The shell line that starts this fine-tune on ``nodes`` x ``gpus_per_node`` GPUs with ``launcher``
    ("deepspeed" or "torchrun"); several nodes need DeepSpeed's launcher and a file named ``hostfile``."""
    flags = shlex.join(cli_arguments(config, relative_to))
    if launcher == "torchrun" and nodes == 1:
        return f"torchrun --standalone --nproc_per_node {gpus_per_node} -m course_utils.finetune {flags}"
    if launcher != "deepspeed":
        raise InputError(f"launcher must be 'deepspeed' or 'torchrun' (one node), got {launcher!r} for {nodes} node(s).")
    hosts = f"--hostfile hostfile --num_nodes {nodes} " if nodes > 1 else ""
    master = f"--master_addr {master_addr} " if nodes > 1 else ""
    return f"deepspeed {hosts}--num_gpus {gpus_per_node} {master}--module course_utils.finetune {flags}"


def launch(config: FinetuneConfig, processes: int = 1, timeout: float | None = None) -> dict:
    """Run the fine-tune in fresh processes and return its result line.

    A process of its own gives every run the same start (its peak memory is its own) and the
    launcher variables a real launch has. The full output goes to ``<output_dir>/launch.log``.
    """
    log_path = Path(config.output_dir) / "launch.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        done = subprocess.run(launch_command(config, processes), stdout=subprocess.PIPE, stderr=log, text=True,
                              env=without_launcher_variables(), timeout=timeout)
        log.write(done.stdout)
    results = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not results:
        tail = "".join(log_path.read_text().splitlines(keepends=True)[-15:])
        raise RuntimeError(f"The fine-tune exited with status {done.returncode}; last lines of {log_path}:\n{tail}")
    return json.loads(results[-1])


def compare_starts(profile, starts: dict[str, str], output_root: str | os.PathLike, echo=print,
                   **changes) -> dict[str, dict]:
    """{start name: figures of ``run``} for lesson 01's fine-tune from each start (lesson 04's payoff).

    ``changes`` (a seed, a number of training rows, ...) apply to every start alike; only
    ``model_name`` and ``output_dir`` differ between the runs.
    """
    figures = {}
    for name, start in starts.items():
        config = lesson_config(profile, output_dir=str(Path(output_root) / f"finetune_{'_'.join(name.split())}"),
                               model_name=start, **changes)
        figures[name] = run(config, echo=echo)
        echo(f"{name:>11}: accuracy {figures[name]['accuracy']:.3f}, mean fine-tuning loss "
             f"{figures[name]['train_loss']:.3f}, {figures[name]['train_seconds']:.0f} s")
    return figures


def margin_sentence(figures: dict[str, dict], start: str, baseline: str) -> str:
    """One sentence: is ``start`` ahead of ``baseline`` in held-out accuracy, and by how many points."""
    mine, theirs = figures[start]["accuracy"], figures[baseline]["accuracy"]
    points = round((mine - theirs) * 100, 1)  # accuracy points, as printed
    figures_text = f"({mine:.3f} against {theirs:.3f})"
    if points == 0:
        return f"The {start} start is level with the {baseline} start {figures_text}."
    where = "ahead of" if points > 0 else "behind"
    return f"The {start} start is {where} the {baseline} start by {abs(points):.1f} accuracy points {figures_text}."


PROG = "python -m course_utils.finetune"


def _parser():
    parser = argument_parser(FinetuneConfig, PROG, "Fine-tune T5 on IMDB sentiment (text-to-text).")
    parser.add_argument("--local_rank", "--local-rank", type=int, default=-1,
                        help="set by the deepspeed launcher; read from the environment otherwise")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = vars(_parser().parse_args(argv))
    args.pop("local_rank")

    def body() -> int:
        quiet_library_notices()
        figures = run(FinetuneConfig(**args))
        if os.environ.get("RANK", "0") == "0":  # one result line, from the process that measured accuracy
            print(json.dumps(figures), flush=True)
        return 0

    return run_command(body, PROG, (InputError, MissingAssetError, DeepSpeedConfigError, FileNotFoundError))


if __name__ == "__main__":
    sys.exit(main())
