"""Documents packed into rows: tokenized, joined by the end-of-sequence token, cut to one length; and T5's sentinels.

    rows = raw_rows(texts, tokenizer, raw_length=568)        # (568,) token arrays

Lessons 03 (GPT-2's warm-up) and 04 (pretraining) pack documents this way, so no row needs padding.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice

import numpy as np

CHUNK = 256  # documents tokenized in one call
# T5's vocabulary ends with 100 sentinels, <extra_id_99> .. <extra_id_0>: <extra_id_0> is the very last id.
T5_EXTRA_IDS = 100


def encode_documents(tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids of each text, ending in the end-of-sequence token (added where the tokenizer does
    not add it, as GPT-2's does not)."""
    eos = tokenizer.eos_token_id
    # verbose=False: documents longer than the model's context are expected here; rows cut them.
    return [ids if ids[-1:] == [eos] else ids + [eos] for ids in tokenizer(texts, verbose=False).input_ids]


def cut_rows(carry: list[int], encoded: list[list[int]], raw_length: int) -> tuple[np.ndarray, list[int]]:
    """(rows, new carry): ``carry`` followed by the encoded texts, cut into rows of ``raw_length``
    tokens, shape (rows, raw_length); the tokens short of a full row are carried to the next call."""
    stream = list(carry)
    for ids in encoded:
        stream.extend(ids)
    full = len(stream) // raw_length * raw_length
    rows = np.asarray(stream[:full], dtype=np.int64).reshape(-1, raw_length)
    return rows, stream[full:]


def raw_rows(texts: Iterable[str], tokenizer, raw_length: int, chunk: int = CHUNK) -> Iterator[np.ndarray]:
    """Documents tokenized, joined and cut into rows of ``raw_length`` tokens; the few tokens
    left at the very end, short of a full row, are dropped."""
    carry: list[int] = []
    texts = iter(texts)
    while batch := list(islice(texts, chunk)):
        rows, carry = cut_rows(carry, encode_documents(tokenizer, batch), raw_length)
        yield from rows
