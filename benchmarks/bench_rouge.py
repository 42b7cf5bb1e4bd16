"""ROUGE backends side by side: rouge-score-rs against rouge-score on the same 2,000 pairs.

    python benchmarks/bench_rouge.py [--pairs 2000] [--no-stemmer]

Pairs come from the shipped CNN/DailyMail sample: each article's first three sentences
(and, to reach the count, other articles' highlights) against highlights, one sentence per
line. All four ROUGE types, stemming on by default. Prints pairs per second for each
backend, the ratio, and how many of the 2,000 × 4 × 3 figures differ (goal: >= 50x, 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from course_utils.paths import data_dir
from course_utils.rouge import newline_sentences, score_pairs, split_sentences


def benchmark_pairs(count: int) -> tuple[list[str], list[str]]:
    rows = []
    for split in ("train", "validation", "test"):
        with open(data_dir() / "cnn_dailymail" / f"{split}.jsonl", encoding="utf-8") as handle:
            rows += [json.loads(line) for line in handle]
    leads = [newline_sentences(" ".join(split_sentences(r["article"])[:3])) for r in rows]
    predictions, references = [], []
    for i in range(count):
        row = rows[i % len(rows)]
        shift = i // len(rows)  # first pass: the article's own lead; later: other articles' highlights
        predictions.append(leads[i % len(rows)] if shift == 0 else rows[(i + shift * 37) % len(rows)]["highlights"])
        references.append(row["highlights"])
    return predictions, references


def timed(predictions, references, use_stemmer, backend):
    start = time.perf_counter()
    scores = score_pairs(predictions, references, use_stemmer=use_stemmer, backend=backend)
    return time.perf_counter() - start, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000, help="summary pairs scored by each implementation")
    parser.add_argument("--no-stemmer", action="store_true", help="score without the Porter stemmer")
    args = parser.parse_args()
    use_stemmer = not args.no_stemmer
    predictions, references = benchmark_pairs(args.pairs)
    timed(predictions[:20], references[:20], use_stemmer, "rust")  # load the native module first
    python_s, python_scores = timed(predictions, references, use_stemmer, "python")
    rust_s, rust_scores = timed(predictions, references, use_stemmer, "rust")
    mismatches = sum(getattr(a[t], stat) != getattr(b[t], stat)
                     for a, b in zip(rust_scores, python_scores, strict=True) for t in a
                     for stat in ("precision", "recall", "fmeasure"))
    print(f"{args.pairs} pairs, rouge1/2/L/Lsum, stemming {'on' if use_stemmer else 'off'}")
    print(f"rouge-score (python)   {args.pairs / python_s:>10.0f} pairs/s   {python_s:7.3f} s")
    print(f"rouge-score-rs (rust)  {args.pairs / rust_s:>10.0f} pairs/s   {rust_s:7.3f} s")
    print(f"ratio: {python_s / rust_s:.1f}x   mismatches: {mismatches} of {args.pairs * 4 * 3} figures "
          "(goal: >= 50x, 0 mismatches)")


if __name__ == "__main__":
    from results import recorded

    sys.exit(recorded("bench_rouge", main))
