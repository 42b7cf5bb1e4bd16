"""Copy the notebook cells marked ``#@save`` into the modules that launchers and tests import.

A lesson shows its code in its cells; ``deepspeed``, ``torchrun`` and ``accelerate launch`` need the
same code in a module. The cell is the one source: its first line is ``#@save`` (d2l's mark, which
d2l copies into ``d2l/torch.py``), and this command writes the module from the marked cells of the
notebook, in order:

    python -m course_utils.export           # rewrite every exported module from its notebook
    python -m course_utils.export --check   # exit 1, naming the module, when a module and its cells differ

``tests/test_export.py`` runs the check, so a cell edited without its module (or the reverse) fails CI.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from .paths import repo_root

MARK = "#@save"


@dataclass(frozen=True)
class Export:
    notebook: str  # relative to the repository
    module: str    # relative to the repository
    job: str       # the module's first docstring line: what its code does
    command: str = ""  # a module with a command line: the support module whose main(<function>) runs it
    function: str = ""  # ... and the cell's function that main runs


EXPORTS = (
    Export("notebooks/00_gpu_check.ipynb", "course_utils/device_report.py",
           "Lesson 00's checks of the software: the library versions, and whether torch.compile builds kernels here."),
    Export("notebooks/01_t5_small_imdb_finetune.ipynb", "course_utils/sentiment_trainer.py",
           "Lesson 01's fine-tune: the tokenize function, the Seq2SeqTrainer and its arguments, answers by generate."),
    Export("notebooks/02_deepspeed_zero.ipynb", "course_utils/zero_memory.py",
           "Lesson 02's arithmetic: model-state bytes per GPU for each ZeRO stage, by the ZeRO paper's formulas."),
    Export("notebooks/03_cnn_dailymail_rouge.ipynb", "course_utils/summarizers.py",
           "Lesson 03's summaries: T5 with beam search, GPT-2 with TL;DR:, their repetition measure, and Lead-3."),
    Export("notebooks/04_nanot5_pretraining.ipynb", "course_utils/pretrain.py",
           "Lesson 04's pretraining: the T5 v1.1 model from its config, the training step and the loop.",
           command="course_utils.pretrain_command", function="pretrain"),
)


def marked_cells(notebook: Path) -> list[str]:
    """The source of every code cell whose first line is ``#@save``, without that line."""
    cells = json.loads(notebook.read_text())["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return [s.split("\n", 1)[1].strip("\n") if "\n" in s else "" for s in sources
            if s.split("\n", 1)[0].strip() == MARK]


def module_text(export: Export, root: Path | None = None) -> str:
    """The module ``export`` describes, as written from its notebook's marked cells."""
    root = root or repo_root()
    cells = marked_cells(root / export.notebook)
    if not cells:
        raise ValueError(f"{export.notebook} has no code cell starting with {MARK}; {export.module} would be empty.")
    header = (f'"""{export.job}\n\nWritten by `python -m course_utils.export` from the cells marked {MARK} in\n'
              f'{export.notebook}: edit them there, then rerun the command (tests/test_export.py checks it).\n"""\n')
    # A cell cannot hold the entry point: in Jupyter, __name__ is "__main__" too, and it would run there.
    footer = (f'\n\nif __name__ == "__main__":  # python -m {export.module[:-3].replace("/", ".")}\n'
              f"    import sys\n\n    from {export.command} import main\n\n    sys.exit(main({export.function}))\n"
              if export.command else "")
    return header + "\n\n" + "\n\n\n".join(cells) + "\n" + footer


def stale_modules(root: Path | None = None) -> list[str]:
    """The exported modules whose file differs from what their notebook's cells write."""
    root = root or repo_root()
    return [e.module for e in EXPORTS
            if not (root / e.module).exists() or (root / e.module).read_text() != module_text(e, root)]


def write_modules(root: Path | None = None) -> list[str]:
    """Write every stale module; return their paths."""
    root = root or repo_root()
    stale = stale_modules(root)
    for export in EXPORTS:
        if export.module in stale:
            (root / export.module).write_text(module_text(export, root))
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_utils.export", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when a module differs")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_modules()
        for module in stale:
            print(f"{module} differs from the {MARK} cells of its notebook: run python -m course_utils.export",
                  file=sys.stderr)
        return 1 if stale else 0
    for module in write_modules():
        print(f"wrote {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
