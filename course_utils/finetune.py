"""Fine-tune a T5 model on IMDB sentiment with the Hugging Face Seq2SeqTrainer.

The notebook of lesson 01 calls these functions one by one; the same fine-tune runs from the
command line, so ``deepspeed``, ``torchrun`` or ``accelerate launch`` can start it on several
processes (lesson 02):

    python -m course_utils.finetune --help
    python -m course_utils.finetune --model-name standin:t5-small --data-path data/imdb \\
        --output-dir outputs/cli_run --num-train-epochs 1

It prints one JSON line with the final loss, the time and the accuracy of the saved model.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .hardware import resolve_precision
from .sentiment import LABEL_WORDS


@dataclass(frozen=True)
class FinetuneConfig:
    """Everything that defines one fine-tuning run; the profile fills in names and sizes."""

    model_name: str = "t5-small"          # Hub id, local folder, or standin:<name>
    data_path: str = "stanfordnlp/imdb"   # Hub id or a folder of <split>.jsonl files
    data_config: str | None = None
    output_dir: str = "outputs/finetune"  # checkpoints, the saved model, TensorBoard events
    # T5's released checkpoints were trained on a task mixture that includes SST-2, with this
    # prefix and the answers "positive"/"negative": reusing it lets fine-tuning start from what
    # the model already knows, and makes the "before" accuracy a real zero-shot baseline.
    task_prefix: str = "sst2 sentence: "
    max_source_length: int = 512          # T5 was pretrained on 512-token inputs
    num_train_epochs: float = 1.0
    per_device_batch_size: int = 16       # the original course's batch size
    gradient_accumulation_steps: int = 1
    learning_rate: float = 3e-4           # a common choice for T5 fine-tuning with AdamW
    warmup_steps: float = 0.1             # a float in [0, 1) is a fraction of all steps: 10 % warm-up
    seed: int = 42
    max_train_rows: int | None = None     # None: the whole split
    max_eval_rows: int | None = None
    group_by_length: bool = True          # batches of similar lengths pad (and so waste) little
    precision: str = "auto"               # "auto": bf16 where the GPU supports it, else fp32; never fp16
    logging_steps: int = 10
    eval_batch_size: int = 64
    deepspeed: str | None = None          # path to a DeepSpeed JSON config (lesson 02)
    attn_implementation: str | None = None  # None: the library default (SDPA); "eager" on small CPUs

    @property
    def tensorboard_dir(self) -> Path:
        return Path(self.output_dir) / "tensorboard"

    @property
    def model_dir(self) -> Path:
        return Path(self.output_dir) / "model"


def lesson_config(profile, output_dir: str, **changes) -> FinetuneConfig:
    """Lesson 01's fine-tune as ``profile`` sizes it; lesson 02 repeats it, changing only ``changes``."""
    return dataclasses.replace(FinetuneConfig(
        model_name=profile.models["t5_small"],
        data_path=profile.imdb.path,
        data_config=profile.imdb.config,
        output_dir=output_dir,
        num_train_epochs=profile.finetune_epochs,
        learning_rate=profile.finetune_learning_rate,
        max_train_rows=profile.finetune_max_train_rows,
        max_eval_rows=profile.finetune_max_eval_rows,
        attn_implementation=profile.attn_implementation,
    ), **changes)


@dataclass(frozen=True)
class FinetuneResult:
    train_loss: float                     # mean training loss over the run (Trainer's figure)
    final_loss: float                     # the last logged loss
    train_seconds: float
    steps: int
    log_history: list[dict]
    peak_memory_mib: float                # see hardware.peak_memory
    peak_memory_kind: str                 # "cuda_max_allocated" or "process_peak_rss"


def target_length(tokenizer) -> int:
    """Tokens the longest label word needs, with its end-of-sequence token."""
    return max(len(tokenizer(word).input_ids) for word in LABEL_WORDS)


def load_options(config: FinetuneConfig) -> dict:
    """Keyword arguments for from_pretrained that the config sets."""
    from .models import model_options

    return model_options(config.attn_implementation)


def checked_deepspeed_config(config: FinetuneConfig, precision: str) -> dict | None:
    """The run's DeepSpeed config as a dict, checked against its batch sizes, processes and precision."""
    if not config.deepspeed:
        return None
    from .zero import load_deepspeed_config

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
        warmup_steps=config.warmup_steps,
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
    """Run ``trainer.train()`` and return its figures."""
    from .hardware import peak_memory

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
    """Model and tokenizer into ``model_dir``; the trainer state (log history) next to them."""
    trainer.save_model(str(model_dir))
    tokenizer.save_pretrained(str(model_dir))
    trainer.save_state()  # trainer_state.json in the run's output_dir
    return model_dir


def run(config: FinetuneConfig, echo=print) -> dict:
    """The whole recipe: load, prepare, train, save, reload, measure accuracy. Returns figures."""
    from .data import load_imdb
    from .models import load_seq2seq_model, load_tokenizer
    from .profiles import DataSource
    from .sentiment import accuracy_report, classify, prepare_imdb, tokenize_for_seq2seq
    from .zero import launcher_environment

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
    model = load_seq2seq_model(config.model_name, device="cpu" if config.deepspeed else None, **load_options(config))
    answer_length = target_length(tokenizer)  # training targets and generated answers alike
    train_set = tokenize_for_seq2seq(splits["train"], tokenizer, config.task_prefix,
                                     config.max_source_length, answer_length)
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
        reloaded = load_seq2seq_model(str(config.model_dir), **load_options(config))
        answers = classify(reloaded, load_tokenizer(str(config.model_dir)), splits["test"]["text"],
                           config.task_prefix, config.max_source_length, answer_length,
                           config.eval_batch_size)
        report = accuracy_report(answers, splits["test"]["label_text"])
        figures.update(accuracy=report.accuracy, unknown_answers=report.unknown)
    return figures


def cli_arguments(config: FinetuneConfig) -> list[str]:
    """The command-line flags that rebuild ``config`` in ``python -m course_utils.finetune``."""
    arguments = []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if value is None:
            continue
        arguments += ["--" + f.name.replace("_", "-"), str(value).lower() if isinstance(value, bool) else str(value)]
    return arguments


def launch_command(config: FinetuneConfig, processes: int = 1) -> list[str]:
    """This fine-tune as a command: one plain process, or ``processes`` under torchrun."""
    launcher = [] if processes == 1 else ["-m", "torch.distributed.run", "--standalone",
                                          f"--nproc_per_node={processes}"]
    return [sys.executable, *launcher, "-m", "course_utils.finetune", *cli_arguments(config)]


def launch(config: FinetuneConfig, processes: int = 1, timeout: float | None = None) -> dict:
    """Run the fine-tune in fresh processes and return its result line.

    A process of its own gives every run the same start (its peak memory is its own) and the
    launcher variables a real launch has. The full output goes to ``<output_dir>/launch.log``.
    """
    log_path = Path(config.output_dir) / "launch.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    environment = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE",
                                                                    "MASTER_ADDR", "MASTER_PORT")}
    with open(log_path, "w") as log:
        done = subprocess.run(launch_command(config, processes), stdout=subprocess.PIPE, stderr=log, text=True,
                              env=environment, timeout=timeout)
        log.write(done.stdout)
    results = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not results:
        tail = "".join(log_path.read_text().splitlines(keepends=True)[-15:])
        raise RuntimeError(f"The fine-tune exited with status {done.returncode}; last lines of {log_path}:\n{tail}")
    return json.loads(results[-1])


def _parser():
    from .configs import argument_parser

    parser = argument_parser(FinetuneConfig, "python -m course_utils.finetune",
                             "Fine-tune T5 on IMDB sentiment (text-to-text).")
    parser.add_argument("--local_rank", "--local-rank", type=int, default=-1,
                        help="set by the deepspeed launcher; read from the environment otherwise")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = vars(_parser().parse_args(argv))
    args.pop("local_rank")
    figures = run(FinetuneConfig(**args))
    if os.environ.get("RANK", "0") == "0":  # one result line, from the process that measured accuracy
        print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
