"""Load IMDB, CNN/DailyMail and LAMBADA with the Hub's columns from the Hub or from ``data/``, IMDB's rows checked.

A source is a Hub id (``stanfordnlp/imdb``) or a local folder holding one JSONL file per
split (``data/imdb/train.jsonl``...). Either way the result is a ``datasets`` object with
the Hub's schema, so the lessons never need to know which one they got:

    imdb = read_imdb(profile.imdb)              # DatasetDict: train, test, unsupervised, as stored
    splits, dropped = load_imdb(profile.imdb, max_train_rows=1000, test_rows=200, seed=42)  # checked, sampled
    cnn = load_cnn_dailymail(profile.cnn_dailymail)
    lambada = load_lambada(profile.lambada, rows=100)   # passages; the last word is the answer (lesson 05)

Lesson 01 turns IMDB's labels into words and scores the answers in its own cells (``sentiment_trainer``);
lesson 04 streams its text itself (``pretraining.data``).
"""

from __future__ import annotations

from course_utils.machinery.configs import DataSource, InputError
from course_utils.models_and_data.sources import load_source


def imdb_features():
    from datasets import ClassLabel, Features, Value

    # As on the Hub: label 0 = neg, 1 = pos; the unsupervised split stores -1 ("no label").
    return Features({"text": Value("string"), "label": ClassLabel(names=["neg", "pos"])})


def cnn_dailymail_features():
    from datasets import Features, Value

    return Features({"article": Value("string"), "highlights": Value("string"), "id": Value("string")})


def lambada_features():
    from datasets import Features, Value

    return Features({"text": Value("string")})


def read_imdb(source: DataSource):
    """IMDB as stored: ``text``, ``label`` (0 neg, 1 pos; -1 in ``unsupervised``)."""
    return load_source(source, imdb_features())


def load_imdb(source: DataSource, max_train_rows: int | None = None, test_rows: int | None = None, seed: int = 42):
    """(splits, {reason: rows left out}): IMDB's train and test splits, every row checked (labels 0 and 1),
    each cut to a seeded sample when a limit is given (``prepare_imdb``)."""
    return prepare_imdb(read_imdb(source), max_train_rows, test_rows, seed)


def load_cnn_dailymail(source: DataSource):
    """CNN/DailyMail 3.0.0: ``article``, ``highlights`` (newline-separated), ``id``."""
    return load_source(source, cnn_dailymail_features())


def load_lambada(source: DataSource, rows: int | None = None):
    """LAMBADA's test passages (``text``; its last word is the one to predict), the first ``rows`` of them, each
    checked: a passage of fewer than two words has no context to predict from."""
    test = load_source(source, lambada_features())["test"]
    if rows is not None:
        test = test.select(range(min(rows, len(test))))
    for row, text in enumerate(test["text"], start=1):
        if not isinstance(text, str) or len(text.split(" ")) < 2:
            raise InputError(
                f"LAMBADA test split, row {row} (counting from 1): 'text' must be a passage of two or more words "
                f"separated by spaces, got {text!r}."
            )
    return test


COLUMNS = ("text", "label")


def check_imdb_split(split, name: str) -> None:
    """Raise InputError naming the column or row when ``split`` is not clean labelled IMDB data."""
    missing = [c for c in COLUMNS if c not in split.column_names]
    if missing:
        raise InputError(f"IMDB split {name!r} has no column(s) {missing}; found {split.column_names}.")
    for row, (text, label) in enumerate(zip(split["text"], split["label"], strict=True)):
        if not isinstance(text, str) or not text.strip():
            raise InputError(
                f"IMDB split {name!r}, row {row + 1} (counting from 1): 'text' must be a non-empty string, got {text!r}."
            )
        if label not in (0, 1):
            raise InputError(
                f"IMDB split {name!r}, row {row + 1} (counting from 1): 'label' is {label!r}; expected 0 (negative) "
                "or 1 (positive)."
            )


def seeded_sample(split, limit: int | None, seed: int):
    """A seeded random sample of ``limit`` rows, not the first ones (all of them when limit is None)."""
    if limit is None or limit >= len(split):
        return split
    return split.shuffle(seed=seed).select(range(limit))


def prepare_imdb(imdb, max_train_rows: int | None = None, test_rows: int | None = None, seed: int = 42):
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
