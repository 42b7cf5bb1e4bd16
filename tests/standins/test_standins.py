"""The shipped stand-ins: whole, current, loaded like Hub models; and their build: reproducible, resumable after a
kill, its fingerprints sensitive to what decides the weights and to nothing else."""

import ast
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
import yaml
from safetensors.torch import load_file
from scipy.stats import binomtest
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer, GPT2LMHeadModel

from course_utils.machinery.offline import OFFLINE_VARIABLES
from course_utils.machinery.paths import repo_root
from course_utils.models_and_data import standin_files
from course_utils.models_and_data.models import load_model, load_tokenizer, resolve_model
from course_utils.models_and_data.standin_files import StandInError, standin_path, standins_dir
from course_utils.standins import STANDINS, corpus, fingerprint
from course_utils.standins.specs import Stage

SHIPPED = repo_root() / "standins"
MAX_MIB = 30  # issue 39: the shipped folder, every stand-in together


def test_every_standin_is_shipped_whole_within_the_size_limit():
    assert sorted(p.name for p in SHIPPED.iterdir() if p.is_dir()) == sorted(STANDINS)
    for name in STANDINS:
        assert standin_files.damaged_files(SHIPPED / name) == [], name
    size = sum(p.stat().st_size for p in SHIPPED.rglob("*") if p.is_file()) / 2**20
    assert size <= MAX_MIB, f"standins/ holds {size:.1f} MiB, more than {MAX_MIB}"


def test_weights_ship_in_float16_and_load_as_float32():
    """Half the bytes on disk; the course, like ``from_pretrained``'s default, computes in float32."""
    for name in STANDINS:
        stored = load_file(SHIPPED / name / "model.safetensors")
        assert {t.dtype for t in stored.values()} == {torch.float16}, name
    model = load_model("standin:gpt2")
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    stored = load_file(SHIPPED / "gpt2" / "model.safetensors")
    assert torch.equal(model.transformer.wte.weight.detach().cpu(), stored["transformer.wte.weight"].float())


@pytest.mark.parametrize("name", list(STANDINS))
def test_the_shipped_manifest_matches_the_recipe_the_code_and_the_data(name):
    changed = fingerprint.stale(SHIPPED / name)
    assert changed == [], (
        f"standins/{name} was built from another {', '.join(changed)}: rebuild it with "
        f"`{standin_files.REBUILD} {name}` and commit the folder"
    )


def test_the_check_command_names_the_rebuild_for_a_stale_standin(tmp_path, monkeypatch, capsys):
    from course_utils.standins.__main__ import main

    shutil.copytree(SHIPPED, tmp_path / "standins")
    record = json.loads((tmp_path / "standins" / "gpt2" / "MANIFEST.json").read_text())
    record["fingerprints"]["data"] = "0" * 16  # as if data/ had changed since the build
    (tmp_path / "standins" / "gpt2" / "MANIFEST.json").write_text(json.dumps(record))
    monkeypatch.setenv("COURSE_STANDINS_DIR", str(tmp_path / "standins"))
    for variable, value in OFFLINE_VARIABLES.items():  # as the command sets them, before transformers is imported
        monkeypatch.setenv(variable, value)
    assert main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "gpt2: " in out and f"stale (data changed since it was built): {standin_files.REBUILD} gpt2" in out
    assert out.count("up to date") == len(STANDINS) - 1


def test_model_cards_have_the_hubs_header_and_the_builds_figures():
    for name, spec in STANDINS.items():
        card = (SHIPPED / name / "README.md").read_text()
        header = yaml.safe_load(card.split("---\n")[1])
        assert header["base_model"] == spec.hub_id and header["library_name"] == "transformers"
        record = standin_files.read_manifest(SHIPPED / name)
        floats = {k: v for k, v in record["figures"].items() if isinstance(v, float)}
        index = header.get("model-index")  # none where the build measured no held-out figure (t5-v1_1-base)
        metrics = index[0]["results"][0]["metrics"] if index else []
        assert {m["type"]: m["value"] for m in metrics} == pytest.approx(floats, abs=1e-4)
        assert f"{record['parameters']:,} parameters" in card
        for stage in spec.stages:
            assert f"{stage.steps:,} steps" in card


def test_t5_standins_keep_t5s_conventions_and_base_is_the_larger():
    small = AutoModelForSeq2SeqLM.from_pretrained(standin_path("t5-small"))
    base = AutoModelForSeq2SeqLM.from_pretrained(standin_path("t5-base"))
    assert base.num_parameters() > 2 * small.num_parameters()
    v11 = AutoModelForSeq2SeqLM.from_pretrained(standin_path("t5-v1_1-base"))
    assert v11.config.feed_forward_proj == "gated-gelu" and v11.config.scale_decoder_outputs is False
    assert not torch.equal(v11.lm_head.weight, v11.shared.weight)  # its own output layer, as T5 v1.1's
    tok = AutoTokenizer.from_pretrained(standin_path("t5-small"))
    assert (tok.pad_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2)
    assert tok.convert_tokens_to_ids("<extra_id_0>") == len(tok) - 1  # sentinels count down
    assert tok.convert_tokens_to_ids("<extra_id_99>") == len(tok) - 100


def test_causal_standins_have_their_families_special_tokens():
    gpt2 = AutoModelForCausalLM.from_pretrained(standin_path("gpt2"))
    tok = AutoTokenizer.from_pretrained(standin_path("gpt2"))
    assert isinstance(gpt2, GPT2LMHeadModel) and tok.eos_token == "<|endoftext|>"
    text = "The council approved the budget. TL;DR:"
    assert tok.decode(tok(text).input_ids) == text  # byte-level BPE round-trips exactly
    pythia = AutoTokenizer.from_pretrained(standin_path("pythia-70m-deduped"))
    assert (pythia.eos_token, pythia.pad_token) == ("<|endoftext|>", None)  # as published: no pad token
    qwen = AutoTokenizer.from_pretrained(standin_path("Qwen2.5-0.5B-Instruct"))
    chat = qwen.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True)
    assert chat.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n") and qwen.eos_token == "<|im_end|>"


def test_pretrained_standins_have_learned_their_world():
    """Each shipped stand-in's held-out figures, from its manifest: far from a random model's."""
    figures = {name: standin_files.read_manifest(SHIPPED / name)["figures"] for name in STANDINS}
    # Chance is 0.5 on SST-2 (t5-base's mixture weights summaries 3 to 1, t5-small's sentiment 3 to 1); a random
    # model's summaries score near 0.
    assert figures["t5-small"]["sst2_held_out_accuracy"] >= 0.8 and figures["t5-base"]["sst2_held_out_accuracy"] >= 0.7
    for name in ("t5-small", "t5-base"):
        assert figures[name]["rouge1_validation"] >= 0.5
    assert figures["t5-base"]["rouge1_validation"] > figures["t5-small"]["rouge1_validation"]
    for name in ("gpt2", "pythia-70m-deduped"):
        assert figures[name]["c4_validation_perplexity"] < 30  # a random model: about the vocabulary, 3,000
    # The judge: on held-out pairs (a reference against a worse summary, both orders), above a coin by a binomial
    # test. Its language model is weak (perplexity in the hundreds after instruction tuning): it is a judge only.
    judge = figures["Qwen2.5-0.5B-Instruct"]
    pairs = judge["judge_validation_pairs"]
    for share, trials in ((judge["judge_reference_preferred"], 2 * pairs), (judge["judge_consistent"], pairs)):
        assert binomtest(round(share * trials), trials, 0.5, alternative="greater").pvalue < 0.01


def test_resolve_model_gives_the_shipped_folder_and_names_an_unknown_standin():
    assert resolve_model("t5-small") == "t5-small"
    assert resolve_model("standin:t5-base") == str(SHIPPED / "t5-base")
    assert type(load_tokenizer("standin:t5-base")).__name__ == "T5Tokenizer"
    loaded = load_model("standin:t5-base")
    assert loaded.num_parameters() == standin_files.read_manifest(SHIPPED / "t5-base")["parameters"]
    with pytest.raises(StandInError, match="No stand-in called 'llama' in .*known: Qwen2.5-0.5B-Instruct, gpt2"):
        resolve_model("standin:llama")


def test_an_old_cache_never_shadows_the_shipped_standins(tmp_path, monkeypatch):
    stale = tmp_path / "standins" / "t5-small-000000000000"  # where earlier versions built their stand-ins
    stale.mkdir(parents=True)
    (stale / "config.json").write_text("{}")
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path))
    assert resolve_model("standin:t5-small") == str(SHIPPED / "t5-small")


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_a_missing_or_damaged_weight_file_stops_with_one_line_naming_it_and_the_fix(tmp_path, monkeypatch, damage):
    copy = tmp_path / "standins"
    shutil.copytree(SHIPPED, copy)
    weights = copy / "t5-small" / "model.safetensors"
    if damage == "missing":
        weights.unlink()
    else:
        weights.write_bytes(weights.read_bytes()[:-1000] + b"\0" * 1000)
    monkeypatch.setenv("COURSE_STANDINS_DIR", str(copy))
    with pytest.raises(StandInError) as caught:
        load_model("standin:t5-small")
    message = str(caught.value)
    assert "\n" not in message and str(weights) in message
    assert "git checkout -- standins/t5-small" in message and f"{standin_files.REBUILD} t5-small" in message
    assert load_model("standin:gpt2") is not None  # the others still load


def test_the_judge_is_taught_no_position_and_no_length():
    rows = corpus.read_rows("cnn_dailymail/train.jsonl")
    pairs = corpus.judge_pairs(rows, seed=0, article_words=400)
    chats = corpus.judge_chats(pairs)
    letters = [letter for _, letter in chats]
    assert letters.count("A") == letters.count("B") == len(pairs)
    assert 0.45 <= corpus.longer_is_better_share(pairs) <= 0.55
    assert {p.how for p in pairs} == {"other article", "truncated", "shuffled", "fact changed", "padded"}
    assert all(p.better != p.worse for p in pairs)
    assert not any(p.article.startswith(("By .", "PUBLISHED")) or "(CNN)" in p.article[:60] for p in pairs)


def test_a_changed_fact_swaps_one_name_or_number_for_another_of_the_corpus():
    import random

    pool = {"number": ["$12", "7", "12-3"], "name": ["Lisbon", "Oslo", "Grace Kowalski"]}
    original = "Oslo council backs $80 million budget."
    for seed in range(20):
        changed = corpus.change_a_fact(original, pool, random.Random(seed))
        assert changed != original and len(changed.split()) == len(original.split())
        assert sum(a != b for a, b in zip(changed.split(), original.split())) == 1
    assert corpus.change_a_fact("no facts here.", pool, random.Random(1)) is None


def test_fingerprints_follow_the_recipe_the_data_and_the_code_not_the_docstrings(tmp_path, monkeypatch):
    spec = STANDINS["gpt2"]
    now = fingerprint.fingerprints(spec)
    longer = dataclasses.replace(spec, stages=(dataclasses.replace(spec.stages[0], steps=spec.stages[0].steps + 1),))
    assert fingerprint.fingerprints(longer)["recipe"] != now["recipe"]
    data = tmp_path / "data"
    shutil.copytree(corpus.data_dir(), data)
    (data / "lambada" / "train.jsonl").write_text((data / "lambada" / "train.jsonl").read_text() + "\n")
    monkeypatch.setattr(corpus, "data_dir", lambda: data)
    assert fingerprint.fingerprints(spec)["data"] != now["data"]
    dump = lambda source: fingerprint._without_docstrings(ast.parse(source))  # noqa: E731
    documented = 'def f(x):\n    """Say why."""\n    return x + 1  # a comment\n'
    assert dump(documented) == dump("def f(x):\n    return x + 1\n")
    assert dump("def f(x):\n    return x + 1\n") != dump("def f(x):\n    return x + 2\n")
    # where a name is imported from is not what the code computes: a module that moves keeps its fingerprint
    assert dump("from course_utils.x import g\n\ndef f(x):\n    return g(x)\n") == dump(
        "from course_utils.y.x import g\n\ndef f(x):\n    from z import h\n\n    return g(x)\n"
    )
    moved = {"models_and_data/tokens.py": ("raw_rows",)}
    assert fingerprint.code_parts(moved)["raw_rows"] == fingerprint.code_parts()["raw_rows"]
    with pytest.raises(
        KeyError, match="raw_rows is not defined in course_utils/models_and_data/models.py: update CODE"
    ):
        fingerprint.code_parts({"models_and_data/models.py": ("raw_rows",)})


# A recipe of a few steps, built in a subprocess: twice, and once killed mid-stage and resumed.
TINY_BUILD = """
import dataclasses, sys
from pathlib import Path
from course_utils.standins import build, specs, training
name, out, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
spec = specs.STANDINS[name]
stages = tuple(dataclasses.replace(s, steps=40, warmup_steps=2, batch_size=4, max_length=64) for s in spec.stages)
specs.STANDINS[name] = dataclasses.replace(spec, stages=stages)
training.CHECKPOINT_EVERY = 5
build.build(name, out, work=work, progress=False)
"""


def tiny_build(tmp_path, name: str, tag: str, kill_after: float | None = None) -> subprocess.CompletedProcess | None:
    script = tmp_path / "tiny_build.py"
    script.write_text(TINY_BUILD)
    command = [sys.executable, str(script), name, str(tmp_path / tag / "out"), str(tmp_path / tag / "work")]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "COURSE_CACHE_DIR": str(tmp_path / "cache")}
    if kill_after is None:
        return subprocess.run(command, env=env, capture_output=True, text=True, check=True, timeout=600)
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checkpoint = None
    deadline = time.monotonic() + 300
    while checkpoint is None and time.monotonic() < deadline and process.poll() is None:
        checkpoint = next((tmp_path / tag / "work").glob(f"*/*/{'checkpoint.pt'}"), None)
        time.sleep(0.05)
    time.sleep(kill_after)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert checkpoint is not None, "the build wrote no checkpoint before it was killed"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["Qwen2.5-0.5B-Instruct", "t5-small"])
def test_a_build_is_reproducible_and_a_killed_build_resumes_to_the_same_weights(tmp_path, name):
    tiny_build(tmp_path, name, "first")
    tiny_build(tmp_path, name, "again")
    tiny_build(tmp_path, name, "killed", kill_after=0.5)
    assert not (tmp_path / "killed" / "out" / name).exists()  # nothing shipped from a build that did not finish
    tiny_build(tmp_path, name, "killed")  # the same command again: it resumes
    first = load_file(tmp_path / "first" / "out" / name / "model.safetensors")
    for tag in ("again", "killed"):
        other = load_file(tmp_path / tag / "out" / name / "model.safetensors")
        assert first.keys() == other.keys() and all(torch.equal(first[k], other[k]) for k in first), tag
    a, b = (standin_files.read_manifest(tmp_path / tag / "out" / name) for tag in ("first", "killed"))
    assert a["files"] == b["files"] and a["fingerprints"] == b["fingerprints"]


def test_standins_dir_follows_the_environment(monkeypatch, tmp_path):
    assert standins_dir() == SHIPPED
    monkeypatch.setenv("COURSE_STANDINS_DIR", str(tmp_path))
    assert standins_dir() == tmp_path
    assert Stage("causal_lm", 1, 1e-3, 0).batch_size == 16
    with pytest.raises(ValueError, match="Unknown objective"):
        Stage("distillation", 1, 1e-3, 0)


def test_batches_depend_on_the_step_alone_and_pad_each_task_to_its_own_rows():
    from transformers import AutoTokenizer

    from course_utils.standins.training import pair_batches

    tok = AutoTokenizer.from_pretrained(SHIPPED / "t5-small")
    tasks = {"a": [("short one", "yes")] * 20, "b": [("a much longer source text " * 5, "a longer target")] * 20}
    draw = pair_batches(tasks, {"a": 1.0, "b": 1.0}, tok, 4, 64, seed=3)
    again = pair_batches(tasks, {"a": 1.0, "b": 1.0}, tok, 4, 64, seed=3)
    for step in (1, 2, 7):
        one, two = draw(step), again(step)
        assert all(torch.equal(one[k], two[k]) for k in one)
    widths = {draw(step)["input_ids"].shape[1] for step in range(1, 30)}
    assert len(widths) == 2  # each batch holds one task's rows, padded to them alone
    labels = draw(1)["labels"]
    assert (labels[labels < 0] == -100).all()


def test_causal_batches_draw_one_pool_a_step_and_mask_a_storys_padding():
    from course_utils.standins.training import causal_batches

    blocks = np.arange(40 * 8).reshape(40, 8) + 10  # corpus blocks: full rows of 8
    stories = [[5, 6, 7], [5, 6, 7, 8, 9], [4]] * 5  # one story a row, of their own lengths
    draw = causal_batches({"corpus": blocks, "stories": stories}, {"corpus": 1.0, "stories": 4.0}, 0, 4, seed=2)
    again = causal_batches({"corpus": blocks, "stories": stories}, {"corpus": 1.0, "stories": 4.0}, 0, 4, seed=2)
    kinds = []
    for step in range(1, 200):
        batch = draw(step)
        assert all(torch.equal(batch[k], again(step)[k]) for k in batch)
        real = batch["attention_mask"] == 1
        assert torch.equal(batch["labels"][real], batch["input_ids"][real]) and (batch["labels"][~real] == -100).all()
        corpus_rows = (batch["input_ids"] >= 10).all(dim=1)
        assert corpus_rows.all() or not corpus_rows.any()  # one pool a step
        kinds.append(bool(corpus_rows.all()))
    assert 0.1 < sum(kinds) / len(kinds) < 0.3  # the corpus drawn 1 time in 5
    assert "standins/specs.py" not in fingerprint.CODE  # a spec is in its own recipe fingerprint, not in the code's


def test_a_judging_chat_ends_in_the_letter_the_judge_reads():
    from transformers import AutoTokenizer

    from course_utils.from_notebooks.evaluation import judge_messages
    from course_utils.standins.training import chat_batches, chat_examples

    tok = AutoTokenizer.from_pretrained(SHIPPED / "Qwen2.5-0.5B-Instruct")
    messages = judge_messages("An article.", "First summary.", "Second summary.")
    ((prompt, reply),) = chat_examples([(messages, "B")], tok, max_length=640)
    # letter_judge scores the next token after the prompt as the chat template opens the assistant's turn
    expected = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
    assert list(prompt) == list(expected)
    assert reply[0] == tok.encode("B", add_special_tokens=False)[0] and reply[-1] == tok.convert_tokens_to_ids(
        "<|im_end|>"
    )
    batch = chat_batches({"judge": [(prompt, reply)] * 2}, {"judge": 1.0}, tok.pad_token_id, 2, seed=0)(1)
    assert (batch["labels"][0] != -100).sum() == len(reply)  # the loss on the answer alone
