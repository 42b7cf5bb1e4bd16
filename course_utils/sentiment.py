"""IMDB's rows checked and sampled for lesson 01: a clean 0/1 label and a non-empty text in every row.

    splits, dropped = prepare_imdb(imdb, max_train_rows=None, test_rows=None, seed=42)  # data.load_imdb calls it

The labels become answer words, and the answers are scored, in notebook 01's cells
(``sentiment_trainer.add_label_words`` and ``score_answers``).
"""

from __future__ import annotations

from .configs import InputError

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
    """Checked train/test splits (labels 0 and 1); also {reason: rows left out}.

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
    return DatasetDict(train=train, test=test), dropped
