"""Lesson 04's optimizer race: the same pretraining run once per variant, each variant changing one setting.

    race = optimizer_race(pretrain, config, steps=300, output_dir="outputs/race")   # RACE's two runs, shortened
    results = pretrain_variants(pretrain, config, {"adafactor": {"optimizer": "adafactor"}})   # any variants

``pretrain`` is the lesson's loop (notebook 04's cells, ``loop.pretrain``), passed in by the caller.
Every run starts from the same seeded weights and reads the same batches, so a difference in held-out NLL
comes from the setting the variant changes. ``benchmarks/bench_optimizers.py`` races three optimizers under
two schedules the same way.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from course_utils.pretraining.config import PretrainConfig

# nanoT5's finding, in two runs: the same model, data and peak rate, with and without the RMS scaling.
RACE = {"AdamW + RMS scaling": {"optimizer": "adamwscale"}, "plain AdamW": {"optimizer": "adamw"}}
RACE_EVAL_BATCHES = 10  # the recipe's 100 held-out batches would cost as much as the race's steps


def pretrain_variants(pretrain, config: PretrainConfig, variants: dict[str, dict], echo=print) -> dict:
    """{name: result} of ``pretrain(config)`` once per variant, each changing only the settings it names (an
    optimizer, a schedule, ...) and writing to ``<output_dir>/<name>``."""
    results = {}
    for name, changes in variants.items():
        folder = Path(config.output_dir) / name.replace(" ", "_").replace("+", "and")
        results[name] = pretrain(dataclasses.replace(config, **changes, output_dir=str(folder)), echo=lambda _: None)
        nll = results[name].eval_nll
        echo(f"{name}: held-out NLL {nll[0]:.3f} -> {nll[max(nll)]:.3f} after {max(nll)} steps")
    return results


def race_config(config: PretrainConfig, steps: int, output_dir: str) -> PretrainConfig:
    """``config`` cut to ``steps`` (at most its own) for a race: a tenth of them (at most its own warm-up) warming
    up, the cosine schedule, six evaluations on at most ``RACE_EVAL_BATCHES`` batches, no checkpoints."""
    steps = min(steps, config.total_steps)
    return dataclasses.replace(
        config,
        output_dir=output_dir,
        total_steps=steps,
        lr_scheduler="cosine",
        warmup_steps=min(config.warmup_steps, steps // 10),
        eval_every=max(steps // 6, 1),
        eval_batches=min(config.eval_batches, RACE_EVAL_BATCHES),
        logging_steps=max(steps // 6, 1),
        checkpoint_every=0,
        resume=False,
        stop_at_step=0,
    )


def optimizer_race(pretrain, config: PretrainConfig, steps: int, output_dir: str, echo=print) -> dict:
    """``RACE``'s two runs of ``pretrain`` on ``config`` cut to ``steps`` (``race_config``)."""
    return pretrain_variants(pretrain, race_config(config, steps, output_dir), RACE, echo)
