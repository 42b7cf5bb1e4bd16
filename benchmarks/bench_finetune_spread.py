"""How far does lesson 01's accuracy move when only rounding, or only the seed, changes? Runs side by side.

    python benchmarks/bench_finetune_spread.py [--profile smoke] [--seeds 1 2 3 4]

Lesson 01's fine-tune, as lessons 02 and 04 launch it (``launch``: a fresh process each, fp32 as in lesson 02),
run several times over the same held-out reviews:

- at the lesson's seed: plain, under ZeRO-2 (lesson 02's comparison), and plain with one CPU thread instead of
  two. The three compute the same steps and differ only in the order in which sums are added up (ZeRO's flat
  buffers and buckets, or the matrix products' split over threads): rounding, a few parts in ten million;
- plain, at each of ``--seeds``: another sample of training reviews and another batch order.

It prints each run's accuracy and mean training loss, the largest relative difference between its logged losses
and the first run's, and on how many reviews its answers differ from the first run's, with the two-sided sign
test of those disagreements (are the first run's right answers among them more often than chance?). Then the
spread of the accuracy within each group. Smoke: 7 fine-tunes, about 7 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven when each side wins half the time."""
    n, k = wins + losses, min(wins, losses)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


@contextlib.contextmanager
def threads(count: int | None):
    """The launched process computes with ``count`` CPU threads (None: as it would)."""
    saved = {name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    if count is not None:
        os.environ.update(OMP_NUM_THREADS=str(count), MKL_NUM_THREADS=str(count))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="smoke", help="whose model and data (smoke: the CPU stand-in)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4], help="other seeds, plain runs")
    args = parser.parse_args(argv)

    from course_utils.machinery.environment import start_session

    with tempfile.TemporaryDirectory() as scratch:
        session = start_session(args.profile, scratch)
        from course_utils.lessons.finetune import FinetuneConfig
        from course_utils.lessons.launch import launch

        base = FinetuneConfig.for_profile(session.profile, output_dir=f"{scratch}/base", precision="fp32")
        runs = {  # name -> (group, config, CPU threads)
            f"plain, seed {base.seed}": ("rounding", base, None),
            f"zero2, seed {base.seed}": ("rounding", dataclasses.replace(base, deepspeed="zero2"), None),
            f"plain, seed {base.seed}, 1 thread": ("rounding", base, 1),
            **{f"plain, seed {seed}": ("seed", dataclasses.replace(base, seed=seed), None) for seed in args.seeds},
        }
        results = {}
        for number, (name, (group, config, count)) in enumerate(runs.items()):
            config = dataclasses.replace(config, output_dir=f"{scratch}/run{number}")
            with threads(count):
                figures = launch(config)
            saved = json.loads(Path(figures["answers_file"]).read_text())
            results[name] = {"group": group, **figures, **saved}
            print(
                f"{name}: accuracy {figures['accuracy']:.3f}, mean training loss {figures['train_loss']:.4f}",
                flush=True,
            )

    first_name, first = next(iter(results.items()))
    truth = first["truth"]
    print(
        f"\nlesson 01's fine-tune ({args.profile} profile, fp32), {len(truth)} held-out reviews; each run against "
        f"'{first_name}':"
    )
    print(
        f"{'run':<28} {'accuracy':>8} {'loss':>8} {'max rel. loss diff':>18} {'answers differ':>14} "
        f"{'first right / other right':>25} {'sign test p':>11}"
    )
    small_p = []
    for name, run in results.items():
        first_losses, losses = dict(map(tuple, first["losses"])), dict(map(tuple, run["losses"]))
        shared = [step for step in losses if step in first_losses]
        gap = max(abs(losses[s] - first_losses[s]) / first_losses[s] for s in shared)
        differ = [i for i, (a, b) in enumerate(zip(first["answers"], run["answers"])) if a != b]
        first_right = sum(first["answers"][i] == truth[i] for i in differ)
        other_right = sum(run["answers"][i] == truth[i] for i in differ)
        p = sign_test(first_right, other_right)
        if run is not first and p < 0.05:
            small_p.append(name)
        print(
            f"{name:<28} {run['accuracy']:>8.3f} {run['train_loss']:>8.4f} {gap:>18.2e} {len(differ):>14} "
            f"{f'{first_right} / {other_right}':>25} {p:>11.3f}"
        )
    for group, what in (
        ("rounding", "the same steps, sums added in another order"),
        ("seed", "other seeds: other training samples and batch orders"),
    ):
        accuracies = [run["accuracy"] for run in results.values() if run["group"] == group]
        spread = statistics.stdev(accuracies) if len(accuracies) > 1 else 0.0
        print(
            f"{what}: accuracy {min(accuracies):.3f} to {max(accuracies):.3f} over {len(accuracies)} runs "
            f"(standard deviation {spread:.3f})"
        )
    print(
        f"a sign test on the reviews calls {len(small_p)} of {len(results) - 1} runs different from the first at "
        f"p < 0.05 ({', '.join(small_p) or 'none'}): it asks whether these two models differ on such reviews, not "
        "whether another run of the same recipe would"
    )
    return 0


if __name__ == "__main__":
    from results import recorded

    sys.exit(recorded("bench_finetune_spread", main))
