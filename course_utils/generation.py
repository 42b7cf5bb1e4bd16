"""Batched generation that wastes little padding and keeps the caller's order.

    answers = generate_in_order(texts, batch_size, run_batch)   # run_batch(list[str]) -> list[str]

Texts are sorted by length (longest first) so each batch pads to a similar length; the
outputs are put back where their inputs were. Lessons 01 (sentiment) and 03 (summaries)
both generate this way.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence


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
