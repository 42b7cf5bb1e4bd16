"""Lab 05L's checks, evaluation by hand: the paired bootstrap, the judge's consistency filter and win rate, Cohen's
kappa, and an lm-eval task of one's own, each against lesson 05's code, scikit-learn or lm-eval itself."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np

from course_utils.from_notebooks.evaluation import consistent_winners as course_winners
from course_utils.from_notebooks.evaluation import paired_bootstrap, percentile_interval
from course_utils.labs.verdict import answer_check, close, compare_sequences, expect_type, fail, passed
from course_utils.lessons.eval_setup import lm_eval_task, quiet_lm_eval, write_jsonl
from course_utils.models_and_data.models import load_model, load_tokenizer


def correlated_scores(n: int = 80, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Two systems' per-item scores that share each item's difficulty (as two summarizers' ROUGE on one article
    does), the second about 0.01 ahead."""
    rng = np.random.default_rng(seed)
    difficulty = rng.uniform(0.1, 0.7, n)
    return difficulty + rng.normal(0, 0.02, n), difficulty + 0.01 + rng.normal(0, 0.02, n)


def _resampled(bootstrap_fn, a, b, resamples: int, seed: int) -> np.ndarray:
    """The student's resampled differences as floats, refused unless they are ``resamples`` numbers."""
    got = bootstrap_fn(a.copy(), b.copy(), resamples, seed)
    array = np.asarray(got) if isinstance(got, np.ndarray | list | tuple) or hasattr(got, "numpy") else None
    if array is None or array.dtype.kind not in "fiu":
        fail("bootstrap_difference", f"an array of {resamples} numbers", f"{type(got).__name__}", _HINT)
    if array.shape != (resamples,):
        fail("bootstrap_difference", f"an array of {resamples} resampled differences", f"shape {array.shape}", _HINT)
    return array.astype(float)


ITEMS_DRAWN = 10  # items in the test of the draws: only the last one differs between the systems


@answer_check
def bootstrap_difference(bootstrap_fn) -> None:
    """``bootstrap_difference(a, b, resamples, seed) -> array``: the mean of b - a on each resample of the items.

    Against what a paired bootstrap must give: the same numbers for the same seed and others for another; resampled
    differences centred on the observed one with the variance the items' differences imply (var(b - a) / n: an
    interval as wide as the paired bootstrap's, not a narrower one); and, on items of which only the last differs,
    each resample counting that item as often as n draws with replacement would (Binomial(n, 1/n)), so that every
    item can be drawn, and drawn more than once."""
    a, b = correlated_scores()
    resamples = 4000
    got = _resampled(bootstrap_fn, a, b, resamples, 0)
    if not np.array_equal(got, _resampled(bootstrap_fn, a, b, resamples, 0)):
        fail(
            "bootstrap_difference",
            "the same numbers from the same seed, twice",
            "other numbers on the second call",
            "draw every index from np.random.default_rng(seed) and from nothing else",
        )
    if np.array_equal(got, _resampled(bootstrap_fn, a, b, resamples, 1)):
        fail("bootstrap_difference", "other resamples for another seed", "the same numbers", "draw from the seed")
    observed, differences = float(b.mean() - a.mean()), b - a
    spread = float(np.sqrt(differences.var() / len(differences)))  # the bootstrap's standard error of the mean
    if abs(got.mean() - observed) > 5 * spread / np.sqrt(resamples):
        fail(
            "bootstrap_difference",
            f"resampled differences centred on the observed b - a = {observed:+.4f}",
            f"a mean of {got.mean():+.4f}",
            "each resample's statistic is mean(b) - mean(a) over the items drawn",
        )
    low, high = percentile_interval(got)
    ratio = float(got.std() / spread)
    if not 0.95 <= ratio <= 1.05:
        means_a, means_b = paired_bootstrap(a, b, resamples=resamples, seed=0)
        want_low, want_high = percentile_interval(means_b - means_a)
        fail(
            "bootstrap_difference",
            f"resampled differences whose spread gives the paired bootstrap's 95 % interval "
            f"[{want_low:+.4f}, {want_high:+.4f}]",
            f"[{low:+.4f}, {high:+.4f}], a spread {ratio:.2f} times the paired bootstrap's",
            _HINT,
        )
    last = np.zeros(ITEMS_DRAWN)
    last[-1] = 1.0
    counts = _resampled(bootstrap_fn, np.zeros(ITEMS_DRAWN), last, resamples, 0) * ITEMS_DRAWN
    share = {k: float(np.mean(np.isclose(counts, k))) for k in (0, 1)}
    share[2] = float(np.mean(counts > 1.5))
    p = 1 / ITEMS_DRAWN
    want = {0: (1 - p) ** ITEMS_DRAWN, 1: ITEMS_DRAWN * p * (1 - p) ** (ITEMS_DRAWN - 1)}
    want[2] = 1 - want[0] - want[1]
    if any(abs(share[k] - want[k]) > 0.05 for k in want):
        fail(
            "bootstrap_difference",
            f"on {ITEMS_DRAWN} items of which only the last differs, that item drawn 0, 1 and 2+ times in "
            f"{want[0]:.0%}, {want[1]:.0%} and {want[2]:.0%} of the resamples (n draws with replacement)",
            f"{share[0]:.0%}, {share[1]:.0%} and {share[2]:.0%}",
            "draw n indices from all n items (rng.integers(0, n), whose upper end is excluded), with replacement",
        )
    passed(
        "bootstrap_difference",
        f"interval [{low:+.4f}, {high:+.4f}] on {len(a)} paired items, as wide as the paired bootstrap's; the same "
        f"numbers for the same seed; every item drawn as often as n draws with replacement draw it",
    )


_HINT = (
    "draw item indices with replacement (rng.integers(0, n, size=(resamples, n))) and take both systems' scores "
    "of the same items, so each item's pair stays together"
)

# (verdict with x shown first, verdict with y shown first) per article: consistent, flipped and mixed cases.
VERDICT_SETS = (
    [("A", "B"), ("B", "A"), ("A", "A"), ("B", "B"), ("B", "A"), ("B", "A")],
    [("A", "A"), ("A", "A"), ("A", "A")],  # a judge stuck on "A": nothing kept
    [("A", "B"), ("A", "B"), ("B", "B")],
    [("B", "A")],
)


@answer_check
def consistent_winners(winners_fn) -> None:
    """``consistent_winners(verdicts) -> list``: "x", "y" or None per article, as lesson 05's filter."""
    for verdicts in VERDICT_SETS:
        got = winners_fn(list(verdicts))
        expect_type("consistent_winners", f"the winners of {verdicts}", got, (list, tuple), "return a list")
        compare_sequences(
            "consistent_winners",
            f"winners of {verdicts}",
            course_winners(verdicts, "x", "y"),
            list(got),
            'x is shown first in the first verdict and second in the other: ("A", "B") is a win for x, ("B", "A") '
            "for y, and a verdict that flips with the order (the same letter twice) is dropped as None",
        )
    passed("consistent_winners", f"{len(VERDICT_SETS)} sets of verdicts, a judge stuck on one letter among them")


@answer_check
def win_rate(win_rate_fn) -> None:
    """``win_rate(winners, system) -> float | None``: the share of the kept verdicts that ``system`` won."""
    cases = (
        (["x", "y", None, None, "y", "y"], "y", 0.75),
        (["x", "y", None, None, "y", "y"], "x", 0.25),
        (["x", "x", None], "x", 1.0),
        ([None, None], "x", None),
    )
    for winners, system, want in cases:
        got = win_rate_fn(list(winners), system)
        if want is None:
            if got is not None:
                fail("win_rate", f"None for {winners} (no verdict kept)", got, "with no verdict kept there is no rate")
            continue
        close(
            "win_rate",
            f"win_rate({winners}, {system!r})",
            want,
            got,
            "count the wins among the kept verdicts only: the dropped ones (None) are in neither the count nor the total",
        )
    passed("win_rate", "the share of the consistent verdicts only, None when none was kept")


# (rater 1, rater 2): agreement beyond chance, at chance, below it, unbalanced shares, three labels, shares that
# differ between the raters.
LABEL_PAIRS = (
    (list("aabbaabb"), list("aabbaabb")),
    (list("aabbaabbab"), list("ababbaabba")),
    (list("aaaaaaaabb"), list("aaaaaaabab")),
    (list("ababab"), list("bababa")),
    (list("aaabbbccc"), list("aabbbcccb")),
    (list("aaaaaaaaab"), list("aaaaaaaaba")),
    (list("aaaaaabbbb"), list("aaaaaaaaab")),  # the raters' shares differ: 6 of 10 against 9 of 10
)


@answer_check
def cohen_kappa(kappa_fn) -> None:
    """``cohen_kappa(rater_1, rater_2) -> float`` against scikit-learn's cohen_kappa_score."""
    from sklearn.metrics import cohen_kappa_score

    for first, second in LABEL_PAIRS:
        close(
            "cohen_kappa",
            f"kappa of {''.join(first)} and {''.join(second)}",
            float(cohen_kappa_score(first, second)),
            kappa_fn(first, second),
            "p_o is the share of items with the same label; p_e sums, over the labels, rater 1's share of the label "
            "times rater 2's share; kappa = (p_o - p_e) / (1 - p_e)",
        )
    passed("cohen_kappa", f"equal to scikit-learn's on {len(LABEL_PAIRS)} pairs of raters (two and three labels)")


# The lab's multiple-choice set: a capital for each country, four choices, the right one's index.
CAPITALS = (
    ("France", ["Lyon", "Paris", "Nice", "Lille"], 1),
    ("Kenya", ["Nairobi", "Mombasa", "Kisumu", "Nakuru"], 0),
    ("Japan", ["Osaka", "Kyoto", "Tokyo", "Sapporo"], 2),
    ("Norway", ["Bergen", "Stavanger", "Tromso", "Oslo"], 3),
    ("Peru", ["Cusco", "Lima", "Arequipa", "Trujillo"], 1),
    ("Ghana", ["Kumasi", "Tamale", "Accra", "Tema"], 2),
)
CAPITAL_ROWS = [{"country": c, "choices": choices, "answer": answer} for c, choices, answer in CAPITALS]
REFERENCE_TASK = """task: capitals
dataset_path: json
output_type: multiple_choice
test_split: test
doc_to_text: "Question: What is the capital of {{country}}?\\nAnswer:"
doc_to_choice: "{{choices}}"
doc_to_target: answer
metric_list:
  - metric: acc
"""


def requests_of(task_yaml: str, rows: list[dict], folder, model_name: str) -> tuple[list, float]:
    """Run ``task_yaml`` on ``rows`` through lm-eval with ``model_name``: each row's (context, continuation) pairs,
    in the rows' order, and the accuracy."""
    import lm_eval
    import yaml
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    folder = Path(folder)
    task_path = folder / "task.yaml"
    task_path.write_text(task_yaml)
    task = lm_eval_task(task_path, {"test": write_jsonl(folder / "rows.jsonl", rows)})
    task.setdefault("task", "capitals")
    model = HFLM(pretrained=load_model(model_name, device="cpu"), tokenizer=load_tokenizer(model_name), device="cpu")
    with quiet_lm_eval():  # a check prints one line
        # the task is given whole: no index of lm-eval's built-in tasks (seconds per call) is needed
        tasks = TaskManager(include_defaults=False)
        out = lm_eval.simple_evaluate(
            model=model, tasks=[task], task_manager=tasks, log_samples=True, bootstrap_iters=0
        )
    name = yaml.safe_load(task_yaml).get("task", "capitals")
    samples = sorted(out["samples"][name], key=lambda s: s["doc_id"])
    return [[tuple(a) for a in s["arguments"]] for s in samples], out["results"][name]["acc,none"]


@functools.lru_cache(maxsize=4)
def reference_requests(model_name: str) -> tuple[list, float]:
    """What the course's own capitals task asks ``model_name`` through lm-eval, and its accuracy (run once)."""
    with tempfile.TemporaryDirectory() as folder:
        return requests_of(REFERENCE_TASK, CAPITAL_ROWS, folder, model_name)


@answer_check
def lm_eval_yaml(task_yaml: str, model_name: str) -> None:
    """``task_yaml``: a multiple-choice lm-eval task over CAPITAL_ROWS. Run through lm-eval on ``model_name`` (a
    stand-in), it must ask the model exactly what the course's reference task asks: the same prompt and the same
    four choices for every row, so the same log-likelihoods and the same accuracy."""
    import yaml

    expect_type("lm_eval_yaml", "the task", task_yaml, str, "pass the YAML text itself, e.g. capitals_task()")
    hint = (
        "output_type multiple_choice; doc_to_text the question with {{country}}, ending in 'Answer:'; doc_to_choice "
        "the row's own choices ('{{choices}}'); doc_to_target the index in 'answer'"
    )
    try:
        task = yaml.safe_load(task_yaml)
    except yaml.YAMLError as error:
        fail(
            "lm_eval_yaml",
            "YAML that parses",
            f"a YAML error: {str(error).splitlines()[0]}",
            "check indentation and quotes",
        )
    if not isinstance(task, dict) or task.get("output_type") != "multiple_choice":
        fail(
            "lm_eval_yaml",
            "output_type: multiple_choice",
            task if not isinstance(task, dict) else task.get("output_type"),
            hint,
        )
    want, want_accuracy = reference_requests(model_name)
    with tempfile.TemporaryDirectory() as student_folder:
        try:
            got, accuracy = requests_of(task_yaml, CAPITAL_ROWS, student_folder, model_name)
        except Exception as error:  # noqa: BLE001 (lm-eval's own error, reported as the check's one line)
            fail("lm_eval_yaml", "a task lm-eval can run", f"{type(error).__name__}: {error}", hint)
    for row, (expected, asked) in enumerate(zip(want, got)):
        compare_sequences("lm_eval_yaml", f"row {row}'s (prompt, choice) requests", expected, asked, hint)
    compare_sequences("lm_eval_yaml", "rows", want, got, hint)
    if accuracy != want_accuracy:
        fail("lm_eval_yaml", f"accuracy {want_accuracy}", accuracy, "doc_to_target is the index of the right choice")
    passed(
        "lm_eval_yaml",
        f"lm-eval asked {model_name} the reference task's {sum(len(r) for r in want)} questions, row by row; "
        f"accuracy {accuracy:.3f} as the reference",
    )
