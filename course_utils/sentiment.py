"""IMDB sentiment as text-to-text: the rows checked, the labels as words, the answers scored.

T5 answers in words, so the task is "review in, word out": label 0 becomes "negative",
1 becomes "positive", and a generated answer that is neither counts as wrong ("unknown").

    splits, dropped = prepare_imdb(imdb, max_train_rows=None, test_rows=None, seed=42)  # data.load_imdb calls it
    report = accuracy_report(answers, splits["test"]["label_text"])   # answers: generated texts
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .configs import InputError

LABEL_WORDS = ("negative", "positive")  # IMDB: 0 = neg, 1 = pos
UNKNOWN = "unknown"                     # any generated answer that is neither label word
COLUMNS = ("text", "label")


def check_imdb_split(split, name: str) -> None:
    """Raise InputError naming the column or row when ``split`` is not clean labelled IMDB data."""
    missing = [c for c in COLUMNS if c not in split.column_names]
    if missing:
        raise InputError(f"IMDB split {name!r} has no column(s) {missing}; found {split.column_names}.")
    for row, (text, label) in enumerate(zip(split["text"], split["label"], strict=True)):
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"IMDB split {name!r}, row {row + 1} (counting from 1): 'text' must be a non-empty string, got {text!r}.")
        if label not in (0, 1):
            raise InputError(f"IMDB split {name!r}, row {row + 1} (counting from 1): 'label' is {label!r}; expected 0 (negative) "
                             "or 1 (positive).")


def seeded_sample(split, limit: int | None, seed: int):
    """A seeded random sample of ``limit`` rows, not the first ones (all of them when limit is None)."""
    if limit is None or limit >= len(split):
        return split
    return split.shuffle(seed=seed).select(range(limit))


def prepare_imdb(imdb, max_train_rows: int | None = None, test_rows: int | None = None,
                 seed: int = 42):
    """Checked train/test splits with a ``label_text`` column; also {reason: rows left out}.

    The ``unsupervised`` split (label -1) is left out: it has no answers to learn from or
    score against. Nothing is dropped silently; every row left out is counted by reason.
    """
    from datasets import DatasetDict

    for name in ("train", "test"):
        if name not in imdb:
            raise InputError(f"IMDB has no {name!r} split; found {list(imdb)}.")
        check_imdb_split(imdb[name], name)
    dropped = {}
    if "unsupervised" in imdb:
        dropped["unsupervised split (label -1, no answer)"] = len(imdb["unsupervised"])
    train = seeded_sample(imdb["train"], max_train_rows, seed)
    test = seeded_sample(imdb["test"], test_rows, seed)
    dropped["train rows beyond max_train_rows"] = len(imdb["train"]) - len(train)
    dropped["test rows beyond test_rows"] = len(imdb["test"]) - len(test)

    def add_words(batch):
        return {"label_text": [LABEL_WORDS[y] for y in batch["label"]]}

    splits = DatasetDict(train=train, test=test).map(add_words, batched=True, desc="label words")
    return splits, dropped


def to_label_word(answer: str) -> str:
    """The label word a generated answer names, or "unknown"."""
    word = answer.strip().lower().rstrip(".!")
    return word if word in LABEL_WORDS else UNKNOWN


@dataclass(frozen=True)
class AccuracyReport:
    accuracy: float
    confusion: dict[str, dict[str, int]]  # confusion[true word][predicted word] = count
    unknown: int                           # answers that were neither label word

    def confusion_frame(self):
        import pandas as pd

        frame = pd.DataFrame(self.confusion).T.reindex(index=list(LABEL_WORDS),
                                                         columns=[*LABEL_WORDS, UNKNOWN])
        frame.index.name, frame.columns.name = "true", "predicted"
        return frame.fillna(0).astype(int)


def accuracy_report(answers: Sequence[str], truth: Sequence[str]) -> AccuracyReport:
    """Accuracy of the generated ``answers`` against the ``truth``'s label words (an answer that names
    neither word is "unknown", and wrong) and the confusion counts."""
    predicted = [to_label_word(a) for a in answers]
    if len(predicted) != len(truth):
        raise ValueError(f"{len(predicted)} predictions for {len(truth)} answers.")
    if not truth:
        raise ValueError("No answers to score against.")
    confusion = {t: {p: 0 for p in (*LABEL_WORDS, UNKNOWN)} for t in LABEL_WORDS}
    for p, t in zip(predicted, truth, strict=True):
        confusion[t][p] += 1
    correct = sum(p == t for p, t in zip(predicted, truth, strict=True))
    return AccuracyReport(correct / len(truth), confusion, sum(p == UNKNOWN for p in predicted))
