"""What a stand-in is built from, as three fingerprints, and whether a shipped one still matches them.

    prints = fingerprints(STANDINS["t5-small"])   # {"recipe": ..., "code": ..., "data": ...}
    stale(path)                                   # the parts whose fingerprint differs from MANIFEST.json's

Three fingerprints (sha256, 16 hex digits) say what a build depends on:

- **recipe**: the spec (architecture, stages, seed: every field of a StandInSpec, so a change to one stand-in's
  spec leaves the others' fingerprints as they were) and the lessons' texts the stand-ins learn (the prefixes, the
  label words, the judging prompt, the chat template);
- **code**: the modules and functions that decide the weights (``CODE``), each parsed from its file and dumped
  without its docstrings and imports, so a comment, a docstring or a move changes nothing but a changed line of code does; a function
  keeps its fingerprint when it moves to another module (update ``CODE``, which says where to find it);
- **data**: the bytes of every shipped file it reads.

The build writes them into MANIFEST.json; the tests and ``python -m course_utils.standins --check`` compare them
with today's, so a change to the recipe, the code or the data without a rebuild fails.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import json
from pathlib import Path

from course_utils.from_notebooks.evaluation import JUDGE_PROMPT, JUDGE_SYSTEM
from course_utils.from_notebooks.sentiment_trainer import LABEL_WORDS
from course_utils.from_notebooks.summarizers import T5_PREFIX
from course_utils.lessons.eval_setup import EvaluationConfig
from course_utils.lessons.finetune import FinetuneConfig
from course_utils.models_and_data.standin_files import read_manifest
from course_utils.standins import corpus
from course_utils.standins.specs import StandInSpec, spec
from course_utils.standins.tokenizers import QWEN_CHAT_TEMPLATE, corpus_files

PACKAGE = Path(__file__).resolve().parent.parent  # course_utils/
# Where the code that decides a stand-in's weights lives: a module whole (None), or some of its functions. Not the
# held-out figures' code (evaluate.py) or the model card's (card.py): they describe the weights and change none.
CODE = {
    # build.py's stages and the tokenizer and architecture they start from; not build() and manifest_record(), which
    # copy the finished weights (store_in_float16 in saved.py stores them), measure them and write the manifest
    "standins/build.py": (
        "stage_seed",
        "config_for",
        "architecture",
        "span_corruption",
        "mixture",
        "causal_lm",
        "instructions",
        "run_stages",
    ),
    "standins/corpus.py": None,
    "standins/saved.py": None,
    "standins/tokenizers.py": None,
    "standins/training.py": None,
    "pretraining/data.py": None,
    "pretraining/optim.py": None,
    "pretraining/span_corruption.py": None,
    "from_notebooks/pretraining_loop.py": ("initial_model", "train_step", "pretrain"),
    "models_and_data/models.py": ("seq2seq_from_config", "untie_output_layer", "publishes_tied_embeddings"),
    "models_and_data/tokens.py": ("encode_documents", "cut_rows", "raw_rows"),
}


def _digest(parts) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part if isinstance(part, bytes) else str(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _without_docstrings(tree: ast.AST) -> str:
    """The code of ``tree`` without its docstrings and its imports: where a name comes from is not what it computes,
    so a module that moves, or imports another that moved, keeps its fingerprint."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
        body = getattr(node, "body", None)
        if isinstance(body, list):
            node.body = [n for n in body if not isinstance(n, ast.Import | ast.ImportFrom)] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False)


def code_parts(code: dict = CODE, root: Path = PACKAGE) -> dict[str, str]:
    """Each entry of ``code``, parsed and dumped without docstrings: a whole module by its path, a function by its
    name. A function that is not where ``code`` says is an error that says so."""
    parts = {}
    for relative, names in code.items():
        tree = ast.parse((root / relative).read_text())
        if names is None:
            parts[relative] = _without_docstrings(tree)
            continue
        defined = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        for name in names:
            if name not in defined:
                raise KeyError(f"{name} is not defined in course_utils/{relative}: update CODE in {__file__}.")
            parts[name] = _without_docstrings(defined[name])
    return parts


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    return _digest(part for name, dump in sorted(code_parts().items()) for part in (name, dump))


def lesson_texts() -> dict[str, object]:
    """The lessons' own texts and settings that the stand-ins are taught: a change to one is a change of recipe."""

    return {
        "summarize_prefix": T5_PREFIX,
        "sst2_prefix": FinetuneConfig().task_prefix,
        "label_words": list(LABEL_WORDS),
        "judge_system": JUDGE_SYSTEM,
        "judge_prompt": JUDGE_PROMPT,
        "judge_article_words": EvaluationConfig().judge_article_words,
        "chat_template": QWEN_CHAT_TEMPLATE,
    }


def data_files(standin: StandInSpec) -> list[str]:
    """The shipped files, relative to ``data/``, that building ``standin`` reads."""

    root = corpus.data_dir()
    files = {str(p.relative_to(root)) for p in corpus_files(root, name=standin.name)}
    objectives = {stage.objective for stage in standin.stages}
    if "span_corruption" in objectives:
        files |= set(corpus.C4_FILES if standin.name == "t5-v1_1-base" else corpus.DOCUMENT_FILES + corpus.C4_FILES)
    if "causal_lm" in objectives:
        files |= set(corpus.DOCUMENT_FILES) | {"c4/validation.jsonl"}
    if "mixture" in objectives:
        files |= set(corpus.MIXTURE_FILES)
    if "instructions" in objectives:
        files |= set(corpus.INSTRUCTION_FILES)
    return sorted(files)


def fingerprints(standin: StandInSpec) -> dict[str, str]:
    """The recipe's, the code's and the data's fingerprints of ``standin``."""
    recipe = json.dumps({"spec": dataclasses.asdict(standin), "texts": lesson_texts()}, sort_keys=True)
    data = [part for name in data_files(standin) for part in (name, (corpus.data_dir() / name).read_bytes())]
    return {"recipe": _digest([recipe]), "code": code_fingerprint(), "data": _digest(data)}


def combined(prints: dict[str, str]) -> str:
    """One short fingerprint of all three: names a build's work folder."""
    return _digest([prints[key] for key in sorted(prints)])[:12]


def stale(folder: Path) -> list[str]:
    """The fingerprints (recipe, code, data) of the stand-in in ``folder`` that differ from what it would be built
    from today; empty when its manifest still holds."""
    record = read_manifest(folder)
    standin = dataclasses.replace(spec(record["name"]), seed=record["seed"])
    now = fingerprints(standin)
    return [key for key in ("recipe", "code", "data") if record["fingerprints"].get(key) != now[key]]
