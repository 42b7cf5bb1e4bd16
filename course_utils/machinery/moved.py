"""Old names kept for one release: modules that moved into the package's folders, and renamed functions.

A student's notebook or a SLURM script written for the flat layout keeps working, and says what to write instead:
``from course_utils.models import load_model`` gives the function, with a FutureWarning that says
"course_utils.models is now course_utils.models_and_data.models", and ``python -m course_utils.finetune`` runs
``course_utils.lessons.finetune`` with the same kind of warning.

``course_utils/__init__.py`` installs the finder; ``deprecated_alias`` keeps a renamed function's old name.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.util
import sys
import warnings

REMOVED_IN = "the next release of the course"

# The flat layout's module -> where it is now. Removed one release after the move.
MOVED_MODULES = {
    **{
        f"course_utils.{name}": f"course_utils.from_notebooks.{name}"
        for name in ("device_report", "sentiment_trainer", "zero_memory", "summarizers", "evaluation")
    },
    "course_utils.pretraining.loop": "course_utils.from_notebooks.pretraining_loop",
    **{
        f"course_utils.{name}": f"course_utils.machinery.{name}"
        for name in (
            "paths",
            "offline",
            "quiet",
            "configs",
            "profiles",
            "environment",
            "hardware",
            "machine",
            "memory",
            "metrics",
            "runner",
            "cli",
            "generation",
            "rouge",
        )
    },
    **{
        f"course_utils.{name}": f"course_utils.models_and_data.{name}"
        for name in ("models", "data", "sources", "hub", "tokens", "standin_files")
    },
    **{
        f"course_utils.{name}": f"course_utils.lessons.{name}"
        for name in ("finetune", "launch", "zero", "summary_setup", "eval_setup", "instruct")
    },
    # the pretraining command's name before it was a folder
    "course_utils.pretrain": "course_utils.pretraining.__main__",
}


def _warn(old: str, new: str, stacklevel: int) -> None:
    warnings.warn(f"{old} is now {new}; the old name goes in {REMOVED_IN}.", FutureWarning, stacklevel=stacklevel)


class _MovedLoader(importlib.abc.Loader):
    """Loads an old module name as the module it moved to: the same module object, not a second copy."""

    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def create_module(self, spec):
        _warn(self.old, self.new, stacklevel=3)  # the import statement (warnings skips importlib's own frames)
        return importlib.import_module(self.new)

    def exec_module(self, module) -> None:
        pass  # already executed under its new name

    def get_code(self, fullname: str):
        """``python -m <old name>``: runpy runs the new module's code."""
        warnings.warn(
            f"python -m {self.old} is now python -m {self.new.removesuffix('.__main__')}; the old name goes in "
            f"{REMOVED_IN}.",
            FutureWarning,
            stacklevel=1,
        )
        return importlib.util.find_spec(self.new).loader.get_code(self.new)

    def is_package(self, fullname: str) -> bool:
        return False


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old names in ``MOVED_MODULES``; any other name is left to the usual finders."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, _MovedLoader(fullname, MOVED_MODULES[fullname]))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (importing the package does it)."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())


def deprecated_alias(new, old_name: str):
    """``new`` under its old name ``old_name``: the same arguments and result, with a FutureWarning at the caller's
    line that names ``new``."""

    @functools.wraps(new)
    def alias(*args, **kwargs):
        _warn(old_name, f"{new.__module__}.{new.__qualname__}", stacklevel=3)
        return new(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old_name.rsplit(".", 1)[-1]
    alias.__doc__ = f"Deprecated: the old name of ``{new.__qualname__}`` (removed in {REMOVED_IN})."
    return alias
