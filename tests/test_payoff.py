"""Lesson 04's downstream comparison: the saved random start and a fair pair of fine-tunes."""

import dataclasses

import torch

from course_utils import finetune
from course_utils.models import load_model
from course_utils.paths import data_dir
from course_utils.finetune import compare_starts, margin_sentence
from course_utils.pretrain import PretrainConfig, initial_model, save_initial_weights
from course_utils.profiles import get_profile


def test_the_saved_start_is_the_pretraining_runs_first_weights(tmp_path):
    config = PretrainConfig(model_name="standin:t5-v1_1-base", data_path=str(data_dir() / "c4"), seed=7)
    folder = save_initial_weights(config, tmp_path / "random")
    saved, again = load_model(folder).state_dict(), initial_model(config).state_dict()
    assert saved.keys() == again.keys()
    for name in saved:
        assert torch.equal(saved[name], again[name]), name
    other = initial_model(dataclasses.replace(config, seed=8)).state_dict()
    assert not torch.equal(saved["shared.weight"], other["shared.weight"])   # the seed matters


def test_the_two_fine_tunes_differ_only_in_their_start(tmp_path, monkeypatch):
    seen = []

    def fake_run(config, echo=print):  # records the configs instead of training
        seen.append(config)
        return {"accuracy": 0.5, "train_loss": 1.0, "train_seconds": 0.0}

    monkeypatch.setattr(finetune, "run", fake_run)
    lines = []
    profile = get_profile("smoke")
    figures = compare_starts(profile, {"pretrained": "dir/a", "random init": "dir/b"}, tmp_path,
                             echo=lines.append, seed=3, max_train_rows=300)
    assert list(figures) == ["pretrained", "random init"] and len(lines) == 2
    first, second = (dataclasses.asdict(config) for config in seen)
    assert {key for key in first if first[key] != second[key]} == {"model_name", "output_dir"}
    assert (first["model_name"], second["model_name"]) == ("dir/a", "dir/b")
    assert first["output_dir"] != second["output_dir"]
    lesson = dataclasses.asdict(finetune.lesson_config(profile, output_dir=first["output_dir"]))
    assert {key for key in first if first[key] != lesson[key]} == {"model_name", "seed", "max_train_rows"}
    assert (first["seed"], first["max_train_rows"]) == (3, 300)


def test_the_margin_says_ahead_behind_or_level_with_the_points():
    figures = {"pretrained": {"accuracy": 0.916}, "random init": {"accuracy": 0.886}, "released": {"accuracy": 0.9161}}
    assert margin_sentence(figures, "pretrained", "random init") == (
        "The pretrained start is ahead of the random init start by 3.0 accuracy points (0.916 against 0.886).")
    assert margin_sentence(figures, "random init", "pretrained") == (
        "The random init start is behind the pretrained start by 3.0 accuracy points (0.886 against 0.916).")
    assert margin_sentence(figures, "pretrained", "released") == (
        "The pretrained start is level with the released start (0.916 against 0.916).")
