"""Span corruption: exact lengths, lossless reconstruction, and the noise statistics asked for."""

import numpy as np
import pytest

from course_utils.models import load_tokenizer
from course_utils.span_corruption import (compute_input_and_target_lengths, corrupt, noise_mask,
                                          random_segment_lengths, span_corruption_collator)

FIRST_SENTINEL, EOS = 10_000, 1


def test_t5_default_lengths():
    assert compute_input_and_target_lengths(512, 0.15, 3.0) == (568, 114)


@pytest.mark.parametrize("input_length", [32, 64, 128, 256, 512, 1024])
@pytest.mark.parametrize("noise_density, mean_span", [(0.15, 3.0), (0.3, 2.0), (0.15, 8.0), (0.5, 3.0)])
def test_lengths_are_exact_over_a_grid(input_length, noise_density, mean_span):
    raw_length, target_length = compute_input_and_target_lengths(input_length, noise_density, mean_span)
    rng = np.random.default_rng(input_length)
    for _ in range(20):
        inputs, targets = corrupt(np.arange(raw_length) + 2, noise_mask(raw_length, noise_density, mean_span, rng),
                                  FIRST_SENTINEL, EOS)
        assert (len(inputs), len(targets)) == (input_length, target_length)


def reconstruct(inputs, targets):
    """Put each sentinel's hidden tokens back where the sentinel stands (a simple per-token loop)."""
    hidden, current = {}, None
    for token in targets[:-1]:
        if token > FIRST_SENTINEL - 200:
            current = token
            hidden[current] = []
        else:
            hidden[current].append(token)
    out = []
    for token in inputs[:-1]:
        out.extend(hidden[token] if token in hidden else [token])
    return out


def test_inputs_and_targets_put_back_together_give_the_row():
    rng = np.random.default_rng(0)
    raw_length, _ = compute_input_and_target_lengths(128, 0.15, 3.0)
    for _ in range(200):
        row = rng.integers(2, 5000, size=raw_length)
        inputs, targets = corrupt(row, noise_mask(raw_length, 0.15, 3.0, rng), FIRST_SENTINEL, EOS)
        assert reconstruct(inputs, targets) == row.tolist()
        assert inputs[-1] == targets[-1] == EOS
        sentinels = [t for t in inputs if t > FIRST_SENTINEL - 200]
        assert sentinels == list(range(FIRST_SENTINEL, FIRST_SENTINEL - len(sentinels), -1))  # counting down


def test_noise_fraction_and_mean_span_length_match_the_settings():
    rng = np.random.default_rng(1)
    masks = [noise_mask(568, 0.15, 3.0, rng) for _ in range(2000)]
    fraction = np.mean([m.mean() for m in masks])
    spans = [np.sum(m & ~np.concatenate([[False], m[:-1]])) for m in masks]
    assert fraction == pytest.approx(85 / 568)         # round(568 * 0.15) = 85 noise tokens per row
    assert np.sum([m.sum() for m in masks]) / np.sum(spans) == pytest.approx(85 / 28)  # 28 spans: mean 3.04
    assert all(not m[0] for m in masks)                  # every row starts with a clean span, as in T5


def test_segments_are_positive_and_each_split_is_reachable():
    rng = np.random.default_rng(2)
    seen = set()
    for _ in range(3000):
        lengths = random_segment_lengths(6, 3, rng)
        assert lengths.sum() == 6 and (lengths > 0).all()
        seen.add(tuple(lengths))
    assert len(seen) == 10  # C(5, 2) ways to cut 6 items into 3 non-empty segments


def test_collator_uses_the_tokenizer_sentinels_and_checks_row_lengths():
    tok = load_tokenizer("standin:t5-v1_1-base")
    collator, raw_length = span_corruption_collator(tok, 64)
    assert collator.first_sentinel == len(tok) - 1 == tok.convert_tokens_to_ids("<extra_id_0>")
    rows = np.random.default_rng(3).integers(5, 1000, size=(4, raw_length))
    batch = collator(rows, np.random.default_rng(4))
    assert batch["input_ids"].shape == (4, 64) and batch["labels"].shape == (4, collator.target_length)
    with pytest.raises(ValueError, match="cut the rows with compute_input_and_target_lengths"):
        collator(rows[:, :-3], np.random.default_rng(4))
    gpt2 = load_tokenizer("standin:gpt2")
    with pytest.raises(ValueError, match="not <extra_id_0>"):
        span_corruption_collator(gpt2, 64)
