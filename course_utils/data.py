"""Load IMDB, CNN/DailyMail and C4 with the same columns from the Hub or from ``data/``.

A source is a Hub id (``stanfordnlp/imdb``) or a local folder holding one JSONL file per
split (``data/imdb/train.jsonl``...). Either way the result is a ``datasets`` object with
the Hub's schema, so the lessons never need to know which one they got:

    imdb = read_imdb(profile.imdb)              # DatasetDict: train, test, unsupervised, as stored
    splits, dropped = load_imdb(profile.imdb, max_train_rows=1000, test_rows=200, seed=42)  # checked, sampled
    cnn = load_cnn_dailymail(profile.cnn_dailymail)
    c4 = load_c4(profile.c4, streaming=True)    # IterableDatasetDict: train, validation
"""

from __future__ import annotations

from .configs import DataSource
from .sentiment import prepare_imdb
from .sources import load_source


def imdb_features():
    from datasets import ClassLabel, Features, Value

    # As on the Hub: label 0 = neg, 1 = pos; the unsupervised split stores -1 ("no label").
    return Features({"text": Value("string"), "label": ClassLabel(names=["neg", "pos"])})


def cnn_dailymail_features():
    from datasets import Features, Value

    return Features({"article": Value("string"), "highlights": Value("string"), "id": Value("string")})


def c4_features():
    from datasets import Features, Value

    return Features({"text": Value("string"), "timestamp": Value("string"), "url": Value("string")})


def read_imdb(source: DataSource):
    """IMDB as stored: ``text``, ``label`` (0 neg, 1 pos; -1 in ``unsupervised``)."""
    return load_source(source, imdb_features())


def load_imdb(source: DataSource, max_train_rows: int | None = None, test_rows: int | None = None, seed: int = 42):
    """(splits, {reason: rows left out}): IMDB's train and test splits, every row checked (labels 0 and 1),
    each cut to a seeded sample when a limit is given (``sentiment.prepare_imdb``)."""
    return prepare_imdb(read_imdb(source), max_train_rows, test_rows, seed)


def load_cnn_dailymail(source: DataSource):
    """CNN/DailyMail 3.0.0: ``article``, ``highlights`` (newline-separated), ``id``."""
    return load_source(source, cnn_dailymail_features())


def load_c4(source: DataSource, streaming: bool = True):
    """C4 en: ``text``, ``timestamp``, ``url``; streamed by default (the Hub copy is hundreds of GB)."""
    return load_source(source, c4_features(), streaming=streaming)
