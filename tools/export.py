"""Write the notebook cells marked ``#@save`` into the modules that launchers and tests import (a maintainer's tool).

A lesson shows its code in its cells; ``deepspeed``, ``torchrun`` and ``accelerate launch`` need the same
code in a module. The cell is the one source: its first line is ``#@save`` (d2l's mark, which d2l copies
into ``d2l/torch.py`` with its build tool, d2lbook), and this command writes the module from the marked
cells of the notebook, in order, so that it reads like a written one:

- its docstring says which lesson it comes from, in the notebook's own title;
- the cells' imports stand once, at the top, grouped as usual (standard library, third party, the course);
- each function's and class's docstring ends with where it is defined: the notebook and its section.

    python tools/export.py           # rewrite every exported module from its notebook
    python tools/export.py --check   # exit 1, naming the module, when a module and its cells differ

``tests/tools/test_export.py`` runs the check, so a cell edited without its module (or the reverse) fails CI.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "#@save"
MARKED = re.compile(r"#\s*@save")  # ruff's formatter writes d2l's mark as "# @save"; both count
FIRST_PARTY = "course_utils"


@dataclass(frozen=True)
class Export:
    notebook: str  # relative to the repository
    module: str  # relative to the repository


EXPORTS = (
    Export("notebooks/00_gpu_check.ipynb", "course_utils/from_notebooks/device_report.py"),
    Export("notebooks/01_t5_small_imdb_finetune.ipynb", "course_utils/from_notebooks/sentiment_trainer.py"),
    Export("notebooks/02_deepspeed_zero.ipynb", "course_utils/from_notebooks/zero_memory.py"),
    Export("notebooks/03_cnn_dailymail_rouge.ipynb", "course_utils/from_notebooks/summarizers.py"),
    Export("notebooks/04_nanot5_pretraining.ipynb", "course_utils/from_notebooks/pretraining_loop.py"),
    Export("notebooks/05_is_it_really_better.ipynb", "course_utils/from_notebooks/evaluation.py"),
)


@dataclass(frozen=True)
class Cell:
    source: str  # without the #@save line
    section: str  # the last markdown heading above it


def title(cells: list[dict]) -> str:
    """The notebook's title: its first markdown heading, without the ``#``."""
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    raise ValueError("the notebook has no title (a markdown line starting with '# ')")


def marked_cells(notebook: Path) -> list[Cell]:
    """Every code cell whose first line is ``#@save``, without that line, with the section it stands in."""
    cells, section, found = json.loads(notebook.read_text())["cells"], "", []
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            headings = re.findall(r"^#{2,4}\s+(.+?)\s*$", source, re.M)
            section = headings[-1] if headings else section
        elif MARKED.fullmatch(source.split("\n", 1)[0].strip()):
            found.append(Cell(source.split("\n", 1)[1].strip("\n") if "\n" in source else "", section))
    return found


def import_group(module: str) -> int:
    """0 for the standard library, 1 for third parties, 2 for the course's own package."""
    top = module.split(".")[0]
    return 2 if top == FIRST_PARTY else 0 if top in sys.stdlib_module_names else 1


def split_imports(source: str) -> tuple[list[ast.stmt], str]:
    """(the top-level import statements of ``source``, ``source`` without them)."""
    tree = ast.parse(source)
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    lines = source.split("\n")
    drop = {n for node in imports for n in range(node.lineno - 1, node.end_lineno)}
    rest = "\n".join(line for n, line in enumerate(lines) if n not in drop)
    return imports, re.sub(r"\n{3,}", "\n\n\n", rest).strip("\n")


def import_block(imports: list[ast.stmt]) -> str:
    """The imports, each module once (names merged), in three groups as isort orders them."""
    plain: dict[str, set[str]] = {}  # module -> the aliases it is imported under ("" for none)
    named: dict[str, set[str]] = {}  # module -> "name" or "name as alias"
    for node in imports:
        if isinstance(node, ast.Import):
            for alias in node.names:
                plain.setdefault(alias.name, set()).add(alias.asname or "")
        else:
            names = named.setdefault("." * node.level + (node.module or ""), set())
            names.update(a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
    groups: list[list[str]] = [[], [], []]
    for module, aliases in plain.items():
        for alias in sorted(aliases):
            groups[import_group(module)].append(f"import {module}" + (f" as {alias}" if alias else ""))
    for module, names in named.items():
        groups[import_group(module.lstrip("."))].append(f"from {module} import {', '.join(sorted(names))}")
    order = lambda line: (line.startswith("from "), line.split()[1].lower())  # noqa: E731 - isort's order
    return "\n\n".join("\n".join(sorted(group, key=order)) for group in groups if group)


def with_where_defined(source: str, where: str) -> str:
    """``source`` with every top-level function's and class's docstring ending in ``where``."""
    tree = ast.parse(source)
    lines = source.split("\n")
    documented = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and ast.get_docstring(node) is not None
    ]
    for node in reversed(documented):  # from the bottom up, so earlier positions stay valid
        doc = node.body[0].value
        indent = " " * node.body[0].col_offset
        last = lines[doc.end_lineno - 1]
        closing = last[: doc.end_col_offset]
        if closing.strip() == '"""':  # the quotes stand on a line of their own
            lines[doc.end_lineno - 2] += f"\n\n{indent}{where}"
        else:  # text and quotes on one line
            lines[doc.end_lineno - 1] = (
                closing[:-3] + f"\n\n{indent}{where}\n{indent}" + closing[-3:] + last[doc.end_col_offset :]
            )
    return "\n".join(lines)


def module_text(export: Export, root: Path = ROOT) -> str:
    """The module ``export`` describes, as written from its notebook's marked cells."""
    notebook = root / export.notebook
    cells = marked_cells(notebook)
    if not cells:
        raise ValueError(f"{export.notebook} has no code cell starting with {MARK}; {export.module} would be empty.")
    imports, bodies = [], []
    for cell in cells:
        found, body = split_imports(cell.source)
        imports += found
        if body:
            bodies.append(with_where_defined(body, f'Defined in {export.notebook}, section "{cell.section}".'))
    heading = title(json.loads(notebook.read_text())["cells"])
    header = (
        f'"""The code of lesson {heading}\n\nGenerated by `python tools/export.py` from the cells marked {MARK} in\n'
        f"{export.notebook}. Never edit this file by hand: edit the cells, then rerun the command\n"
        f'(tests/tools/test_export.py fails when the two differ).\n"""\n'
    )
    text = "\n\n\n".join(bodies)
    if imports:  # isort's spacing: two blank lines before a def or class, one before anything else
        gap = "\n\n\n" if re.match(r"(def |class |@|async def )", bodies[0] if bodies else "") else "\n\n"
        text = import_block(imports) + gap + text
    return header + "\n" + text + "\n"


def stale_modules(root: Path = ROOT) -> list[str]:
    """The exported modules whose file differs from what their notebook's cells write."""
    return [
        e.module
        for e in EXPORTS
        if not (root / e.module).exists() or (root / e.module).read_text() != module_text(e, root)
    ]


def write_modules(root: Path = ROOT) -> list[str]:
    """Write every stale module; return their paths."""
    stale = stale_modules(root)
    for export in EXPORTS:
        if export.module in stale:
            (root / export.module).write_text(module_text(export, root))
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/export.py", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when a module differs")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_modules()
        for module in stale:
            print(
                f"{module} differs from the {MARK} cells of its notebook: run python tools/export.py", file=sys.stderr
            )
        return 1 if stale else 0
    for module in write_modules():
        print(f"wrote {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
