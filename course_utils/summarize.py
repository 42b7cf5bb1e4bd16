"""Summaries from T5 ("summarize: ") and GPT-2 ("TL;DR:"), a Lead-3 baseline, and memory hygiene.

    config = summary_config(profile)                  # lesson 03's settings: profile.summaries applied
    runs = generate_summaries("t5-small", "t5", articles, {"beam 4": {}}, max_new_tokens=80)
    t5_summaries = summarize_t5(model, tokenizer, articles, max_new_tokens=64)
    gpt2_summaries = summarize_gpt2(model, tokenizer, articles, max_new_tokens=64, no_repeat_ngram_size=3)
    baseline = [lead_sentences(a, 3) for a in articles]
    release_memory()                       # after `del model`: garbage-collect, empty the CUDA cache
    prepared = prepare_summarizer("standin:t5-small", WarmUp(4, 5e-3), cnn["train"], cache_dir())
    trainer = warmup_trainer(model, tokenizer, training_set, warmup, output_dir)   # what prepare_summarizer runs

Every summary comes back with one sentence per line, ready for rougeLsum.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .configs import InputError, checked_build, checked_replace
from .hardware import resolve_precision
from .models import load_causal_lm, load_seq2seq_model, load_tokenizer, model_options, resolve_model
from .rouge import aggregate, newline_sentences, score_pairs, split_sentences
from .tokens import generate_in_order, generate_texts, generation_settings, raw_rows, tokenize_pairs

T5_PREFIX = "summarize: "
# T5 was pretrained and fine-tuned on 512-token inputs. transformers 5 no longer knows that for
# the original checkpoints, and a Hub tokenizer whose config omits model_max_length reports about
# 1e30, so truncating "at the tokenizer's length" would not truncate at all.
T5_MAX_SOURCE_LENGTH = 512
TLDR = " TL;DR:"  # GPT-2 learned from Reddit posts that a summary follows this


@dataclass(frozen=True)
class WarmUp:
    """A short training run on CNN/DailyMail's train split before a summarizer is scored (lesson 03)."""

    num_train_epochs: float            # passes over the training articles
    learning_rate: float               # peak rate of AdamW, reached after 10 % of the steps
    # "summarize": learn article -> highlights (T5). "language_model": learn to continue the
    # articles alone, never seeing a summary, the way GPT-2 learned from web text.
    objective: str = "summarize"
    per_device_batch_size: int = 16    # rows per optimizer step

    def __post_init__(self):
        if self.objective not in ("summarize", "language_model"):
            raise InputError(f"WarmUp.objective must be 'summarize' or 'language_model', got {self.objective!r}.")
        if self.num_train_epochs <= 0 or self.learning_rate <= 0 or self.per_device_batch_size < 1:
            raise InputError(f"WarmUp needs positive epochs, learning rate and batch size, got {self}.")


@dataclass(frozen=True)
class SummaryConfig:
    """Lesson 03's settings; the profile's ``summaries`` changes them."""

    # CNN/DailyMail test articles scored (None: the whole split). The original course scored 100.
    test_rows: int | None = 100
    # 80 new tokens (about 60 words) leave room for the highlights, which average 56 words.
    max_new_tokens: int = 80
    # role -> WarmUp before scoring (its fields as a dict). None in full: the released checkpoints are
    # scored as they are (t5-small and t5-base already learned "summarize:" on CNN/DailyMail).
    warmups: dict = field(default_factory=dict)


def summary_config(profile) -> SummaryConfig:
    """SummaryConfig with ``profile.summaries`` applied (an unknown key is an error) and its warm-ups typed."""
    config = checked_replace(SummaryConfig(), profile.summaries, "Profile.summaries setting")
    warmups = {role: w if isinstance(w, WarmUp) else checked_build(WarmUp, w, f"warm-up setting of {role}")
               for role, w in config.warmups.items()}
    return dataclasses.replace(config, warmups=warmups)


def lead_sentences(article: str, count: int = 3) -> str:
    """The article's first ``count`` sentences, one per line: the Lead-3 baseline."""
    return "\n".join(split_sentences(article)[:count])


def summarize_t5(model, tokenizer, articles: Sequence[str], max_new_tokens: int = 64,
                 max_source_length: int = T5_MAX_SOURCE_LENGTH, num_beams: int = 4, batch_size: int = 8,
                 progress: bool = False, **generation) -> list[str]:
    """Beam-search summaries; inputs cut at ``max_source_length`` tokens (T5's 512)."""
    settings = generation_settings(model, max_new_tokens=max_new_tokens, num_beams=num_beams,
                                   do_sample=False, **generation)
    summaries = generate_texts(model, tokenizer, articles, T5_PREFIX, max_source_length, settings, batch_size,
                               progress, desc="t5 summaries")
    return [newline_sentences(s) for s in summaries]


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
    # The resolved path, not the name: a rebuilt stand-in (new tokenizer or weights) gets a new key.
    key = warmup_key(resolve_model(model_name), warmup, train_split, max_target_length, seed)
    folder = Path(cache) / "summarizers" / f"{model_name.replace('/', '_').replace(':', '_')}-{key}"
    record = folder / "warmup.json"
    if record.exists():
        figures = json.loads(record.read_text())
        return PreparedSummarizer(str(folder / "model"), warmup, figures["train_seconds"],
                                  figures["final_loss"], reused=True)
    seconds, final_loss = _warm_up(model_name, warmup, train_split, folder, max_target_length, seed, attn_implementation)
    record.write_text(json.dumps({"train_seconds": seconds, "final_loss": final_loss}))
    return PreparedSummarizer(str(folder / "model"), warmup, seconds, final_loss)


def language_model_blocks(texts: Sequence[str], tokenizer, block_size: int) -> dict[str, list[list[int]]]:
    """Texts joined with end-of-text tokens and cut into full blocks: the usual causal-LM rows.

    The last, partial block is dropped (fewer than ``block_size`` tokens of the whole stream).
    """
    return {"input_ids": [row.tolist() for row in raw_rows(texts, tokenizer, block_size)]}


def _training_set(objective: str, train_split, tokenizer, max_target_length: int):
    from datasets import Dataset

    if objective == "language_model":  # WarmUp has checked that it is one of the two
        return Dataset.from_dict(language_model_blocks(train_split["article"], tokenizer, block_size=256))
    return tokenize_pairs(train_split, tokenizer, "article", "highlights", T5_PREFIX,
                          T5_MAX_SOURCE_LENGTH, max_target_length)


def warmup_trainer(model, tokenizer, training_set, warmup: WarmUp, output_dir: str | os.PathLike, seed: int = 42):
    """A Trainer for ``warmup``: T5 learns article -> highlights with padded (article, summary) pairs;
    GPT-2 learns to continue full blocks of articles, its labels the inputs themselves (the
    causal-LM collator, which shifts nothing: the model shifts them)."""
    import torch
    from transformers import DataCollatorForLanguageModeling, DataCollatorForSeq2Seq, Trainer, TrainingArguments

    language_model = warmup.objective == "language_model"
    if language_model:
        # GPT-2 has no pad token. The collator asks for one (the blocks are full, so it pads nothing):
        # end-of-text serves, and the model's configs are told too, as the Trainer would otherwise do, noisily.
        tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
        model.config.pad_token_id = model.generation_config.pad_token_id = tokenizer.pad_token_id
        collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    else:
        collator = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100)
    arguments = TrainingArguments(
        output_dir=str(output_dir), num_train_epochs=warmup.num_train_epochs, learning_rate=warmup.learning_rate,
        per_device_train_batch_size=warmup.per_device_batch_size, warmup_steps=0.1, optim="adamw_torch",
        seed=seed, data_seed=seed, bf16=resolve_precision("auto") == "bf16", use_cpu=not torch.cuda.is_available(),
        train_sampling_strategy="random" if language_model else "group_by_length", logging_steps=0.1,  # 10 logs a run
        save_strategy="no", eval_strategy="no", report_to="none")
    # The plain Trainer for both: a warm-up only trains (a Seq2SeqTrainer adds generation at evaluation).
    return Trainer(model=model, args=arguments, data_collator=collator, train_dataset=training_set,
                   processing_class=tokenizer)


def _warm_up(model_name, warmup, train_split, folder, max_target_length, seed, attn_implementation) -> tuple[float, float]:
    """(training seconds, last logged loss) of ``warmup``; the model and tokenizer saved in ``folder/model``."""
    tokenizer = load_tokenizer(model_name)
    training_set = _training_set(warmup.objective, train_split, tokenizer, max_target_length)
    loader = load_causal_lm if warmup.objective == "language_model" else load_seq2seq_model
    model = loader(model_name, **model_options(attn_implementation))
    trainer = warmup_trainer(model, tokenizer, training_set, warmup, folder, seed)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    losses = [row["loss"] for row in trainer.state.log_history if "loss" in row]
    trainer.save_model(str(Path(folder) / "model"))
    tokenizer.save_pretrained(str(Path(folder) / "model"))
    return seconds, losses[-1] if losses else float("nan")


def generate_summaries(model_name: str, kind: str, articles: Sequence[str], variants: dict[str, dict],
                       max_new_tokens: int, attn_implementation: str | None = None, progress: bool = True,
                       tokenizer_name: str | None = None) -> dict[str, tuple[list[str], float]]:
    """{variant: (summaries, seconds)}: ``model_name`` loaded once onto the training device, each variant's
    generation settings on top of the defaults of ``kind`` ("t5": beam search, "gpt2": greedy "TL;DR:"),
    then the model freed again, so the next one has the memory."""
    if kind not in ("t5", "gpt2"):
        raise InputError(f"kind must be 't5' or 'gpt2', got {kind!r}.")
    tokenizer = load_tokenizer(tokenizer_name or model_name)
    loader = load_seq2seq_model if kind == "t5" else load_causal_lm
    model = loader(model_name, **model_options(attn_implementation))
    summarize = summarize_t5 if kind == "t5" else summarize_gpt2
    runs = {}
    for variant, settings in variants.items():
        start = time.perf_counter()
        summaries = summarize(model, tokenizer, articles, max_new_tokens, progress=progress, **settings)
        runs[variant] = (summaries, time.perf_counter() - start)
    del model
    release_memory()
    return runs


def summary_figures(summaries: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Mean ROUGE F (four types, stemmed), mean length in words and mean repeated-trigram share."""
    figures = aggregate(score_pairs(summaries, references))
    figures["words"] = sum(len(s.split()) for s in summaries) / len(summaries)
    figures["repeated_trigrams"] = sum(repeated_ngram_share(s) for s in summaries) / len(summaries)
    return figures
