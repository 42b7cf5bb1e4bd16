"""How fast lesson 04's data pipeline makes batches, how fast it resumes, and why it shuffles in blocks.

    python benchmarks/bench_pretrain_data.py [--profile smoke] [--workers 0 1 2] [--batches 60]
                                             [--copies 20] [--resume-at 100]

At the full recipe's lengths (rows of 568 tokens -> 512 inputs and 114 targets, 128 rows per
batch) it prints, for each number of DataLoader workers:

- rows per second, timed over ``--batches`` batches after the first (which includes starting the
  workers), set against what one GPU consumes at nanoT5's step times: an A100 at 0.56 s per step
  (128 / 0.56 = 229 rows/s) and an H100-class GPU at about 0.25 s per step (about 510 rows/s);
- the seconds a resumed loader takes to deliver its first batch after ``--resume-at`` batches,
  against the seconds it takes to make those batches again (what resuming by replay costs).

Then it checks the alternative it did not use: datasets' ``IterableDataset.shuffle(buffer_size)``
resumed from its ``state_dict`` (which, as datasets documents, refills the buffer with new
documents), against the course's block shuffle, by counting the documents after the resume point
that differ from an uninterrupted pass.

Smoke: the stand-in tokenizer and the synthetic C4 sample, written ``--copies`` times into one
file so that each worker's share spans many batches. The full profile reads C4 with
google/t5-v1_1-base's tokenizer (run it on a cluster node to size ``data_workers``). About 2
minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

A100_ROWS_PER_S = 128 / 0.56  # nanoT5's bf16 + compile step on an A100
H100_ROWS_PER_S = 128 / 0.25  # about 0.25 s per step on an H100-class GPU


def write_corpus(profile, folder: Path, copies: int) -> str:
    """The profile's C4 train and validation documents; smoke's are repeated ``copies`` times."""
    from course_utils.pretraining.data import iter_texts

    if profile.c4.config is not None:  # a Hub data set: read as it is
        return profile.c4.path
    folder.mkdir(parents=True, exist_ok=True)
    for split, times in (("train", copies), ("validation", 1)):
        texts = list(iter_texts(profile.c4.path, profile.c4.config, split))
        with open(folder / f"{split}.jsonl", "w", encoding="utf-8") as handle:
            for copy in range(times):
                handle.writelines(json.dumps({"text": text}) + "\n" for text in texts)
    return str(folder)


def rows_per_second(stream, workers: int, batches: int) -> tuple[float, float]:
    """(rows per second over ``batches`` batches after the first, seconds to the first batch)."""
    from course_utils.pretraining.data import batch_loader, start_batches, stop_batches

    loader = batch_loader(stream, workers)
    start = time.perf_counter()
    iterator = start_batches(loader)
    rows = len(next(iterator)["labels"])
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    seconds = time.perf_counter() - start
    stop_batches(loader)
    return rows * batches / seconds, first


def resume_seconds(make_stream, workers: int, position: int) -> tuple[float, float, bool]:
    """(seconds to make ``position`` batches, seconds a loader restored there takes to its first
    batch, whether that batch is the one the uninterrupted loader made next)."""
    import torch

    from course_utils.pretraining.checkpoints import loader_state, restore_loader
    from course_utils.pretraining.data import batch_loader, start_batches, stop_batches

    loader = batch_loader(make_stream(), workers)
    start = time.perf_counter()
    iterator = start_batches(loader)
    for _ in range(position):
        next(iterator)
    replay = time.perf_counter() - start
    saved = json.loads(json.dumps(loader_state(loader)))
    expected = next(iterator)
    stop_batches(loader)
    resumed = batch_loader(make_stream(), workers)
    restore_loader(resumed, saved, "the benchmark's checkpoint")
    start = time.perf_counter()
    got = next(start_batches(resumed))
    restored = time.perf_counter() - start
    stop_batches(resumed)
    return replay, restored, all(torch.equal(got[key], expected[key]) for key in expected)


def shuffles_after_resume(source, block: int, resume_at: int, compare: int) -> int:
    """Documents among the ``compare`` after ``resume_at`` that differ from an uninterrupted pass,
    with datasets' shuffle buffer resumed from its ``state_dict``."""
    from course_utils.pretraining.data import document_stream

    def shuffled():
        return document_stream(source, "train").shuffle(seed=0, buffer_size=block)

    whole = [row[source.column] for row in islice(shuffled(), resume_at + compare)]
    stream = shuffled()
    for _ in islice(stream, resume_at):
        pass
    resumed = shuffled()
    resumed.load_state_dict(stream.state_dict())
    after = [row[source.column] for row in islice(resumed, compare)]
    return sum(a != b for a, b in zip(after, whole[resume_at:], strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--profile", default="smoke", help="whose tokenizer and data (smoke: the stand-in on the sample corpus)"
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2], help="DataLoader workers to time")
    parser.add_argument("--batches", type=int, default=60, help="batches timed after the first")
    parser.add_argument("--copies", type=int, default=20, help="smoke: times the sample corpus is repeated")
    parser.add_argument("--resume-at", type=int, default=100, help="batches made before the resume is timed")
    args = parser.parse_args(argv)

    from course_utils.machinery.environment import start_session

    with tempfile.TemporaryDirectory() as scratch:
        session = start_session(args.profile, scratch)  # offline switches before the HF imports below
        from course_utils.machinery.configs import DataSource
        from course_utils.models_and_data.models import load_tokenizer
        from course_utils.pretraining.config import PretrainConfig
        from course_utils.pretraining.data import CorruptedBatches

        profile = session.profile
        data_path = write_corpus(profile, Path(scratch) / "c4", args.copies)
        # The recipe's batch and lengths (PretrainConfig's defaults); only the data and tokenizer are the profile's.
        config = PretrainConfig(
            model_name=profile.models["t5_v1_1_base"], data_path=data_path, data_config=profile.c4.config
        )
        tokenizer = load_tokenizer(config.model_name)

        def make_stream():
            return CorruptedBatches.for_config(config, tokenizer, "train", config.seed)

        print(
            f"profile {profile.name}, tokenizer {config.model_name} ({len(tokenizer):,} ids), {os.cpu_count()} CPUs; "
            f"batches of {config.batch_size} rows, {config.input_length} inputs / "
            f"{make_stream().collator.target_length} targets from {make_stream().raw_length} raw tokens"
        )
        print(f"{'workers':>7} {'rows/s':>8} {'x A100 (229/s)':>15} {'x H100 (510/s)':>15} {'first batch s':>14}")
        for workers in args.workers:
            rate, first = rows_per_second(make_stream(), workers, args.batches)
            print(
                f"{workers:>7} {rate:>8.0f} {rate / A100_ROWS_PER_S:>15.2f} {rate / H100_ROWS_PER_S:>15.2f} "
                f"{first:>14.2f}",
                flush=True,
            )
        workers = max(args.workers)
        replay, restored, same = resume_seconds(make_stream, workers, args.resume_at)
        print(
            f"resume after {args.resume_at} batches ({args.resume_at * config.batch_size:,} rows) with {workers} "
            f"worker(s): {restored:.2f} s to the first batch from the checkpoint's position (the batch an "
            f"uninterrupted run makes next: {same}); making those batches took {replay:.1f} s"
        )
        block = 1000
        source = DataSource(data_path, profile.c4.config, config.text_column)
        differ = shuffles_after_resume(source, block, resume_at=2500, compare=2000)
        print(
            f"documents 2,501-4,500 of a pass, resumed at document 2,500 with a {block}-document buffer: "
            f"{differ:,} of 2,000 differ from the uninterrupted pass with datasets' shuffle buffer (its "
            "state_dict does not keep the buffer); the course's block shuffle resumes exactly (above, and "
            "tests/pretraining/test_pretraining_data.py)"
        )
    return 0


if __name__ == "__main__":
    from results import recorded

    sys.exit(recorded("bench_pretrain_data", main))
