"""The launchable fine-tune: config, precision rules, TensorBoard events, save/reload, CLI."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import course_utils.machinery.memory as memory
from course_utils.from_notebooks.sentiment_trainer import (
    add_label_words,
    build_trainer,
    count_answer_tokens,
    generate_answers,
    save,
    tokenize_pairs,
)
from course_utils.lessons.finetune import FinetuneConfig, _parser, train, with_accumulation_steps_that_fit
from course_utils.lessons.launch import cli_arguments, launch, launch_command
from course_utils.machinery.hardware import resolve_precision
from course_utils.machinery.paths import data_dir
from course_utils.machinery.profiles import get_profile
from course_utils.models_and_data.data import load_imdb
from course_utils.models_and_data.models import load_model, load_tokenizer

SMALL = "standin:t5-small"


def test_fp16_is_refused_and_auto_means_fp32_on_a_cpu():
    with pytest.raises(ValueError, match="overflow"):
        resolve_precision("fp16")
    with pytest.raises(ValueError, match="precision must be one of auto, bf16, fp32, got 'half'"):
        resolve_precision("half")

    if not torch.cuda.is_available():
        assert resolve_precision("auto") == "fp32"


def test_answer_length_fits_the_longest_label_word():
    tok = load_tokenizer(SMALL)
    assert count_answer_tokens(tok) == max(len(tok("negative").input_ids), len(tok("positive").input_ids))


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """A few steps of the real recipe on 48 reviews."""
    config = FinetuneConfig(
        model_name=SMALL,
        data_path=str(data_dir() / "imdb"),
        output_dir=str(tmp_path_factory.mktemp("ft")),
        num_train_epochs=1,
        per_device_batch_size=16,
        logging_steps=1,
        max_train_rows=48,
        test_rows=16,
        attn_implementation="eager",
    )
    splits = add_label_words(load_imdb(get_profile().imdb, config.max_train_rows, config.test_rows)[0])
    tok = load_tokenizer(SMALL)
    train_set = tokenize_pairs(
        splits["train"], tok, "text", "label_text", config.task_prefix, 512, count_answer_tokens(tok)
    )
    trainer = build_trainer(config, load_model(SMALL, attn_implementation="eager"), tok, train_set)
    return config, trainer, train(trainer), tok, splits


def test_training_logs_every_step_and_uses_v5_arguments(short_run):
    config, trainer, result, _, _ = short_run
    assert result.steps == 3 and len(result.losses) == 3
    assert trainer.args.optim == "adamw_torch" and trainer.args.fp16 is False
    assert trainer.args.train_sampling_strategy == "group_by_length"
    assert trainer.processing_class is not None


def test_tensorboard_events_appear_where_the_config_says(short_run):
    config, _, _, _, _ = short_run
    events = list((Path(config.output_dir) / "tensorboard").glob("events.out.tfevents.*"))
    assert events, f"no event files in {Path(config.output_dir) / 'tensorboard'}"
    accumulator = EventAccumulator(str(Path(config.output_dir) / "tensorboard"))
    accumulator.Reload()
    assert len(accumulator.Scalars("train/loss")) == 3


def test_saved_model_reloads_from_disk_and_classifies(short_run):
    config, trainer, _, tok, splits = short_run
    model_dir = save(trainer, tok, config.model_dir)
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in model_dir.iterdir()}
    assert (Path(config.output_dir) / "trainer_state.json").exists()
    reloaded = load_model(str(model_dir))
    answers = generate_answers(
        reloaded,
        load_tokenizer(str(model_dir)),
        splits["test"]["text"],
        config.task_prefix,
        512,
        count_answer_tokens(tok),
        batch_size=5,
    )
    in_memory = generate_answers(
        trainer.model, tok, splits["test"]["text"], config.task_prefix, 512, count_answer_tokens(tok), batch_size=16
    )  # another batch size too: the order must not depend on it
    assert len(answers) == 16 and answers == in_memory  # the reloaded weights answer exactly as the trained ones


@pytest.mark.slow
def test_command_line_runs_the_whole_recipe(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "course_utils.lessons.finetune",
            "--model-name",
            SMALL,
            "--data-path",
            str(data_dir() / "imdb"),
            "--output-dir",
            str(tmp_path),
            "--num-train-epochs",
            "1",
            "--max-train-rows",
            "32",
            "--test-rows",
            "8",
            "--attn-implementation",
            "eager",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert figures["steps"] == 2 and 0.0 <= figures["accuracy"] <= 1.0
    assert "left out: 300 rows (unsupervised split" in proc.stdout
    assert (tmp_path / "model" / "config.json").exists()


@pytest.mark.slow
def test_command_line_help_lists_the_config_fields():
    out = subprocess.run(
        [sys.executable, "-m", "course_utils.lessons.finetune", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0
    for flag in ("--model-name", "--per-device-batch-size", "--deepspeed", "--max-source-length"):
        assert flag in out.stdout


@pytest.mark.slow
def test_command_line_refuses_a_bad_boolean():
    out = subprocess.run(
        [sys.executable, "-m", "course_utils.lessons.finetune", "--group-by-length", "maybe"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "expected true or false, got 'maybe'" in out.stderr


def test_a_run_reports_its_peak_memory(short_run):
    _, _, result, _, _ = short_run
    assert result.peak_memory_kind == "process_peak_rss" and result.peak_memory_mib > 100  # torch alone is more


def test_cli_arguments_rebuild_the_same_config():
    config = FinetuneConfig(
        model_name=SMALL,
        data_path="data/imdb",
        num_train_epochs=2.5,
        max_train_rows=7,
        group_by_length=False,
        deepspeed="deepspeed_configs/zero2.json",
        task_prefix="a b: ",
    )
    args = vars(_parser().parse_args(cli_arguments(config)))
    args.pop("local_rank")
    assert FinetuneConfig(**args) == config


def test_launch_command_uses_torchrun_only_for_several_processes():
    config = FinetuneConfig(model_name=SMALL)
    one, two = launch_command(config, 1), launch_command(config, 2)
    assert one[:3] == [sys.executable, "-m", "course_utils.lessons.finetune"]
    assert two[:5] == [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    assert one[3:] == two[7:] == cli_arguments(config)


def test_lesson_config_follows_the_profile_and_takes_changes():
    smoke = get_profile("smoke")
    config = FinetuneConfig.for_profile(smoke, "out", deepspeed="x.json")
    assert (config.model_name, config.num_train_epochs, config.learning_rate, config.max_train_rows) == (
        "standin:t5-small",
        2.0,
        1e-3,
        1200,
    )  # profile.finetune, keyed by FinetuneConfig's own fields
    assert config.output_dir == "out" and config.deepspeed == "x.json"
    with pytest.raises(ValueError, match="batch_sise"):
        FinetuneConfig.for_profile(smoke, "out", batch_sise=3)
    with pytest.raises(ValueError, match="Profile.finetune setting.*epochs"):
        FinetuneConfig.for_profile(get_profile("smoke", finetune={"epochs": 3}), "out")


@pytest.mark.slow
def test_a_failed_launch_says_where_its_log_is(tmp_path):
    config = FinetuneConfig(model_name=SMALL, data_path=str(tmp_path / "missing"), output_dir=str(tmp_path / "run"))
    with pytest.raises(RuntimeError, match=r"exited with status 2; last lines of .*launch.log") as err:
        launch(config, timeout=300)
    assert f"python -m course_utils.lessons.finetune: error: {tmp_path / 'missing'} is not a folder" in str(err.value)
    assert "Traceback" not in (tmp_path / "run" / "launch.log").read_text()


T5_V11_BASE = 247_577_856


def test_the_payoff_fine_tune_of_t5_v1_1_base_is_cut_to_fit_a_16_gb_card_in_fp32(monkeypatch):
    monkeypatch.setattr(memory, "gpu_gib", lambda: 14.6)
    fp32 = FinetuneConfig(precision="fp32")
    fitted = with_accumulation_steps_that_fit(fp32, T5_V11_BASE, 3)
    assert (fitted.per_device_batch_size, fitted.gradient_accumulation_steps) == (8, 2)  # still 16 rows a step
    assert with_accumulation_steps_that_fit(fp32, 60_506_624, 3) == fp32  # t5-small fits as it is
    monkeypatch.setattr(memory, "gpu_gib", lambda: 0.0)
    assert with_accumulation_steps_that_fit(fp32, T5_V11_BASE, 3) == fp32  # no GPU: unchanged
    accumulating = dataclasses.replace(fp32, per_device_batch_size=8, gradient_accumulation_steps=2)
    assert with_accumulation_steps_that_fit(accumulating, T5_V11_BASE, 3) == accumulating  # an asked-for split too
