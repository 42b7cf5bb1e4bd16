"""Lesson 04's downstream comparison: the saved random start and a fair pair of fine-tunes."""

import dataclasses

import torch

from course_utils.from_notebooks.pretraining_loop import initial_model
from course_utils.lessons import finetune
from course_utils.machinery.paths import data_dir
from course_utils.machinery.profiles import get_profile
from course_utils.models_and_data.models import load_model
from course_utils.pretraining.config import PretrainConfig


def test_the_saved_start_is_the_pretraining_runs_first_weights(tmp_path):
    config = PretrainConfig(model_name="standin:t5-v1_1-base", data_path=str(data_dir() / "c4"), seed=7)
    folder = tmp_path / "random"
    initial_model(config).save_pretrained(folder)  # what notebook 04 saves as the "random init" start
    saved, again = load_model(folder).state_dict(), initial_model(config).state_dict()
    assert saved.keys() == again.keys()
    for name in saved:
        assert torch.equal(saved[name], again[name]), name
    other = initial_model(dataclasses.replace(config, seed=8)).state_dict()
    assert not torch.equal(saved["shared.weight"], other["shared.weight"])  # the seed matters


def test_the_two_fine_tunes_differ_only_in_their_start(tmp_path):
    # Notebook 04's payoff: lesson 01's config for the profile, with another model_name and output_dir.
    profile = get_profile("smoke")
    configs = [
        finetune.FinetuneConfig.for_profile(profile, model_name=start, output_dir=str(tmp_path / name))
        for name, start in (("pretrained", "dir/a"), ("random_init", "dir/b"))
    ]
    first, second = (dataclasses.asdict(config) for config in configs)
    assert {key for key in first if first[key] != second[key]} == {"model_name", "output_dir"}
    lesson = dataclasses.asdict(finetune.FinetuneConfig.for_profile(profile, output_dir=first["output_dir"]))
    assert {key for key in first if first[key] != lesson[key]} == {"model_name"}
