"""Lab 03L's checks, ROUGE from scratch: tokens, ROUGE-N by clipped n-gram overlap, ROUGE-L by the longest
common subsequence, and the Lead-3 baseline, each against rouge-score and lesson 03's own Lead-3."""

from __future__ import annotations

from course_utils.from_notebooks.summarizers import lead_3 as course_lead_3
from course_utils.labs.verdict import answer_check, close, compare_sequences, expect_type, fail, passed
from course_utils.machinery.rouge import make_scorer

# (prediction, reference): empty sides, identical texts, repeated words, stemming, word order, punctuation, and a
# prediction that repeats bigrams the reference has once (ROUGE-2 must clip them as ROUGE-1 clips words).
PAIRS = (
    ("", "the cat sat on the mat"),
    ("the cat sat on the mat", ""),
    ("the cat sat on the mat", "the cat sat on the mat"),
    ("the the the the", "the cat sat on the mat"),
    ("The runners were running quickly.", "A runner runs quick"),
    ("mat the on sat cat the", "the cat sat on the mat"),
    ("Police arrested the gunman, officials said.", "The gunman was arrested by police on Sunday."),
    ("a b c d e f", "f e d c b a b c"),
    ("the cat sat the cat sat", "the cat sat on the mat"),
    # Ties in the longest common subsequence: where two words differ, the LCS takes the longer of the two ways on
    # (skip one side's word or the other's), never the diagonal.
    ("police said", "said police"),
    ("officials said police arrested him", "police arrested him officials said"),
    ("a b c", "c b a"),
)
TEXTS = (
    "The Runners were RUNNING quickly, weren't they?",
    "Flights cancelled: 1,200 (approx.) on 3/4.",
    "  spaces\tand\nnewlines  ",
    "",
    "a an the is was cats",
    "Café owner_name",
)  # é and _ are no [a-z0-9]


def reference_tokens(text: str) -> list[str]:
    """rouge-score's own tokens with stemming, the ones it scores."""
    return make_scorer(["rouge1"], use_stemmer=True)._tokenizer.tokenize(text)


@answer_check
def rouge_tokens(tokens_fn) -> None:
    """``tokens(text) -> list[str]`` against rouge-score's tokenizer with the Porter stemmer."""
    for text in TEXTS:
        got = tokens_fn(text)
        expect_type("rouge_tokens", f"tokens({text!r})", got, (list, tuple), "return a list of strings")
        compare_sequences(
            "rouge_tokens",
            f"tokens({text!r})",
            reference_tokens(text),
            got,
            "lowercase, keep runs of a-z and 0-9 only, and Porter-stem the words longer than 3 letters",
        )
    passed("rouge_tokens", f"{len(TEXTS)} texts tokenized as rouge-score tokenizes them, stems included")


def _compare_scores(check: str, kind: str, score_fn, hint: str) -> None:
    scorer = make_scorer([kind], use_stemmer=True)
    for prediction, reference in PAIRS:
        got = score_fn(prediction, reference)
        expected = scorer.score(reference, prediction)[kind]
        if not isinstance(got, tuple | list) or len(got) != 3:
            fail(check, "a tuple (precision, recall, f-measure)", got, "return all three numbers")
        for name, want, value in zip(("precision", "recall", "f-measure"), expected, got):
            close(check, f"{name} of {prediction!r} against {reference!r}", want, value, hint)


@answer_check
def rouge_n(rouge_n_fn) -> None:
    """``rouge_n(prediction, reference, n) -> (precision, recall, f)`` against rouge-score's rouge1 and rouge2."""
    for n in (1, 2):
        _compare_scores(
            "rouge_n",
            f"rouge{n}",
            lambda p, r: rouge_n_fn(p, r, n),
            f"count each {n}-gram at most as often as the reference has it (min of the two counts), and "
            "score 0 when either side has no n-grams",
        )
    passed(
        "rouge_n",
        f"ROUGE-1 and ROUGE-2 equal rouge-score's on {len(PAIRS)} pairs (empty, identical, repeated, stemmed)",
    )


@answer_check
def rouge_l(rouge_l_fn) -> None:
    """``rouge_l(prediction, reference) -> (precision, recall, f)`` against rouge-score's rougeL."""
    _compare_scores(
        "rouge_l",
        "rougeL",
        rouge_l_fn,
        "the longest common subsequence keeps word order but may skip words; a bag of words or a "
        "contiguous substring gives other numbers",
    )
    passed("rouge_l", f"ROUGE-L equals rouge-score's on {len(PAIRS)} pairs, word order included")


ARTICLES = (
    "Officials said on Monday that the bridge would close. Repairs will take a year.\n\nDrivers must use the ferry. "
    "Tolls rise in May. More details follow.",
    "Dr. Ada Quinn led the team. They found a new frog in the cloud forest.\n\nIt has a blue throat. "
    "The find took 6 years.",
    # As the Daily Mail's and CNN's articles begin in CNN/DailyMail: a byline and timestamps, a dateline.
    "By . Daily Mail Reporter . PUBLISHED: . 14:11 EST, 25 October 2013 . | . UPDATED: . 15:20 EST, 25 October 2013 . "
    "A fire closed the harbour on Friday. Nobody was hurt. Ferries resume on Monday. Repairs cost millions.",
    "LONDON, England (CNN) -- The museum reopened on Sunday. Queues stretched around the block. Tickets sold out. "
    "It closed in March.",
)


def lines(summary: str) -> list[str]:
    """A summary as rougeLsum reads it: its lines, each stripped, the empty ones dropped (they score nothing)."""
    return [line.strip() for line in summary.split("\n") if line.strip()]


@answer_check
def lead_3(lead_3_fn) -> None:
    """``lead_3(article) -> str``: the story's first three sentences, one per line, as lesson 03's ``lead_3`` (the
    byline and dateline removed first); whitespace that rougeLsum ignores may differ."""
    for article in ARTICLES:
        got = lead_3_fn(article)
        expected = course_lead_3(article)
        if not isinstance(got, str) or lines(got) != lines(expected):
            fail(
                "lead_3",
                repr(expected),
                repr(got),
                "remove the byline and dateline with strip_boilerplate, split with split_sentences, keep the first "
                'three, and join them with "\\n": rougeLsum reads one sentence per line',
            )
    passed(
        "lead_3", f"{len(ARTICLES)} articles, two with a byline or dateline: three sentences of the story, one per line"
    )
