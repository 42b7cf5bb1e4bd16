"""Each lesson's point, held to the smoke run that nbval just made: a regression that breaks a lesson fails here.

The lessons write their figures to ``metrics.json`` in the session's output folder (COURSE_OUTPUT_DIR); this file
runs after them, in the same lane (tests/conftest.py orders it). Each assertion holds a point that one run of
the lessons showed by a wide margin; a point that run showed only at the edge is left out and named in its test's
docstring. ``benchmarks/bench_smoke_fidelity.py`` measured the margins over 3 training seeds at 2 threads
(benchmarks/RESULTS.md; 1 thread is this machine's default and the lessons' last run under make test); the
thresholds below hold in every one of those runs with room to spare. Its runs on other thread counts and on other
stand-in builds are still to come.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import LESSONS_COLLECTED

from course_utils.machinery.metrics import read_metrics

LESSON_NAMES = {
    "01": "01_t5_small_imdb_finetune",
    "02": "02_deepspeed_zero",
    "03": "03_cnn_dailymail_rouge",
    "04": "04_nanot5_pretraining",
    "05": "05_is_it_really_better",
}


@pytest.fixture(scope="module")
def figures(request) -> dict:
    """Each lesson's figures, by its number; the lessons must have run in this session."""
    ran = request.config.stash.get(LESSONS_COLLECTED, False)
    metrics = read_metrics(Path(os.environ["COURSE_OUTPUT_DIR"])) if os.environ.get("COURSE_OUTPUT_DIR") else {}
    missing = [name for name in LESSON_NAMES.values() if name not in metrics]
    if missing and not ran:
        pytest.skip("the lessons did not run in this session (make test runs them first, in the same lane)")
    assert not missing, f"the lessons ran but recorded no figures for {missing}"
    return {
        number: {k: v["value"] for k, v in metrics[name]["figures"].items()} for number, name in LESSON_NAMES.items()
    }


def test_01_fine_tuning_works(figures):
    """Issue 39 asks for 0.95 and at least the linear baseline's accuracy; today's t5-small stand-in does not reach
    them (0.914 against 0.960), and lesson 01 says so from its figures. What it must show: fine-tuning helps. (Lesson
    05's paired interval of the gain lies just above 0 today, too near the edge for a test to rest on.)"""
    lesson = figures["01"]
    assert lesson["accuracy_after"] > lesson["accuracy_before"] and lesson["unknown_answers_after"] == 0


def test_02_zero_trains_the_same_model_as_the_plain_run(figures):
    """The same settings at every step, and the same mean loss within the lesson's 5 %. (Issue 39 asks for 1 % and
    for the two to agree on 98 % of the reviews. The benchmark measured a mean-loss gap of 0.85 % at this machine's
    default thread count but 2.74 % with OMP_NUM_THREADS=2, and agreement near 96 %, the answers near the stand-in's
    decision boundary flipping with rounding; lesson 02 shows which and why. Open.)"""
    lesson = figures["02"]
    assert lesson["loss_relative_gap"] <= 0.05
    assert lesson["settings_differ"] == 0 and lesson["learning_rate_gap"] == 0


def test_03_t5_base_beats_t5_small_and_gpt2_scores_lowest(figures):
    lesson = figures["03"]
    for kind in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        assert lesson[f"system_t5_base_{kind}"] > lesson[f"system_t5_small_{kind}"], kind
        others = [lesson[f"system_{s}_{kind}"] for s in ("t5_small", "t5_base", "lead_3")]
        assert lesson[f"system_gpt2_{kind}"] < min(others), kind


def test_04_pretraining_teaches_the_model_to_read_its_input(figures):
    """Held-out NLL falls, and the pretrained model needs its own input to fill the spans. (Issue 39 also asks that
    the payoff downstream, against the same random weights, be shown by an interval above 0, and that the released
    stand-in score at least as high as the lesson's own pretraining. Over 3 seeds at 2 threads the pretrained start
    was ahead of the random one in all three runs (+0.010, +0.082, +0.036) but its interval cleared 0 in one, and
    the released one was ahead in two (-0.010, +0.004, +0.014): neither is a point a test can rest on yet. Open.)"""
    lesson = figures["04"]
    assert lesson["nll_relative_drop"] >= 0.3
    assert lesson["input_gap_pretrained"] > lesson["input_gap_random_weights"] + 1  # nats: it reads its input


def test_05_lambada_lm_eval_and_the_judge(figures):
    """lm-eval's log-likelihood scoring agrees with lesson 01's generate; the GPT-2 stand-in, whose second stage read
    the LAMBADA-style training stories, finds the last word of at least 40 % of the held-out passages (0.555 of 200
    on the shipped build: a property of the weights, with no training in the lesson to vary it); the scripted
    control shows its length bias. (Issue 39 also asks for a judge consistent above a coin: today's judge stand-in
    is consistent on about 10 articles of 50, the two T5 stand-ins' summaries differing mostly in invented facts,
    and lesson 05 prints that verdict from its figures. Open.)"""
    lesson = figures["05"]
    assert abs(lesson["lm_eval_accuracy_fine_tuned"] - figures["01"]["accuracy_after"]) <= 0.01
    assert lesson["lambada_accuracy"] >= 0.40
    assert lesson["control_judge_longer_chosen_share"] == 1.0
