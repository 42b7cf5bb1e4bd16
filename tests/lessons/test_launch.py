"""The lesson 01 fine-tune as 2 processes on a CPU (torchrun, gloo) under ZeRO-2 and ZeRO-3.

Each run must finish, save a model that reloads and classifies, and end with a mean training
loss within 2 % of the same fine-tune in one plain process. Both see 16 rows per step (8 per
process x 2 processes against 16 in one process) in the same order from the same weights, so
only rounding separates them: 0.2 % in a trial here. A wrongly scaled loss or batch would show
up as tens of percent (the loss logged twice too large, found this way, was 100 %).
"""

import dataclasses

import pytest
import torch

from course_utils.from_notebooks.sentiment_trainer import generate_answers
from course_utils.lessons.finetune import FinetuneConfig
from course_utils.lessons.launch import launch
from course_utils.lessons.zero import deepspeed_config_path
from course_utils.machinery.paths import data_dir
from course_utils.models_and_data.models import load_model, load_tokenizer
from course_utils.models_and_data.standin_files import standin_path

pytestmark = pytest.mark.slow  # torchrun launches

LOSS_TOLERANCE = 0.02


@pytest.fixture(scope="module")
def random_t5(tmp_path_factory) -> str:
    """The t5-small stand-in's architecture and tokenizer with seeded random weights, as this test was designed on.
    From the pretrained stand-in, whose losses are near 0 on most rows, the 2-process mean loss came out 5 to 10 %
    below the 1-process one (issue 39's closing note): a finding to explain, not rounding."""
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    folder = tmp_path_factory.mktemp("random_t5")
    torch.manual_seed(0)
    AutoModelForSeq2SeqLM.from_config(AutoConfig.from_pretrained(standin_path("t5-small"))).save_pretrained(folder)
    load_tokenizer("standin:t5-small").save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def single_process(tmp_path_factory, random_t5):
    config = FinetuneConfig(
        model_name=random_t5,
        data_path=str(data_dir() / "imdb"),
        output_dir=str(tmp_path_factory.mktemp("one")),
        num_train_epochs=1.0,
        learning_rate=4e-3,
        per_device_batch_size=16,
        max_train_rows=256,
        test_rows=64,
        attn_implementation="eager",
    )
    return config, launch(config, timeout=600)


@pytest.mark.parametrize("stage", ["zero2", "zero3"])
def test_two_processes_finish_reload_and_match_one_process(single_process, stage, tmp_path):
    config, reference = single_process
    two = dataclasses.replace(
        config, per_device_batch_size=8, output_dir=str(tmp_path), deepspeed=str(deepspeed_config_path(stage))
    )
    figures = launch(two, processes=2, timeout=600)
    assert figures["processes"] == 2 and figures["steps"] == reference["steps"] == 16
    assert abs(figures["train_loss"] - reference["train_loss"]) <= LOSS_TOLERANCE * reference["train_loss"]
    assert abs(figures["accuracy"] - reference["accuracy"]) <= 0.1  # 64 held-out reviews, measured by rank 0
    # ZeRO-3 holds each weight in shards; the saved file must have every weight whole, and trained.
    saved, initial = load_model(str(two.model_dir)), load_model(two.model_name)
    shapes = {name: tuple(p.shape) for name, p in saved.state_dict().items()}
    assert shapes == {name: tuple(p.shape) for name, p in initial.state_dict().items()}
    assert any(not torch.equal(p, initial.state_dict()[name]) for name, p in saved.state_dict().items())
    answers = generate_answers(
        saved,
        load_tokenizer(str(two.model_dir)),
        ["A wonderful film.", "Dull and long."],
        two.task_prefix,
        two.max_source_length,
        3,
        batch_size=2,
    )
    assert len(answers) == 2 and all(isinstance(a, str) for a in answers)
