"""Lesson 03's summaries: T5 with beam search, GPT-2 with TL;DR:, and their repetition measure.

Written by `python -m course_utils.export` from the cells marked #@save in
notebooks/03_cnn_dailymail_rouge.ipynb: edit them there, then rerun the command (tests/test_export.py checks it).
"""


import torch

from course_utils.generation import generate_in_order
from course_utils.rouge import newline_sentences

T5_PREFIX = "summarize: "
# T5 was pretrained and fine-tuned on 512-token inputs. transformers 5 no longer knows that for
# the original checkpoints, and a Hub tokenizer whose config omits model_max_length reports about
# 1e30, so truncating "at the tokenizer's length" would not truncate at all.
T5_MAX_SOURCE_LENGTH = 512
TLDR = " TL;DR:"  # GPT-2 learned from Reddit posts that a summary follows this


def summarize_t5(model, tokenizer, articles, max_new_tokens: int = 64, max_source_length: int = T5_MAX_SOURCE_LENGTH,
                 num_beams: int = 4, batch_size: int = 8, progress: bool = False, **generation) -> list[str]:
    """Beam-search summaries, one sentence per line; inputs cut at ``max_source_length`` tokens (T5's 512)."""

    def summarize(texts: list[str]) -> list[str]:
        batch = tokenizer([T5_PREFIX + text for text in texts], max_length=max_source_length, truncation=True,
                          padding=True, return_tensors="pt").to(model.device)
        with torch.no_grad():
            output = model.generate(**batch, max_new_tokens=max_new_tokens, num_beams=num_beams, do_sample=False,
                                    **generation)  # (batch, new tokens)
        return [newline_sentences(s) for s in tokenizer.batch_decode(output, skip_special_tokens=True)]

    model.eval()
    return generate_in_order(articles, batch_size, summarize, progress, desc="t5 summaries")


def gpt2_prompt(tokenizer, article: str, max_new_tokens: int, context: int) -> list[int]:
    """Token ids of ``article + " TL;DR:"``, the article cut so prompt and summary fit ``context``."""
    tldr = tokenizer(TLDR).input_ids
    budget = context - max_new_tokens - len(tldr)
    if budget < 1:
        raise ValueError(f"max_new_tokens={max_new_tokens} leaves no room for the article in a "
                         f"{context}-token context.")
    return tokenizer(article, verbose=False).input_ids[:budget] + tldr


def summarize_gpt2(model, tokenizer, articles, max_new_tokens: int = 64, batch_size: int = 8, progress: bool = False,
                   **generation) -> list[str]:
    """Greedy "TL;DR:" summaries, one sentence per line: the prompts padded on the left, the summary cut off
    by position."""
    eos = tokenizer.eos_token_id  # GPT-2 has no padding token: end-of-text pads, and the mask hides it
    context = model.config.n_positions  # 1,024 for GPT-2

    def summarize(texts: list[str]) -> list[str]:
        prompts = [gpt2_prompt(tokenizer, text, max_new_tokens, context) for text in texts]
        width = max(len(p) for p in prompts)
        input_ids = torch.tensor([[eos] * (width - len(p)) + p for p in prompts], device=model.device)
        attention_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=model.device)
        with torch.no_grad():
            output = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens,
                                    do_sample=False, num_beams=1, pad_token_id=eos, **generation)
        new_tokens = output[:, width:]  # (batch, width + new) -> the new tokens only
        return [newline_sentences(s.strip()) for s in tokenizer.batch_decode(new_tokens, skip_special_tokens=True)]

    model.eval()
    return generate_in_order(articles, batch_size, summarize, progress, desc="gpt-2 summaries")


def repeated_ngram_share(text: str, n: int = 3) -> float:
    """Share of a text's word n-grams that repeat an earlier one: 0 for none, near 1 for a loop."""
    words = text.split()
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    return 1 - len(set(grams)) / len(grams) if grams else 0.0
