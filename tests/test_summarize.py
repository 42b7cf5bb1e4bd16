"""Summarizers: prompt budgets, prompt cut by position, order kept, Lead-3, loop measure."""

import dataclasses
from pathlib import Path

import pytest

from course_utils.generation import length_sorted_batches
from course_utils.models import load_model, load_tokenizer
from course_utils.rouge import newline_sentences
from course_utils.summary_setup import (
    PreparedSummarizer,
    WarmUp,
    language_model_blocks,
    prepare_summarizer,
    warmup_key,
    warmup_trainer,
)
from course_utils.summarizers import TLDR, gpt2_prompt, repeated_ngram_share, summarize_gpt2


def test_lead_three_takes_the_first_three_sentences_one_per_line():
    article = "Dr. Lee spoke first. Then the mayor spoke. A vote followed. Nobody left early."
    assert newline_sentences(article, count=3) == "Dr. Lee spoke first.\nThen the mayor spoke.\nA vote followed."


def test_gpt2_prompt_fits_the_context_and_ends_with_tldr():
    tok = load_tokenizer("standin:gpt2")
    ids = gpt2_prompt(tok, "word " * 2000, max_new_tokens=64, context=1024)
    assert len(ids) + 64 == 1024 and ids[-len(tok(TLDR).input_ids) :] == tok(TLDR).input_ids
    with pytest.raises(ValueError, match="no room for the article"):
        gpt2_prompt(tok, "short", max_new_tokens=1024, context=1024)


def test_gpt2_summaries_keep_the_input_order_and_exclude_the_prompt():
    tok, model = load_tokenizer("standin:gpt2"), load_model("standin:gpt2")
    articles = ["A short one.", "A much longer article about the council budget vote. " * 5, "Mid length text here."]
    batched = summarize_gpt2(model, tok, articles, max_new_tokens=5, batch_size=3)
    alone = [summarize_gpt2(model, tok, [a], max_new_tokens=5)[0] for a in articles]
    assert batched == alone  # left padding does not change greedy outputs, order is kept
    assert not any("TL;DR" in s for s in batched)


def test_batches_are_longest_first_and_cover_every_index():
    batches = list(length_sorted_batches(["aa", "a", "aaaa", "aaa"], 3))
    assert batches == [[2, 3, 0], [1]]


def test_repeated_ngram_share_flags_loops():
    assert repeated_ngram_share("the cat sat on the mat") == 0.0
    # 12 words, 10 trigrams, 3 of them distinct: 7 of 10 repeat an earlier one
    assert repeated_ngram_share("i am here i am here i am here i am here") == pytest.approx(0.7)


def small_split(rows=8, text="The council met on Monday. It approved the budget."):
    from datasets import Dataset

    return Dataset.from_dict(
        {
            "article": [f"{text} Row {i}." for i in range(rows)],
            "highlights": [f"Budget approved {i}." for i in range(rows)],
        }
    )


def test_warmup_key_changes_with_every_setting_and_with_the_training_text():
    base = warmup_key("standin:t5-small", WarmUp(1.0, 1e-3), small_split(), 64, 42)
    assert base == warmup_key("standin:t5-small", WarmUp(1.0, 1e-3), small_split(), 64, 42)
    others = [
        warmup_key("standin:t5-base", WarmUp(1.0, 1e-3), small_split(), 64, 42),
        warmup_key("standin:t5-small", WarmUp(2.0, 1e-3), small_split(), 64, 42),
        warmup_key("standin:t5-small", WarmUp(1.0, 2e-3), small_split(), 64, 42),
        warmup_key("standin:t5-small", WarmUp(1.0, 1e-3, per_device_batch_size=8), small_split(), 64, 42),
        warmup_key("standin:t5-small", WarmUp(1.0, 1e-3), small_split(text="Other text."), 64, 42),
        warmup_key("standin:t5-small", WarmUp(1.0, 1e-3), small_split(), 32, 42),
        warmup_key("standin:t5-small", WarmUp(1.0, 1e-3), small_split(), 64, 7),
    ]
    assert len({base, *others}) == 1 + len(others)


def test_no_warmup_scores_the_model_as_it_is(tmp_path):
    prepared = prepare_summarizer("t5-small", None, small_split(), tmp_path)
    assert prepared == PreparedSummarizer("t5-small", None) and not any(tmp_path.iterdir())


def test_a_finished_warmup_is_reused_and_an_unfinished_one_is_not(tmp_path):
    warmup = WarmUp(num_train_epochs=1.0, learning_rate=1e-3, per_device_batch_size=4)
    first = prepare_summarizer("standin:t5-small", warmup, small_split(), tmp_path, attn_implementation="eager")
    assert not first.reused and first.train_seconds > 0 and first.final_loss > 0
    assert (Path(first.model_path) / "config.json").exists()
    again = prepare_summarizer("standin:t5-small", warmup, small_split(), tmp_path, attn_implementation="eager")
    assert again == dataclasses.replace(first, reused=True)
    (Path(first.model_path).parent / "warmup.json").unlink()  # as if the run had stopped before the end
    rerun = prepare_summarizer("standin:t5-small", warmup, small_split(), tmp_path, attn_implementation="eager")
    assert not rerun.reused and rerun.model_path == first.model_path


def test_language_model_blocks_cut_the_joined_stream_into_full_blocks():
    tok = load_tokenizer("standin:gpt2")
    texts = ["one two three", "four five", "six seven eight nine"]
    stream = [t for text in texts for t in tok(text).input_ids + [tok.eos_token_id]]
    blocks = language_model_blocks(texts, tok, block_size=4)
    assert blocks["input_ids"] == [stream[i : i + 4] for i in range(0, len(stream) - 3, 4)]
    assert list(blocks) == ["input_ids"] and len(stream) - 4 * len(blocks["input_ids"]) < 4


def test_the_gpt2_warmup_learns_its_blocks_as_labels_and_t5_its_highlights(tmp_path):
    from datasets import Dataset

    tok = load_tokenizer("standin:gpt2")
    blocks = Dataset.from_dict(language_model_blocks(["one two three four five six seven"] * 3, tok, block_size=4))
    model = load_model("standin:gpt2")
    trainer = warmup_trainer(model, tok, blocks, WarmUp(1.0, 1e-3, objective="language_model"), tmp_path)
    batch = trainer.data_collator([blocks[0], blocks[1]])
    assert batch["labels"].tolist() == batch["input_ids"].tolist() == blocks["input_ids"][:2]  # the model shifts
    t5_tok = load_tokenizer("standin:t5-small")
    pairs = [{"input_ids": [5, 6, 7, 1], "labels": [8, 1]}, {"input_ids": [5, 1], "labels": [9, 10, 11, 1]}]
    t5 = warmup_trainer(load_model("standin:t5-small"), t5_tok, pairs, WarmUp(1.0, 1e-3), tmp_path / "t5")
    padded = t5.data_collator(pairs)
    assert padded["labels"].tolist() == [[8, 1, -100, -100], [9, 10, 11, 1]]  # padding never counts in the loss


def test_the_gpt2_warmup_trains_without_library_notices(tmp_path, transformers_notices):
    from datasets import Dataset

    tok = load_tokenizer("standin:gpt2")
    blocks = Dataset.from_dict(language_model_blocks(["one two three four five six seven"] * 3, tok, block_size=4))
    model = load_model("standin:gpt2")
    assert model.loss_type == "ForCausalLM"  # named at load; transformers would guess it and say so
    warmup_trainer(model, tok, blocks, WarmUp(1.0, 1e-3, objective="language_model"), tmp_path).train()
    assert model.config.pad_token_id == model.generation_config.pad_token_id == tok.eos_token_id
    assert transformers_notices == []  # no "new PAD/BOS/EOS tokens", no "loss_type=None ... unrecognized"


def test_an_unknown_warmup_objective_is_named(tmp_path):
    with pytest.raises(ValueError, match="objective.*'translate'"):
        prepare_summarizer("standin:t5-small", WarmUp(1.0, 1e-3, objective="translate"), small_split(), tmp_path)


def test_the_cache_key_follows_the_resolved_model_so_a_rebuilt_standin_trains_again(tmp_path, monkeypatch):
    warmup = WarmUp(num_train_epochs=1.0, learning_rate=1e-3)
    from course_utils.models import resolve_model

    real = resolve_model("standin:t5-small")
    seen = []

    def fake_train(model_name, warmup, train_split, folder, *args):
        seen.append(folder.name)
        raise RuntimeError("stop here")

    monkeypatch.setattr("course_utils.summary_setup._warm_up", fake_train)
    for resolved in (real, real + "-rebuilt"):
        monkeypatch.setattr("course_utils.summary_setup.resolve_model", lambda name, cache=None, r=resolved: r)
        with pytest.raises(RuntimeError, match="stop here"):
            prepare_summarizer("standin:t5-small", warmup, small_split(), tmp_path)
    assert len(set(seen)) == 2 and all(name.startswith("standin_t5-small-") for name in seen)
