"""The full profile, rehearsed before a GPU sees it: prefetch from a Hub server on 127.0.0.1, then run offline.

    make rehearse                                   # the whole rehearsal: 7 to 10 minutes on 2 cores, 15 GiB of disk
    .venv/bin/python tests/rehearsal/rehearse.py --work /tmp/rehearsal --only 01,04,01L

1. Build (or reuse) Hub-like repos of the full profile's models and data sets (``hub_repos.py``).
2. Serve them with olah on a free loopback port; run ``course prefetch --profile full`` against it
   (``HF_ENDPOINT``) into a fresh ``HF_HOME``, so huggingface_hub writes its own cache; stop olah.
3. Run ``HF_HUB_OFFLINE=1 course run --profile full --quick --labs`` from that cache, as a compute node
   without internet would: every lesson and lab at full architectures and settings, rows and steps capped.
   Without CUDA, ``REQUIRE_GPU=0`` lets the full profile run on the CPU.
4. With CUDA, the GPU node check at full sizes (``tools/gpu_check.py``: the gpu tests, the matmul rate,
   the t5-small fine-tune step at 16 x 512, the T5 v1.1 base pretraining step at batch 128 with bf16
   and compile, decoding steps). On a node without this environment, ``make gpu-check`` runs it alone.

It prints each stage's time and the figures a first full run would want to see, and exits
with the first failing stage's status.
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from hub_repos import build, is_built  # noqa: E402
from hub_server import HubServer  # noqa: E402

# Every lesson, and the labs that read the full profile's models or data: labs 00L and 02L are arithmetic on
# published shapes, the same in both profiles, so nbval's smoke run of them is all there is to see.
FULL_SIZE_RUN = "00,01,02,03,04,05,01L,03L,04L,05L"
HUB_SWITCHES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_EVALUATE_OFFLINE", "HF_ENDPOINT")
REPOS = ROOT / ".cache" / "rehearsal"
# What the rehearsal writes, in GiB, measured with du on 2026-12-06: the repos (built once, kept in REPOS), the
# Hugging Face cache the prefetch fills, and the quick run's outputs at their largest (7.3 in du's readings a
# minute apart, 7.8 with room for what fell between them; lesson 04 alone writes 6.5: a checkpoint with its
# optimizer state and four T5 v1.1 base models).
DISK_GB = {"repos": 3.5, "cache": 3.6, "outputs": 7.8}


class NotEnoughDisk(Exception):
    """The rehearsal would fill the disk part of the way through."""


def nearest_existing(path: Path) -> Path:
    """``path``, or the closest folder above it that exists (where it would be created)."""
    while not path.exists():
        path = path.parent
    return path


def check_disk(work: Path, repos: Path = REPOS) -> None:
    """Refuse to start, naming what needs how much, when the rehearsal's files would not fit."""
    needs = [(work, DISK_GB["cache"] + DISK_GB["outputs"])]
    if not is_built(repos):
        needs.append((repos, DISK_GB["repos"]))
    by_disk: dict[int, tuple[Path, list]] = {}  # device -> (a folder on it, [(folder, GiB) it must hold])
    for folder, gb in needs:
        probe = nearest_existing(folder)
        by_disk.setdefault(probe.stat().st_dev, (probe, []))[1].append((folder, gb))
    for probe, shared in by_disk.values():
        need = sum(gb for _, gb in shared)
        free = shutil.disk_usage(probe).free / 2**30
        if free < need:
            asked = " and ".join(f"{gb:.1f} GiB under {folder}" for folder, gb in shared)
            raise NotEnoughDisk(
                f"The rehearsal needs {asked}, {need:.1f} GiB on one disk, and that disk has {free:.1f} GiB free. "
                f"Free some space (old runs' folders under {tempfile.gettempdir()} are the usual cause), or "
                "give a folder on another disk with --work."
            )


def drop_weights(work: Path) -> None:
    """Delete the prefetched cache and every file over 10 MiB under ``work``'s outputs (weights, optimizer states:
    11 GiB), keeping the logs, the executed notebooks and their figures to look at."""
    shutil.rmtree(work / "hf", ignore_errors=True)
    for path in (work / "outputs").rglob("*"):
        if path.is_file() and path.stat().st_size > 10 * 2**20:
            path.unlink()


def course(args: list[str], env: dict, log: Path, timeout: float | None = None) -> int:
    """``course ARGS`` in this interpreter, output to ``log`` (and a tail on failure); its exit status."""
    with open(log, "w") as handle:
        done = subprocess.run(
            [sys.executable, "-m", "course_utils.machinery.cli", *args],
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            timeout=timeout,
        )
    if done.returncode:
        print("".join(log.read_text().splitlines(keepends=True)[-25:]), file=sys.stderr)
    return done.returncode


def base_environment(work: Path) -> dict:
    """This process's environment with a fresh Hugging Face home and the Hub switches cleared."""
    import torch

    env = {k: v for k, v in os.environ.items() if k not in HUB_SWITCHES}
    env.update(HF_HOME=str(work / "hf"), HF_HUB_DISABLE_TELEMETRY="1")
    if not torch.cuda.is_available():
        env["REQUIRE_GPU"] = "0"  # the full profile on a CPU: slow, and here on purpose
    return env


def rehearse(work: Path, only: str = "", echo=print, repos: Path = REPOS) -> int:
    """The three stages above in ``work``, the repos built in ``repos``; returns the exit status of the offline
    course run. Raises NotEnoughDisk, before it starts anything, when its files would not fit."""
    check_disk(work, repos)
    work.mkdir(parents=True, exist_ok=True)
    env = base_environment(work)
    start = time.perf_counter()
    mirrors = build(repos, echo)
    echo(f"repos ready in {time.perf_counter() - start:.0f} s: {mirrors}", flush=True)

    start = time.perf_counter()
    with HubServer(mirrors, work) as hub:
        echo(f"olah serving {mirrors} at {hub.endpoint}", flush=True)
        status = course(["prefetch", "--profile", "full"], {**env, "HF_ENDPOINT": hub.endpoint}, work / "prefetch.log")
    echo(f"prefetch: exit {status} in {time.perf_counter() - start:.0f} s (log: {work / 'prefetch.log'})", flush=True)
    if status:
        return status

    start = time.perf_counter()
    offline = {**env, "HF_HUB_OFFLINE": "1"}  # the one switch the README tells a cluster user to set
    run_args = ["run", "--profile", "full", "--quick", "--labs", "--output-dir", str(work / "outputs")]
    status = course(run_args + ["--only", only or FULL_SIZE_RUN], offline, work / "run.log")
    echo(
        f"offline quick run: exit {status} in {time.perf_counter() - start:.0f} s (log: {work / 'run.log'})", flush=True
    )
    echo_figures(work / "outputs", echo)
    if status:
        return status
    return gpu_check(offline, work, echo)


def gpu_check(env: dict, work: Path, echo=print) -> int:
    """The GPU node check at full sizes, on the GPU; a line saying why not, without one."""
    import torch

    if not torch.cuda.is_available():
        echo(
            "GPU node check skipped: no CUDA GPU here (on a GPU node: make gpu-check; its --tiny form runs in the tests)."
        )
        return 0
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gpu_check.py"), "--out", str(work / "gpu_check")],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    echo(done.stdout.rstrip())
    return done.returncode


def echo_figures(outputs: Path, echo=print) -> None:
    """The report's path and the figures a first full run would ask about."""
    metrics_file = outputs / "metrics.json"
    if not metrics_file.exists():
        return
    figures = {
        name: {k: v["value"] for k, v in entry["figures"].items()}
        for name, entry in json.loads(metrics_file.read_text()).items()
    }
    device = figures.get("00_gpu_check", {}).get("device", "?")
    finetune = figures.get("01_t5_small_imdb_finetune", {})
    if finetune:
        echo(
            f"  lesson 01 on {device}: {finetune['model_parameters']:,} parameters, {finetune['train_steps']} steps "
            f"in {finetune['train_time']} s ({finetune['train_time'] / finetune['train_steps']:.1f} s per step), "
            f"{finetune['rows_train']} reviews"
        )
    pretraining = figures.get("04_nanot5_pretraining", {})
    if pretraining:
        echo(
            f"  lesson 04 on {device}: {pretraining['model_parameters']:,} parameters, rows of "
            f"{pretraining['raw_row_length']} tokens, {pretraining['pretrain_steps']} steps at "
            f"{pretraining['pretrain_seconds_per_step']:.1f} s each, accumulating "
            f"{pretraining['gradient_accumulation_steps']} micro-batches"
        )
    instruction = figures.get("01L_instruction_tuning", {})
    if instruction:
        echo(
            f"  lab 01L on {device}: {instruction['trainable_parameters_full']:,} parameters trained in "
            f"{instruction['train_seconds_full']:.1f} s, LoRA {instruction['trainable_parameters_lora']:,} in "
            f"{instruction['train_seconds_lora']:.1f} s, {instruction['examples_train']} examples"
        )
    echo(f"report: {outputs / 'report.md'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--work",
        type=Path,
        default=None,
        help="folder for the Hugging Face home, logs and outputs (default: a new temporary one)",
    )
    parser.add_argument("--only", default="", help=f"notebooks to run, e.g. 01,04,01L (default: {FULL_SIZE_RUN})")
    parser.add_argument(
        "--keep-weights",
        action="store_true",
        help="keep the prefetched cache and the models the run saved (11 GiB); by default only logs, notebooks "
        "and figures stay",
    )
    args = parser.parse_args()
    work = (args.work or Path(tempfile.mkdtemp(prefix="course-rehearsal-"))).resolve()
    try:
        return rehearse(work, args.only)
    except NotEnoughDisk as err:
        print(err, file=sys.stderr)
        return 1
    finally:
        if not args.keep_weights:
            drop_weights(work)


if __name__ == "__main__":
    sys.exit(main())
