"""Seconds per training step at the full profile's sizes: the GPU check of ``make rehearse``.

    python tests/rehearsal/step_times.py            # prints one JSON line; needs the models in the HF cache

- Lesson 01's fine-tune step: t5-small, batch 16 x 512 input tokens, through the course's own
  Seq2SeqTrainer (``finetune.build_trainer``), bf16 where the GPU has it.
- Lesson 04's pretraining step: T5 v1.1 base, batch 128 x 512 inputs / 114 targets, through
  ``pretrain.pretrain`` itself, with bf16, ``torch.compile`` and the gradient accumulation it chose
  for this GPU's memory (compare nanoT5: 0.56 s on an A100 with bf16 and compile).

Each figure is the median of the steps after the first (which includes compiling and warm-up).
On a CPU these sizes take hours per step, so the rehearsal only runs this with CUDA; the test
runs the same functions on the stand-ins with tiny sizes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def finetune_step_seconds(model_name: str, batch_size: int = 16, length: int = 512, steps: int = 6,
                          attn_implementation: str | None = None) -> dict:
    """Lesson 01's Trainer on ``steps`` batches of ``batch_size`` rows of exactly ``length`` input tokens."""
    import numpy as np
    from datasets import Dataset
    from transformers import TrainerCallback

    from course_utils.finetune import FinetuneConfig, answer_length, build_trainer, train
    from course_utils.hardware import resolve_precision
    from course_utils.models import load_seq2seq_model, load_tokenizer, model_options

    class StepClock(TrainerCallback):
        def __init__(self):
            self.ends = []

        def on_step_end(self, args, state, control, **kwargs):
            self.ends.append(time.perf_counter())

    with tempfile.TemporaryDirectory() as out:
        config = FinetuneConfig(model_name=model_name, output_dir=out, per_device_batch_size=batch_size,
                                num_train_epochs=1, warmup_fraction=0.0, group_by_length=False, logging_steps=steps,
                                attn_implementation=attn_implementation)
        tokenizer = load_tokenizer(model_name)
        model = load_seq2seq_model(model_name, **model_options(config.attn_implementation))
        rng = np.random.default_rng(0)
        rows = batch_size * steps
        inputs = rng.integers(3, len(tokenizer) - 100, size=(rows, length - 1)).tolist()  # ordinary pieces, then </s>
        answer = tokenizer("positive").input_ids
        assert len(answer) <= answer_length(tokenizer)
        data = Dataset.from_dict({"input_ids": [ids + [tokenizer.eos_token_id] for ids in inputs],
                                  "attention_mask": [[1] * length] * rows, "labels": [answer] * rows})
        trainer = build_trainer(config, model, tokenizer, data)
        clock = StepClock()
        trainer.add_callback(clock)
        start = time.perf_counter()
        result = train(trainer)
    gaps = [b - a for a, b in zip([start, *clock.ends], clock.ends)]
    return {"model": model_name, "batch": f"{batch_size} x {length}", "precision": resolve_precision(config.precision),
            "steps": result.steps, "seconds_per_step": statistics.median(gaps[1:] or gaps),
            "first_step_seconds": gaps[0], "peak_memory_mib": result.peak_memory_mib}


def pretrain_step_seconds(config, steps: int = 6) -> dict:
    """``pretrain`` itself for ``steps`` steps of ``config``'s batch; the median of each step's time after the first."""
    from course_utils.hardware import peak_memory, resolve_precision
    from course_utils.pretrain import pretrain

    with tempfile.TemporaryDirectory() as out:
        timed = dataclasses.replace(config, output_dir=out, total_steps=steps, warmup_steps=1, log_every=1,
                                    eval_every=0, eval_batches=1, checkpoint_every=0, stop_at_step=0, resume=False)
        lines = []
        result = pretrain(timed, echo=lines.append)
    seconds = [float(re.search(r"Seconds_per_step --> ([0-9.]+)", line).group(1)) for line in lines
               if line.startswith("[train]")]
    return {"model": config.model_name, "batch": f"{config.batch_size} x {config.input_length}",
            "precision": resolve_precision(config.precision), "compiled": config.compile,
            "gradient_accumulation_steps": result.gradient_accumulation_steps, "steps": result.steps,
            "seconds_per_step": statistics.median(seconds[1:] or seconds), "first_step_seconds": seconds[0],
            "peak_memory_mib": peak_memory()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6, help="steps to time for each model (the first is left out)")
    args = parser.parse_args()
    from course_utils.pretrain import pretrain_config
    from course_utils.profiles import get_profile

    profile = get_profile("full")
    config = dataclasses.replace(pretrain_config(profile, "unused"), gradient_accumulation_steps=0)  # chosen here
    figures = {"finetune": finetune_step_seconds(profile.models["t5_small"], steps=args.steps),
               "pretrain": pretrain_step_seconds(config, steps=args.steps)}
    print(json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
