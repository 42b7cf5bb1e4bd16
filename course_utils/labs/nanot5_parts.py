"""Lab 04L's checks, nanoT5's parts: the span-corruption noise mask and sentinels, the warm-up plus cosine
schedule, and one AdamW step with RMS scaling, each against the course's implementation on fixed seeds."""

from __future__ import annotations

import math

import numpy as np

from course_utils.labs.verdict import answer_check, close, compare_sequences, fail, passed
from course_utils.models_and_data.tokens import T5_EXTRA_IDS
from course_utils.pretraining import optim, span_corruption

MASK_CASES = ((568, 0.15, 3.0), (100, 0.15, 3.0), (40, 0.5, 2.0), (12, 0.3, 1.0))


@answer_check
def noise_mask(noise_mask_fn) -> None:
    """``noise_mask(length, density, mean_span, rng) -> bool array``: invariants, then the course's mask per seed."""
    for length, density, mean_span in MASK_CASES:
        noise_tokens, spans = span_corruption.span_counts(length, density, mean_span)
        for seed in range(3):
            got = np.asarray(noise_mask_fn(length, density, mean_span, np.random.default_rng(seed)))
            case = f"length {length}, density {density}, mean span {mean_span}, seed {seed}"
            if got.shape != (length,) or got.dtype != bool:
                fail(
                    "noise_mask",
                    f"a bool array of shape ({length},) for {case}",
                    f"{got.dtype} of shape {got.shape}",
                    "return one True (noise) or False (clean) per token",
                )
            starts = int(got[0]) + int(np.sum(got[1:] & ~got[:-1]))
            if got.sum() != noise_tokens or starts != spans or got[0]:
                fail(
                    "noise_mask",
                    f"{noise_tokens} noise tokens in {spans} spans, starting clean, for {case}",
                    f"{int(got.sum())} noise tokens in {starts} spans, first token {'noise' if got[0] else 'clean'}",
                    "noise tokens = round(length x density), spans = round(noise tokens / mean span); "
                    "alternate clean, noise, clean, ... starting clean",
                )
            expected = span_corruption.noise_mask(length, density, mean_span, np.random.default_rng(seed))
            compare_sequences(
                "noise_mask",
                f"mask for {case}",
                expected.tolist(),
                got.tolist(),
                "draw the noise lengths first, then the clean lengths, each with "
                "random_segment_lengths and the same generator",
            )
    passed("noise_mask", f"{len(MASK_CASES) * 3} masks: density, span count and the course's mask on fixed seeds")


def _is_sentinel(token: int, first_sentinel: int) -> bool:
    return first_sentinel - T5_EXTRA_IDS < token <= first_sentinel  # T5's 100 sentinels end the vocabulary


def _rebuild(inputs: list[int], targets: list[int], first_sentinel: int) -> list[int]:
    """The raw row: each sentinel in the inputs replaced by the tokens that follow it in the targets."""
    spans, current = {}, None
    for token in targets[:-1]:
        if _is_sentinel(token, first_sentinel):
            current = spans.setdefault(token, [])
        elif current is not None:
            current.append(token)
    row = []
    for token in inputs[:-1]:
        row += spans.get(token, []) if _is_sentinel(token, first_sentinel) else [token]
    return row


@answer_check
def sentinels(corrupt_fn) -> None:
    """``corrupt(row, mask, first_sentinel, eos) -> (inputs, targets)``: sentinel order, EOS, the row rebuilt,
    then the course's corruption."""
    first_sentinel, eos = 32099, 1
    for length, density, mean_span in MASK_CASES:
        rng = np.random.default_rng(length)
        row = rng.integers(2, 32000, size=length)
        mask = span_corruption.noise_mask(length, density, mean_span, rng)
        inputs, targets = (np.asarray(x).tolist() for x in corrupt_fn(row, mask, first_sentinel, eos))
        spans = span_corruption.span_counts(length, density, mean_span)[1]
        order = [first_sentinel - k for k in range(spans)]
        case = f"a row of {length} with {spans} spans"
        for side, tokens in (("inputs", inputs), ("targets", targets)):
            compare_sequences(
                "sentinels",
                f"the sentinels in the {side} for {case} (<extra_id_0>, <extra_id_1>, ... "
                "counting down from the last id)",
                order,
                [t for t in tokens if _is_sentinel(t, first_sentinel)],
                "span k (a run of noise tokens, however long) gets one sentinel, first_sentinel - k, once "
                "in the inputs in place of the span and once in the targets before the span's tokens",
            )
        if not inputs or not targets or inputs[-1] != eos or targets[-1] != eos:
            fail(
                "sentinels",
                f"inputs and targets ending in EOS ({eos}) for {case}",
                f"inputs end {inputs[-1:]} and targets end {targets[-1:]}",
                "append eos to both",
            )
        compare_sequences(
            "sentinels",
            f"the row rebuilt from inputs and targets ({case})",
            row.tolist(),
            _rebuild(inputs, targets, first_sentinel),
            "the inputs keep every clean token; the targets hold every noise token after its span's sentinel",
        )
        expected = span_corruption.corrupt(row, mask, first_sentinel, eos)
        compare_sequences("sentinels", f"inputs for {case}", expected[0].tolist(), inputs, "one sentinel per span")
        compare_sequences("sentinels", f"targets for {case}", expected[1].tolist(), targets, "sentinel, then its span")
    passed("sentinels", f"{len(MASK_CASES)} rows: sentinel order, EOS, rows rebuilt, the course's corruption")


SCHEDULES = ((1e-2, 10, 100, 1e-5), (2e-2, 1, 30, 0.0), (5e-3, 40, 41, 1e-4))


@answer_check
def cosine_schedule(cosine_lr_fn) -> None:
    """``cosine_lr(step, peak, warmup, total, final) -> rate`` against the course's LambdaLR factor at every step."""
    for peak, warmup, total, final in SCHEDULES:
        for step in range(total + 5):
            expected = peak * optim.cosine_factor(step, warmup, total, final / peak)
            close(
                "cosine_schedule",
                f"the rate at step {step} (peak {peak}, warm-up {warmup}, total {total}, final {final})",
                expected,
                cosine_lr_fn(step, peak, warmup, total, final),
                "warm up linearly to (step + 1) / warmup x peak, then follow half a cosine from peak down to final "
                "and stay there after total",
                rel=1e-5,
                abs_=1e-6 * peak,
            )  # a float32 answer is right too: it rounds at about 6e-8 of the peak
    passed(
        "cosine_schedule",
        f"{sum(t + 5 for _, _, t, _ in SCHEDULES)} steps of three schedules as the course's scheduler",
    )


EPS_PLACES = {  # where eps goes in a step, right (AdamWScale's) and two usual slips, by the step's denominator
    "outside the root, to the uncorrected v": lambda v, correction: v.sqrt() + 1e-6,
    "inside the square root": lambda v, correction: (v + 1e-6).sqrt(),
    "after the bias correction, as torch.optim.AdamW places it": lambda v, correction: v.sqrt() + 1e-6 * correction,
}


def rms_steps(weight, grads, lr: float, weight_decay: float, denominator) -> list:
    """The weight after each step of AdamW with RMS scaling (betas 0.9, 0.999), the step's denominator given."""
    import torch

    m, v, steps = torch.zeros_like(weight), torch.zeros_like(weight), []
    for number, grad in enumerate(grads, start=1):
        m, v = 0.9 * m + 0.1 * grad, 0.999 * v + 0.001 * grad * grad
        correction = math.sqrt(1 - 0.999**number)
        scale = max(1e-3, (weight.norm() / math.sqrt(weight.numel())).item())
        weight = weight - lr * correction / (1 - 0.9**number) * scale * m / denominator(v, correction)
        weight = weight - lr * weight_decay * weight
        steps.append(weight)
    return steps


@answer_check
def adamw_rms_step(step_fn) -> None:
    """``adamw_rms_step(weight, grad, state, lr, weight_decay) -> new weight`` for three steps, against AdamWScale."""
    import torch

    generator = torch.Generator().manual_seed(0)
    for scale, lr, weight_decay in ((1.0, 1e-2, 0.0), (1e-5, 1e-2, 0.0), (0.3, 5e-3, 0.1)):
        weight = torch.randn(4, 6, generator=generator) * scale
        grads = [torch.randn(4, 6, generator=generator) for _ in range(3)]
        slips = {
            place: rms_steps(weight, grads, lr, weight_decay, denominator)
            for place, denominator in list(EPS_PLACES.items())[1:]
        }
        reference = torch.nn.Parameter(weight.clone())
        optimizer = optim.AdamWScale([reference], lr=lr, weight_decay=weight_decay)
        mine, state = weight.clone(), {}
        for number, grad in enumerate(grads, start=1):
            reference.grad = grad.clone()
            optimizer.step()
            mine = step_fn(mine, grad.clone(), state, lr, weight_decay)
            if not torch.is_tensor(mine) or mine.shape != weight.shape:
                fail(
                    "adamw_rms_step",
                    f"a tensor of shape {tuple(weight.shape)}",
                    type(mine).__name__,
                    "return the updated weight",
                )
            if not torch.allclose(mine, reference.detach(), rtol=1e-5, atol=1e-8):
                where = int((mine - reference.detach()).abs().argmax())
                slip = next(
                    (
                        place
                        for place, steps in slips.items()
                        if torch.allclose(mine, steps[number - 1], rtol=1e-5, atol=1e-8)
                    ),
                    None,
                )
                hint = (
                    f"your step puts eps {slip}; it goes outside the square root of the uncorrected v: "
                    "m / (sqrt(v) + eps), and the bias correction scales the step size, not v"
                    if slip
                    else "update the moments, correct their bias, multiply the step by max(1e-3, RMS of the weight "
                    "before the step), and decay the weight after the Adam step (decoupled)"
                )
                fail(
                    "adamw_rms_step",
                    f"weight.flatten()[{where}] = {reference.detach().flatten()[where].item():.8g} "
                    f"after step {number} (weights of RMS {scale}, lr {lr}, decay {weight_decay})",
                    f"{mine.flatten()[where].item():.8g}",
                    hint,
                )
    passed("adamw_rms_step", "three steps on three weights (RMS 1, 1e-5 and 0.3) as the course's AdamWScale")
