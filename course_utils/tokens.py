"""Text to tokens and back: pairs tokenized for training, documents packed into rows, batched generation.

    train_set = tokenize_pairs(split, tokenizer, "text", "label_text", "sst2 sentence: ", 512, 3)
    rows = raw_rows(texts, tokenizer, raw_length=568)        # (568,) token arrays, documents joined by EOS
    answers = generate_texts(model, tokenizer, texts, "sst2 sentence: ", 512, generation_settings(model, max_new_tokens=3))

Generation sorts the texts by length (longest first) so each batch pads to a similar length,
and puts the outputs back where their inputs were. Lessons 01 (sentiment) and 03 (summaries)
both generate this way; lessons 03 (GPT-2's warm-up) and 04 (pretraining) pack documents.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice

import numpy as np

CHUNK = 256  # documents tokenized in one call


def length_sorted_batches(texts: Sequence[str], batch_size: int) -> Iterator[list[int]]:
    """Index lists of at most ``batch_size``, longest texts first."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    for start in range(0, len(order), batch_size):
        yield order[start:start + batch_size]


def generate_in_order(texts: Sequence[str], batch_size: int, run_batch: Callable[[list[str]], list[str]],
                      progress: bool = False, desc: str = "generate") -> list[str]:
    """``run_batch`` over length-sorted batches; results in the order of ``texts``."""
    from tqdm.auto import tqdm

    results: list[str] = [""] * len(texts)
    batches = list(length_sorted_batches(texts, batch_size))
    for index in tqdm(batches, desc=desc, disable=not progress):
        outputs = run_batch([texts[i] for i in index])
        if len(outputs) != len(index):
            raise RuntimeError(f"run_batch returned {len(outputs)} outputs for {len(index)} inputs.")
        for i, output in zip(index, outputs, strict=True):
            results[i] = output
    return results


def generation_settings(model, **settings):
    """A copy of the model's GenerationConfig with ``settings`` applied (the transformers 5 way)."""
    generation = copy.deepcopy(model.generation_config)
    generation.update(**settings)
    return generation


def tokenize_pairs(split, tokenizer, source_column: str, target_column: str, prefix: str,
                   max_source_length: int, max_target_length: int):
    """input_ids / attention_mask / labels from two columns, truncated but NOT padded."""

    def encode(batch):
        return tokenizer([prefix + t for t in batch[source_column]], text_target=batch[target_column],
                         max_length=max_source_length, max_target_length=max_target_length, truncation=True)

    return split.map(encode, batched=True, remove_columns=split.column_names, desc="tokenize")


def generate_texts(model, tokenizer, texts: Sequence[str], prefix: str, max_source_length: int, settings,
                   batch_size: int = 32, progress: bool = False, desc: str = "generate") -> list[str]:
    """``model.generate`` with ``settings`` (a GenerationConfig) on ``prefix + text`` for each text, inputs cut
    at ``max_source_length`` tokens, decoded without special tokens, in the input order; on the model's device."""
    import torch

    device = next(model.parameters()).device
    model.eval()

    def run_batch(batch_texts: list[str]) -> list[str]:
        batch = tokenizer([prefix + t for t in batch_texts], max_length=max_source_length,
                          truncation=True, padding=True, return_tensors="pt").to(device)
        with torch.no_grad():
            output = model.generate(**batch, generation_config=settings)  # (batch, new tokens)
        return tokenizer.batch_decode(output, skip_special_tokens=True)

    return generate_in_order(texts, batch_size, run_batch, progress, desc)


def encode(tokenizer, texts: list[str]) -> list[list[int]]:
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
        rows, carry = cut_rows(carry, encode(tokenizer, batch), raw_length)
        yield from rows
