"""Text for pretraining, the span-corrupted batches made from it in DataLoader worker processes, and the held-out ones.

    texts = iter_texts("allenai/c4", "en", "train")                # streamed from the Hub (or its cached shards)
    texts = iter_texts("data/c4", None, "validation")              # <split>.jsonl in a folder
    texts = iter_texts("my_corpus/*.txt", None, "train")           # your own .txt/.jsonl/.parquet files
    rows = raw_rows(texts, tokenizer, raw_length=568)              # tokens.raw_rows: (568,) token arrays

    stream = CorruptedBatches(DataSource("allenai/c4", "en"), "train", tokenizer, collator, raw_length=568,
                              rows_per_batch=128, seed=2137, rank=0, world_size=1)
    loader = batch_loader(stream, workers=8)     # torchdata's StatefulDataLoader: 8 processes build the batches
    batch = next(iter(loader))                   # {"input_ids": (128, 512), "labels": (128, 114)}
    saved = loader.state_dict()                  # where every worker is; a new loader's load_state_dict(saved)
                                                 # continues with exactly the batches that would have come next
    stream = CorruptedBatches.for_config(config, tokenizer, "train", config.seed, rank=0, world_size=1)  # a run's stream
    held_out = held_out_batches(config, tokenizer)                                            # its fixed NLL batches

The documents are split among *readers*: every DataLoader worker of every training process
(``world_size x workers`` of them) reads its own disjoint share, handed out by datasets'
``split_dataset_by_node`` (whole files when they divide evenly, else every n-th document).
Each reader shuffles its share in blocks of ``shuffle_block`` documents, tokenizes, joins
and cuts the token stream into rows, and corrupts whole batches of rows. Local files without
split names hold out every 100th document of each file as the validation split; in a ``.txt``
file each non-empty line is one document.

Resuming restores each reader's position rather than replaying the stream: datasets' own
``state_dict`` of the document stream at the start of the current block, the block's
permutation (from the seed), and the tokens carried into the current chunk. A resume reads
at most one block of documents again and tokenizes at most one chunk plus one batch's rows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import signal
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np
import torch

from course_utils.machinery.configs import DataSource, InputError
from course_utils.machinery.moved import deprecated_alias
from course_utils.models_and_data.sources import load_source, read_jsonl, read_lines
from course_utils.models_and_data.tokens import CHUNK, cut_rows, encode_documents, raw_rows
from course_utils.pretraining.config import PretrainConfig
from course_utils.pretraining.span_corruption import span_corruption_collator

TEXT_SUFFIXES = (".txt", ".jsonl", ".json", ".parquet")
HELD_OUT_EVERY = 100  # local files without splits: every 100th document of each file is validation


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
        raise InputError(f"No {', '.join(TEXT_SUFFIXES)} files at {data_path!r}.")
    return files, False


def read_documents(path: Path, column: str) -> Iterator[str]:
    """The documents of one file; a missing or non-text column is named with file and line."""
    if path.suffix == ".txt":
        yield from (line.strip() for _, line in read_lines(path) if line.strip())
    elif path.suffix in (".jsonl", ".json"):
        for number, row in read_jsonl(path):
            yield _text_of(row, column, f"{path}, line {number}")
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        if column not in table.column_names:
            raise InputError(f"{path}: no column {column!r}; columns are {table.column_names} (set text_column).")
        for number, value in enumerate(table.column(column).to_pylist(), start=1):
            yield _text_of({column: value}, column, f"{path}, row {number}")


def _text_of(row: dict, column: str, where: str) -> str:
    return column_texts({key: [value] for key, value in row.items()}, column, where)[0]


def _local_documents(paths: list[str], column: str, split: str, by_name: bool) -> Iterator[dict]:
    """Rows ``{column: text}`` of local files; files without split names give up every 100th document
    of each file to the validation split."""
    for path in paths:
        for number, text in enumerate(read_documents(Path(path), column)):
            if by_name or (number % HELD_OUT_EVERY == 0) == (split == "validation"):
                yield {column: text}


def document_stream(source: DataSource, split: str):
    """The documents of ``source``'s ``split`` as a ``datasets.IterableDataset``, one shard per file."""
    from datasets import Features, IterableDataset, Value

    if Path(source.path).exists() or any(ch in source.path for ch in "*?["):
        files, by_name = local_files(source.path, split)
        # A list in gen_kwargs is what datasets shards: each file is one shard.
        return IterableDataset.from_generator(
            _local_documents,
            features=Features({source.column: Value("string")}),
            gen_kwargs={"paths": [str(p) for p in files], "column": source.column, "split": split, "by_name": by_name},
        )
    # Online, C4 is streamed from the Hub; offline, its prefetched shards are read from the cache.
    return load_source(source, None, streaming=True)[split]


def reader_share(source: DataSource, split: str, reader: int, readers: int):
    """The documents of reader ``reader`` of ``readers``: datasets' ``split_dataset_by_node`` hands
    out whole shards when they divide evenly, else every ``readers``-th document."""
    from datasets.distributed import split_dataset_by_node

    return split_dataset_by_node(document_stream(source, split), rank=reader, world_size=readers)


def iter_texts(
    data_path: str, data_config: str | None, split: str, rank: int = 0, world_size: int = 1, column: str = "text"
) -> Iterator[str]:
    """The documents of ``split`` that reader ``rank`` of ``world_size`` reads, in file order."""
    number = 0
    for documents in reader_share(DataSource(data_path, data_config, column), split, rank, world_size).iter(CHUNK):
        texts = column_texts(documents, column, f"{data_path} ({split})", number)
        number += len(texts)
        yield from texts


def validation_rows(config, tokenizer, raw_length: int, count: int) -> list[np.ndarray]:
    """The first ``count`` rows of ``raw_length`` tokens of ``config``'s validation split (a PretrainConfig's
    data_path, data_config and text_column), its documents joined and cut as training cuts them."""
    texts = iter_texts(config.data_path, config.data_config, "validation", column=config.text_column)
    return [row for row, _ in zip(raw_rows(texts, tokenizer, raw_length), range(count))]


def column_texts(documents: dict, column: str, where: str, first_number: int | None = None) -> list[str]:
    """The ``column`` of a batch of documents (a dict of lists), each checked to be text; errors name
    ``where`` and, when ``first_number`` is given, the document's number."""
    if column not in documents:
        raise InputError(f"{where}: no column {column!r}; columns are {sorted(documents)} (set text_column).")
    for index, text in enumerate(documents[column]):
        if not isinstance(text, str):
            at = where if first_number is None else f"{where}, document {first_number + index + 1} (counting from 1)"
            raise InputError(f"{at}: {column!r} is {type(text).__name__}, not text.")
    return documents[column]


@dataclass
class Cursor:
    """Where a reader is: enough to rebuild its next row without reading its share from the start."""

    data_pass: int = 0  # passes over the share completed
    block: int = 0  # shuffle blocks of this pass completed
    stream: dict | None = None  # datasets' state_dict of the share at the start of this block
    chunk: int = 0  # chunks of this block completed
    carry: list[int] = dataclasses.field(default_factory=list)  # tokens carried into this chunk
    row: int = 0  # rows of this chunk already made
    row_number: int = 0  # rows this reader made before: seeds each row's noise mask


class CorruptedBatches(torch.utils.data.IterableDataset):
    """Endless span-corrupted batches of one training process, built by its DataLoader workers.

    Every batch comes whole from one reader (a worker), so gradient accumulation only splits it
    and never changes the data. Each row's noise mask depends on (seed, reader, row number) and
    each block's order on (seed, reader, pass, block), so the batches depend on the seed, the
    number of processes and the number of workers, and on nothing else.
    """

    def __init__(
        self,
        source: DataSource,
        split: str,
        tokenizer,
        collator,
        raw_length: int,
        rows_per_batch: int,
        seed: int,
        rank: int = 0,
        world_size: int = 1,
        shuffle_block: int = 10_000,
    ):
        super().__init__()
        self.source, self.split, self.tokenizer, self.collator, self.raw_length = (
            source,
            split,
            tokenizer,
            collator,
            raw_length,
        )
        self.rows_per_batch, self.seed, self.rank, self.world_size = rows_per_batch, seed, rank, world_size
        self.shuffle_block = shuffle_block
        self._state: dict | None = None  # where the next batch starts; None: at the beginning

    # torchdata's StatefulDataLoader calls these in each worker, after every batch and on resume.

    @classmethod
    def for_config(
        cls, config: PretrainConfig, tokenizer, split: str, seed: int, rank: int = 0, world_size: int = 1
    ) -> CorruptedBatches:
        """This process's endless batches of ``split`` for a run of ``config``: ``batch_size / world_size``
        corrupted rows each."""
        collator, raw_length = span_corruption_collator(
            tokenizer, config.input_length, config.noise_density, config.mean_noise_span_length
        )
        return cls(
            config.data,
            split,
            tokenizer,
            collator,
            raw_length,
            config.batch_size // world_size,
            seed,
            rank,
            world_size,
            config.shuffle_block,
        )

    def state_dict(self) -> dict:
        return {"position": self._state}

    def load_state_dict(self, state: dict) -> None:
        self._state = state["position"]

    def _reader(self) -> tuple[int, int]:
        """(this reader's number, readers in all): worker ``w`` of ``W`` on process ``r`` is reader ``r*W + w``."""
        info = torch.utils.data.get_worker_info()
        workers, worker = (info.num_workers, info.id) if info else (1, 0)
        return self.rank * workers + worker, self.world_size * workers

    def __iter__(self) -> Iterator[dict]:
        reader, readers = self._reader()
        cursor, skip = self._start(reader, readers)
        rows, first = [], None
        for row, where in self._rows(reader, readers, cursor):
            if skip:  # a resume restarts at its batch's first row: the rows it already served
                skip -= 1
                continue
            if not rows:
                first = dataclasses.asdict(where)  # the batch's first row: where a resume restarts
            rows.append(row)
            if len(rows) == self.rows_per_batch:
                numbers = range(first["row_number"], first["row_number"] + len(rows))
                batch = self.collator(rows, [np.random.default_rng([self.seed, reader, n]) for n in numbers])
                # After this batch: restart at its first row and skip its rows.
                self._state = {"reader": reader, "readers": readers, "cursor": first, "skip": len(rows)}
                yield batch
                rows = []

    def _start(self, reader: int, readers: int) -> tuple[Cursor, int]:
        if self._state is None:
            return Cursor(), 0
        if (self._state["reader"], self._state["readers"]) != (reader, readers):
            raise InputError(
                f"This data position was saved by reader {self._state['reader']} of "
                f"{self._state['readers']} (processes x data workers), but it is being resumed as "
                f"reader {reader} of {readers}: resume with the same processes and data_workers."
            )
        return Cursor(**self._state["cursor"]), self._state["skip"]

    def _rows(self, reader: int, readers: int, cursor: Cursor) -> Iterator[tuple[np.ndarray, Cursor]]:
        """(row, cursor at that row) from ``cursor`` on, pass after pass."""
        while True:
            share = reader_share(self.source, self.split, reader, readers)
            if cursor.stream is not None:
                share.load_state_dict(cursor.stream)
            whole_pass, made = (cursor.stream, cursor.chunk, cursor.row) == (None, 0, 0), 0  # from its start?
            # One block of documents at a time; ``iter`` (not a plain loop, which in a DataLoader worker
            # would split the shards among workers once more) keeps datasets' position exact per block.
            for documents in share.iter(batch_size=self.shuffle_block):
                made += yield from self._block_rows(self._shuffled(documents, reader, cursor), cursor)
                cursor.block, cursor.chunk, cursor.stream = cursor.block + 1, 0, share.state_dict()
            if whole_pass and made == 0:
                raise InputError(
                    f"{self.source.path} ({self.split}): reader {reader} of {readers} (processes x "
                    f"data workers) made no row of {self.raw_length} tokens from its whole share; add "
                    "data, or use fewer data_workers or processes."
                )
            cursor.data_pass, cursor.block, cursor.chunk, cursor.stream = cursor.data_pass + 1, 0, 0, None

    def _shuffled(self, documents: dict, reader: int, cursor: Cursor) -> list[str]:
        """The block's texts in the order seeded by (seed, reader, pass, block)."""
        texts = column_texts(
            documents,
            self.source.column,
            f"{self.source.path} ({self.split}), reader {reader}",
            cursor.block * self.shuffle_block,
        )
        order = np.random.default_rng([self.seed, reader, cursor.data_pass, cursor.block]).permutation(len(texts))
        return [texts[i] for i in order]

    def _block_rows(self, block: list[str], cursor: Cursor):
        """The block's rows from ``cursor`` on, a chunk of documents tokenized at a time; returns how many."""
        made = 0
        while cursor.chunk * CHUNK < len(block):
            chunk = block[cursor.chunk * CHUNK : (cursor.chunk + 1) * CHUNK]
            rows, carry = cut_rows(cursor.carry, encode_documents(self.tokenizer, chunk), self.raw_length)
            while cursor.row < len(rows):
                yield rows[cursor.row], cursor
                cursor.row, cursor.row_number, made = cursor.row + 1, cursor.row_number + 1, made + 1
            cursor.chunk, cursor.carry, cursor.row = cursor.chunk + 1, carry, 0
        return made


STOP_GRACE_SECONDS = 30  # SLURM's default wait between SIGTERM and SIGKILL


def _worker_outlives_stop_signals(worker_id: int) -> None:
    """A cluster's SIGTERM (or SLURM's SIGUSR1) goes to every process of the job. A worker killed by
    it would make torch raise in the training process, which must finish its step and checkpoint.
    So a worker ignores SIGUSR1, and on SIGTERM keeps serving for a grace period, then exits cleanly
    (exit status 0 is no error to torch); it also exits by itself once the training process is gone."""
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_after_grace)


def _exit_after_grace(number, frame) -> None:
    import threading

    threading.Timer(STOP_GRACE_SECONDS, os._exit, (0,)).start()


def batch_loader(stream: CorruptedBatches, workers: int, pin_memory: bool = False):
    """torchdata's StatefulDataLoader over ``stream``: ``workers`` processes build whole batches
    (0: in this process), taken in turn; its ``state_dict`` says where each worker is."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    if workers:
        # Each worker tokenizes on one core. Said before the workers fork, this also keeps the
        # tokenizers library from warning that it switched its threads off in each of them.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with _quiet_torchdata():
        return StatefulDataLoader(
            stream,
            batch_size=None,
            num_workers=workers,
            pin_memory=pin_memory,
            worker_init_fn=_worker_outlives_stop_signals if workers else None,
            prefetch_factor=4 if workers else None,
        )


def start_batches(loader) -> Iterator[dict]:
    """``iter(loader)``: the workers start, from the position a ``load_state_dict`` restored."""
    with _quiet_torchdata():
        return iter(loader)


def stop_batches(loader) -> None:
    """Stop the loader's worker processes now, as the loader's own clean-up would when collected."""
    iterator = getattr(loader, "_iterator", None)
    if hasattr(iterator, "_shutdown_workers"):  # what the iterator's own __del__ calls
        iterator._shutdown_workers()
    loader._iterator = None


@contextlib.contextmanager
def _quiet_torchdata():
    """torchdata 0.11 calls a torch function that torch 2.13 deprecates and warns about; nothing to act on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*set_vital")
        yield


def held_out_batches(config: PretrainConfig, tokenizer, rank: int = 0, world_size: int = 1) -> list[dict]:
    """The fixed held-out batches a run evaluates on: ``eval_batches`` of the validation split, noise seed 0,
    read in this process (the same whatever data_workers is)."""
    return list(
        islice(CorruptedBatches.for_config(config, tokenizer, "validation", 0, rank, world_size), config.eval_batches)
    )


corrupted_batches = deprecated_alias(CorruptedBatches.for_config, "course_utils.pretraining.data.corrupted_batches")
