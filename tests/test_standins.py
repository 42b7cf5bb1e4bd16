"""Stand-in models: same architectures, T5's tokenizer conventions, saved and loaded by path."""

import json

import pytest
import torch
from transformers import (
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
    GPT2LMHeadModel,
    T5ForConditionalGeneration,
)

from course_utils.models import load_model, load_tokenizer, resolve_model
from course_utils.standins import STANDINS, ensure_standin


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("standin-cache")


@pytest.fixture(scope="module")
def paths(cache):
    return {name: ensure_standin(name, cache) for name in STANDINS}


def test_t5_standins_load_through_from_pretrained(paths):
    for name in ("t5-small", "t5-base", "t5-v1_1-base"):
        model = AutoModelForSeq2SeqLM.from_pretrained(paths[name])
        assert isinstance(model, T5ForConditionalGeneration) and model.config.model_type == "t5"
    small = AutoModelForSeq2SeqLM.from_pretrained(paths["t5-small"])
    base = AutoModelForSeq2SeqLM.from_pretrained(paths["t5-base"])
    assert base.num_parameters() > 2 * small.num_parameters()
    v11 = AutoModelForSeq2SeqLM.from_pretrained(paths["t5-v1_1-base"]).config
    assert v11.feed_forward_proj == "gated-gelu" and v11.scale_decoder_outputs is False
    assert AutoModelForSeq2SeqLM.from_pretrained(paths["t5-small"]).config.scale_decoder_outputs is True


def test_t5_tokenizer_keeps_t5_conventions(paths):
    tok = AutoTokenizer.from_pretrained(paths["t5-small"])
    assert (tok.pad_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2)
    assert tok.convert_tokens_to_ids("<extra_id_0>") == len(tok) - 1  # sentinels count down
    assert tok.convert_tokens_to_ids("<extra_id_99>") == len(tok) - 100
    ids = tok("The acting is not dull. <extra_id_0> ending").input_ids
    assert ids[-1] == tok.eos_token_id and tok.convert_tokens_to_ids("<extra_id_0>") in ids
    assert tok.decode(ids, skip_special_tokens=True).startswith("The acting is not dull.")
    config = json.loads((paths["t5-small"] / "config.json").read_text())
    assert config["vocab_size"] == len(tok) and config["decoder_start_token_id"] == 0


def test_gpt2_standin_loads_and_has_gpt2_special_tokens(paths):
    model = AutoModelForCausalLM.from_pretrained(paths["gpt2"])
    tok = AutoTokenizer.from_pretrained(paths["gpt2"])
    assert isinstance(model, GPT2LMHeadModel)
    assert tok.eos_token == "<|endoftext|>" and model.config.eos_token_id == tok.eos_token_id
    text = "The council approved the budget. TL;DR:"
    assert tok.decode(tok(text).input_ids) == text  # byte-level BPE round-trips exactly


def test_standins_train_a_step(paths):
    tok = AutoTokenizer.from_pretrained(paths["t5-small"])
    model = AutoModelForSeq2SeqLM.from_pretrained(paths["t5-small"])
    batch = tok(["sentiment: a superb film"], text_target=["positive"], return_tensors="pt")
    out = model(**batch)
    out.loss.backward()
    by_hand = torch.nn.functional.cross_entropy(out.logits.flatten(0, 1), batch["labels"].flatten())
    assert torch.allclose(out.loss, by_hand)  # the mean token cross-entropy of the answer
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_built_once_then_reused(cache, paths):
    stamp = (paths["t5-small"] / "model.safetensors").stat().st_mtime_ns
    assert ensure_standin("t5-small", cache) == paths["t5-small"]
    assert (paths["t5-small"] / "model.safetensors").stat().st_mtime_ns == stamp
    assert not [p for p in (cache / "standins").iterdir() if p.name.startswith(".")]  # no leftovers


def test_builds_are_reproducible(tmp_path, paths):
    again = ensure_standin("t5-small", tmp_path)
    assert again.name == paths["t5-small"].name
    assert (again / "tokenizer.json").read_bytes() == (paths["t5-small"] / "tokenizer.json").read_bytes()
    a = AutoModelForSeq2SeqLM.from_pretrained(again).state_dict()
    b = AutoModelForSeq2SeqLM.from_pretrained(paths["t5-small"]).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_resolve_model_passes_hub_names_through_and_rejects_unknown_standins(monkeypatch, cache, paths):
    assert resolve_model("t5-small") == "t5-small"
    monkeypatch.setenv("COURSE_CACHE_DIR", str(cache))
    assert resolve_model("standin:t5-base") == str(paths["t5-base"])
    assert type(load_tokenizer("standin:t5-base")).__name__ == "T5Tokenizer"
    loaded = load_model("standin:t5-base")
    assert loaded.num_parameters() == type(loaded)(loaded.config).num_parameters()  # every weight of its config
    with pytest.raises(ValueError, match="No stand-in called 'llama'"):
        resolve_model("standin:llama")


def test_building_does_not_touch_the_global_random_state(tmp_path):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    ensure_standin("gpt2", tmp_path)
    assert torch.equal(torch.rand(3), expected)
