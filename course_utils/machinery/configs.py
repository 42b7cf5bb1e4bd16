"""Typed configs with checked overrides and a command line that explains itself.

    config = checked_replace(FinetuneConfig(), {"learning_rate": 1e-3})   # an unknown key is an error
    warmup = checked_build(WarmUp, {"num_train_epochs": 3.0, "learning_rate": 5e-3})  # a missing one too
    parser = argument_parser(PretrainConfig, "python -m course_utils.pretraining", "Pretrain a T5.")
    sys.exit(run_command(main_body, "python -m course_utils.pretraining", (InputError, MissingAssetError)))

Each ``--option`` of a parser built here takes its help from its field's ``help`` (declared with
``setting(default, help)``), so the code and ``--help`` say the same thing.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Mapping


@dataclasses.dataclass(frozen=True)
class DataSource:
    """Where a data set comes from: a Hub id (with its config) or a local folder of JSONL files."""

    path: str  # "stanfordnlp/imdb", or a folder such as data/imdb (pretraining: also files or a glob)
    config: str | None = None  # Hub config name, e.g. "3.0.0" for CNN/DailyMail
    column: str = "text"  # the column holding a document's text, where only the text is read (pretraining)


class InputError(ValueError):
    """Bad input from the person running the course: a file, a line, a setting. The message names it
    and says what to do; command-line entry points print it as one line instead of a traceback."""


def _refuse_unknown(config, settings: Mapping, what: str) -> None:
    known = {f.name for f in dataclasses.fields(config)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise InputError(f"Unknown {what}(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}.")


def checked_replace(config, overrides: Mapping, what: str = "setting"):
    """``dataclasses.replace(config, **overrides)``, refusing keys the dataclass does not have."""
    _refuse_unknown(config, overrides, what)
    return dataclasses.replace(config, **overrides)


def checked_build(config_class, settings: Mapping, what: str = "setting"):
    """``config_class(**settings)``, refusing keys the dataclass does not have and naming required ones missing."""
    _refuse_unknown(config_class, settings, what)
    missing = [
        f.name
        for f in dataclasses.fields(config_class)
        if f.name not in settings and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise InputError(f"Missing {what}(s) {', '.join(missing)}: {config_class.__name__} has no default for them.")
    return config_class(**settings)


def setting(default, help: str):
    """A dataclass field with a default and the sentence that says why: ``--help`` prints it.

    ``field(default=..., metadata={"help": ...})``, the dataclass way of attaching a description.
    """
    return dataclasses.field(default=default, metadata={"help": help})


def boolean(text: str) -> bool:
    """``true``/``false`` (also 1/0, yes/no) from the command line."""
    if text.lower() in ("1", "true", "yes"):
        return True
    if text.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def boolean_or_auto(text: str) -> bool | str:
    """``true``/``false`` as ``boolean`` does, or ``auto``."""
    return "auto" if text.lower() == "auto" else boolean(text)


def argument_parser(config_class, prog: str, description: str) -> argparse.ArgumentParser:
    """An argparse parser with one ``--field-name`` option per field of the dataclass ``config_class``,
    each helped by the field's ``help`` (see ``setting``) and its default."""
    kinds = {
        "int": int,
        "int | None": int,
        "float": float,
        "str": str,
        "str | None": str,
        "bool": boolean,
        "bool | str": boolean_or_auto,
    }
    hints = {boolean: "true or false. ", boolean_or_auto: "true, false or auto. "}
    parser = argparse.ArgumentParser(prog=prog, description=description)
    for f in dataclasses.fields(config_class):
        kind = kinds.get(str(f.type), str)
        hint = hints.get(kind, "")
        if "help" not in f.metadata:
            raise TypeError(
                f"{config_class.__name__}.{f.name} has no help: declare it with configs.setting(default, help)."
            )
        comment = f.metadata["help"].replace("%", "%%")  # argparse formats help with %
        parser.add_argument(
            "--" + f.name.replace("_", "-"),
            type=kind,
            default=f.default,
            help=f"{hint}{comment} (default: {f.default})".strip(),
        )
    return parser


def one_line(error: BaseException) -> str:
    """An error's message on one line. An error raised in a DataLoader worker comes back wrapped in
    the worker's traceback; its own message is the traceback's last line."""
    message = str(error).strip()
    if "Original Traceback" in message:
        message = message.splitlines()[-1].split(": ", 1)[-1]
    return " ".join(message.split())


def run_command(body: Callable[[], int], prog: str, expected: tuple[type[BaseException], ...] = (InputError,)) -> int:
    """``body()``, with an ``expected`` error (bad input, not a bug) printed as one line on stderr and
    exit status 2 instead of a traceback. Any other error keeps its traceback."""
    try:
        return body()
    except expected as error:
        print(f"{prog}: error: {one_line(error)}", file=sys.stderr, flush=True)
        return 2
