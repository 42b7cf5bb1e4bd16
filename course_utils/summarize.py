"""Summaries from T5 ("summarize: ") and GPT-2 ("TL;DR:"), a Lead-3 baseline, and memory hygiene.

    t5_summaries = summarize_t5(model, tokenizer, articles, max_new_tokens=64)
    gpt2_summaries = summarize_gpt2(model, tokenizer, articles, max_new_tokens=64, no_repeat_ngram_size=3)
    baseline = [lead_sentences(a, 3) for a in articles]
    release_memory()                       # after `del model`: garbage-collect, empty the CUDA cache

Every summary comes back with one sentence per line, ready for rougeLsum.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence

from .generation import generate_in_order, generation_settings
from .rouge import newline_sentences, split_sentences

T5_PREFIX = "summarize: "
TLDR = " TL;DR:"  # GPT-2 learned from Reddit posts that a summary follows this


def lead_sentences(article: str, count: int = 3) -> str:
    """The article's first ``count`` sentences, one per line: the Lead-3 baseline."""
    return "\n".join(split_sentences(article)[:count])


def summarize_t5(model, tokenizer, articles: Sequence[str], max_new_tokens: int = 64,
                 max_source_length: int | None = None, num_beams: int = 4, batch_size: int = 8,
                 progress: bool = False, **generation) -> list[str]:
    """Beam-search summaries; inputs cut to the model's length (``tokenizer.model_max_length``)."""
    import torch

    max_source_length = max_source_length or tokenizer.model_max_length
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


def train_summarizer(model_name: str, train_split, output_dir: str, num_train_epochs: float,
                     learning_rate: float, max_target_length: int = 64, per_device_batch_size: int = 16,
                     attn_implementation: str | None = None) -> str:
    """Fine-tune ``model_name`` on (article -> highlights) with lesson 01's trainer; return the saved path.

    The smoke profile uses this to give its random-weight stand-ins a few epochs on the shipped
    training articles, so their summaries are worth scoring. A finished run is reused: the
    folder holds ``model/config.json`` once training has completed.
    """
    from pathlib import Path

    from .finetune import FinetuneConfig, build_trainer, load_options, save, train
    from .generation import tokenize_pairs
    from .models import load_seq2seq_model, load_tokenizer

    config = FinetuneConfig(model_name=model_name, output_dir=output_dir, num_train_epochs=num_train_epochs,
                            learning_rate=learning_rate, per_device_batch_size=per_device_batch_size,
                            logging_steps=10, attn_implementation=attn_implementation)
    if (Path(config.model_dir) / "config.json").exists():
        return str(config.model_dir)
    tokenizer = load_tokenizer(model_name)
    model = load_seq2seq_model(model_name, **load_options(config))
    pairs = tokenize_pairs(train_split, tokenizer, "article", "highlights", T5_PREFIX,
                           tokenizer.model_max_length, max_target_length)
    trainer = build_trainer(config, model, tokenizer, pairs)
    train(trainer)
    save(trainer, tokenizer, config.model_dir)
    return str(config.model_dir)
