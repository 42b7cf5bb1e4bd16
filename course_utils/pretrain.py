"""Pretrain a T5 v1.1 from random weights with span corruption, the nanoT5 way, as a command (lesson 04).

The notebook of lesson 04 shows the loop (``pretrain_loop.py`` is written from its cells); long runs use
this command, on one process or several:

    python -m course_utils.pretrain --help
    python -m course_utils.pretrain --model-name standin:t5-v1_1-base --data-path data/c4 \\
        --input-length 128 --batch-size 16 --total-steps 200 --warmup-steps 20 --data-workers 1 --output-dir outputs/pt
    accelerate launch --num_processes 8 -m course_utils.pretrain --output-dir outputs/t5_base_c4

It writes TensorBoard events to ``<output_dir>/tensorboard``, makes its batches in ``data_workers``
DataLoader processes (``pretrain_data.py``), and can be stopped and resumed from its last checkpoint
(``--resume true``), data workers' positions included; ``--resume auto`` resumes when there is a
complete checkpoint and starts afresh when there is none (what a requeued job script wants).
``optimizer_race`` runs nanoT5's comparison of AdamW with and without RMS scaling.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

from .configs import InputError, argument_parser, checked_replace, run_command
from .quiet import quiet_library_notices
from .offline import MissingAssetError
from .pretrain_config import PretrainConfig, PretrainResult
from .pretrain_loop import pretrain


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
