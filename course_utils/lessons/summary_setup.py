"""Lesson 03's set-up: its settings, and the record of every article's summaries that lesson 05 reads.

    config = summary_config(profile)                  # lesson 03's settings: profile.summaries applied
    write_per_article(path, ids, articles, references, summaries, scores)   # each article's summaries, for lesson 05

The summaries themselves are written by the cells of notebook 03 (``summarizers.py``). Every model is scored as
it is loaded: the Hub's checkpoints as released, the smoke stand-ins as shipped (pretrained, like the real ones,
with ``summarize: `` in their mixture; ``standins/``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from course_utils.machinery.configs import InputError, checked_replace


@dataclass(frozen=True)
class SummaryConfig:
    """Lesson 03's settings; the profile's ``summaries`` changes them."""

    # CNN/DailyMail test articles scored (None: the whole split). The original course scored 100.
    test_rows: int | None = 100
    # 80 new tokens (about 60 words) leave room for the highlights, which average 56 words.
    max_new_tokens: int = 80


def summary_config(profile) -> SummaryConfig:
    """SummaryConfig with ``profile.summaries`` applied (an unknown key is an error)."""
    return checked_replace(SummaryConfig(), profile.summaries, "Profile.summaries setting")


def write_per_article(
    path,
    ids: Sequence[str],
    articles: Sequence[str],
    references: Sequence[str],
    summaries: dict[str, Sequence[str]],
    scores: dict[str, dict[str, Sequence[float]]],
) -> Path:
    """Each scored article with its reference, every system's summary of it and that summary's ROUGE (``scores``:
    system -> ROUGE type -> one F per article), as JSON at ``path``; lesson 05 compares the systems article by
    article. Every list must have one entry per article, or nothing is written."""
    n = len(ids)
    lengths = {"articles": len(articles), "references": len(references)}
    lengths |= {f"summaries of {s}": len(texts) for s, texts in summaries.items()}
    lengths |= {f"{kind} of {s}": len(values) for s, kinds in scores.items() for kind, values in kinds.items()}
    wrong = {what: length for what, length in lengths.items() if length != n}
    if wrong or set(summaries) != set(scores):
        raise InputError(
            f"write_per_article needs one entry per article ({n} ids) and scores for every system; got {wrong}, "
            f"systems {sorted(summaries)} with scores for {sorted(scores)}."
        )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "ids": list(ids),
                "articles": list(articles),
                "references": list(references),
                "summaries": {system: list(texts) for system, texts in summaries.items()},
                "scores": {
                    s: {kind: [float(v) for v in values] for kind, values in kinds.items()}
                    for s, kinds in scores.items()
                },
            }
        )
    )
    return path
