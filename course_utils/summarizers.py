"""The code of lesson 03 · Summarize news with T5 and GPT-2, and score the summaries with ROUGE

Written by `python tools/export.py` from the cells marked #@save in
notebooks/03_cnn_dailymail_rouge.ipynb: edit them there, then rerun the command (tests/test_export.py checks it).
"""

import re

import torch

from course_utils.generation import generate_in_order
from course_utils.rouge import newline_sentences


T5_PREFIX = "summarize: "
# T5 was pretrained and fine-tuned on 512-token inputs. transformers 5 no longer knows that for
# the original checkpoints, and a Hub tokenizer whose config omits model_max_length reports about
# 1e30, so truncating "at the tokenizer's length" would not truncate at all.
T5_MAX_SOURCE_LENGTH = 512


def summarize_t5(
    model,
    tokenizer,
    articles,
    max_new_tokens: int = 64,
    max_source_length: int = T5_MAX_SOURCE_LENGTH,
    num_beams: int = 4,
    batch_size: int = 8,
    progress: bool = False,
    **generation,
) -> list[str]:
    """Beam-search summaries, one sentence per line; inputs cut at ``max_source_length`` tokens (T5's 512).

    Defined in notebooks/03_cnn_dailymail_rouge.ipynb, section "Writing the summaries".
    """

    def summarize(texts: list[str]) -> list[str]:
        batch = tokenizer(
            [T5_PREFIX + text for text in texts],
            max_length=max_source_length,
            truncation=True,
            padding=True,
            return_tensors="pt",
        ).to(model.device)
        with torch.no_grad():
            output = model.generate(
                **batch, max_new_tokens=max_new_tokens, num_beams=num_beams, do_sample=False, **generation
            )  # (batch, new tokens)
        return [newline_sentences(s) for s in tokenizer.batch_decode(output, skip_special_tokens=True)]

    model.eval()
    return generate_in_order(articles, batch_size, summarize, progress, desc="t5 summaries")


TLDR = " TL;DR:"  # GPT-2 learned from Reddit posts that a summary follows this


def gpt2_prompt(tokenizer, article: str, max_new_tokens: int, context: int) -> list[int]:
    """Token ids of ``article + " TL;DR:"``, the article cut so prompt and summary fit ``context``.

    Defined in notebooks/03_cnn_dailymail_rouge.ipynb, section "Writing the summaries".
    """
    tldr = tokenizer(TLDR).input_ids
    budget = context - max_new_tokens - len(tldr)
    if budget < 1:
        raise ValueError(
            f"max_new_tokens={max_new_tokens} leaves no room for the article in a {context}-token context."
        )
    return tokenizer(article, verbose=False).input_ids[:budget] + tldr


def summarize_gpt2(
    model, tokenizer, articles, max_new_tokens: int = 64, batch_size: int = 8, progress: bool = False, **generation
) -> list[str]:
    """Greedy "TL;DR:" summaries, one sentence per line: the prompts padded on the left, the summary cut off
    by position.

    Defined in notebooks/03_cnn_dailymail_rouge.ipynb, section "Writing the summaries".
    """
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token  # GPT-2 has none: end-of-text pads
    context = model.config.n_positions  # 1,024 for GPT-2

    def summarize(texts: list[str]) -> list[str]:
        prompts = [gpt2_prompt(tokenizer, text, max_new_tokens, context) for text in texts]
        batch = tokenizer.pad({"input_ids": prompts}, padding=True, padding_side="left", return_tensors="pt")
        batch = batch.to(model.device)  # input_ids and attention_mask: (batch, width), padding first
        with torch.no_grad():
            output = model.generate(
                **batch,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                num_beams=1,
                pad_token_id=tokenizer.pad_token_id,
                **generation,
            )
        width = batch["input_ids"].shape[1]
        new_tokens = output[:, width:]  # (batch, width + new) -> the new tokens only
        return [newline_sentences(s.strip()) for s in tokenizer.batch_decode(new_tokens, skip_special_tokens=True)]

    model.eval()
    return generate_in_order(articles, batch_size, summarize, progress, desc="gpt-2 summaries")


def repeated_ngram_share(text: str, n: int = 3) -> float:
    """Share of a text's word n-grams that repeat an earlier one: 0 for none, near 1 for a loop.

    Defined in notebooks/03_cnn_dailymail_rouge.ipynb, section "GPT-2 with "TL;DR:"".
    """
    words = text.split()
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return 1 - len(set(grams)) / len(grams) if grams else 0.0


# What precedes the story in CNN/DailyMail's articles, each piece at the start of the text:
#   By . Daily Mail Reporter . PUBLISHED: . 14:11 EST, 25 October 2013 . | . UPDATED: . 15:20 EST, 25 October 2013 .
#   Last updated at 7:17 PM on 15th November 2011 .      Scroll down for video .      LONDON, England (CNN) --
BOILERPLATE = re.compile(
    r"\s*(?:By \. [^.]{1,100}? \. "  # By . Daily Mail Reporter .
    r"|(?:PUBLISHED|UPDATED): \. [^.|]{1,60}? \. "  # PUBLISHED: . 14:11 EST, 25 October 2013 .
    r"|\| \. "  # | .
    r"|Last updated at [^.]{1,60}? \. "
    r"|Scroll down for video \. "
    r"|(?:[A-Z][\w.,'’ -]{0,60} )?\(CNN\)\s*(?:--\s*)?)"
)  # LONDON, England (CNN) --


def strip_boilerplate(article: str) -> str:
    """``article`` without the byline, timestamps and dateline that precede its first sentence.

    Defined in notebooks/03_cnn_dailymail_rouge.ipynb, section "Lead-3: the baseline every summarizer must beat".
    """
    while match := BOILERPLATE.match(article):
        article = article[match.end() :]
    return article


def lead_3(article: str) -> str:
    """The Lead-3 baseline: the first three sentences of the story, one per line.

    Defined in notebooks/03_cnn_dailymail_rouge.ipynb, section "Lead-3: the baseline every summarizer must beat".
    """
    return newline_sentences(strip_boilerplate(article), count=3)
