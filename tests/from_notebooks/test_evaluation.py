"""Lesson 05's statistics, judge and lm-eval scoring (course_utils.from_notebooks.evaluation, written from the notebook's cells),
against references: scipy's bootstrap and permutation test, a scripted judge, and log-likelihoods by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from course_utils.from_notebooks.evaluation import (
    consistent_winners,
    judge_both_orders,
    judge_messages,
    paired_bootstrap,
    paired_permutation_test,
    percentile_interval,
)
from course_utils.lessons.eval_setup import (
    LESSON_OUTPUTS,
    MissingLessonOutput,
    evaluation_config,
    lm_eval_task,
    read_answers,
    task_file,
    write_jsonl,
)
from course_utils.machinery.profiles import get_profile


def correlated_scores(n: int = 60, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Two systems' per-item scores that share each item's difficulty, b a little ahead of a."""
    rng = np.random.default_rng(seed)
    difficulty = rng.uniform(0.1, 0.7, n)
    return difficulty + rng.normal(0, 0.02, n), difficulty + 0.01 + rng.normal(0, 0.02, n)


def test_the_paired_bootstrap_equals_scipys_on_the_same_draws():
    a, b = correlated_scores()
    for level in (0.9, 0.95):
        means_a, means_b = paired_bootstrap(a, b, resamples=2000, seed=7)
        ours = percentile_interval(means_b - means_a, level)
        theirs = stats.bootstrap(
            (a, b),
            lambda x, y, axis=-1: np.mean(y - x, axis=axis),
            paired=True,
            n_resamples=2000,
            confidence_level=level,
            method="percentile",
            rng=np.random.default_rng(7),
        ).confidence_interval
        assert ours == pytest.approx((theirs.low, theirs.high), abs=1e-12)
    # One system alone is the ordinary bootstrap of its mean.
    (means,) = paired_bootstrap(a, resamples=2000, seed=3)
    single = stats.bootstrap((a,), np.mean, n_resamples=2000, method="percentile", rng=np.random.default_rng(3))
    assert percentile_interval(means) == pytest.approx(tuple(single.confidence_interval), abs=1e-12)


def test_resampling_the_systems_independently_widens_the_interval_on_correlated_items():
    a, b = correlated_scores()
    means_a, means_b = paired_bootstrap(a, b, resamples=5000, seed=0)
    paired_low, paired_high = percentile_interval(means_b - means_a)
    (alone_a,), (alone_b,) = paired_bootstrap(a, resamples=5000, seed=1), paired_bootstrap(b, resamples=5000, seed=2)
    unpaired_low, unpaired_high = percentile_interval(alone_b - alone_a)  # the mistake: each system on its own
    assert unpaired_high - unpaired_low > 5 * (paired_high - paired_low)
    assert paired_low > 0 > unpaired_low  # the paired interval separates the systems; the unpaired one cannot


def test_the_bootstrap_refuses_unpaired_or_too_few_scores():
    with pytest.raises(ValueError, match="equal-length"):
        paired_bootstrap([0.1, 0.2, 0.3], [0.1, 0.2])
    with pytest.raises(ValueError, match="two or more"):
        paired_bootstrap([0.1], [0.2])


def test_the_permutation_test_agrees_with_scipys_exact_one():
    a, b = correlated_scores(n=12)
    exact = stats.permutation_test(
        (a, b),
        lambda x, y, axis=-1: np.mean(y - x, axis=axis),
        permutation_type="samples",  # swap the two systems' scores within an item: a sign flip of its difference
        n_resamples=np.inf,  # all 2^12 flips
        alternative="two-sided",
    ).pvalue
    assert paired_permutation_test(a, b, resamples=20_000, seed=0) == pytest.approx(exact, abs=0.01)
    assert paired_permutation_test(a, a, resamples=1000) == 1.0  # no difference at all
    far_apart = paired_permutation_test(np.zeros(40), np.ones(40), resamples=999)
    assert far_apart == pytest.approx(1 / 1000)  # only the observed assignment is as extreme


def always(letter):
    """A scripted judge that never reads the prompt."""
    return lambda messages: letter


def test_a_judge_that_always_answers_a_flips_every_verdict_and_keeps_none():
    articles = ["The bridge closed on Monday.", "A fire shut the harbour.", "The museum reopened."]
    x, y = ["Bridge shut.", "Harbour fire.", "Museum open."], ["A bridge closed on Monday.", "Fire.", "It reopened."]
    verdicts = judge_both_orders(always("A"), articles, x, y)
    assert verdicts == [("A", "A")] * 3
    winners = consistent_winners(verdicts, "x", "y")
    assert winners == [None, None, None]  # 100 % inconsistent: no verdict kept


def test_a_judge_that_reads_the_summaries_is_consistent_in_both_orders():
    def prefers_longer(messages):  # a position-free rule: the longer summary wins wherever it stands
        prompt = messages[-1]["content"]
        first = prompt.split("Summary A:\n")[1].split("\n\nSummary B:")[0]
        second = prompt.split("Summary B:\n")[1].split("\n\nWhich summary")[0]
        return "A" if len(first) > len(second) else "B"

    verdicts = judge_both_orders(prefers_longer, ["an article"] * 2, ["short", "a longer one"], ["longer text", "b"])
    assert verdicts == [("B", "A"), ("A", "B")]
    assert consistent_winners(verdicts, "x", "y") == ["y", "x"]


def test_the_judge_sees_both_summaries_and_the_article_in_the_order_given():
    messages = judge_messages("ARTICLE TEXT", "FIRST SUMMARY", "SECOND SUMMARY")
    assert [m["role"] for m in messages] == ["system", "user"]
    prompt = messages[1]["content"]
    assert (
        prompt.index("ARTICLE TEXT")
        < prompt.index("Summary A:\nFIRST SUMMARY")
        < prompt.index("Summary B:\nSECOND SUMMARY")
    )


def test_a_missing_lesson_output_names_the_notebook_to_run(tmp_path):
    with pytest.raises(MissingLessonOutput, match=r"notebooks/04_nanot5_pretraining\.ipynb.*--only 04"):
        read_answers(tmp_path, "04 pretrained")
    path = tmp_path / LESSON_OUTPUTS["01 after"].path
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"answers": ["positive"], "truth": ["positive", "negative"]}))
    with pytest.raises(ValueError, match="pair up"):
        read_answers(tmp_path, "01 after")


def test_the_quick_profile_caps_lesson_05_and_an_unknown_setting_is_refused():
    quick = evaluation_config(get_profile("full", quick=True, require_gpu=False))
    assert (quick.judge_rows, quick.lambada_rows, quick.resamples) == (2, 8, 1000)
    full = evaluation_config(get_profile("full", require_gpu=False))
    assert full.judge_rows is None and full.lambada_rows is None and full.resamples == 10_000
    with pytest.raises(ValueError, match="resampels"):
        evaluation_config(get_profile("smoke", evaluation={"resampels": 10}))


def test_a_task_on_local_files_has_no_hub_name_left(tmp_path):
    data = write_jsonl(tmp_path / "rows.jsonl", [{"text": "a b c"}])
    task = lm_eval_task(task_file("lambada_openai"), {"test": data})  # lm-eval's own YAML
    assert task["task"] == "lambada_openai" and task["dataset_path"] == "json" and "dataset_name" not in task
    assert task["dataset_kwargs"] == {"data_files": {"test": str(data)}}
    course = lm_eval_task(task_file("course_imdb"), {"test": tmp_path / "reviews.parquet"})
    assert course["dataset_path"] == "parquet" and course["doc_to_choice"] == ["negative", "positive"]
    with pytest.raises(ValueError, match="one kind"):
        lm_eval_task(task_file("course_imdb"), {"test": data, "train": tmp_path / "x.parquet"})


def test_a_local_task_is_read_without_the_network_even_online(tmp_path, monkeypatch):
    """load_dataset("json") reports each load to the Hub's usage counter unless HF_DATASETS_OFFLINE is set (a
    compute node told only HF_HUB_OFFLINE=1 would try it): lm_eval_task reads the files itself instead."""
    import datasets.load
    from lm_eval.api.task import ConfigurableTask

    def no_counter(*args, **kwargs):
        raise AssertionError("load_dataset was called: it reports the load to the Hub")

    monkeypatch.setattr(datasets.load, "increase_load_count", no_counter)
    monkeypatch.setattr(datasets, "load_dataset", no_counter)
    data = write_jsonl(tmp_path / "reviews.jsonl", [{"text": "a fine film", "label": 1}, {"text": "dull", "label": 0}])
    task = ConfigurableTask(config=lm_eval_task(task_file("course_imdb"), {"test": data}))
    assert task.test_docs()["text"] == ["a fine film", "dull"]
    assert [task.doc_to_target(doc) for doc in task.test_docs()] == [1, 0]


def course_loglik_accuracy(model, tokenizer, texts, labels, prefix="sst2 sentence: ", choices=("negative", "positive")):
    """The course's own multiple-choice scorer, in a few lines of torch: each choice's summed log-probability as
    the decoder's output for the prompt (its last 512 tokens, as lm-eval keeps them), the likelier one picked."""
    import torch

    choice_ids = [tokenizer(c, add_special_tokens=False, return_tensors="pt").input_ids for c in choices]
    right = 0
    with torch.no_grad():
        for text, label in zip(texts, labels):
            inputs = torch.tensor([tokenizer(prefix + text).input_ids[-512:]])
            scores = []
            for ids in choice_ids:
                logits = model(input_ids=inputs, labels=ids).logits
                scores.append(logits.log_softmax(-1).gather(-1, ids[..., None]).sum().item())
            right += int(np.argmax(scores) == label)
    return right / len(texts)


@pytest.mark.slow
def test_lm_eval_scores_a_t5_as_the_courses_own_log_likelihood_scorer_does(tmp_path):
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from course_utils.lessons.eval_setup import quiet_lm_eval
    from course_utils.models_and_data.data import load_imdb
    from course_utils.models_and_data.models import load_model, load_tokenizer

    profile = get_profile("smoke")
    splits, _ = load_imdb(profile.imdb, max_train_rows=10, test_rows=120, seed=0)
    texts, labels = splits["test"]["text"], splits["test"]["label"]
    data = write_jsonl(tmp_path / "reviews.jsonl", ({"text": t, "label": y} for t, y in zip(texts, labels)))
    model, tokenizer = load_model(profile.models["t5_small"], device="cpu"), load_tokenizer(profile.models["t5_small"])
    with quiet_lm_eval():
        out = lm_eval.simple_evaluate(
            model=HFLM(pretrained=model, tokenizer=tokenizer, backend="seq2seq", batch_size=8, device="cpu"),
            tasks=[lm_eval_task(task_file("course_imdb"), {"test": data})],
            task_manager=TaskManager(include_defaults=False),
            bootstrap_iters=0,
        )
    ours = course_loglik_accuracy(model, tokenizer, texts, labels)
    assert out["results"]["course_imdb"]["acc,none"] == pytest.approx(ours, abs=0.01)
