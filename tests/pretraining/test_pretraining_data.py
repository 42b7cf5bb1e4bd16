"""The pretraining data pipeline: readers' shares, the block shuffle, and resuming with workers
(issue 14, section 5). Resumed batches must be bit-identical to the batches an uninterrupted
stream gives, mid-pass and across passes, with the work done in DataLoader worker processes."""

import json
from collections import Counter

import numpy as np
import pytest
import torch

from course_utils.machinery.configs import DataSource
from course_utils.machinery.paths import data_dir
from course_utils.models_and_data.models import load_tokenizer
from course_utils.pretraining.checkpoints import loader_state, restore_loader
from course_utils.pretraining.data import (
    CorruptedBatches,
    batch_loader,
    cut_rows,
    encode_documents,
    iter_texts,
    start_batches,
    stop_batches,
)
from course_utils.pretraining.span_corruption import span_corruption_collator

MODEL = "standin:t5-v1_1-base"


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer(MODEL)


def raw(rows, rngs) -> dict:
    """A collator that keeps the raw rows, to see exactly which tokens a batch holds."""
    return {"rows": torch.as_tensor(np.stack(rows))}


def corrupting(tokenizer, rows_per_batch=8, **changes):
    collator, raw_length = span_corruption_collator(tokenizer, 32)
    settings = dict(
        source=DataSource(str(data_dir() / "c4")),
        split="train",
        tokenizer=tokenizer,
        collator=collator,
        raw_length=raw_length,
        rows_per_batch=rows_per_batch,
        seed=3,
        shuffle_block=50,
    )
    return CorruptedBatches(**{**settings, **changes})


def take(loader, count: int) -> tuple[list[dict], dict]:
    """(the next ``count`` batches, the loader's state after them); the workers are stopped after."""
    batches = start_batches(loader)
    try:
        return [next(batches) for _ in range(count)], json.loads(json.dumps(loader_state(loader)))
    finally:
        stop_batches(loader)


def assert_same_batches(first: list[dict], second: list[dict]) -> None:
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            assert torch.equal(a[key], b[key]), key


def test_cut_rows_carries_what_is_short_of_a_row():
    rows, carry = cut_rows([1, 2], [[3, 4, 5], [6, 7, 8, 9]], raw_length=3)
    assert rows.tolist() == [[1, 2, 3], [4, 5, 6], [7, 8, 9]] and carry == []
    rows, carry = cut_rows([], [[1, 2, 3, 4]], raw_length=3)
    assert rows.tolist() == [[1, 2, 3]] and carry == [4]


@pytest.mark.parametrize("workers", [0, 2])
def test_a_resumed_loader_gives_exactly_the_batches_that_would_have_come(tokenizer, workers):
    # 50-document blocks and batches of 8 rows of 34 tokens: 40 batches cross many blocks and a pass
    # boundary (each of 2 readers' share of the 1,800 training documents makes about 140 rows).
    whole, _ = take(batch_loader(corrupting(tokenizer), workers), 40)
    for stop in (1, 7, 23):
        before, saved = take(batch_loader(corrupting(tokenizer), workers), stop)  # saved: as a checkpoint keeps it
        resumed = batch_loader(corrupting(tokenizer), workers)
        restore_loader(resumed, saved, "checkpoint")
        assert_same_batches(before + take(resumed, 40 - stop)[0], whole)


def test_each_batch_is_one_readers_and_readers_take_turns(tokenizer):
    two, _ = take(batch_loader(corrupting(tokenizer), 2), 4)
    # Worker w of 2 is reader w: it alone makes batches w, w + 2, ...; read in this process as that
    # reader, the same stream gives the same batches.
    for reader in (0, 1):
        alone = corrupting(tokenizer, rank=reader, world_size=2)
        direct = iter(alone)
        assert_same_batches([two[reader], two[reader + 2]], [next(direct), next(direct)])


def test_a_pass_holds_every_document_of_the_share_once_in_blocks_of_shuffled_order(tokenizer):
    share = list(iter_texts(str(data_dir() / "c4"), None, "train", rank=1, world_size=2))
    stream = corrupting(tokenizer, collator=raw, raw_length=64, rows_per_batch=1, rank=1, world_size=2)
    tokens_per_pass = sum(len(ids) for ids in encode_documents(tokenizer, share))
    rows = iter(stream)
    pass_tokens = np.concatenate([next(rows)["rows"][0].numpy() for _ in range(tokens_per_pass // 64)])
    # Cut the stream after each end-of-sequence token: the documents of the share, each once, in an
    # order shuffled within blocks of 50. Only the pass's tail is missing: the tokens after the last
    # whole document, cut off with the last partial row (one short document, or two, and part of one).
    ends = np.flatnonzero(pass_tokens == tokenizer.eos_token_id)
    documents = [tuple(d) for d in np.split(pass_tokens[: ends[-1] + 1], ends[:-1] + 1)]
    expected = [tuple(ids) for ids in encode_documents(tokenizer, share)]
    missing = Counter(expected) - Counter(documents)
    assert sum(len(d) * n for d, n in missing.items()) == tokens_per_pass - (ends[-1] + 1)
    assert 1 <= missing.total() and len(documents) == len(expected) - missing.total()
    for start in range(0, len(expected), 50):
        block = Counter(expected[start : start + 50])
        assert Counter(documents[start : start + 50]) <= block and (
            start + 50 >= len(documents) or Counter(documents[start : start + 50]) == block
        )
    assert documents != expected[: len(documents)]  # shuffled, not in file order


def test_resuming_with_another_number_of_workers_is_refused(tokenizer):
    _, saved = take(batch_loader(corrupting(tokenizer), 2), 3)
    for workers in (0, 1, 3):
        with pytest.raises(ValueError, match="checkpoint 7 was saved with data_workers=2, .* --data-workers 2"):
            restore_loader(batch_loader(corrupting(tokenizer), workers), saved, "checkpoint 7")
    # The stream itself refuses another reader layout too, say after a change in the number of processes.
    second_of_two = corrupting(tokenizer, rank=1, world_size=2)
    next(iter(second_of_two))
    alone = corrupting(tokenizer)
    alone.load_state_dict(second_of_two.state_dict())
    with pytest.raises(ValueError, match=r"saved by reader 1 of 2 .* resumed as reader 0 of 1"):
        next(iter(alone))


def test_a_share_too_small_for_one_row_is_named(tokenizer, tmp_path):
    (tmp_path / "train.jsonl").write_text(json.dumps({"text": "two words"}) + "\n")
    stream = corrupting(tokenizer, source=DataSource(str(tmp_path)))
    with pytest.raises(ValueError, match=r"reader 0 of 1 \(processes x data workers\) made no row of 34 tokens"):
        next(iter(stream))


def test_hub_rows_without_the_column_are_named(tokenizer, tmp_path):
    (tmp_path / "train.jsonl").write_text(json.dumps({"body": "hi"}) + "\n")
    with pytest.raises(ValueError, match=r"train.jsonl, line 1: no column 'text'; columns are \['body'\]"):
        next(iter(corrupting(tokenizer, source=DataSource(str(tmp_path)))))
