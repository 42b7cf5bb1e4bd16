"""Does every smoke lesson show its point, every time? Each lesson's headline figures over seeds, threads and builds.

    python benchmarks/bench_smoke_fidelity.py                      # 3 seeds x 2 thread counts, + 2 other builds
    python benchmarks/bench_smoke_fidelity.py --seeds 42 --threads 2 --builds   # one run, the shipped build only

The lessons themselves are run, with ``course run`` (papermill), not a copy of their code:

- lessons 01 to 05 once per training seed (``COURSE_SEED``: every fine-tune's and the pretraining's seed and the
  rows they sample) and per CPU thread count (``OMP_NUM_THREADS``: the same sums added in another order), each run
  in a fresh output folder;
- lessons 03 and 05 again on each further stand-in build given with ``--builds`` (``COURSE_STANDINS_DIR``: the
  same recipes from other random weights, ``python -m course_utils.standins --rebuild --seed N --out DIR``), after
  the first run's lessons 01, 02 and 04, whose outputs lesson 05 reads.

Each run's figures come from its ``metrics.json``. The table prints them side by side with the lesson's point and
whether every run showed it; the last lines give the spread of each figure. tests/test_lesson_points.py holds the
course to thresholds well inside these figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The headline figure of each lesson's point: (lesson, metrics.json name, the point, a test of one value)
POINTS = [
    ("01", "accuracy_after", "fine-tuned accuracy >= 0.95", lambda v, f: v >= 0.95),
    ("01", "accuracy_linear_baseline", "at most the fine-tuned accuracy", lambda v, f: v <= f["01"]["accuracy_after"]),
    ("01", "accuracy_before", "zero-shot, before fine-tuning", lambda v, f: True),
    ("02", "agreement", "plain and ZeRO answer alike on >= 98 %", lambda v, f: v >= 0.98),
    ("02", "loss_relative_gap", "final losses within 1 %", lambda v, f: v <= 0.01),
    ("02", "settings_differ", "no setting differs", lambda v, f: v == 0),
    ("05", "accuracy_gap_02_plain_A_vs_ZeRO_B_low", "interval of the gap contains 0 (low)", lambda v, f: v <= 0),
    ("05", "accuracy_gap_02_plain_A_vs_ZeRO_B_high", "(high)", lambda v, f: v >= 0),
    ("03", "system_t5_base_rouge1", "T5-base ROUGE-1", lambda v, f: v > f["03"]["system_t5_small_rouge1"]),
    ("03", "system_t5_small_rouge1", "T5-small ROUGE-1", lambda v, f: True),
    ("03", "system_gpt2_rouge1", "GPT-2 ROUGE-1, the lowest", lambda v, f: v < f["03"]["system_t5_small_rouge1"]),
    ("03", "system_lead_3_rouge1", "Lead-3 ROUGE-1", lambda v, f: True),
    ("05", "rouge1_gap_low", "T5-base - T5-small interval above 0", lambda v, f: v > 0),
    ("04", "payoff_pretrained_random_init_low", "pretrained - random interval above 0", lambda v, f: v > 0),
    ("04", "payoff_pretrained_random_init_difference", "pretrained - random", lambda v, f: True),
    ("04", "payoff_released_pretrained_difference", "released - pretrained >= 0", lambda v, f: v >= 0),
    ("05", "lambada_accuracy", "LAMBADA accuracy >= 0.40", lambda v, f: v >= 0.40),
    (
        "05",
        "lm_eval_accuracy_fine_tuned",
        "lm-eval within 0.01 of lesson 01",
        lambda v, f: abs(v - f["01"]["accuracy_after"]) <= 0.01,
    ),
    ("05", "judge_consistent_p", "judge consistent above a coin, p < 0.05", lambda v, f: v < 0.05),
    ("05", "judge_win_rate_t5_base", "a win rate exists", lambda v, f: isinstance(v, float)),
    ("05", "control_judge_longer_chosen_share", "the control's length bias", lambda v, f: v == 1.0),
    ("failed", "lessons", "every lesson runs to its end", lambda v, f: v == "none"),
]
LESSONS = {
    "01": "01_t5_small_imdb_finetune",
    "02": "02_deepspeed_zero",
    "03": "03_cnn_dailymail_rouge",
    "04": "04_nanot5_pretraining",
    "05": "05_is_it_really_better",
}


def run_lessons(only: str, out: Path, seed: int, threads: int, build: Path | None) -> tuple[dict, float]:
    """``course run --only ...`` into ``out`` with the seed, thread count and build; each lesson's figures."""
    env = dict(os.environ, COURSE_SEED=str(seed), OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    if build is not None:
        env["COURSE_STANDINS_DIR"] = str(build)
    started = time.perf_counter()
    command = [
        sys.executable,
        "-m",
        "course_utils.machinery.cli",
        "run",
        "--profile",
        "smoke",
        "--only",
        only,
        "--output-dir",
        str(out),
    ]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    failed = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("FAILED ")]
    if done.returncode and not failed:
        raise RuntimeError(f"course run --only {only} failed ({out}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    for line in failed:  # a lesson that stops is a finding: its figures up to there are kept, the others run on
        print(f"  {line}", flush=True)
    path = out / "metrics.json"
    metrics = json.loads(path.read_text()) if path.exists() else {}
    figures = {
        n: {k: v["value"] for k, v in metrics[name]["figures"].items()}
        for n, name in LESSONS.items()
        if name in metrics
    }
    figures["failed"] = {"lessons": ", ".join(line.split()[1].rstrip(":") for line in failed) or "none"}
    return figures, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 1, 2], help="training seeds (COURSE_SEED)")
    parser.add_argument("--threads", type=int, nargs="+", default=[2, 1], help="CPU thread counts")
    parser.add_argument(
        "--builds", type=Path, nargs="*", default=[], help="other stand-in builds for lessons 03 and 05"
    )
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs' outputs here (default: deleted)")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="fidelity-"))
    runs: dict[str, dict] = {}
    first = None
    for threads in args.threads:
        for seed in args.seeds:
            tag = f"seed {seed}, {threads} thread{'s' if threads > 1 else ''}"
            out = work / f"seed{seed}-threads{threads}"
            runs[tag], seconds = run_lessons("01,02,03,04,05", out, seed, threads, None)
            print(f"{tag}: lessons 01-05 in {seconds:.0f} s", flush=True)
            first = first or (out, seed, threads)
    for index, build in enumerate(args.builds, 1):
        out, seed, threads = first
        copy = work / f"build{index}"
        shutil.copytree(out, copy)
        figures, seconds = run_lessons("03,05", copy, seed, threads, build)
        base = next(iter(runs.values()))
        tag = f"build {index} ({build.name})"
        runs[tag] = {**base, **figures}
        print(f"{tag}: lessons 03 and 05 in {seconds:.0f} s", flush=True)
    print()
    report(runs)
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def report(runs: dict[str, dict]) -> None:
    tags = list(runs)
    print("| lesson | figure | point | " + " | ".join(tags) + " | shown in all | min | max |")
    print("|---|---|---|" + "---:|" * len(tags) + "---|---:|---:|")
    for lesson, name, point, test in POINTS:
        values = [runs[t].get(lesson, {}).get(name) for t in tags]
        shown = all(v is not None and test(v, runs[t]) for v, t in zip(values, tags))
        numbers = [v for v in values if isinstance(v, (int, float))]
        cells = [f"{v:.4f}" if isinstance(v, float) else str(v) for v in values]
        spread = f"{min(numbers):.4f} | {max(numbers):.4f}" if numbers else "- | -"
        print(f"| {lesson} | {name} | {point} | " + " | ".join(cells) + f" | {'yes' if shown else 'NO'} | {spread} |")


if __name__ == "__main__":
    from results import recorded

    sys.exit(recorded("bench_smoke_fidelity", main))
