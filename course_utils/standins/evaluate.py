"""A built stand-in's own figures, on held-out rows it never trained on and no lesson scores: for its model card.

    figures = held_out_figures(STANDINS["t5-small"], path)   # {"rouge1_validation": ..., "sst2_accuracy": ...}

- T5 after its mixture: ROUGE-1 of its summaries of CNN/DailyMail's validation articles, and its accuracy on the
  held-out SST-2 sentences;
- causal models: the perplexity of C4's validation pages;
- the judge: how often it prefers the reference over a worse summary of a validation article, in both orders, and
  on how many pairs its two verdicts agree.
"""

from __future__ import annotations

import math
from pathlib import Path

from course_utils.from_notebooks.evaluation import judge_messages, letter_judge
from course_utils.from_notebooks.sentiment_trainer import (
    LABEL_WORDS,
    count_answer_tokens,
    generate_answers,
    score_answers,
)
from course_utils.from_notebooks.summarizers import summarize_t5
from course_utils.lessons.eval_setup import EvaluationConfig
from course_utils.lessons.finetune import FinetuneConfig
from course_utils.machinery.rouge import aggregate, newline_sentences, score_pairs
from course_utils.models_and_data.tokens import raw_rows
from course_utils.standins import corpus
from course_utils.standins.saved import load
from course_utils.standins.specs import StandInSpec


def held_out_figures(standin: StandInSpec, path: Path) -> dict:

    model, tokenizer = load(path)
    objectives = {stage.objective for stage in standin.stages}
    figures = {}
    if "mixture" in objectives:
        figures.update(summary_figures(model, tokenizer))
        figures.update(sst2_figures(model, tokenizer))
    if standin.family != "t5":
        figures["c4_validation_perplexity"] = perplexity(model, tokenizer, standin.stages[0].max_length)
    if "instructions" in objectives:
        figures.update(judge_figures(model, tokenizer))
    return figures


def summary_figures(model, tokenizer) -> dict:

    rows = corpus.read_rows("cnn_dailymail/validation.jsonl")
    summaries = summarize_t5(model, tokenizer, [row["article"] for row in rows])
    scores = score_pairs(summaries, [newline_sentences(row["highlights"]) for row in rows])
    return {"rouge1_validation": aggregate(scores)["rouge1"], "validation_articles": len(rows)}


def sst2_figures(model, tokenizer) -> dict:

    _, held_out = corpus.sst2_split()
    answers = generate_answers(
        model,
        tokenizer,
        [row["sentence"] for row in held_out],
        FinetuneConfig().task_prefix,
        128,
        count_answer_tokens(tokenizer),
    )
    score = score_answers(answers, [LABEL_WORDS[row["label"]] for row in held_out])
    return {"sst2_held_out_accuracy": score.accuracy, "sst2_held_out_sentences": len(held_out)}


def perplexity(model, tokenizer, length: int) -> float:
    """exp of the mean next-token loss over C4's validation pages, packed into blocks of ``length`` tokens."""
    import numpy as np
    import torch

    texts = [row["text"] for row in corpus.read_rows("c4/validation.jsonl")]
    blocks = torch.from_numpy(np.stack(list(raw_rows(texts, tokenizer, length))))
    with torch.no_grad():
        losses = [float(model(input_ids=b, labels=b).loss) for b in blocks.split(16)]
    return math.exp(sum(losses) / len(losses))


def judge_figures(model, tokenizer) -> dict:
    """The judge on validation pairs (a reference against each of its worse summaries), both orders."""

    rows = corpus.read_rows("cnn_dailymail/validation.jsonl")
    pairs = corpus.judge_pairs(rows, seed=0, article_words=EvaluationConfig().judge_article_words)
    judge = letter_judge(model, tokenizer)
    right, consistent = 0, 0
    for pair in pairs:
        first = judge(judge_messages(pair.article, pair.better, pair.worse))  # the reference shown as A
        second = judge(judge_messages(pair.article, pair.worse, pair.better))  # ... and as B
        right += (first == "A") + (second == "B")
        consistent += first != second
    return {
        "judge_validation_pairs": len(pairs),
        "judge_reference_preferred": right / (2 * len(pairs)),
        "judge_consistent": consistent / len(pairs),
    }
