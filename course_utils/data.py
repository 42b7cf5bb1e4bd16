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

import json
from collections.abc import Iterator
from pathlib import Path

from .configs import InputError
from .hub import local_data_files, writable_datasets_cache
from .offline import is_offline
from .profiles import DataSource
from .sentiment import prepare_imdb


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


def local_split_files(folder: Path) -> dict[str, str]:
    """{split: path} for every ``<split>.jsonl`` in ``folder``."""
    order = {"train": 0, "validation": 1, "test": 2, "unsupervised": 3}
    paths = sorted(folder.glob("*.jsonl"), key=lambda p: (order.get(p.stem, 9), p.stem))
    files = {p.stem: str(p) for p in paths}
    if not files:
        raise InputError(f"No <split>.jsonl files in {folder}; regenerate them with `python data/generate.py`.")
    return files


def check_columns(columns: list[str], features, where: str) -> None:
    """Fail, naming the column, when a file or row does not have exactly the Hub's columns."""
    missing = [c for c in features if c not in columns]
    extra = [c for c in columns if c not in features]
    if missing or extra:
        raise InputError(f"{where}: missing column(s) {missing or 'none'}, unexpected column(s) "
                         f"{extra or 'none'}; expected exactly {list(features)}.")


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number counted from 1, as an editor shows it; text) of a UTF-8 file. A line that is
    not UTF-8 is named; the file is read as bytes so that the number is exact."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise InputError(f"{path}, line {number}: not UTF-8 text (byte {err.start + 1} of the line is "
                                 f"{raw[err.start]:#04x}); save the file as UTF-8 or remove that line.") from None


def read_jsonl(path: str | Path, columns=None) -> Iterator[tuple[int, dict]]:
    """(line number, row) of a JSON Lines file, blank lines skipped; each row is checked to be a JSON
    object with exactly ``columns`` (None: any), and every error names the file and the line."""
    for number, line in read_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"{path}, line {number}: not valid JSON ({err.msg}, character {err.pos + 1}); a line cut "
                             "short by an interrupted copy looks like this. Fix or delete the line, or copy the "
                             "file again.") from None
        if not isinstance(row, dict):
            raise InputError(f"{path}, line {number}: a JSON {type(row).__name__}, not an object with named columns.")
        if columns is not None:
            check_columns(list(row), columns, f"{path}, line {number}")
        yield number, row


def check_labels(number: int, row: dict, features, where: str) -> None:
    """Fail, naming the line, when a label column holds a value its ClassLabel cannot (-1 = no label)."""
    from datasets import ClassLabel

    for name, feature in features.items():
        if isinstance(feature, ClassLabel) and row[name] not in range(-1, feature.num_classes):
            raise InputError(f"{where}, line {number}: {name!r} is {row[name]!r}; expected one of "
                             f"{list(range(-1, feature.num_classes))} ({', '.join(feature.names)}, or -1 for none).")


def check_local_file(path: str, features) -> None:
    """Read a local split once with our own reader, so a bad file is named with its line before datasets reads it."""
    for number, row in read_jsonl(path, tuple(features)):
        check_labels(number, row, features, path)


def iter_jsonl(paths: list[str], columns: tuple[str, ...]):
    """Rows of JSON Lines files, each checked for exactly ``columns`` (the error names file and line)."""
    for path in paths:
        for _, row in read_jsonl(path, columns):
            yield row


def _load_local(folder: Path, features, streaming: bool):
    # Dataset.from_json / from_generator, not load_dataset("json"): the latter reports each
    # load to a usage counter on the network unless HF_DATASETS_OFFLINE is set.
    from datasets import Dataset, DatasetDict, IterableDataset, IterableDatasetDict

    files = local_split_files(folder)
    if streaming:
        return IterableDatasetDict({
            split: IterableDataset.from_generator(iter_jsonl, features=features,
                                                  gen_kwargs={"paths": [path], "columns": tuple(features)})
            for split, path in files.items()})
    for path in files.values():  # every file checked before any is read, so a bad one stops the load at once
        check_local_file(path, features)
    return DatasetDict({split: Dataset.from_json(path).cast(features) for split, path in files.items()})


def load_source(source: DataSource, features, streaming: bool = False):
    """The data set at ``source``, typed with ``features`` (None: as stored); local folders and Hub ids alike.

    A Hub data set is read from its files in the Hugging Face cache (downloaded first when the
    Hub is on), so an offline run needs nothing but what ``course prefetch`` fetched. C4 is the
    exception online: it is streamed from the Hub, which holds far more of it than any cache.
    """
    folder = Path(source.path)
    if folder.is_dir():
        return _load_local(folder, features, streaming)
    if folder.is_absolute() or source.path.startswith((".", "~")) or folder.exists():
        raise InputError(f"{source.path} is not a folder: point the data path at a folder of <split>.jsonl files "
                         "or at a Hub data set (such as stanfordnlp/imdb).")
    if streaming and not is_offline():
        from datasets import load_dataset

        stream = load_dataset(source.path, source.config, streaming=True)
        return stream if features is None else stream.cast(features)
    return _load_hub_files(local_data_files(source.path, source.config), features, streaming)


def _load_hub_files(files: dict[str, list[str]], features, streaming: bool):
    # Dataset.from_parquet / from_json, not load_dataset("parquet" / "json"): the latter reports each
    # load to a usage counter on the network unless HF_DATASETS_OFFLINE is set, and a compute node
    # told only HF_HUB_OFFLINE=1 would try it.
    from datasets import Dataset, DatasetDict, IterableDatasetDict

    cache = writable_datasets_cache()
    splits = {}
    for split, paths in files.items():
        reader = Dataset.from_parquet if paths[0].endswith(".parquet") else Dataset.from_json
        data = reader(paths, streaming=streaming, cache_dir=cache)  # several files stay several shards
        if features is not None:
            columns = list(data.features) if data.features is not None else list(features)
            check_columns(columns, features, f"{paths[0]} ({split})")
            data = data.cast(features)
        splits[split] = data
    return (IterableDatasetDict if streaming else DatasetDict)(splits)


def read_imdb(source: DataSource):
    """IMDB as stored: ``text``, ``label`` (0 neg, 1 pos; -1 in ``unsupervised``)."""
    return load_source(source, imdb_features())


def load_imdb(source: DataSource, max_train_rows: int | None = None, test_rows: int | None = None, seed: int = 42):
    """(splits, {reason: rows left out}): IMDB's train and test splits, every row checked, with a
    ``label_text`` column of answer words, each cut to a seeded sample when a limit is given
    (``sentiment.prepare_imdb``)."""
    return prepare_imdb(read_imdb(source), max_train_rows, test_rows, seed)


def load_cnn_dailymail(source: DataSource):
    """CNN/DailyMail 3.0.0: ``article``, ``highlights`` (newline-separated), ``id``."""
    return load_source(source, cnn_dailymail_features())


def load_c4(source: DataSource, streaming: bool = True):
    """C4 en: ``text``, ``timestamp``, ``url``; streamed by default (the Hub copy is hundreds of GB)."""
    return load_source(source, c4_features(), streaming=streaming)
