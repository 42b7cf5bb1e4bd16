"""Models onto the training device, and T5 v1.1's untied output layer (course_utils/models_and_data/models.py)."""

import json
import sys
from pathlib import Path

import pytest
import torch

from course_utils.machinery.memory import T5_BASE_PARAMETERS
from course_utils.models_and_data.models import (
    UNTIED_HEAD_NOTICE,
    load_model,
    publishes_tied_embeddings,
    seq2seq_from_config,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rehearsal"))
from hub_repos import PUBLISHED_CONFIGS, PUBLISHED_PARAMETERS  # noqa: E402


def test_loaded_models_go_to_the_training_device(monkeypatch):
    # The meta device stands in for a GPU: a model that lands there was moved by the loader.
    monkeypatch.setattr("course_utils.models_and_data.models.training_device", lambda: torch.device("meta"))
    model = load_model("standin:t5-small")
    assert {p.device.type for p in model.parameters()} == {"meta"}
    built = seq2seq_from_config("standin:t5-v1_1-base")
    assert {p.device.type for p in built.parameters()} == {"meta"}
    assert load_model("standin:t5-small", device="cpu").device.type == "cpu"


def test_t5_v1_1_base_is_built_with_its_untied_output_layer(tmp_path):
    folder = tmp_path / "t5-v1_1-base"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(PUBLISHED_CONFIGS["google/t5-v1_1-base"]))
    assert not publishes_tied_embeddings(str(folder))
    with torch.device("meta"):
        model = seq2seq_from_config(str(folder), device="meta")
    assert model.lm_head.weight is not model.shared.weight
    assert model.num_parameters() == PUBLISHED_PARAMETERS["google/t5-v1_1-base"] == 247_577_856
    # The course's memory rule (lab 00L, memory.rows_that_fit) is measured on this model, the one lesson 04 trains.
    assert model.num_parameters() == T5_BASE_PARAMETERS


def test_the_original_t5_stays_tied(tmp_path):
    folder = tmp_path / "t5-base"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(PUBLISHED_CONFIGS["t5-base"]))
    with torch.device("meta"):
        model = seq2seq_from_config(str(folder), device="meta")
    assert model.lm_head.weight is model.shared.weight and model.num_parameters() == 222_903_552


def test_save_and_reload_keep_the_output_layer_untied_and_intact(tmp_path, transformers_notices):
    torch.manual_seed(0)
    model = seq2seq_from_config("standin:t5-v1_1-base")
    assert model.lm_head.weight is not model.shared.weight
    assert float(model.lm_head.weight.detach().std()) == pytest.approx(1.0, rel=0.05)  # T5's init for an untied head
    model.save_pretrained(tmp_path)
    transformers_notices.clear()
    reloaded = load_model(str(tmp_path))
    assert not [
        n for n in transformers_notices if UNTIED_HEAD_NOTICE in n
    ]  # right, and so not worth a warning at every load
    assert reloaded.lm_head.weight is not reloaded.shared.weight
    assert reloaded.num_parameters() == model.num_parameters()
    expected = model.state_dict()
    for name, tensor in reloaded.state_dict().items():
        assert torch.equal(tensor, expected[name]), name
    assert seq2seq_from_config(str(tmp_path)).lm_head.weight is not None  # its config still says "untied"
    assert not publishes_tied_embeddings(str(tmp_path))
