"""Pretraining: data sources, the loop's log line, resume equivalence, and 2 processes on a CPU."""

import dataclasses
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import course_utils.from_notebooks.pretraining_loop as pretraining
import course_utils.pretraining.__main__ as pretrain_command
import course_utils.pretraining.config as pretrain_config
from course_utils.from_notebooks.pretraining_loop import pretrain
from course_utils.from_notebooks.sentiment_trainer import save
from course_utils.machinery.configs import InputError
from course_utils.machinery.paths import data_dir
from course_utils.models_and_data.models import load_model, load_tokenizer
from course_utils.models_and_data.tokens import raw_rows
from course_utils.pretraining.config import (
    PretrainConfig,
    PretrainPlan,
    PretrainResult,
    check_config,
)
from course_utils.pretraining.data import iter_texts
from course_utils.pretraining.run import PretrainRun, log_line


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
def straight(tiny_pretraining, tmp_path_factory):
    lines = []
    config = PretrainConfig(**tiny_pretraining, output_dir=str(tmp_path_factory.mktemp("straight")))
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
def test_stopping_and_resuming_continues_the_same_run(tiny_pretraining, straight, tmp_path):
    _, result, _ = straight
    # An interrupted run: 4 of 8 steps (the schedule still spans 8), checkpointed; then resumed.
    first = pretrain(PretrainConfig(**tiny_pretraining, output_dir=str(tmp_path), stop_at_step=4), echo=lambda _: None)
    second = pretrain(PretrainConfig(**tiny_pretraining, output_dir=str(tmp_path), resume=True), echo=lambda _: None)
    # The resumed run reports the whole run, the first job's steps included (kept in the checkpoint).
    assert [s for s, _ in first.train_losses] == [2, 4] and [s for s, _ in second.train_losses] == [2, 4, 6, 8]
    assert dict(second.train_losses) == pytest.approx(dict(result.train_losses), rel=1e-5)
    assert second.eval_nll == pytest.approx(result.eval_nll, rel=1e-5)
    assert second.eval_nll[8] == pytest.approx(result.eval_nll[8], rel=1e-5)
    with pytest.raises(FileNotFoundError, match="start without resume"):
        pretrain(PretrainConfig(**tiny_pretraining, output_dir=str(tmp_path / "empty"), resume=True))


@pytest.mark.slow
def test_two_processes_train_on_different_shards(tiny_pretraining, tmp_path):
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "course_utils.pretraining",
        "--model-name",
        tiny_pretraining["model_name"],
        "--data-path",
        tiny_pretraining["data_path"],
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
    from course_utils.machinery.profiles import get_profile
    from course_utils.pretraining.config import PretrainConfig

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
def test_gradient_accumulation_gives_the_same_run(tiny_pretraining, straight, tmp_path):
    # 8 rows per step as 2 micro-batches of 4: every target has the same length, so the mean of
    # the two halves' losses is the full batch's loss and the updates match.
    _, result, _ = straight
    accumulated = pretrain(
        PretrainConfig(**{**tiny_pretraining, "gradient_accumulation_steps": 2}, output_dir=str(tmp_path)),
        echo=lambda _: None,
    )
    assert dict(accumulated.train_losses) == pytest.approx(dict(result.train_losses), rel=1e-4)


@pytest.mark.slow
def test_from_pretrained_continues_from_saved_weights(straight):
    import torch

    from course_utils.from_notebooks.pretraining_loop import initial_model as build_model

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
def test_a_stopped_run_is_not_a_finished_one(tiny_pretraining, tmp_path):
    from course_utils.pretraining.config import finished_run

    config = PretrainConfig(**{**tiny_pretraining, "stop_at_step": 2}, output_dir=str(tmp_path))
    pretrain(config, echo=lambda _: None)
    assert (tmp_path / "result.json").exists() and finished_run(tmp_path) is None
    assert finished_run(tmp_path / "nothing-here") is None


@pytest.mark.slow
def test_the_optimizer_race_differs_only_in_the_scaling(tiny_pretraining, tmp_path):
    from course_utils.from_notebooks.pretraining_loop import pretrain
    from course_utils.pretraining.race import RACE, optimizer_race

    config = PretrainConfig(
        **{**tiny_pretraining, "total_steps": 6, "warmup_steps": 2, "eval_every": 2},
        output_dir=str(tmp_path / "lesson"),
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
def test_two_runs_in_one_process_under_a_launcher(tiny_pretraining, tmp_path):
    # Under a launcher's variables Accelerate initializes a process group that outlives one run;
    # the second run of pretrain_variants must find it still there (end_training would destroy it).
    script = (
        f"from course_utils.from_notebooks.pretraining_loop import pretrain\n"
        f"from course_utils.pretraining.race import optimizer_race\n"
        f"from course_utils.pretraining.config import PretrainConfig\n"
        f"config = PretrainConfig(**{dict(tiny_pretraining)!r}, output_dir={str(tmp_path / 'lesson')!r})\n"
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
    assert "python -m course_utils.pretrain is now python -m course_utils.pretraining; the old name goes" in old.stderr


def test_the_loops_step_cuts_a_batch_into_the_parts_split_rows_makes():
    import contextlib
    from types import SimpleNamespace

    import torch

    from course_utils.from_notebooks.pretraining_loop import train_step
    from course_utils.pretraining.run import split_rows

    seen = []

    def model(**part):
        seen.append(part)
        return SimpleNamespace(loss=torch.tensor(1.0, requires_grad=True))

    accelerator = SimpleNamespace(
        device=torch.device("cpu"), no_sync=lambda _model: contextlib.nullcontext(), backward=lambda loss: None
    )
    batch = {"input_ids": torch.arange(20).reshape(10, 2), "labels": torch.arange(30).reshape(10, 3)}
    assert float(train_step(accelerator, model, batch, 4)) == pytest.approx(1.0)  # the mean over 3 parts
    expected = split_rows(batch, 4)
    assert [len(p["labels"]) for p in seen] == [len(p["labels"]) for p in expected] == [4, 4, 2]
    assert all(torch.equal(a[key], b[key]) for a, b in zip(seen, expected, strict=True) for key in batch)


SHORTER = dict(total_steps=4, warmup_steps=1, logging_steps=1, eval_every=0, eval_batches=1, checkpoint_every=0)


@pytest.fixture
def tiny(tiny_pretraining) -> dict:
    return {**tiny_pretraining, **SHORTER, "data_workers": 0}


def quiet(*_args, **_kwargs):
    pass


@pytest.fixture
def hooked_model(monkeypatch):
    """Install ``hook(module, kwargs)`` as a forward pre-hook on the model every pretraining run builds."""
    build = pretraining.initial_model

    def install(hook):
        def build_with_hook(config):
            model = build(config)
            model.register_forward_pre_hook(hook, with_kwargs=True)
            return model

        monkeypatch.setattr(pretraining, "initial_model", build_with_hook)

    return install


@pytest.fixture
def dynamo_warnings():
    """Warnings torch._dynamo logs while the test runs (its loggers do not reach caplog)."""
    seen: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: seen.append(record.getMessage())
    logger = logging.getLogger("torch._dynamo.convert_frame")  # does not propagate; it names the limit
    logger.addHandler(handler)
    yield seen
    logger.removeHandler(handler)


@pytest.mark.slow
def test_five_compiled_pretraining_runs_in_one_process_all_compile(tiny, tmp_path, dynamo_warnings):
    from torch._dynamo.utils import counters

    compiled = []  # without the fix: 2 graphs in each of the first 4 runs (8 versions), none in the 5th
    for run in range(5):
        before = counters["stats"]["unique_graphs"]
        config = PretrainConfig(
            **{**tiny, "total_steps": 2},
            compile=True,
            compile_backend="aot_eager",
            output_dir=str(tmp_path / f"run{run}"),
        )
        pretrain(config, echo=quiet)
        compiled.append(counters["stats"]["unique_graphs"] - before)
    assert not [w for w in dynamo_warnings if "recompile_limit" in w], dynamo_warnings
    assert all(graphs > 0 for graphs in compiled), compiled  # every run compiled graphs of its own


@pytest.mark.slow
def test_a_step_out_of_memory_doubles_the_accumulation_and_trains_the_same_run(
    tiny, tmp_path, hooked_model, monkeypatch
):
    def out_of_memory_above_two_rows(module, args, kwargs):
        if module.training and kwargs["input_ids"].shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    reference = pretrain(
        PretrainConfig(**tiny, gradient_accumulation_steps=4, output_dir=str(tmp_path / "ref")), echo=quiet
    )
    hooked_model(out_of_memory_above_two_rows)
    import course_utils.pretraining.run as run_module

    resets = []
    reset = run_module.reset_peak_memory
    monkeypatch.setattr(run_module, "reset_peak_memory", lambda: resets.append(1) or reset())
    lines = []
    config = PretrainConfig(**tiny, output_dir=str(tmp_path / "oom"))
    result = pretrain(config, echo=lines.append)
    assert len(resets) == 1 + 2  # the run's start, and after each new plan: the peak is the last plan's
    said = [line for line in lines if line.startswith("Out of GPU memory")]
    assert said == [
        "Out of GPU memory: accumulating twice as many micro-batches of 4 rows from now on.",
        "Out of GPU memory: accumulating twice as many micro-batches of 2 rows from now on.",
    ]
    assert result.steps == 4 and result.gradient_accumulation_steps == 4 and result.plan.micro_batch == 2
    assert result.eval_nll == pytest.approx(reference.eval_nll, rel=1e-5)
    # The config is the one asked for (accumulation 0: "choose"); the plan the run ended with is in the result.
    saved = json.loads((tmp_path / "oom" / "result.json").read_text())
    assert saved["config"] == dataclasses.asdict(config) and saved["config"]["gradient_accumulation_steps"] == 0
    assert saved["result"]["plan"] == {
        "precision": "fp32",
        "tf32": False,
        "compile": False,
        "gradient_accumulation_steps": 4,
        "micro_batch": 2,
    }


def test_out_of_memory_with_several_processes_says_what_to_set(monkeypatch):
    accelerator = SimpleNamespace(num_processes=2)
    optimizer = SimpleNamespace(zero_grad=lambda set_to_none: None)

    def failing_step(micro_batch):
        raise torch.OutOfMemoryError("CUDA out of memory")

    run = PretrainRun(PretrainConfig(), echo=quiet)
    run.plan = PretrainPlan(precision="bf16", tf32=True, compile=True, gradient_accumulation_steps=2, micro_batch=8)
    run.accelerator, run.result, run._first_step = accelerator, PretrainResult(steps=1, plan=run.plan), 0
    with pytest.raises(RuntimeError, match="--gradient-accumulation-steps"):
        run.retry_on_oom(failing_step, optimizer)


@pytest.mark.slow
def test_the_first_step_of_a_job_is_timed_apart(tiny, tmp_path, hooked_model):
    training_calls = []

    def slow_first_step(module, args, kwargs):  # what compiling the training graph costs at step 1
        if module.training:
            if not training_calls:
                time.sleep(2.0)
            training_calls.append(1)

    hooked_model(slow_first_step)
    result = pretrain(PretrainConfig(**tiny, output_dir=str(tmp_path)), echo=quiet)
    assert result.first_step_seconds[0] >= 2.0 and result.timed_steps == 3
    assert result.seconds_per_step < 0.5  # 2 s over 4 steps would be at least 0.5


def test_a_set_up_that_fails_halfway_leaves_tf32_and_the_signal_handlers_as_they_were(tiny, tmp_path, monkeypatch):
    import signal

    import course_utils.pretraining.run as run_module

    seen = {}

    def failing_check(config, world_size, gradient_accumulation_steps=None):
        seen["tf32 while setting up"] = torch.backends.cuda.matmul.allow_tf32
        raise InputError("a check that fails after TF32 was set")

    monkeypatch.setattr(run_module, "check_config", failing_check)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    handler = signal.getsignal(signal.SIGTERM)
    with pytest.raises(InputError, match="after TF32 was set"):
        with PretrainRun(PretrainConfig(**tiny, tf32=True, output_dir=str(tmp_path)), echo=quiet):
            pass  # never reached
    assert seen == {"tf32 while setting up": True}  # the failure came after TF32 was switched on ...
    assert torch.backends.cuda.matmul.allow_tf32 is False and torch.backends.cudnn.allow_tf32 is False  # ... and undone
    assert signal.getsignal(signal.SIGTERM) is handler


@pytest.mark.slow
def test_pretraining_turns_tf32_on_for_its_run_only(tiny, tmp_path, hooked_model):
    seen = []
    hooked_model(lambda module, args, kwargs: seen.append(torch.backends.cuda.matmul.allow_tf32))
    torch.backends.cuda.matmul.allow_tf32 = False
    pretrain(PretrainConfig(**{**tiny, "total_steps": 1}, tf32=True, output_dir=str(tmp_path)), echo=quiet)
    assert seen and all(seen) and not torch.backends.cuda.matmul.allow_tf32


@pytest.mark.parametrize("main_process", [True, False])
def test_the_tokenizer_is_saved_by_the_main_process_before_anyone_reloads(tmp_path, main_process):
    events = []
    trainer = SimpleNamespace(
        args=SimpleNamespace(should_save=main_process),
        save_model=lambda folder: events.append("model"),
        save_state=lambda: events.append("state"),
        accelerator=SimpleNamespace(wait_for_everyone=lambda: events.append("barrier")),
    )
    tokenizer = SimpleNamespace(save_pretrained=lambda folder: events.append("tokenizer"))
    save(trainer, tokenizer, tmp_path)
    assert events == (["model", "tokenizer", "state", "barrier"] if main_process else ["model", "state", "barrier"])


@pytest.mark.slow
def test_resume_auto_starts_afresh_from_a_half_written_checkpoint_and_resumes_a_whole_one(tiny, tmp_path):
    (tmp_path / "checkpoints" / ".incomplete-step-0000001").mkdir(parents=True)  # a kill during the first save
    settings = {**tiny, "total_steps": 2, "checkpoint_every": 1}
    with pytest.raises(FileNotFoundError, match="resume auto"):
        pretrain(PretrainConfig(**settings, resume=True, output_dir=str(tmp_path)), echo=quiet)
    lines = []
    fresh = pretrain(PretrainConfig(**settings, resume="auto", output_dir=str(tmp_path)), echo=lines.append)
    assert fresh.steps == 2 and any("resume auto: no complete checkpoint" in line for line in lines)
    lines.clear()
    again = pretrain(PretrainConfig(**settings, resume="auto", output_dir=str(tmp_path)), echo=lines.append)
    assert any(line.startswith("resume auto: resuming from") and "step-0000002" in line for line in lines)
    assert again.eval_nll == fresh.eval_nll  # nothing left to train: the same run


def test_the_command_line_takes_resume_auto_and_refuses_other_words(capsys):
    parsed = vars(pretrain_command.parser().parse_args(["--resume", "auto"]))
    assert (
        parsed["resume"] == "auto"
        and vars(pretrain_command.parser().parse_args(["--resume", "true"]))["resume"] is True
    )
    with pytest.raises(SystemExit):
        pretrain_command.parser().parse_args(["--resume", "sometimes"])
    with pytest.raises(InputError, match="true, false or auto"):
        pretrain_config.check_config(PretrainConfig(resume="yes please"), 1)
