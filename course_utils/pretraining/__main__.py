"""``python -m course_utils.pretraining``: lesson 04's pretraining as a command, on one process or several.

    python -m course_utils.pretraining --help
    python -m course_utils.pretraining --model-name standin:t5-v1_1-base --data-path data/c4 \\
        --input-length 128 --batch-size 16 --total-steps 200 --warmup-steps 20 --data-workers 1 --output-dir outputs/pt
    accelerate launch --num_processes 8 -m course_utils.pretraining --output-dir outputs/t5_base_c4

Every field of ``PretrainConfig`` is a flag, and the defaults are nanoT5's whole recipe. The run writes
TensorBoard events to ``<output_dir>/tensorboard`` and can be stopped and resumed from its last checkpoint
(``--resume true``), data workers' positions included; ``--resume auto`` resumes when there is a complete
checkpoint and starts afresh when there is none (what a requeued job script wants). Bad input ends in one
line on stderr and exit status 2; the end of a run prints one JSON line, the figures result.json holds.
The loop itself is ``loop.pretrain``, written from notebook 04's cells.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

from course_utils.from_notebooks.pretraining_loop import pretrain
from course_utils.machinery.configs import InputError, argument_parser, run_command
from course_utils.machinery.offline import MissingAssetError
from course_utils.machinery.quiet import quiet_library_notices
from course_utils.pretraining.config import PretrainConfig

PROG = "python -m course_utils.pretraining"


def parser():
    return argument_parser(PretrainConfig, PROG, "Pretrain a T5 with span corruption (nanoT5's recipe).")


def main(argv: list[str] | None = None) -> int:
    """Parse the flags into a PretrainConfig and pretrain with it; the exit status."""
    config = PretrainConfig(**vars(parser().parse_args(argv)))
    return run_command(lambda: _run(config), PROG, (InputError, MissingAssetError, FileNotFoundError))


def _run(config: PretrainConfig) -> int:
    quiet_library_notices()
    result = pretrain(config)
    from accelerate import PartialState

    PartialState().destroy_process_group()  # the end of the process: its launcher's group is done
    if os.environ.get("RANK", "0") == "0":  # one result line, the figures result.json holds
        print(json.dumps(dataclasses.asdict(result)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
