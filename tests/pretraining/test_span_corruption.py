"""Span corruption: exact lengths, lossless reconstruction, and the noise statistics asked for."""

import numpy as np
import pytest

from course_utils.models_and_data.models import load_tokenizer
from course_utils.pretraining.span_corruption import (
    compute_input_and_target_lengths,
    corrupt,
    noise_mask,
    random_segment_lengths,
    span_corruption_collator,
)

FIRST_SENTINEL, EOS = 10_000, 1


def test_t5_default_lengths():
    assert compute_input_and_target_lengths(512, 0.15, 3.0) == (568, 114)


@pytest.mark.parametrize("input_length", [32, 64, 128, 256, 512, 1024])
@pytest.mark.parametrize("noise_density, mean_span", [(0.15, 3.0), (0.3, 2.0), (0.15, 8.0), (0.5, 3.0)])
def test_lengths_are_exact_over_a_grid(input_length, noise_density, mean_span):
    raw_length, target_length = compute_input_and_target_lengths(input_length, noise_density, mean_span)
    rng = np.random.default_rng(input_length)
    for _ in range(20):
        inputs, targets = corrupt(
            np.arange(raw_length) + 2, noise_mask(raw_length, noise_density, mean_span, rng), FIRST_SENTINEL, EOS
        )
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
    assert fraction == pytest.approx(85 / 568)  # round(568 * 0.15) = 85 noise tokens per row
    assert np.sum([m.sum() for m in masks]) / np.sum(spans) == pytest.approx(85 / 28)  # 28 spans: mean 3.04
    assert all(not m[0] for m in masks)  # every row starts with a clean span, as in T5


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


# Every setting T5's reference handles (issue 14, section 3) -------------------------------------


def t5_random_spans_helper(input_length, noise_density, mean_noise_span_length):
    """T5's preprocessors.random_spans_helper, transcribed (one extra token per span in inputs and targets)."""

    def to_lengths(tokens_length):
        num_noise_tokens = int(round(tokens_length * noise_density))
        num_noise_spans = int(round(num_noise_tokens / mean_noise_span_length))
        return tokens_length - num_noise_tokens + num_noise_spans + 1, num_noise_tokens + num_noise_spans + 1

    tokens_length = input_length - 1
    while to_lengths(tokens_length + 1)[0] <= input_length:
        tokens_length += 1
    inputs_length_out, target_length = to_lengths(tokens_length)
    if noise_density == 0.5 and target_length > inputs_length_out:
        tokens_length -= 1
        target_length -= 1
    return tokens_length, target_length


def simulated_lengths(raw_length, noise_density, mean_span, seed=0):
    """Lengths of a real corruption: a mask drawn as training draws it, applied to a row (None: no mask can be drawn)."""
    try:
        mask = noise_mask(raw_length, noise_density, mean_span, np.random.default_rng(seed))
    except ValueError:  # more noise spans than clean tokens to put between them
        return None
    inputs, targets = corrupt(np.arange(raw_length) + 2, mask, FIRST_SENTINEL, EOS)
    return len(inputs), len(targets)


GRID = [
    (n, d, s)
    for n in (8, 16, 31, 64, 100, 128, 257, 512)
    for d in (0.05, 0.1, 0.15, 0.3, 0.5)
    for s in (1.0, 2.0, 3.0, 8.0)
]


@pytest.mark.parametrize("input_length, noise_density, mean_span", GRID)
def test_lengths_follow_t5_where_consistent_else_the_longest_that_fits(input_length, noise_density, mean_span):
    reference = t5_random_spans_helper(input_length, noise_density, mean_span)
    try:
        raw, target = compute_input_and_target_lengths(input_length, noise_density, mean_span)
    except ValueError:
        fits = [
            n
            for n in range(2, 2 * input_length + 20)
            if (simulated_lengths(n, noise_density, mean_span) or (0,))[0] == input_length
        ]
        assert fits == [], f"{fits} fit, but an error was raised"
        return
    assert simulated_lengths(raw, noise_density, mean_span) == (input_length, target)
    if reference[0] >= 2 and simulated_lengths(*reference[:1], noise_density, mean_span) == (
        input_length,
        reference[1],
    ):
        assert (raw, target) == reference  # the reference is consistent: its lengths are the answer
    else:  # the longest that fits: no longer row corrupts to exactly input_length
        assert all(
            (simulated_lengths(n, noise_density, mean_span) or (0,))[0] != input_length
            for n in range(raw + 1, 2 * input_length + 20)
        )


def test_the_two_settings_the_old_search_got_wrong():
    # i.i.d. masking: 63 raw tokens make 64 inputs (57 kept + 6 sentinels + </s>).
    assert compute_input_and_target_lengths(64, 0.1, 1.0) == (63, 13)
    # Density 0.5: T5 trims one raw token so the targets are as long as the inputs.
    assert compute_input_and_target_lengths(512, 0.5, 3.0) == (766, 512)
    assert t5_random_spans_helper(512, 0.5, 3.0) == (766, 512)


def test_no_raw_length_that_fits_is_said_truthfully():
    with pytest.raises(ValueError, match="No raw length corrupts to exactly 2 input tokens.*nearest.*3"):
        compute_input_and_target_lengths(2, 0.5, 1.0)
    with pytest.raises(ValueError, match="0 < noise_density < 1"):
        compute_input_and_target_lengths(64, 1.0, 3.0)


@pytest.mark.parametrize(
    "input_length, noise_density, mean_span",
    [(64, 0.1, 1.0), (512, 0.5, 3.0), (128, 0.15, 3.0), (100, 0.3, 8.0), (31, 0.05, 2.0)],
)
def test_the_collator_builds_batches_of_exactly_those_shapes(input_length, noise_density, mean_span):
    tokenizer = load_tokenizer("standin:t5-v1_1-base")
    collator, raw_length = span_corruption_collator(tokenizer, input_length, noise_density, mean_span)
    rows = np.random.default_rng(1).integers(3, len(tokenizer) - 100, size=(4, raw_length))
    batch = collator(rows, [np.random.default_rng(i) for i in range(4)])
    target = compute_input_and_target_lengths(input_length, noise_density, mean_span)[1]
    assert tuple(batch["input_ids"].shape) == (4, input_length) and tuple(batch["labels"].shape) == (4, target)
