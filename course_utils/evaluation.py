"""The code of lesson 05 · Is it really better? Confidence intervals, log-likelihood scoring and an LLM judge

Written by `python tools/export.py` from the cells marked #@save in
notebooks/05_is_it_really_better.ipynb: edit them there, then rerun the command (tests/test_export.py checks it).
"""

import numpy as np
import torch
from tqdm.auto import tqdm


def paired_bootstrap(*systems, resamples: int = 10_000, seed: int = 0) -> list[np.ndarray]:
    """Each system's mean score over ``resamples`` resamples of the items: the items are drawn with replacement,
    and every system gets the same draw, so an item's scores stay together (the paired bootstrap).

    Defined in notebooks/05_is_it_really_better.ipynb, section "An interval on the difference".
    """
    scores = [np.asarray(s, dtype=float) for s in systems]
    if len({s.shape for s in scores}) != 1 or scores[0].ndim != 1 or len(scores[0]) < 2:
        raise ValueError(
            f"paired_bootstrap needs equal-length lists of two or more scores, got {[s.shape for s in scores]}."
        )
    n = len(scores[0])
    items = np.random.default_rng(seed).integers(0, n, size=(resamples, n))  # one row of item indices per resample
    return [s[items].mean(axis=1) for s in scores]


def percentile_interval(samples, level: float = 0.95) -> tuple[float, float]:
    """The middle ``level`` of ``samples``: the bootstrap's percentile interval.

    Defined in notebooks/05_is_it_really_better.ipynb, section "An interval on the difference".
    """
    low, high = np.percentile(samples, [50 * (1 - level), 50 * (1 + level)])
    return float(low), float(high)


def paired_permutation_test(a, b, resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of "``a`` and ``b`` are interchangeable" on paired scores: random sign flips of each
    item's difference, counted when their mean is at least as far from 0 as the observed one (with the observed
    assignment counted once, so p is never 0).

    Defined in notebooks/05_is_it_really_better.ipynb, section "A paired test".
    """
    differences = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(resamples, len(differences)))
    as_far = np.abs((signs * differences).mean(axis=1)) >= abs(differences.mean()) - 1e-12
    return float((as_far.sum() + 1) / (resamples + 1))


JUDGE_SYSTEM = "You are a careful news editor who compares summaries of news articles."
JUDGE_PROMPT = """Article:
{article}

Summary A:
{first}

Summary B:
{second}

Which summary states the article's main facts more accurately and completely? Answer with one letter: A or B."""


def judge_messages(article: str, first: str, second: str) -> list[dict]:
    """The chat that asks which of two summaries of ``article`` is better: ``first`` shown as A, ``second`` as B.

    Defined in notebooks/05_is_it_really_better.ipynb, section "3 · An LLM as the judge".
    """
    prompt = JUDGE_PROMPT.format(article=article, first=first, second=second)
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": prompt}]


def letter_judge(model, tokenizer):
    """A judge: messages -> "A" or "B", whichever letter the chat model scores higher as its answer's first token.

    Defined in notebooks/05_is_it_really_better.ipynb, section "3 · An LLM as the judge".
    """
    letters = [tokenizer.encode(letter, add_special_tokens=False)[0] for letter in "AB"]

    @torch.no_grad()
    def judge(messages: list[dict]) -> str:
        inputs = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_dict=True, return_tensors="pt"
        ).to(model.device)
        scores = model(**inputs).logits[0, -1, letters]  # the next token's scores for "A" and "B"
        return "AB"[int(scores.argmax())]

    return judge


def judge_both_orders(judge, articles, x_summaries, y_summaries, progress: bool = False) -> list[tuple[str, str]]:
    """For each article, the judge's verdict with x shown first, then with y shown first.

    Defined in notebooks/05_is_it_really_better.ipynb, section "3 · An LLM as the judge".
    """
    rows = tqdm(list(zip(articles, x_summaries, y_summaries)), desc="judge", disable=not progress)
    return [(judge(judge_messages(a, x, y)), judge(judge_messages(a, y, x))) for a, x, y in rows]


def consistent_winners(verdicts, x: str = "x", y: str = "y") -> list[str | None]:
    """Per article, the summary that won in both orders: ``x`` for ("A", "B"), ``y`` for ("B", "A"), and None for a
    verdict that flips with the order (position bias), which is dropped.

    Defined in notebooks/05_is_it_really_better.ipynb, section "3 · An LLM as the judge".
    """
    winners = {("A", "B"): x, ("B", "A"): y}
    return [winners.get(tuple(pair)) for pair in verdicts]
