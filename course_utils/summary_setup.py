"""Lesson 03's set-up: its settings, and the stand-ins' warm-up before they are scored.

    config = summary_config(profile)                  # lesson 03's settings: profile.summaries applied
    prepared = prepare_summarizer("standin:t5-small", WarmUp(4, 5e-3), cnn["train"])   # cached under .cache/
    trainer = warmup_trainer(model, tokenizer, training_set, warmup, output_dir)   # what prepare_summarizer runs
    write_per_article(path, ids, articles, references, summaries, scores)   # each article's summaries, for lesson 05

The summaries themselves are written by the cells of notebook 03 (``summarizers.py``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .configs import InputError, checked_build, checked_replace
from .finetune import FinetuneConfig
from .hardware import resolve_precision
from .metrics import training_losses
from .models import load_model, load_tokenizer, resolve_model
from .paths import cache_dir
from .sentiment_trainer import tokenize_pairs, training_arguments
from .summarizers import T5_MAX_SOURCE_LENGTH, T5_PREFIX
from .tokens import raw_rows


@dataclass(frozen=True)
class WarmUp:
    """A short training run on CNN/DailyMail's train split before a summarizer is scored (lesson 03)."""

    num_train_epochs: float  # passes over the training articles
    learning_rate: float  # peak rate of AdamW, reached after 10 % of the steps
    # "summarize": learn article -> highlights (T5). "language_model": learn to continue the
    # articles alone, never seeing a summary, the way GPT-2 learned from web text.
    objective: str = "summarize"
    per_device_batch_size: int = 16  # rows per optimizer step

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
    warmups = {
        role: w if isinstance(w, WarmUp) else checked_build(WarmUp, w, f"warm-up setting of {role}")
        for role, w in config.warmups.items()
    }
    return dataclasses.replace(config, warmups=warmups)


@dataclass(frozen=True)
class PreparedSummarizer:
    """The model a lesson scores, and what its warm-up (if any) cost."""

    model_path: str  # Hub id, local folder or standin:<name>; a cache folder after a warm-up
    warmup: WarmUp | None  # None: the model is scored as it was loaded
    train_seconds: float = 0.0  # measured when the warm-up ran (kept from then when it is reused)
    final_loss: float | None = None
    reused: bool = False  # True: a finished warm-up with the same settings was found in the cache


def warmup_key(model_name: str, warmup: WarmUp, train_split, max_target_length: int, seed: int) -> str:
    """A short hash of everything a warm-up's result depends on, the training text included."""
    digest = hashlib.sha256()
    for part in (model_name, warmup, max_target_length, seed):
        digest.update(repr(part).encode())
    for article, highlights in zip(train_split["article"], train_split["highlights"], strict=True):
        digest.update(article.encode())
        digest.update(highlights.encode())
    return digest.hexdigest()[:16]


def prepare_summarizer(
    model_name: str,
    warmup: WarmUp | None,
    train_split,
    cache: str | os.PathLike | None = None,
    max_target_length: int = 64,
    seed: int = 42,
    attn_implementation: str | None = None,
) -> PreparedSummarizer:
    """``model_name`` as it is (``warmup`` None), or fine-tuned on (article -> highlights) first.

    The smoke profile warms its random-weight stand-ins up this way (``warmup_trainer``),
    so their summaries are worth scoring. The result is cached under
    ``cache/summarizers/<name>-<key>`` and reused when every setting and the training text
    match; a folder counts only once ``warmup.json`` has been written after the model.
    """
    if warmup is None:
        return PreparedSummarizer(model_name, None)
    # The resolved path, not the name: a rebuilt stand-in (new tokenizer or weights) gets a new key.
    key = warmup_key(resolve_model(model_name), warmup, train_split, max_target_length, seed)
    folder = Path(cache or cache_dir()) / "summarizers" / f"{model_name.replace('/', '_').replace(':', '_')}-{key}"
    record = folder / "warmup.json"
    if record.exists():
        figures = json.loads(record.read_text())
        return PreparedSummarizer(
            str(folder / "model"), warmup, figures["train_seconds"], figures["final_loss"], reused=True
        )
    seconds, final_loss = _warm_up(
        model_name, warmup, train_split, folder, max_target_length, seed, attn_implementation
    )
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
    return tokenize_pairs(
        train_split, tokenizer, "article", "highlights", T5_PREFIX, T5_MAX_SOURCE_LENGTH, max_target_length
    )


def warmup_trainer(model, tokenizer, training_set, warmup: WarmUp, output_dir: str | os.PathLike, seed: int = 42):
    """A Trainer for ``warmup``: T5 learns article -> highlights with padded (article, summary) pairs;
    GPT-2 learns to continue full blocks of articles, its labels the inputs themselves (the
    causal-LM collator, which shifts nothing: the model shifts them)."""
    from transformers import DataCollatorForLanguageModeling, DataCollatorForSeq2Seq, Trainer

    language_model = warmup.objective == "language_model"
    if language_model:
        # GPT-2 has no pad token. The collator asks for one (the blocks are full, so it pads nothing):
        # end-of-text serves, and the model's configs are told too, as the Trainer would otherwise do, noisily.
        tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
        model.config.pad_token_id = model.generation_config.pad_token_id = tokenizer.pad_token_id
        collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    else:
        collator = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100)
    # Lesson 01's Trainer arguments (one place for their choices), with the warm-up's sizes and its own logging.
    config = FinetuneConfig(
        output_dir=str(output_dir),
        num_train_epochs=warmup.num_train_epochs,
        learning_rate=warmup.learning_rate,
        seed=seed,
        precision=resolve_precision("auto"),
        per_device_batch_size=warmup.per_device_batch_size,
        group_by_length=not language_model,
    )
    arguments = dataclasses.replace(training_arguments(config), logging_steps=0.1)  # 10 loss lines a run
    # The plain Trainer for both: a warm-up only trains (a Seq2SeqTrainer adds generation at evaluation).
    return Trainer(
        model=model, args=arguments, data_collator=collator, train_dataset=training_set, processing_class=tokenizer
    )


def _warm_up(
    model_name, warmup, train_split, folder, max_target_length, seed, attn_implementation
) -> tuple[float, float]:
    """(training seconds, last logged loss) of ``warmup``; the model and tokenizer saved in ``folder/model``."""
    tokenizer = load_tokenizer(model_name)
    training_set = _training_set(warmup.objective, train_split, tokenizer, max_target_length)
    model = load_model(model_name, attn_implementation=attn_implementation)
    trainer = warmup_trainer(model, tokenizer, training_set, warmup, folder, seed)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    losses = [loss for _, loss in training_losses(trainer.state.log_history)]
    trainer.save_model(str(Path(folder) / "model"))
    tokenizer.save_pretrained(str(Path(folder) / "model"))
    return seconds, losses[-1] if losses else float("nan")


def write_per_article(
    path,
    ids: Sequence[str],
    articles: Sequence[str],
    references: Sequence[str],
    summaries: dict[str, Sequence[str]],
    scores: dict[str, dict[str, Sequence[float]]],
) -> Path:
    """Each scored article with its reference, every system's summary of it and that summary's ROUGE (``scores``:
    system -> ROUGE type -> one F per article), as JSON at ``path``; lesson 05 compares the systems article by
    article. Every list must have one entry per article, or nothing is written."""
    n = len(ids)
    lengths = {"articles": len(articles), "references": len(references)}
    lengths |= {f"summaries of {s}": len(texts) for s, texts in summaries.items()}
    lengths |= {f"{kind} of {s}": len(values) for s, kinds in scores.items() for kind, values in kinds.items()}
    wrong = {what: length for what, length in lengths.items() if length != n}
    if wrong or set(summaries) != set(scores):
        raise InputError(
            f"write_per_article needs one entry per article ({n} ids) and scores for every system; got {wrong}, "
            f"systems {sorted(summaries)} with scores for {sorted(scores)}."
        )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "ids": list(ids),
                "articles": list(articles),
                "references": list(references),
                "summaries": {system: list(texts) for system, texts in summaries.items()},
                "scores": {
                    s: {kind: [float(v) for v in values] for kind, values in kinds.items()}
                    for s, kinds in scores.items()
                },
            }
        )
    )
    return path
