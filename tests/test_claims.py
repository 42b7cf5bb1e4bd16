"""Words bound to numbers: each sentence a lesson states about a measured outcome is guarded by an assertion in the
code cell before it, an assertion whose message names the sentence (``"The text below says: <sentence>"``).

GUARDED lists the guarded sentences of each lesson. A change that drops a guard, or edits a sentence without its
guard (or the reverse), fails here. Sentences that a cell prints from the figures need no guard.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "The text below says: "
GUARDED = {
    "02": [
        "At stage 2, DeepSpeed keeps the paper's 2 bytes a parameter on every GPU, but shares 18 where the paper shares 14",
        "At stage 3 it shares 18 bytes a parameter too, where the paper shares 16, and keeps one more thing whole",
        "from 8 to 64 GPUs stage 3 shrinks 8-fold, while stages 1 and 2 shrink by less than half",
    ],
    "03": [
        "Without the newlines, rougeLsum equals rougeL.",
        "Itself: 1.0 on all four scores.",
        "Without the stemmer, four of the six words and two of the five bigrams match (0.67 and 0.40).",
        "With it, all of them do.",
        "the long prediction contains storm, so its recall is perfect, but its precision is 1/11",
        "ROUGE-2 is 0: a one-word reference has no bigrams.",
        "A two-word prediction that starts with the same word scores much higher.",
        "ROUGE-1 is a perfect 1.0 for gibberish, because it ignores order.",
        "ROUGE-2 and ROUGE-L punish the shuffle.",
        "Empty reference: 0.0 everywhere",
        "Swapping the arguments swaps precision and recall, so the F score stays the same.",
        "No Lead-3 summary starts with a byline or a dateline now.",
    ],
    "04": [
        "A freshly initialised T5 v1.1 scores worse than uniform guessing.",
    ],
    "05": [
        "The scripted judge is consistent on every article whose two summaries differ in length.",
        "Wherever the two summaries differ in length, the scripted judge chose the longer one.",
    ],
}


def plain(markdown: str) -> str:
    """Markdown as a reader sees the words: emphasis and code marks gone, whitespace collapsed."""
    return " ".join(re.sub(r"[*`]", "", markdown).split())


def message_text(node: ast.expr | None) -> str:
    """The literal start of an assertion's message (an f-string's text up to its first replacement field)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        text = ""
        for part in node.values:
            if not isinstance(part, ast.Constant):
                break
            text += part.value
        return text
    return ""


def guards(notebook: Path) -> list[tuple[str, str]]:
    """(sentence, the markdown cell after the guarding code cell) for every guard in ``notebook``."""
    cells = json.loads(notebook.read_text())["cells"]
    found = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        source = re.sub(r"^(\s*)%.*$", r"\1pass", "".join(cell["source"]), flags=re.M)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Assert) and message_text(node.msg).startswith(PREFIX):
                sentence = message_text(node.msg)[len(PREFIX) :].strip()
                following = next((c for c in cells[index + 1 :] if c["cell_type"] == "markdown"), None)
                found.append((sentence, plain("".join(following["source"])) if following else ""))
    return found


def lesson(number: str) -> Path:
    return next((ROOT / "notebooks").glob(f"{number}_*.ipynb"))


LESSON_NUMBERS = ["00", "01", "02", "03", "04", "05"]


@pytest.mark.parametrize("number", LESSON_NUMBERS)
def test_each_lesson_guards_the_sentences_listed_and_each_stands_in_the_next_text(number):
    found = guards(lesson(number))
    assert [sentence for sentence, _ in found] == GUARDED.get(number, [])
    for sentence, text in found:
        assert plain(sentence) in text, f"the guard's sentence is not in the markdown after it: {sentence!r}"


def test_a_sentence_edited_without_its_guard_is_caught(tmp_path):
    notebook = json.loads(lesson("03").read_text())
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = [
                "".join(cell["source"]).replace(
                    "ROUGE-2 and ROUGE-L punish the shuffle.", "ROUGE-2 punishes the shuffle."
                )
            ]
    edited = tmp_path / "03_edited.ipynb"
    edited.write_text(json.dumps(notebook))
    missing = [s for s, text in guards(edited) if plain(s) not in text]
    assert missing == ["ROUGE-2 and ROUGE-L punish the shuffle."]


# A cell shows only its last expression: a table or a value computed earlier in the cell, and not printed, is lost.
SHOWN_ONLY_LAST = ("round", "head", "describe", "to_frame", "T")


def hidden_displays(notebook: Path) -> list[str]:
    """Bare expressions that would display a value, but are not their cell's last statement: a student never sees
    them (lesson 03's table of swapped arguments was one, followed by an assert)."""
    found = []
    for index, cell in enumerate(json.loads(notebook.read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = re.sub(r"^(\s*)%.*$", r"\1pass", "".join(cell["source"]), flags=re.M)
        body = ast.parse(source).body
        for node in body[:-1]:
            if not isinstance(node, ast.Expr):
                continue
            value = node.value
            shown = isinstance(value, (ast.Name, ast.Subscript, ast.Attribute)) or (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr in SHOWN_ONLY_LAST
            )
            if shown:
                found.append(f"cell {index}, line {node.lineno}: {ast.unparse(value)[:60]}")
    return found


@pytest.mark.parametrize("number", LESSON_NUMBERS)
def test_no_cell_computes_a_table_it_never_shows(number):
    assert hidden_displays(lesson(number)) == []


def test_a_table_followed_by_an_assert_is_caught(tmp_path):
    notebook = {
        "cells": [
            {"cell_type": "code", "source": ["table = make()\n", "table.round(3)\n", "assert ok\n"]},
            {"cell_type": "code", "source": ["table.round(3)\n"]},
        ]
    }
    path = tmp_path / "05_hidden.ipynb"
    path.write_text(json.dumps(notebook))
    assert hidden_displays(path) == ["cell 0, line 2: table.round(3)"]
