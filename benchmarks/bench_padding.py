"""Useful tokens per second: lesson 01's recipe against the original course's, side by side.

    python benchmarks/bench_padding.py [--steps 24] [--batch-size 8]

Both recipes train the real t5-small architecture (its config, random weights, fp32, CPU)
on the same reviews (the shipped IMDB sample: median about 230 tokens, a tail past 512),
for the same number of optimizer steps, in one process:

- original: tokenize with padding=True inside a batched .map (so every 1,000-row chunk is
  padded to its longest row, in practice 512 tokens), labels padded with the pad id,
  DataCollatorWithPadding, random batches;
- lesson 01: truncate without padding, DataCollatorForSeq2Seq (labels padded with -100),
  length-grouped batches (the Trainer's LengthGroupedSampler).

"Useful" tokens are the non-pad input tokens. Prints both rates and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a benchmark script, not library code: set before imports
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch  # noqa: E402
from transformers import (
    DataCollatorForSeq2Seq,
    DataCollatorWithPadding,
    T5Config,  # noqa: E402
    T5ForConditionalGeneration,
)
from transformers.trainer_pt_utils import LengthGroupedSampler  # noqa: E402

from course_utils.from_notebooks.sentiment_trainer import tokenize_pairs
from course_utils.machinery.profiles import get_profile  # noqa: E402
from course_utils.models_and_data.data import load_imdb  # noqa: E402
from course_utils.models_and_data.models import load_tokenizer  # noqa: E402

PREFIX = "sst2 sentence: "
# t5-small's published config (60M parameters); the vocabulary covers the stand-in tokenizer's ids.
T5_SMALL = dict(
    d_model=512,
    d_ff=2048,
    d_kv=64,
    num_heads=8,
    num_layers=6,
    num_decoder_layers=6,
    feed_forward_proj="relu",
    vocab_size=32128,
    decoder_start_token_id=0,
    pad_token_id=0,
    eos_token_id=1,
)


def original_batches(split, tokenizer, batch_size, steps, seed):
    """The original course: padding=True inside .map (1,000 rows per call), then DataCollatorWithPadding."""

    def encode(batch):
        enc = tokenizer([PREFIX + t for t in batch["text"]], padding=True, truncation=True, max_length=512)
        enc["labels"] = tokenizer(batch["label_text"], padding=True)["input_ids"]  # pad id 0, not -100
        return enc

    mapped = split.map(encode, batched=True, batch_size=1000, remove_columns=split.column_names)
    collator = DataCollatorWithPadding(tokenizer)
    order = torch.randperm(len(mapped), generator=torch.Generator().manual_seed(seed)).tolist()
    return [collator([mapped[i] for i in order[s * batch_size : (s + 1) * batch_size]]) for s in range(steps)]


def lesson_batches(split, tokenizer, model, batch_size, steps, seed):
    """Lesson 01: no padding in .map, length-grouped batches, each padded to its own longest row."""
    tokenized = tokenize_pairs(split, tokenizer, "text", "label_text", PREFIX, 512, 8)
    lengths = [len(ids) for ids in tokenized["input_ids"]]
    sampler = LengthGroupedSampler(batch_size, lengths=lengths, generator=torch.Generator().manual_seed(seed))
    order = list(sampler)
    collator = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100)
    return [collator([tokenized[i] for i in order[s * batch_size : (s + 1) * batch_size]]) for s in range(steps)]


def time_training(batches, seed) -> tuple[float, int, list[int]]:
    """Seconds for one optimizer step per batch, useful tokens seen, padded widths."""
    torch.manual_seed(seed)
    model = T5ForConditionalGeneration(T5Config(**T5_SMALL))
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    warm = batches[0]
    model(**warm).loss.backward()  # warm-up: first-call allocations are not what we measure
    optimizer.zero_grad()
    start = time.perf_counter()
    for batch in batches:
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    seconds = time.perf_counter() - start
    useful = sum(int(b["attention_mask"].sum()) for b in batches)
    return seconds, useful, [b["input_ids"].shape[1] for b in batches]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24, help="optimizer steps per recipe")
    parser.add_argument("--batch-size", type=int, default=8, help="reviews per step, the same for both")
    parser.add_argument("--seed", type=int, default=0, help="the random weights and the order of the reviews")
    args = parser.parse_args()

    tokenizer = load_tokenizer("standin:t5-small")
    splits, _ = load_imdb(get_profile("smoke").imdb)
    train = splits["train"]
    # verbose=False: measuring reviews longer than the model's limit is the point here
    lengths = [len(ids) for ids in tokenizer([PREFIX + t for t in train["text"]], verbose=False).input_ids]
    print(
        f"data: {len(train)} reviews, tokens per review median {statistics.median(lengths):.0f}, "
        f"mean {statistics.mean(lengths):.0f}, {sum(n > 512 for n in lengths) / len(lengths):.1%} past 512"
    )
    model_for_collator = T5ForConditionalGeneration(T5Config(**T5_SMALL))
    recipes = {
        "original (pad in .map)": original_batches(train, tokenizer, args.batch_size, args.steps, args.seed),
        "lesson 01 (dynamic, grouped)": lesson_batches(
            train, tokenizer, model_for_collator, args.batch_size, args.steps, args.seed
        ),
    }
    del model_for_collator
    rates = {}
    print(
        f"t5-small architecture, random init, fp32, {torch.get_num_threads()} CPU threads, "
        f"batch {args.batch_size}, {args.steps} steps each"
    )
    for name, batches in recipes.items():
        seconds, useful, widths = time_training(batches, args.seed)
        rates[name] = useful / seconds
        print(
            f"{name:<30} {rates[name]:>8.0f} useful tokens/s   {seconds:6.1f} s   "
            f"padded width mean {statistics.mean(widths):.0f}   useful share "
            f"{useful / sum(w * args.batch_size for w in widths):.0%}"
        )
    original, lesson = rates.values()
    print(f"ratio lesson/original: {lesson / original:.2f}x   (goal: >= 2x)")


if __name__ == "__main__":
    from results import recorded

    sys.exit(recorded("bench_padding", main))
