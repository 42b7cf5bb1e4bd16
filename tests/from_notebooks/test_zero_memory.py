"""Lesson 02's model-state formulas: the math its text shows is the code its cells run (``zero_memory.paper_bytes``)."""

from __future__ import annotations

import json
import re

from conftest import ROOT

from course_utils.from_notebooks.zero_memory import paper_bytes


def shown_formulas() -> dict[str, str]:
    """{"stage 0": "(2 + 2 + 12)*psi", ...}: the aligned block of the lesson's markdown, as Python."""
    notebook = json.loads((ROOT / "notebooks" / "02_deepspeed_zero.ipynb").read_text())
    text = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    block = re.search(r"\\begin\{aligned\}(.*?)\\end\{aligned\}", text, re.S).group(1)
    formulas = {}
    for line in block.split("\\\\"):
        label, formula = line.split("&")
        stage = re.search(r"stage \d", label).group(0)
        formula = formula.split("=")[0]  # "(2 + 2 + 12) Psi = 16 Psi": the left side
        formula = re.sub(r"\\frac\{(.*?)\}\{(.*?)\}", r"(\1)/(\2)", formula)
        formula = formula.replace("\\,", "*").replace("\\Psi", "psi").replace("N", "n")
        formulas[stage] = formula.strip()
    return formulas


def test_the_formulas_the_lesson_shows_are_the_ones_it_computes():
    formulas = shown_formulas()
    assert sorted(formulas) == ["stage 0", "stage 1", "stage 2", "stage 3"]
    for psi, n in ((1, 1), (1, 8), (60_506_624, 64)):
        for stage, formula in formulas.items():
            assert eval(formula, {"psi": psi, "n": n}) == paper_bytes(psi, stage, n), (stage, formula)
