"""The flat layout's names (course_utils/machinery/moved.py): each old module still imports, as the same module it
moved to, with a FutureWarning that names the new path; ``python -m`` with an old name still runs the command."""

import importlib
import subprocess
import sys
import warnings

import pytest

from course_utils.machinery.moved import MOVED_MODULES, deprecated_alias


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_an_old_module_name_gives_the_moved_module_with_a_warning_naming_it(old):
    new = MOVED_MODULES[old]
    sys.modules.pop(old, None)
    with pytest.warns(FutureWarning, match=rf"{old} is now {new}; the old name goes"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)


def test_the_warning_points_at_the_line_that_imports_the_old_name():
    sys.modules.pop("course_utils.models", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from course_utils.models import load_model  # noqa: F401
    assert [w.filename for w in caught] == [__file__]


def test_every_old_name_moved_to_a_module_that_exists_and_no_old_file_is_left():
    from pathlib import Path

    package = Path(__file__).resolve().parents[2]
    for old, new in MOVED_MODULES.items():
        assert importlib.util.find_spec(new) is not None, new
        assert not (package / (old.replace(".", "/") + ".py")).exists(), f"{old}: both the old file and the alias"


def test_python_m_with_an_old_name_runs_the_command_and_names_the_new_one():
    done = subprocess.run(
        [sys.executable, "-m", "course_utils.finetune", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "usage: python -m course_utils.lessons.finetune" in done.stdout
    assert "python -m course_utils.finetune is now python -m course_utils.lessons.finetune" in done.stderr


def test_a_renamed_function_keeps_its_old_name_with_a_warning():
    def new_name(x, *, y=1):
        """The new one."""
        return x + y

    old = deprecated_alias(new_name, "course_utils.somewhere.old_name")
    with pytest.warns(FutureWarning, match=r"course_utils.somewhere.old_name is now .*new_name"):
        assert old(1, y=2) == 3
    assert old.__name__ == "old_name" and "Deprecated" in old.__doc__


def test_every_renamed_function_keeps_its_old_name_as_an_alias_of_the_new_one():
    from course_utils.lessons import finetune
    from course_utils.machinery import memory
    from course_utils.pretraining import config, data, run

    renamed = {
        memory.choose_accumulation: memory.accumulation_steps,
        config.choose_accumulation_steps: config.planned_accumulation_steps,
        finetune.fitting_batch: finetune.with_accumulation_steps_that_fit,
        finetune.run: finetune.fine_tune,
        data.corrupted_batches: data.CorruptedBatches.for_config,
        run.PretrainRun.plan_batch: run.PretrainRun.make_plan,
    }
    for old, new in renamed.items():
        assert old.__wrapped__ == new and old.__doc__.startswith("Deprecated"), old.__name__
