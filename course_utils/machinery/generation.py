"""Batched generation in length order: texts of similar length share a batch, results come back in order.

    answers = generate_in_order(texts, 32, answer)   # answer(list of texts) -> list of outputs, one per text

Sorting by length (longest first) means each batch pads to a similar length, so little of the
work is spent on padding; the outputs are put back where their inputs were. Lessons 01 (answers)
and 03 (summaries) generate this way, each with its own ``answer`` function in a notebook cell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence


def length_sorted_batches(texts: Sequence[str], batch_size: int) -> Iterator[list[int]]:
    """Index lists of at most ``batch_size``, longest texts first."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def generate_in_order(
    texts: Sequence[str],
    batch_size: int,
    answer: Callable[[list[str]], list[str]],
    progress: bool = False,
    desc: str = "generate",
) -> list[str]:
    """``answer`` over length-sorted batches of ``texts``; one output per text, in the order of ``texts``."""
    from tqdm.auto import tqdm

    results: list[str] = [""] * len(texts)
    batches = list(length_sorted_batches(texts, batch_size))
    for index in tqdm(batches, desc=desc, disable=not progress):
        outputs = answer([texts[i] for i in index])
        if len(outputs) != len(index):
            raise RuntimeError(f"answer returned {len(outputs)} outputs for {len(index)} inputs.")
        for i, output in zip(index, outputs, strict=True):
            results[i] = output
    return results
