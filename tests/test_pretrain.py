"""Pretraining: data sources, the loop's log line, resume equivalence, and 2 processes on a CPU."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from course_utils.configs import InputError
from course_utils.models import load_model, load_tokenizer
from course_utils.paths import data_dir
from course_utils.pretraining.config import PretrainConfig, check_config
from course_utils.pretraining.data import iter_texts
from course_utils.pretraining.loop import pretrain
from course_utils.pretraining.run import log_line
from course_utils.tokens import raw_rows

TINY = dict(
    model_name="standin:t5-v1_1-base",
    data_path=str(data_dir() / "c4"),
    data_config=None,
    input_length=32,
    batch_size=8,
    total_steps=8,
    warmup_steps=2,
    learning_rate=1e-2,
    logging_steps=2,
    eval_every=4,
    eval_batches=2,
    attn_implementation="eager",
    shuffle_block=100,
    data_workers=1,
)


def test_local_files_of_every_kind_and_the_held_out_share(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = [f"document number {i}" for i in range(250)]
    (tmp_path / "a.txt").write_text("\n".join(docs[:100]) + "\n\n")
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs[100:200]))
    pq.write_table(pa.table({"text": docs[200:]}), tmp_path / "c.parquet")
    train = list(iter_texts(str(tmp_path), None, "train"))
    held_out = list(iter_texts(str(tmp_path), None, "validation"))
    assert held_out == [docs[0], docs[100], docs[200]] and len(train) == 247
    assert sorted(train + held_out) == sorted(docs)  # nothing lost, nothing twice
    assert list(iter_texts(str(tmp_path / "*.txt"), None, "validation")) == [docs[0]]


def test_processes_read_disjoint_shares_that_cover_the_data():
    shares = [list(iter_texts(str(data_dir() / "c4"), None, "validation", rank, 3)) for rank in range(3)]
    everything = list(iter_texts(str(data_dir() / "c4"), None, "validation"))
    assert sum(len(s) for s in shares) == len(everything) == 200
    assert sorted(t for s in shares for t in s) == sorted(everything)


def test_bad_sources_are_named(tmp_path):
    (tmp_path / "x.jsonl").write_text(json.dumps({"body": "hi"}) + "\n")
    with pytest.raises(ValueError, match=r"x.jsonl, line 1: no column 'text'; columns are \['body'\]"):
        list(iter_texts(str(tmp_path), None, "train"))
    with pytest.raises(InputError, match="No .txt, .jsonl, .json, .parquet files"):
        list(iter_texts(str(tmp_path / "*.csv"), None, "train"))


def test_raw_rows_are_the_token_stream_cut_into_equal_rows():
    tok = load_tokenizer("standin:t5-v1_1-base")
    texts = [f"The recipe number {i} needs a pinch of salt." for i in range(40)]
    stream = [t for text in texts for t in tok(text).input_ids]
    rows = list(raw_rows(texts, tok, raw_length=50, chunk=7))
    assert all(len(r) == 50 for r in rows) and len(rows) == len(stream) // 50
    assert np.concatenate(rows).tolist() == stream[: len(rows) * 50]


def test_batch_arithmetic_and_precision_are_checked():
    with pytest.raises(ValueError, match="batch_size 10 is not divisible by gradient_accumulation_steps 4 x 1"):
        check_config(PretrainConfig(batch_size=10, gradient_accumulation_steps=4), world_size=1)
    with pytest.raises(ValueError, match="precision='fp16': T5's activations overflow fp16"):
        check_config(PretrainConfig(precision="fp16"), world_size=1)


def test_log_line_has_nanot5_shape():
    assert log_line(100, 65536, 4.2191, 1.2, 7042.931, 0.01, 0.56) == (
        "[train] Step 100 out of 65536 | Loss --> 4.219 | Grad_l2 --> 1.200 | Weights_l2 --> 7042.931 | "
        "Lr --> 0.010 | Seconds_per_step --> 0.560 |"
    )


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    lines = []
    config = PretrainConfig(**TINY, output_dir=str(tmp_path_factory.mktemp("straight")))
    return config, pretrain(config, echo=lines.append), lines


@pytest.mark.slow
def test_the_loop_logs_learns_and_writes_tensorboard(straight):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    config, result, lines = straight
    assert (
        lines[0]
        == "8 rows per step = 8 per forward pass x 1 accumulation x 1 process(es); 1 data worker(s) per process"
    )
    lines = lines[1:]
    assert [line.split(" | ")[0] for line in lines] == [f"[train] Step {s} out of 8" for s in (2, 4, 6, 8)]
    assert sorted(result.eval_nll) == sorted(result.eval_nll_other_input) == [0, 4, 8]
    assert result.eval_nll[8] < result.eval_nll[0]
    events = EventAccumulator(str(next(Path(config.output_dir).rglob("events.out.*")).parent))
    events.Reload()
    assert len(events.Scalars("train/loss")) == 4 and len(events.Scalars("eval/nll")) == 3
    assert [e.value for e in events.Scalars("eval/nll_other_input")] == pytest.approx(
        list(result.eval_nll_other_input.values()), rel=1e-6
    )
    assert (Path(result.model_dir) / "config.json").exists()


@pytest.mark.slow
def test_stopping_and_resuming_continues_the_same_run(straight, tmp_path):
    _, result, _ = straight
    # An interrupted run: 4 of 8 steps (the schedule still spans 8), checkpointed; then resumed.
    first = pretrain(PretrainConfig(**TINY, output_dir=str(tmp_path), stop_at_step=4), echo=lambda _: None)
    second = pretrain(PretrainConfig(**TINY, output_dir=str(tmp_path), resume=True), echo=lambda _: None)
    # The resumed run reports the whole run, the first job's steps included (kept in the checkpoint).
    assert [s for s, _ in first.train_losses] == [2, 4] and [s for s, _ in second.train_losses] == [2, 4, 6, 8]
    assert dict(second.train_losses) == pytest.approx(dict(result.train_losses), rel=1e-5)
    assert second.eval_nll == pytest.approx(result.eval_nll, rel=1e-5)
    assert second.eval_nll[8] == pytest.approx(result.eval_nll[8], rel=1e-5)
    with pytest.raises(FileNotFoundError, match="start without resume"):
        pretrain(PretrainConfig(**TINY, output_dir=str(tmp_path / "empty"), resume=True))


@pytest.mark.slow
def test_two_processes_train_on_different_shards(tmp_path):
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "course_utils.pretraining",
        "--model-name",
        TINY["model_name"],
        "--data-path",
        TINY["data_path"],
        "--input-length",
        "32",
        "--batch-size",
        "8",
        "--total-steps",
        "4",
        "--warmup-steps",
        "1",
        "--logging-steps",
        "2",
        "--eval-batches",
        "2",
        "--attn-implementation",
        "eager",
        "--shuffle-block",
        "100",
        "--data-workers",
        "1",
        "--output-dir",
        str(tmp_path),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
    assert result["processes"] == 2 and result["steps"] == 4
    assert len(set(result["first_batch_checksums"])) == 2  # each process read its own documents
    assert result["eval_nll"]["4"] < result["eval_nll"]["0"]
    assert "[train] Step 4 out of 4" in done.stdout


def test_profiles_size_the_run_and_full_is_nanot5s_recipe():
    from course_utils.pretraining.config import PretrainConfig
    from course_utils.profiles import get_profile

    full = PretrainConfig.for_profile(get_profile("full"), "out")
    assert (full.model_name, full.data_path, full.data_config) == ("google/t5-v1_1-base", "allenai/c4", "en")
    # The notebook's share of the recipe: the recipe's batch and lengths, 6,000 of its 65,536 steps.
    assert (full.input_length, full.batch_size, full.total_steps, full.warmup_steps) == (512, 128, 6000, 1000)
    assert (full.optimizer, full.lr_scheduler, full.learning_rate, full.compile) == ("adamwscale", "cosine", 2e-2, True)
    recipe = PretrainConfig()
    assert (recipe.total_steps, recipe.warmup_steps) == (65536, 10000)
    smoke = PretrainConfig.for_profile(get_profile("smoke"), "out", total_steps=10)
    assert smoke.model_name == "standin:t5-v1_1-base" and smoke.input_length == 128 and smoke.total_steps == 10
    assert smoke.attn_implementation == "eager" and smoke.optimizer == recipe.optimizer


@pytest.mark.slow
def test_gradient_accumulation_gives_the_same_run(straight, tmp_path):
    # 8 rows per step as 2 micro-batches of 4: every target has the same length, so the mean of
    # the two halves' losses is the full batch's loss and the updates match.
    _, result, _ = straight
    accumulated = pretrain(
        PretrainConfig(**{**TINY, "gradient_accumulation_steps": 2}, output_dir=str(tmp_path)), echo=lambda _: None
    )
    assert dict(accumulated.train_losses) == pytest.approx(dict(result.train_losses), rel=1e-4)


@pytest.mark.slow
def test_from_pretrained_continues_from_saved_weights(straight):
    import torch

    from course_utils.pretraining.loop import initial_model as build_model

    _, result, _ = straight
    continued = build_model(PretrainConfig(model_name=result.model_dir, from_pretrained=True))
    fresh = build_model(PretrainConfig(model_name=result.model_dir))
    saved = load_model(result.model_dir)
    assert all(torch.equal(a, b) for a, b in zip(continued.state_dict().values(), saved.state_dict().values()))
    assert not all(torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), saved.state_dict().values()))


@pytest.mark.slow
def test_input_reliance_against_the_runs_own_evaluation(straight):
    import torch

    from course_utils.pretraining.data import held_out_batches
    from course_utils.pretraining.run import input_reliance

    config, result, _ = straight
    batches = held_out_batches(config, load_tokenizer(config.model_name))
    assert len(batches) == config.eval_batches and len(batches[0]["input_ids"]) == config.batch_size
    model = load_model(result.model_dir)
    scores = input_reliance(model, batches)
    # Own input: the saved model scores what the run measured at its last step on the same held-out rows.
    assert scores["own input"] == pytest.approx(result.eval_nll[config.total_steps], rel=1e-5)
    # Another row's input: row i is scored with row i-1's input, by hand.
    with torch.no_grad():
        by_hand = [
            float(model(input_ids=torch.cat([b["input_ids"][-1:], b["input_ids"][:-1]]), labels=b["labels"]).loss)
            for b in batches
        ]
    assert scores["another row's input"] == pytest.approx(sum(by_hand) / len(by_hand), rel=1e-6)
    assert scores["another row's input"] == pytest.approx(result.eval_nll_other_input[config.total_steps], rel=1e-5)
    # Rows with one and the same input: swapping changes nothing.
    same = [{"input_ids": b["input_ids"][:1].repeat(len(b["input_ids"]), 1), "labels": b["labels"]} for b in batches]
    twin = input_reliance(model, same)
    assert twin["own input"] == twin["another row's input"]
    model.train()
    input_reliance(model, batches[:1])
    assert model.training  # the model's mode is left as it was found
    with pytest.raises(ValueError, match="at least 2 rows"):
        input_reliance(model, [{k: v[:1] for k, v in batches[0].items()}])


@pytest.mark.slow
def test_a_finished_run_is_found_with_its_own_settings_and_figures(straight):
    from course_utils.pretraining.config import finished_run

    config, result, _ = straight
    found = finished_run(config.output_dir, model_name=config.model_name)
    assert found is not None
    found_config, found_result = found
    # The settings as asked (the config is never changed by the run), and the plan the run followed.
    assert found_config == config and found_result.plan == result.plan
    assert dataclasses.asdict(found_result.plan) == {
        "precision": "fp32",
        "tf32": False,
        "compile": False,
        "gradient_accumulation_steps": 1,
        "micro_batch": 8,
    }
    assert found_result.eval_nll == result.eval_nll and found_result.train_losses == result.train_losses
    assert found_result.model_dir == result.model_dir and found_result.steps == config.total_steps
    assert finished_run(config.output_dir, model_name="google/t5-v1_1-base") is None  # another architecture


@pytest.mark.slow
def test_a_stopped_run_is_not_a_finished_one(tmp_path):
    from course_utils.pretraining.config import finished_run

    config = PretrainConfig(**{**TINY, "stop_at_step": 2}, output_dir=str(tmp_path))
    pretrain(config, echo=lambda _: None)
    assert (tmp_path / "result.json").exists() and finished_run(tmp_path) is None
    assert finished_run(tmp_path / "nothing-here") is None


@pytest.mark.slow
def test_the_optimizer_race_differs_only_in_the_scaling(tmp_path):
    from course_utils.pretraining.loop import pretrain
    from course_utils.pretraining.race import RACE, optimizer_race

    config = PretrainConfig(
        **{**TINY, "total_steps": 6, "warmup_steps": 2, "eval_every": 2}, output_dir=str(tmp_path / "lesson")
    )
    race = optimizer_race(pretrain, config, steps=100, output_dir=str(tmp_path / "race"), echo=lambda _: None)
    assert list(race) == list(RACE) == ["AdamW + RMS scaling", "plain AdamW"]
    scaled, plain = race.values()
    assert scaled.steps == plain.steps == 6  # never longer than the lesson's own run
    assert sorted(scaled.eval_nll) == [0, 1, 2, 3, 4, 5, 6]  # six evaluations after the start
    assert scaled.eval_nll[0] == plain.eval_nll[0]  # the same weights and batches ...
    assert scaled.eval_nll[6] != plain.eval_nll[6]  # ... and only the optimizer differs
    saved = json.loads((tmp_path / "race" / "plain_AdamW" / "result.json").read_text())["config"]
    assert (saved["optimizer"], saved["lr_scheduler"], saved["warmup_steps"]) == ("adamw", "cosine", 0)
    assert saved["eval_batches"] == 2  # the lesson's own, being fewer than RACE_EVAL_BATCHES


@pytest.mark.slow
def test_two_runs_in_one_process_under_a_launcher(tmp_path):
    # Under a launcher's variables Accelerate initializes a process group that outlives one run;
    # the second run of pretrain_variants must find it still there (end_training would destroy it).
    script = (
        f"from course_utils.pretraining.loop import pretrain\n"
        f"from course_utils.pretraining.race import optimizer_race\n"
        f"from course_utils.pretraining.config import PretrainConfig\n"
        f"config = PretrainConfig(**{TINY!r}, output_dir={str(tmp_path / 'lesson')!r})\n"
        f"race = optimizer_race(pretrain, config, 4, {str(tmp_path / 'race')!r}, echo=lambda _: None)\n"
        f"print(sorted(race), [run.steps for run in race.values()])\n"
    )
    launched = dict(
        os.environ,
        RANK="0",
        LOCAL_RANK="0",
        WORLD_SIZE="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(29600 + os.getpid() % 1000),
    )
    done = subprocess.run([sys.executable, "-c", script], env=launched, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "['AdamW + RMS scaling', 'plain AdamW'] [4, 4]"


def test_the_race_evaluates_on_at_most_ten_batches():
    from course_utils.pretraining.race import RACE_EVAL_BATCHES, race_config

    short = race_config(PretrainConfig(eval_batches=100), steps=500, output_dir="race")
    assert (short.eval_batches, short.total_steps, short.warmup_steps, short.eval_every) == (
        RACE_EVAL_BATCHES,
        500,
        50,
        83,
    )


@pytest.mark.slow
def test_the_command_runs_from_its_folder_and_the_old_name_forwards_to_it():
    new = subprocess.run(
        [sys.executable, "-m", "course_utils.pretraining", "--help"], capture_output=True, text=True, timeout=300
    )
    assert new.returncode == 0 and new.stdout.startswith("usage: python -m course_utils.pretraining")
    old = subprocess.run(
        [sys.executable, "-m", "course_utils.pretrain", "--help"], capture_output=True, text=True, timeout=300
    )
    assert old.returncode == 0 and old.stdout == new.stdout
    assert old.stderr.strip().endswith(
        "python -m course_utils.pretrain has moved: run python -m course_utils.pretraining"
    )
