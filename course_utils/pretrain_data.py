"""Text for pretraining, streamed: a Hub data set (C4), or local .txt / .jsonl / .parquet files.

    texts = iter_texts("allenai/c4", "en", "train", rank=0, world_size=1)      # streamed from the Hub
    texts = iter_texts("data/c4", None, "validation")                           # <split>.jsonl in a folder
    texts = iter_texts("my_corpus/*.txt", None, "train")                        # your own files
    rows = raw_rows(texts, tokenizer, raw_length=568)                          # (568,) token arrays

Each process reads its own share of the documents (every ``world_size``-th one, starting at
its rank), so several processes never train on the same text. Local files without split names
hold out every 100th document as the validation split. In a ``.txt`` file each non-empty line
is one document.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

TEXT_SUFFIXES = (".txt", ".jsonl", ".json", ".parquet")
HELD_OUT_EVERY = 100  # local files without splits: every 100th document is validation


def local_files(data_path: str, split: str) -> tuple[list[Path], bool]:
    """(files, split_by_name): ``<split>.*`` in a folder when present, else every text file there or matched."""
    path = Path(data_path)
    if path.is_dir():
        named = sorted(p for p in path.iterdir() if p.stem == split and p.suffix in TEXT_SUFFIXES)
        if named:
            return named, True
        files = sorted(p for p in path.rglob("*") if p.suffix in TEXT_SUFFIXES)
    else:
        files = sorted(Path(p) for p in glob.glob(data_path) if Path(p).suffix in TEXT_SUFFIXES)
    if not files:
        raise FileNotFoundError(f"No {', '.join(TEXT_SUFFIXES)} files at {data_path!r}.")
    return files, False


def read_documents(path: Path, column: str) -> Iterator[str]:
    """The documents of one file; a missing or non-text column is named with file and line."""
    if path.suffix == ".txt":
        with open(path, encoding="utf-8") as handle:
            yield from (line.strip() for line in handle if line.strip())
    elif path.suffix in (".jsonl", ".json"):
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    yield _text_of(json.loads(line), column, f"{path}, line {number}")
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        if column not in table.column_names:
            raise ValueError(f"{path}: no column {column!r}; columns are {table.column_names} (set text_column).")
        for number, value in enumerate(table.column(column).to_pylist()):
            yield _text_of({column: value}, column, f"{path}, row {number}")


def _text_of(row: dict, column: str, where: str) -> str:
    if column not in row:
        raise ValueError(f"{where}: no column {column!r}; columns are {sorted(row)} (set text_column).")
    if not isinstance(row[column], str):
        raise ValueError(f"{where}: {column!r} is {type(row[column]).__name__}, not text.")
    return row[column]


def iter_texts(data_path: str, data_config: str | None, split: str, rank: int = 0, world_size: int = 1,
               column: str = "text") -> Iterator[str]:
    """This process's documents of ``split``, in a fixed order."""
    if Path(data_path).exists() or any(ch in data_path for ch in "*?["):
        files, by_name = local_files(data_path, split)
        documents = (text for path in files for text in read_documents(path, column))
        if not by_name:
            keep = (lambda i: i % HELD_OUT_EVERY == 0) if split == "validation" else (lambda i: i % HELD_OUT_EVERY)
            documents = (text for i, text in enumerate(documents) if keep(i))
        yield from (text for i, text in enumerate(documents) if i % world_size == rank)
        return
    yield from _hub_texts(data_path, data_config, split, rank, world_size, column)


def _hub_texts(data_path, data_config, split, rank, world_size, column) -> Iterator[str]:
    from datasets.distributed import split_dataset_by_node

    from .data import load_source
    from .profiles import DataSource

    # Online, C4 is streamed from the Hub; offline, its prefetched shards are read from the cache.
    stream = load_source(DataSource(data_path, data_config), None, streaming=True)[split]
    stream = split_dataset_by_node(stream, rank=rank, world_size=world_size)  # whole shards per process
    for number, row in enumerate(stream):
        yield _text_of(row, column, f"{data_path} {split}, document {number}")


def shuffled(items: Iterable, buffer_size: int, rng: np.random.Generator) -> Iterator:
    """Items in a random order, holding at most ``buffer_size`` at a time (a streaming shuffle)."""
    buffer = []
    for item in items:
        buffer.append(item)
        if len(buffer) >= buffer_size:
            yield buffer.pop(rng.integers(len(buffer)))
    rng.shuffle(buffer)
    yield from buffer


def raw_rows(texts: Iterable[str], tokenizer, raw_length: int, chunk: int = 256) -> Iterator[np.ndarray]:
    """Documents tokenized, each ending in the end-of-sequence token (added where the tokenizer
    does not add it, as GPT-2's does not), joined, and cut into rows of ``raw_length`` tokens.

    The few tokens left at the very end, short of a full row, are dropped.
    """
    pending: list[int] = []
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == chunk:
            pending = yield from _emit(pending, _encode(tokenizer, batch), raw_length)
            batch = []
    if batch:
        yield from _emit(pending, _encode(tokenizer, batch), raw_length)


def _encode(tokenizer, texts: list[str]) -> list[list[int]]:
    eos = tokenizer.eos_token_id
    # verbose=False: documents longer than the model's context are expected here; rows cut them.
    return [ids if ids[-1:] == [eos] else ids + [eos] for ids in tokenizer(texts, verbose=False).input_ids]


def _emit(pending: list[int], encoded: list[list[int]], raw_length: int):
    for ids in encoded:
        pending.extend(ids)
    full = len(pending) // raw_length * raw_length
    for start in range(0, full, raw_length):
        yield np.asarray(pending[start:start + raw_length], dtype=np.int64)
    return pending[full:]
