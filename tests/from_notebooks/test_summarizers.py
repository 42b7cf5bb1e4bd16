"""Summarizers: prompt budgets, prompt cut by position, order kept, Lead-3, loop measure."""

import pytest
import torch

from course_utils.from_notebooks.summarizers import TLDR, gpt2_prompt, repeated_ngram_share, summarize_gpt2
from course_utils.machinery.generation import length_sorted_batches
from course_utils.machinery.rouge import newline_sentences
from course_utils.models_and_data.models import (
    load_model,
    load_tokenizer,
)


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


def test_t5_summaries_truncate_at_512_even_when_the_tokenizer_knows_no_limit():
    from course_utils.from_notebooks.summarizers import summarize_t5

    tokenizer = load_tokenizer("standin:t5-small")
    tokenizer.model_max_length = int(1e30)  # what a Hub tokenizer without the setting reports
    model = load_model("standin:t5-small")
    seen = []
    model.generate = lambda input_ids, attention_mask, **settings: seen.append(input_ids.shape) or input_ids[:, :3]
    summarize_t5(model, tokenizer, ["word " * 3000, "short article"], max_new_tokens=4, batch_size=2)
    assert seen == [torch.Size([2, 512])]
