"""Summaries from T5 ("summarize: ") and GPT-2 ("TL;DR:"), a Lead-3 baseline, and memory hygiene.

    t5_summaries = summarize_t5(model, tokenizer, articles, max_new_tokens=64)
    gpt2_summaries = summarize_gpt2(model, tokenizer, articles, max_new_tokens=64, no_repeat_ngram_size=3)
    baseline = [lead_sentences(a, 3) for a in articles]
    release_memory()                       # after `del model`: garbage-collect, empty the CUDA cache
    prepared = prepare_summarizer("standin:t5-small", WarmUp(4, 5e-3), cnn["train"], cache_dir())

Every summary comes back with one sentence per line, ready for rougeLsum.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .generation import generate_in_order, generation_settings
from .profiles import WarmUp
from .rouge import newline_sentences, split_sentences

T5_PREFIX = "summarize: "
# T5 was pretrained and fine-tuned on 512-token inputs. transformers 5 no longer knows that for
# the original checkpoints, and a Hub tokenizer whose config omits model_max_length reports about
# 1e30, so truncating "at the tokenizer's length" would not truncate at all.
T5_MAX_SOURCE_LENGTH = 512
TLDR = " TL;DR:"  # GPT-2 learned from Reddit posts that a summary follows this


def lead_sentences(article: str, count: int = 3) -> str:
    """The article's first ``count`` sentences, one per line: the Lead-3 baseline."""
    return "\n".join(split_sentences(article)[:count])


def summarize_t5(model, tokenizer, articles: Sequence[str], max_new_tokens: int = 64,
                 max_source_length: int = T5_MAX_SOURCE_LENGTH, num_beams: int = 4, batch_size: int = 8,
                 progress: bool = False, **generation) -> list[str]:
    """Beam-search summaries; inputs cut at ``max_source_length`` tokens (T5's 512)."""
    import torch

    settings = generation_settings(model, max_new_tokens=max_new_tokens, num_beams=num_beams,
                                   do_sample=False, **generation)
    device = next(model.parameters()).device
    model.eval()

    def run_batch(texts: list[str]) -> list[str]:
        batch = tokenizer([T5_PREFIX + t for t in texts], max_length=max_source_length, truncation=True,
                          padding=True, return_tensors="pt").to(device)
        with torch.no_grad():
            output = model.generate(**batch, generation_config=settings)
        return [newline_sentences(s) for s in tokenizer.batch_decode(output, skip_special_tokens=True)]

    return generate_in_order(articles, batch_size, run_batch, progress, desc="t5 summaries")


def gpt2_prompt(tokenizer, article: str, max_new_tokens: int, context: int) -> list[int]:
    """Token ids of ``article + " TL;DR:"``, the article cut so prompt and summary fit ``context``."""
    tldr = tokenizer(TLDR).input_ids
    budget = context - max_new_tokens - len(tldr)
    if budget < 1:
        raise ValueError(f"max_new_tokens={max_new_tokens} leaves no room for the article in a "
                         f"{context}-token context.")
    return tokenizer(article, verbose=False).input_ids[:budget] + tldr


def summarize_gpt2(model, tokenizer, articles: Sequence[str], max_new_tokens: int = 64, batch_size: int = 8,
                   progress: bool = False, **generation) -> list[str]:
    """Greedy "TL;DR:" summaries. Prompts are left-padded (pad = eos), so every prompt ends at the
    same position and the summary is cut off by position, not by searching the decoded text."""
    import torch

    eos = tokenizer.eos_token_id
    context = model.config.n_positions  # 1,024 for GPT-2
    settings = generation_settings(model, max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                                   pad_token_id=eos, **generation)
    device = next(model.parameters()).device
    model.eval()

    def run_batch(texts: list[str]) -> list[str]:
        prompts = [gpt2_prompt(tokenizer, t, max_new_tokens, context) for t in texts]
        width = max(len(p) for p in prompts)
        input_ids = torch.tensor([[eos] * (width - len(p)) + p for p in prompts], device=device)
        attention_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
        with torch.no_grad():
            output = model.generate(input_ids=input_ids, attention_mask=attention_mask,
                                    generation_config=settings)  # (batch, width + new tokens)
        summaries = tokenizer.batch_decode(output[:, width:], skip_special_tokens=True)
        return [newline_sentences(s.strip()) for s in summaries]

    return generate_in_order(articles, batch_size, run_batch, progress, desc="gpt-2 summaries")


def release_memory() -> dict[str, float]:
    """Collect garbage and return cached CUDA memory to the driver; report what is still held (GiB)."""
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        return {"cuda_allocated_gib": torch.cuda.memory_allocated() / 2**30,
                "cuda_reserved_gib": torch.cuda.memory_reserved() / 2**30}
    return {}


def repeated_ngram_share(text: str, n: int = 3) -> float:
    """Share of a text's word n-grams that repeat an earlier one: 0 for none, near 1 for a loop."""
    words = text.split()
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    return 1 - len(set(grams)) / len(grams) if grams else 0.0


@dataclass(frozen=True)
class PreparedSummarizer:
    """The model a lesson scores, and what its warm-up (if any) cost."""

    model_path: str                # Hub id, local folder or standin:<name>; a cache folder after a warm-up
    warmup: WarmUp | None          # None: the model is scored as it was loaded
    train_seconds: float = 0.0     # measured when the warm-up ran (kept from then when it is reused)
    final_loss: float | None = None
    reused: bool = False           # True: a finished warm-up with the same settings was found in the cache


def warmup_key(model_name: str, warmup: WarmUp, train_split, max_target_length: int, seed: int) -> str:
    """A short hash of everything a warm-up's result depends on, the training text included."""
    digest = hashlib.sha256()
    for part in (model_name, warmup, max_target_length, seed):
        digest.update(repr(part).encode())
    for article, highlights in zip(train_split["article"], train_split["highlights"], strict=True):
        digest.update(article.encode())
        digest.update(highlights.encode())
    return digest.hexdigest()[:16]


def prepare_summarizer(model_name: str, warmup: WarmUp | None, train_split, cache: str | os.PathLike,
                       max_target_length: int = 64, seed: int = 42, attn_implementation: str | None = None) -> PreparedSummarizer:
    """``model_name`` as it is (``warmup`` None), or fine-tuned on (article -> highlights) first.

    The smoke profile warms its random-weight stand-ins up this way, with lesson 01's trainer,
    so their summaries are worth scoring. The result is cached under
    ``cache/summarizers/<name>-<key>`` and reused when every setting and the training text
    match; a folder counts only once ``warmup.json`` has been written after the model.
    """
    if warmup is None:
        return PreparedSummarizer(model_name, None)
    from .models import resolve_model

    # The resolved path, not the name: a rebuilt stand-in (new tokenizer or weights) gets a new key.
    key = warmup_key(resolve_model(model_name), warmup, train_split, max_target_length, seed)
    folder = Path(cache) / "summarizers" / f"{model_name.replace('/', '_').replace(':', '_')}-{key}"
    record = folder / "warmup.json"
    if record.exists():
        figures = json.loads(record.read_text())
        return PreparedSummarizer(str(folder / "model"), warmup, figures["train_seconds"],
                                  figures["final_loss"], reused=True)
    result = _warm_up(model_name, warmup, train_split, folder, max_target_length, seed, attn_implementation)
    record.write_text(json.dumps({"train_seconds": result.train_seconds, "final_loss": result.final_loss}))
    return PreparedSummarizer(str(folder / "model"), warmup, result.train_seconds, result.final_loss)


def language_model_blocks(texts: Sequence[str], tokenizer, block_size: int) -> dict[str, list[list[int]]]:
    """Texts joined with end-of-text tokens and cut into full blocks: the usual causal-LM batches.

    The last, partial block is dropped (fewer than ``block_size`` tokens of the whole stream).
    """
    from .pretrain_data import raw_rows

    blocks = [row.tolist() for row in raw_rows(texts, tokenizer, block_size)]
    return {"input_ids": blocks, "labels": [list(b) for b in blocks]}


def _training_set(objective: str, train_split, tokenizer, max_target_length: int):
    from datasets import Dataset

    from .generation import tokenize_pairs

    if objective == "language_model":  # WarmUp has checked that it is one of the two
        return Dataset.from_dict(language_model_blocks(train_split["article"], tokenizer, block_size=256))
    return tokenize_pairs(train_split, tokenizer, "article", "highlights", T5_PREFIX,
                          T5_MAX_SOURCE_LENGTH, max_target_length)


def _warm_up(model_name, warmup, train_split, folder, max_target_length, seed, attn_implementation):
    from .finetune import FinetuneConfig, build_trainer, load_options, save, train
    from .models import load_causal_lm, load_seq2seq_model, load_tokenizer

    config = FinetuneConfig(model_name=model_name, output_dir=str(folder),
                            num_train_epochs=warmup.num_train_epochs, learning_rate=warmup.learning_rate,
                            per_device_batch_size=warmup.per_device_batch_size, seed=seed, logging_steps=10,
                            attn_implementation=attn_implementation)
    tokenizer = load_tokenizer(model_name)
    training_set = _training_set(warmup.objective, train_split, tokenizer, max_target_length)
    if warmup.objective == "language_model":
        tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token  # the collator asks; blocks are full
    loader = load_causal_lm if warmup.objective == "language_model" else load_seq2seq_model
    model = loader(model_name, **load_options(config))
    trainer = build_trainer(config, model, tokenizer, training_set)
    result = train(trainer)
    save(trainer, tokenizer, config.model_dir)
    return result


def summary_figures(summaries: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Mean ROUGE F (four types, stemmed), mean length in words and mean repeated-trigram share."""
    from .rouge import aggregate, score_pairs

    figures = aggregate(score_pairs(summaries, references))
    figures["words"] = sum(len(s.split()) for s in summaries) / len(summaries)
    figures["repeated_trigrams"] = sum(repeated_ngram_share(s) for s in summaries) / len(summaries)
    return figures
