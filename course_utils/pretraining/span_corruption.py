"""T5's span-corruption objective: raw token rows -> (inputs with sentinels, targets).

    raw_length, target_length = compute_input_and_target_lengths(512, 0.15, 3.0)   # (568, 114)
    compute_input_and_target_lengths(64, 0.1, 1.0)                                  # (63, 13): i.i.d. masking
    compute_input_and_target_lengths(512, 0.5, 3.0)                                 # (766, 512), as T5 trims
    collator, raw_length = span_corruption_collator(tokenizer, input_length=512)  # raw_length 568
    batch = collator(rows, rng)     # rows: (batch, 568) token ids -> input_ids (batch, 512), labels (batch, 114)

About 15 % of each row's tokens, in spans of 3 on average, are cut out. Each span is replaced
in the input by one sentinel token (``<extra_id_0>``, ``<extra_id_1>``, ...: ids counting
down from the end of the vocabulary), and the target lists every sentinel followed by the
tokens it hides. The lengths are exact, so batches need no padding. The arithmetic follows
the T5 paper's ``random_spans_helper`` (Raffel et al., 2020), as nanoT5 and the Hugging Face
Flax example use it; the code here is the course's own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def span_counts(raw_length: int, noise_density: float, mean_noise_span_length: float) -> tuple[int, int]:
    """(noise tokens, noise spans) for a row of ``raw_length`` tokens; at least one of each."""
    noise_tokens = min(max(int(round(raw_length * noise_density)), 1), raw_length - 1)
    spans = max(int(round(noise_tokens / mean_noise_span_length)), 1)
    return noise_tokens, spans


def mask_exists(raw_length: int, noise_density: float, mean_noise_span_length: float) -> bool:
    """Whether a mask can be drawn: it alternates clean and noise spans, each at least one token long."""
    noise_tokens, spans = span_counts(raw_length, noise_density, mean_noise_span_length)
    return raw_length - noise_tokens >= spans


def corrupted_lengths(raw_length: int, noise_density: float, mean_noise_span_length: float) -> tuple[int, int]:
    """(input length, target length) after corrupting a row of ``raw_length`` tokens.

    Inputs keep the clean tokens plus one sentinel per span plus </s>; targets hold the
    noise tokens plus one sentinel per span plus </s>.
    """
    noise_tokens, spans = span_counts(raw_length, noise_density, mean_noise_span_length)
    return raw_length - noise_tokens + spans + 1, noise_tokens + spans + 1


def reference_lengths(input_length: int, noise_density: float, mean_noise_span_length: float) -> tuple[int, int]:
    """(raw length, target length) as T5's ``random_spans_helper`` computes them.

    It starts one token below the input length (i.i.d. masking, mean span 1, can need a raw row
    shorter than its input: every masked token becomes a sentinel, plus </s>) and grows the row
    while its input still fits. At noise density 0.5 it trims one raw token so that the targets
    come out as long as the inputs.
    """

    def lengths(raw: int) -> tuple[int, int]:
        noise = int(round(raw * noise_density))
        spans = int(round(noise / mean_noise_span_length))
        return raw - noise + spans + 1, noise + spans + 1

    raw = input_length - 1
    while lengths(raw + 1)[0] <= input_length:
        raw += 1
    inputs, targets = lengths(raw)
    if noise_density == 0.5 and targets > inputs:
        raw, targets = raw - 1, targets - 1
    return raw, targets


def compute_input_and_target_lengths(
    input_length: int, noise_density: float, mean_noise_span_length: float
) -> tuple[int, int]:
    """(raw length, target length) for rows that corrupt to exactly ``input_length`` input tokens.

    T5's own lengths (``reference_lengths``) wherever rows of that length really corrupt to them;
    otherwise the longest raw length that corrupts to exactly ``input_length``; an error only when
    no raw length does.
    """
    if not 0 < noise_density < 1 or mean_noise_span_length < 1 or input_length < 2:
        raise ValueError(
            f"Span corruption needs 0 < noise_density < 1, mean_noise_span_length >= 1 and "
            f"input_length >= 2; got {noise_density}, {mean_noise_span_length}, {input_length}."
        )
    raw, target = reference_lengths(input_length, noise_density, mean_noise_span_length)

    def fits(n: int) -> bool:
        return (
            mask_exists(n, noise_density, mean_noise_span_length)
            and corrupted_lengths(n, noise_density, mean_noise_span_length)[0] == input_length
        )

    if raw >= 2 and fits(raw) and corrupted_lengths(raw, noise_density, mean_noise_span_length)[1] == target:
        return raw, target
    # A corrupted row keeps at least (1 - density) of its tokens, so no longer row can fit.
    longest = int(input_length / (1 - noise_density)) + 2
    fitting = [n for n in range(2, longest + 1) if fits(n)]
    if not fitting:
        near = sorted(
            {
                corrupted_lengths(n, noise_density, mean_noise_span_length)[0]
                for n in range(2, longest + 1)
                if mask_exists(n, noise_density, mean_noise_span_length)
            },
            key=lambda length: abs(length - input_length),
        )[:2]
        raise ValueError(
            f"No raw length corrupts to exactly {input_length} input tokens at noise density "
            f"{noise_density} and mean span {mean_noise_span_length}; the nearest input lengths "
            f"that can be made are {', '.join(map(str, sorted(near)))}."
        )
    return fitting[-1], corrupted_lengths(fitting[-1], noise_density, mean_noise_span_length)[1]


def random_segment_lengths(total: int, segments: int, rng: np.random.Generator) -> np.ndarray:
    """``segments`` positive lengths summing to ``total``, every such split equally likely."""
    cuts = np.sort(rng.choice(np.arange(1, total), size=segments - 1, replace=False))
    return np.diff(np.concatenate([[0], cuts, [total]]))


def noise_mask(
    raw_length: int, noise_density: float, mean_noise_span_length: float, rng: np.random.Generator
) -> np.ndarray:
    """Boolean mask of length ``raw_length``: clean span, noise span, clean span, ... (starts clean)."""
    noise_tokens, spans = span_counts(raw_length, noise_density, mean_noise_span_length)
    noise = random_segment_lengths(noise_tokens, spans, rng)
    clean = random_segment_lengths(raw_length - noise_tokens, spans, rng)
    lengths = np.stack([clean, noise], axis=1).reshape(-1)  # (2 * spans,) alternating
    return np.repeat(np.tile([False, True], spans), lengths)


def corrupt(row: np.ndarray, mask: np.ndarray, first_sentinel: int, eos: int) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, targets) of one row: each noise span becomes one sentinel in the inputs, and the
    targets list each span's sentinel followed by the tokens it hides; both end with </s>."""
    starts = mask & ~np.concatenate([[False], mask[:-1]])  # first token of each noise span
    sentinels = first_sentinel - (np.cumsum(starts) - 1)  # span k -> <extra_id_k> = first_sentinel - k
    inputs = np.where(starts, sentinels, row)[~mask | starts]  # clean tokens and one sentinel per span
    noise_positions, span_starts = np.flatnonzero(mask), np.flatnonzero(starts)
    targets = np.insert(row[noise_positions], np.searchsorted(noise_positions, span_starts), sentinels[span_starts])
    return np.append(inputs, eos), np.append(targets, eos)


@dataclass
class SpanCorruptionCollator:
    """Raw rows (batch, raw_length) -> {"input_ids": (batch, input_length), "labels": (batch, target_length)}."""

    first_sentinel: int  # id of <extra_id_0>: the last id of the tokenizer
    eos_token_id: int
    input_length: int = 512
    target_length: int = 114
    noise_density: float = 0.15
    mean_noise_span_length: float = 3.0

    def __call__(self, rows, rng) -> dict:
        """``rng``: one Generator for the batch, or one per row (masks then do not depend on batching)."""
        import torch

        rows = np.asarray(rows)
        rngs = [rng] * len(rows) if isinstance(rng, np.random.Generator) else list(rng)
        inputs, targets = zip(
            *(
                corrupt(
                    row,
                    noise_mask(len(row), self.noise_density, self.mean_noise_span_length, row_rng),
                    self.first_sentinel,
                    self.eos_token_id,
                )
                for row, row_rng in zip(rows, rngs, strict=True)
            ),
            strict=True,
        )
        inputs, targets = np.stack(inputs), np.stack(targets)
        if inputs.shape[1] != self.input_length or targets.shape[1] != self.target_length:
            raise ValueError(
                f"Rows of {rows.shape[1]} tokens corrupt to {inputs.shape[1]} inputs and "
                f"{targets.shape[1]} targets, not {self.input_length} and {self.target_length}: "
                "cut the rows with compute_input_and_target_lengths."
            )
        return {"input_ids": torch.as_tensor(inputs), "labels": torch.as_tensor(targets)}


def span_corruption_collator(
    tokenizer, input_length: int, noise_density: float = 0.15, mean_noise_span_length: float = 3.0
) -> tuple[SpanCorruptionCollator, int]:
    """A collator for ``tokenizer`` and the raw row length it needs."""
    raw_length, target_length = compute_input_and_target_lengths(input_length, noise_density, mean_noise_span_length)
    first_sentinel = len(tokenizer) - 1
    if tokenizer.convert_ids_to_tokens(first_sentinel) != "<extra_id_0>":
        raise ValueError(
            f"The tokenizer's last id ({first_sentinel}) is "
            f"{tokenizer.convert_ids_to_tokens(first_sentinel)!r}, not <extra_id_0>: span corruption "
            "needs a T5 tokenizer with its sentinel tokens at the end of the vocabulary."
        )
    collator = SpanCorruptionCollator(
        first_sentinel, tokenizer.eos_token_id, input_length, target_length, noise_density, mean_noise_span_length
    )
    return collator, raw_length
