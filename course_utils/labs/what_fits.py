"""Lab 00L's checks, what fits: T5's parameters from its config, the bytes of training states, the rows that fit.

Each check runs the student's function on fixed inputs and compares it with the course's own
reference: ``num_parameters()`` of a T5 built on the meta device, the ZeRO paper's 16 bytes per
parameter, and ``memory.rows_that_fit``.
"""

from __future__ import annotations

import numbers

from course_utils.labs.verdict import answer_check, close, fail, passed
from course_utils.machinery.memory import rows_that_fit as course_rows_that_fit

# Published t5-small and t5-base, plus two odd shapes that tell the terms apart (attention width
# different from d_model, more decoder than encoder layers).
T5_SHAPES = {
    "t5-small": dict(vocab_size=32128, d_model=512, d_ff=2048, num_heads=8, d_kv=64, num_layers=6),
    "t5-base": dict(vocab_size=32128, d_model=768, d_ff=3072, num_heads=12, d_kv=64, num_layers=12),
    "narrow attention": dict(
        vocab_size=1000,
        d_model=48,
        d_ff=96,
        num_heads=3,
        d_kv=8,
        num_layers=2,
        num_decoder_layers=3,
        relative_attention_num_buckets=16,
    ),
    "one layer each": dict(vocab_size=500, d_model=32, d_ff=64, num_heads=2, d_kv=16, num_layers=1),
}


def t5_config(shape: dict):
    from transformers import T5Config

    return T5Config(feed_forward_proj="relu", **shape)


def meta_parameters(config) -> int:
    """``num_parameters()`` of T5 built from ``config`` on the meta device: no memory, no download."""
    import torch
    from transformers import T5ForConditionalGeneration

    with torch.device("meta"):
        return T5ForConditionalGeneration(config).num_parameters()


@answer_check
def parameter_count(t5_parameters) -> None:
    """``t5_parameters(config) -> int`` against ``num_parameters()`` for t5-small, t5-base and two odd shapes."""
    for name, shape in T5_SHAPES.items():
        got = t5_parameters(t5_config(shape))
        expected = meta_parameters(t5_config(shape))
        if whole_number(got) != expected:
            fail(
                "parameter_count",
                f"{expected:,} parameters for {name} ({shape})",
                got if not isinstance(got, int) else f"{got:,} (off by {got - expected:+,})",
                "count the shared embedding once (the output layer reuses it), four d_model x (num_heads x d_kv) "
                "projections per attention, a cross-attention in each decoder layer, one layer norm per "
                "sub-layer plus a final one per stack, and the relative position buckets in the first layer of each stack",
            )
    passed(
        "parameter_count",
        f"t5-small {meta_parameters(t5_config(T5_SHAPES['t5-small'])):,}, "
        f"t5-base {meta_parameters(t5_config(T5_SHAPES['t5-base'])):,}, and two odd shapes",
    )


# Mixed-precision AdamW (the ZeRO paper's accounting): bf16 weights and gradients, then fp32 master
# weights, momentum and variance.
STATE_BYTES = {"weights": 2, "gradients": 2, "optimizer": 12}


@answer_check
def training_state_bytes(training_state_bytes_fn) -> None:
    """``fn(parameters) -> {"weights", "gradients", "optimizer": bytes}`` against 2, 2 and 12 bytes per parameter."""
    for parameters in (60_506_624, 222_903_552, 1):
        got = training_state_bytes_fn(parameters)
        if not isinstance(got, dict) or set(got) != set(STATE_BYTES):
            fail(
                "training_state_bytes",
                f"a dict with keys {sorted(STATE_BYTES)}",
                got,
                "return the bytes of each kind of state in a dict",
            )
        for kind, per_parameter in STATE_BYTES.items():
            close(
                "training_state_bytes",
                f"{kind} of {parameters:,} parameters",
                per_parameter * parameters,
                got[kind],
                "bf16 takes 2 bytes a number; AdamW keeps an fp32 master copy, momentum and variance, 4 bytes each",
                rel=0,
                abs_=0.5,
            )
    passed("training_state_bytes", "2 + 2 + 12 = 16 bytes per parameter, as the ZeRO paper counts them")


def whole_number(value) -> int | None:
    """``value`` as an int when it is a whole number of any numeric type (85, np.int64(85), 85.0), else None."""
    if isinstance(value, bool | str) or not isinstance(value, numbers.Real):
        return None
    return int(value) if float(value).is_integer() else None


@answer_check
def rows_that_fit(rows_that_fit_fn) -> None:
    """``fn(gpu_gib, parameters, tokens_per_row, precision) -> int`` against ``memory.rows_that_fit`` on a grid."""
    cases = [
        (gib, params, tokens, precision)
        for gib in (16, 24, 40, 80)
        for params in (60_506_624, 247_577_856)
        for tokens in (512 + 114, 256)
        for precision in ("bf16", "fp32")
    ] + [(4, 247_577_856, 626, "fp32")]
    for gib, params, tokens, precision in cases:
        got = rows_that_fit_fn(gib, params, tokens, precision)
        expected = course_rows_that_fit(gib, params, tokens, precision)
        if whole_number(got) != expected:  # 85, np.int64(85) and 85.0 are all 85 rows
            fail(
                "rows_that_fit",
                f"{expected} rows on {gib} GiB for {params:,} parameters, {tokens} tokens a row, {precision}",
                got,
                "take 90 % of the card, less 3 GiB of buffers and 16 bytes per parameter; divide by one row's "
                "activations scaled by parameters and tokens; round down, and never return fewer than 1 row",
            )
    passed("rows_that_fit", f"{len(cases)} cards, models, row lengths and precisions as memory.rows_that_fit")
