"""Every usage example in a module docstring is checked against the code it shows, so none can go stale.

A Python line's calls to the package's functions and classes are bound to their real signatures
(a missing function, a misspelt or removed argument fails). A ``python -m course_utils.<module>``
or ``course`` command line must name only options its parser has. The examples are not executed:
most need a model or a data set; the lessons and the other tests run those paths.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import importlib
import importlib.util
import inspect
import pkgutil
import re
import shlex
import textwrap

import pytest

import course_utils
import course_utils.pretraining.__main__ as pretrain_command
from course_utils.pretraining.config import PretrainConfig

WALKED = list(pkgutil.walk_packages(course_utils.__path__, prefix="course_utils."))
MODULES = sorted(m.name.removeprefix("course_utils.") for m in WALKED)  # "models", "pretraining.config", ...
SHELL = re.compile(r"^(?:[A-Z_]+=\S+\s+)*(python -m course_utils\.[\w.]+|course)\b")


def example_lines(docstring: str) -> list[str]:
    """The indented lines of a docstring, continuation lines joined, comments dropped."""
    examples, pending = [], ""
    for line in textwrap.dedent(docstring or "").splitlines():
        if not line.startswith("    ") and not pending:
            continue
        text = (pending + " " + line.strip()).strip() if pending else line.strip()
        if text.endswith("\\"):
            pending = text[:-1]
            continue
        pending = ""
        if SHELL.match(text):
            examples.append(text)
            continue
        try:
            ast.parse(text)
        except SyntaxError:
            if text.count("(") > text.count(")") or text.count("[") > text.count("]"):
                pending = text  # a call that goes on over the next line
            continue
        examples.append(text)
    return examples


def package_names() -> dict[str, object]:
    names = {}
    for name in MODULES:
        module = importlib.import_module(f"course_utils.{name}")
        names.update(
            {
                k: v
                for k, v in vars(module).items()
                if not k.startswith("_") and getattr(v, "__module__", "").startswith("course_utils")
            }
        )
    return names


def check_python(line: str, names: dict, assigned: set[str]) -> list[str]:
    problems = []
    tree = ast.parse(line)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name,)) and isinstance(node.ctx, ast.Store):
            assigned.add(node.id)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        name = node.func.id
        if name in names:
            try:
                signature = inspect.signature(names[name])
            except (TypeError, ValueError):
                continue
            arguments = [None] * sum(not isinstance(a, ast.Starred) for a in node.args)
            keywords = {k.arg: None for k in node.keywords if k.arg is not None}
            try:
                signature.bind(*arguments, **keywords)
            except TypeError as err:
                problems.append(f"{line!r}: {name}{signature}: {err}")
        elif not hasattr(builtins, name) and name not in assigned:
            problems.append(f"{line!r}: calls {name}, which the package does not have")
    return problems


def check_command(line: str) -> list[str]:
    words = shlex.split(line)
    words = words[next(i for i, w in enumerate(words) if "=" not in w or w.startswith("-")) :]
    if words[0] == "python":
        module = importlib.import_module(words[2])
        if hasattr(module, "__path__"):  # a package: python -m runs its __main__
            module = importlib.import_module(f"{words[2]}.__main__")
        parser = (
            module.parser() if hasattr(module, "parser") else module._parser() if hasattr(module, "_parser") else None
        )
        if parser is None:
            return []
        known = {o for action in parser._actions for o in action.option_strings}
        options = words[3:]
    else:  # course <subcommand>
        from course_utils.machinery.cli import _parser

        sub = next(a for a in _parser()._actions if a.__class__.__name__ == "_SubParsersAction")
        if words[1] not in sub.choices:
            return [f"{line!r}: course has no command {words[1]!r}"]
        known = {o for action in sub.choices[words[1]]._actions for o in action.option_strings}
        options = words[2:]
    return [
        f"{line!r}: no option {w.split('=')[0]}" for w in options if w.startswith("--") and w.split("=")[0] not in known
    ]


@pytest.mark.parametrize("name", ["__init__", *MODULES])
def test_every_docstring_example_matches_the_code(name):
    module = importlib.import_module("course_utils" if name == "__init__" else f"course_utils.{name}")
    names, assigned, problems = package_names(), set(), []
    for line in example_lines(module.__doc__):
        problems += check_command(line) if SHELL.match(line) else check_python(line, names, assigned)
    assert not problems, "\n".join(problems)


def test_the_checker_catches_a_wrong_argument_and_a_missing_function():
    names = package_names()
    assert check_python("checked_replace(config, {}, what='x')", names, set()) == []
    assert check_python("checked_replace(config, {}, wat='x')", names, set())
    assert check_python("no_such_helper(1)", names, set())
    assert check_command("python -m course_utils.pretraining --no-such-option 1")
    assert check_command("python -m course_utils.pretraining --total-steps 3") == []


def command_parsers() -> dict[str, object]:
    """Every command-line parser of the package: the two launchable modules and each `course` command."""
    from course_utils.lessons import finetune
    from course_utils.machinery import cli
    from course_utils.pretraining import __main__ as pretraining_command

    parsers = {
        "python -m course_utils.lessons.finetune": finetune._parser(),
        "python -m course_utils.pretraining": pretraining_command.parser(),
    }
    sub = next(a for a in cli._parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    parsers.update({f"course {name}": parser for name, parser in sub.choices.items()})
    return parsers


@pytest.mark.parametrize("command", sorted(command_parsers()))
def test_help_explains_every_option_in_words(command):
    parser = command_parsers()[command]
    for action in parser._actions:
        if not action.option_strings or action.help == "==SUPPRESS==":
            continue
        words = re.sub(r"\(default: [^)]*\)", "", action.help or "").replace("true or false.", "").strip()
        assert len(words.split()) >= 3, f"{command} {action.option_strings[0]}: help is {action.help!r}"
    assert "(default: 2137)" in command_parsers()["python -m course_utils.pretraining"].format_help()


@pytest.mark.parametrize("module", ["lessons.finetune", "pretraining.config"])
def test_the_help_shows_each_config_fields_help(module):
    module = importlib.import_module(f"course_utils.{module}")
    config_class = module.FinetuneConfig if hasattr(module, "FinetuneConfig") else module.PretrainConfig
    parser = command_parsers()[
        "python -m course_utils.lessons.finetune"
        if module.__name__.endswith("finetune")
        else "python -m course_utils.pretraining"
    ]
    text = "".join(parser.format_help().split())  # argparse wraps lines, at hyphens too
    helps = {f.name: f.metadata.get("help", "") for f in dataclasses.fields(config_class)}
    assert all(len(h.split()) >= 3 for h in helps.values()), helps
    for help_text in helps.values():
        assert "".join(help_text.split()).replace("%", "%") in text


def test_a_config_field_without_help_is_refused():
    from course_utils.machinery.configs import argument_parser, setting

    @dataclasses.dataclass
    class Bad:
        fine: int = setting(1, "a field with its reason")
        bare: int = 2

    with pytest.raises(TypeError, match="Bad.bare has no help"):
        argument_parser(Bad, "prog", "a bad config")


def test_dataclass_fields_have_help_for_the_new_settings():
    names = {f.name for f in dataclasses.fields(PretrainConfig)}
    assert {"compile_backend", "resume"} <= names
    text = pretrain_command.parser().format_help()
    assert "true, false or auto" in text and "aot_eager" in text
