"""Typed configs with checked overrides: an unknown or misspelt key is an error, not a no-op."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping


def checked_replace(config, overrides: Mapping, what: str = "setting"):
    """``dataclasses.replace(config, **overrides)``, refusing keys the dataclass does not have."""
    known = {f.name for f in dataclasses.fields(config)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"Unknown {what}(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}.")
    return dataclasses.replace(config, **overrides)


def boolean(text: str) -> bool:
    """``true``/``false`` (also 1/0, yes/no) from the command line."""
    import argparse

    if text.lower() in ("1", "true", "yes"):
        return True
    if text.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def argument_parser(config_class, prog: str, description: str):
    """An argparse parser with one ``--field-name`` option per field of the dataclass ``config_class``."""
    import argparse

    kinds = {"int": int, "int | None": int, "float": float, "str": str, "str | None": str, "bool": boolean}
    parser = argparse.ArgumentParser(prog=prog, description=description)
    for f in dataclasses.fields(config_class):
        kind = kinds.get(str(f.type), str)
        hint = "true or false; " if kind is boolean else ""
        parser.add_argument("--" + f.name.replace("_", "-"), type=kind, default=f.default,
                            help=f"{hint}(default: {f.default})")
    return parser
