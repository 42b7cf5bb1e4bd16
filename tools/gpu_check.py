"""The GPU node check: what a first full run needs to know, measured on a GPU node in one command.

    make gpu-check OUT=gpu-check              # on the node: its own python3, the wheels of `make wheels`
    python3 tools/gpu_check.py --out DIR # the same, with the wheels already on PYTHONPATH
    python3 tools/gpu_check.py --out DIR --tiny   # every part at toy sizes on the stand-ins (CPU; a test)

It needs no package index, no Hub and no venv: the models are built at full size from their published
configs with seeded random weights, and their tokenizers are trained on ``data/`` (as the rehearsal's
Hub copies are). The parts, in order, each in a process of its own under its own time limit:

1. ``environment``: versions, ``nvidia-smi``, native bf16, whether torch.compile builds kernels here
2. ``assets``: the four models' configs and tokenizers (full sizes only; --tiny uses the stand-ins)
3. ``gpu_tests``: ``pytest tests/test_gpu.py`` (on a CPU they skip, saying why)
4. ``matmul``: the bf16 matmul rate at 8192³, a size that measures the card
5. ``finetune_step``: lesson 01's Seq2SeqTrainer step, t5-small, 16 x 512
6. ``pretrain_step``: lesson 04's ``pretrain`` at 128 rows x 512 / 114, bf16, compile and the accumulation
   it picks; the peak memory per micro-batch row, to calibrate ``memory.ROW_GIB_T5_BASE``
7. ``decoding``: one decoding step of t5-small and t5-base (beam 4) and of GPT-2 ("TL;DR:", greedy)

Before them, ``--wheels DIR`` installs the wheels of ``make wheels`` into ``DIR/site`` once (a later run
finds them installed and goes on), inside the check's budget. Every process sees one GPU (the first), as
the notebooks do, and runs in a process group of its own: a part over its limit is ended with everything it
started. Each part writes its figures as it measures them, and ``DIR/gpu_check.json`` is rewritten after
each part, so a part that fails or runs out of time costs only itself and keeps what it measured; a table
is printed at the end.
With ``--record``, a run on a GPU becomes the "gpu_check" section of benchmarks/RESULTS.md, and
benchmarks/full_run_cost.py then uses its step times. On one H100 the whole check takes under 6 minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for folder in (ROOT, ROOT / "tests" / "rehearsal", ROOT / "benchmarks"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

# The most seconds each step may take on a GPU (three times that with --tiny on a CPU); they add up to BUDGET,
# the whole check's 6 minutes, the wheels' installation included (24 s to install and 15 s to compile them were
# seen here; a later run finds them installed). A part gets its limit or what is left, whichever is less. The
# pretraining step gets the most: it compiles T5 v1.1 base (train and eval graphs).
INSTALL_LIMIT = 45
LIMITS = {
    "environment": 25,
    "assets": 25,
    "gpu_tests": 70,
    "matmul": 10,
    "finetune_step": 35,
    "pretrain_step": 120,
    "decoding": 30,
}
BUDGET = 360
assert INSTALL_LIMIT + sum(LIMITS.values()) == BUDGET, "the budget must add up"
RESULT = "gpu_check.json"
STOP_GRACE_SECONDS = 5  # a part over its limit gets SIGTERM, then this long before SIGKILL
ARTICLES = 8  # lesson 03's generation batch: one batch of articles per model


def sizes(tiny: bool) -> dict:
    """Models and sizes of each part: the full profile's models (built from the assets) at the lessons'
    sizes, or the smoke profile's stand-ins at toy sizes."""
    if tiny:
        return dict(
            models=profile_models("smoke"),
            matmul_size=256,
            matmul_seconds=0.2,
            finetune=dict(batch_size=2, length=16, steps=3),
            pretrain=dict(batch_size=4, input_length=32, steps=3, gradient_accumulation_steps=2),
            new_tokens=4,
        )
    return dict(
        models={key: str(asset_folder(name)) for key, name in profile_models("full").items()},
        matmul_size=None,
        matmul_seconds=1.0,
        finetune=dict(batch_size=16, length=512, steps=6),
        pretrain=dict(batch_size=128, input_length=512, steps=6, gradient_accumulation_steps=0),
        new_tokens=80,
    )


def profile_models(name: str) -> dict[str, str]:
    """{role: model name} of the profile ``name``: t5_small, t5_base, gpt2, t5_v1_1_base."""
    from course_utils.machinery.profiles import get_profile

    return dict(get_profile(name).models)


def asset_folder(name: str) -> Path:
    """Where the part "assets" writes the Hub model ``name``'s config and tokenizer."""
    return Path(os.environ.get("GPU_CHECK_ASSETS", "assets")) / name.replace("/", "--")


# The parts. Each fills its ``figures`` as it measures; the driver runs it in a fresh process. -------------


class Figures(dict):
    """A part's figures, written to ``path`` whenever one is set: a part that runs out of time keeps them."""

    def __init__(self, path: Path):
        super().__init__()
        self.path = path

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.path.write_text(json.dumps(self, default=str))

    def update(self, *args, **kwargs) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value


def part_environment(tiny: bool, figures: Figures) -> dict:
    import torch

    from course_utils.from_notebooks.device_report import compile_check, library_versions
    from course_utils.machinery.hardware import native_bf16
    from course_utils.machinery.machine import describe_device

    figures["device"] = device = describe_device()  # gpu_count: the node's GPUs, though this process sees one
    versions = library_versions(
        (
            "torch",
            "transformers",
            "accelerate",
            "datasets",
            "torchdata",
            "deepspeed",
            "tokenizers",
            "huggingface_hub",
            "safetensors",
            "numpy",
            "pytest",
        )
    )
    versions.update(python=platform.python_version(), torch_runtime=torch.__version__, cuda=torch.version.cuda or "")
    figures["versions"] = versions
    smi = "not found"
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version,compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.strip()
    figures.update(
        nvidia_smi=smi, native_bf16=native_bf16(), visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES", "")
    )
    figures["compile"] = compile_check(device["device"])
    return figures


def part_assets(tiny: bool, figures: Figures) -> dict:
    """Each model's published config and a tokenizer of its published size, trained on data/ (no weights)."""
    from hub_repos import PUBLISHED_CONFIGS, t5_tokenizer, write_model_files

    from course_utils.standins import corpus_files, iter_corpus

    if tiny:
        figures["models"] = "stand-ins (built on first use)"
        return figures
    texts = list(iter_corpus(corpus_files()))
    t5 = t5_tokenizer(texts)  # the three T5s share one, as on the Hub
    for name in profile_models("full").values():
        if not (asset_folder(name) / "config.json").exists():
            write_model_files(
                name, asset_folder(name), texts, t5 if PUBLISHED_CONFIGS[name]["model_type"] == "t5" else None
            )
    figures["models"] = sizes(tiny)["models"]
    return figures


def part_gpu_tests(tiny: bool, figures: Figures) -> dict:
    """tests/test_gpu.py with pytest alone (no plugins the node may lack), its counts from the JUnit file."""
    import xml.etree.ElementTree as ET

    report = Path(tempfile.mkdtemp()) / "gpu_tests.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_gpu.py", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    suite = ET.parse(report).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}
    failed = []
    for case in suite.iter("testcase"):
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        if problem is not None:
            failed.append(f"{case.get('name')}: {(problem.get('message') or '')[:300]}")
    skipped = sorted(
        {
            (case.find("skipped").get("message") or "")[:120]
            for case in suite.iter("testcase")
            if case.find("skipped") is not None
        }
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"pytest exited with {done.returncode}: {done.stdout[-1500:]}{done.stderr[-1500:]}")
    figures.update(
        **counts,
        passed=counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
        failed=failed,
        skip_reasons=skipped,
        ok=done.returncode == 0,
    )
    return figures


def part_matmul(tiny: bool, figures: Figures) -> dict:
    from course_utils.machinery.machine import MATMUL_SIZE, describe_device, matmul_tflops

    device = describe_device()
    dtype = "bfloat16" if device["bf16_supported"] else "float32"
    size = sizes(tiny)["matmul_size"] or MATMUL_SIZE[device["device"]]
    figures.update(device=device["device"], dtype=dtype, size=size)
    figures["tflops"] = matmul_tflops(device["device"], dtype, size, min_seconds=sizes(tiny)["matmul_seconds"])
    return figures


def part_finetune_step(tiny: bool, figures: Figures) -> dict:
    """Lesson 01's Trainer on batches of exactly ``length`` input tokens; the median step after the first."""
    import numpy as np
    from datasets import Dataset
    from transformers import TrainerCallback

    from course_utils.from_notebooks.sentiment_trainer import build_trainer, count_answer_tokens
    from course_utils.lessons.finetune import FinetuneConfig, train
    from course_utils.machinery.hardware import resolve_precision
    from course_utils.models_and_data.models import load_tokenizer, seq2seq_from_config

    shape, name = sizes(tiny)["finetune"], sizes(tiny)["models"]["t5_small"]

    class StepClock(TrainerCallback):
        def __init__(self):
            self.ends = []

        def on_step_end(self, args, state, control, **kwargs):
            self.ends.append(time.perf_counter())
            figures["steps_done"] = len(self.ends)

    with tempfile.TemporaryDirectory() as out:
        config = FinetuneConfig(
            model_name=name,
            output_dir=out,
            per_device_batch_size=shape["batch_size"],
            num_train_epochs=1,
            warmup_fraction=0.0,
            group_by_length=False,
            logging_steps=shape["steps"],
            attn_implementation="eager" if tiny else None,
        )
        tokenizer = load_tokenizer(name)
        model = seq2seq_from_config(name, attn_implementation=config.attn_implementation)
        rows, length = shape["batch_size"] * shape["steps"], shape["length"]
        inputs = np.random.default_rng(0).integers(3, len(tokenizer) - 100, size=(rows, length - 1)).tolist()
        answer = tokenizer("positive").input_ids
        assert len(answer) <= count_answer_tokens(tokenizer)
        data = Dataset.from_dict(
            {
                "input_ids": [ids + [tokenizer.eos_token_id] for ids in inputs],
                "attention_mask": [[1] * length] * rows,
                "labels": [answer] * rows,
            }
        )
        trainer = build_trainer(config, model, tokenizer, data)
        figures.update(
            model=name,
            batch=f"{shape['batch_size']} x {length}",
            precision=resolve_precision("auto"),
            gpus_seen_by_trainer=trainer.args.n_gpu,
        )
        clock = StepClock()
        trainer.add_callback(clock)
        start = time.perf_counter()
        result = train(trainer)
    gaps = [b - a for a, b in zip([start, *clock.ends], clock.ends)]
    figures.update(
        steps=result.steps,
        seconds_per_step=statistics.median(gaps[1:] or gaps),
        first_step_seconds=gaps[0],
        peak_memory_mib=result.peak_memory_mib,
    )
    return figures


def part_pretrain_step(tiny: bool, figures: Figures) -> dict:
    """``pretrain`` itself for a few steps of lesson 04's batch, and what its peak says per micro-batch row."""
    from course_utils.from_notebooks.pretraining_loop import pretrain
    from course_utils.machinery.hardware import resolve_precision, training_device
    from course_utils.machinery.memory import ROW_GIB_T5_BASE, T5_BASE_PARAMETERS, T5_BASE_TOKENS, peak_memory
    from course_utils.machinery.paths import data_dir
    from course_utils.machinery.profiles import get_profile
    from course_utils.pretraining.config import PretrainConfig, collator_lengths, compiles

    shape, name = sizes(tiny)["pretrain"], sizes(tiny)["models"]["t5_v1_1_base"]
    with tempfile.TemporaryDirectory() as out:
        config = PretrainConfig.for_profile(
            get_profile("full"),
            out,
            model_name=name,
            data_path=str(data_dir() / "c4"),
            data_config=None,
            batch_size=shape["batch_size"],
            input_length=shape["input_length"],
            gradient_accumulation_steps=shape["gradient_accumulation_steps"],
            total_steps=shape["steps"],
            warmup_steps=1,
            logging_steps=1,
            eval_every=0,
            eval_batches=1,
            checkpoint_every=0,
            data_workers=2 if not tiny else 0,
            shuffle_block=1000,
            attn_implementation="eager" if tiny else None,
        )
        parameters = result_parameters(config)
        precision = resolve_precision(config.precision)
        figures.update(
            model=name,
            parameters=parameters,
            batch=f"{config.batch_size} x {config.input_length}",
            precision=precision,
            compiled=compiles(config, training_device()),
        )
        lines = []

        def echo(line: str) -> None:  # each step's line, as it comes: what a part over its limit still keeps
            lines.append(line)
            if line.startswith("[train] Step"):
                figures["steps_done"] = int(line.split()[2])
                figures["last_seconds_per_step"] = float(line.rsplit("Seconds_per_step -->", 1)[1].strip(" |"))
            elif line.startswith("Out of GPU memory"):
                figures["out_of_memory_doublings"] = sum(ln.startswith("Out of GPU memory") for ln in lines)

        result = pretrain(config, echo=echo)
        peak_mib = peak_memory()[0]
    micro_rows = result.plan.micro_batch
    states_gib = 16 * parameters / 2**30
    tokens = config.input_length + collator_lengths(config)[1]  # inputs and targets of a row
    rule = ROW_GIB_T5_BASE[precision] * (parameters / T5_BASE_PARAMETERS) * (tokens / T5_BASE_TOKENS)
    figures.update(
        steps=result.steps,
        gradient_accumulation_steps=result.gradient_accumulation_steps,
        micro_batch_rows=micro_rows,
        out_of_memory_doublings=sum(line.startswith("Out of GPU memory") for line in lines),
        seconds_per_step=result.seconds_per_step,
        first_step_seconds=result.first_step_seconds[0],
        peak_memory_mib=peak_mib,  # since the last plan: a step that ran out of memory reset it
        model_states_gib=states_gib,
        peak_gib_per_micro_batch_row=(peak_mib / 1024 - states_gib) / micro_rows,
        rule_gib_per_row=rule,
    )
    return figures


def result_parameters(config) -> int:
    """Parameters of the run's model, counted on the meta device (no memory, no weights)."""
    import torch

    from course_utils.models_and_data.models import seq2seq_from_config

    with torch.device("meta"):
        return seq2seq_from_config(config.model_name, device="meta").num_parameters()


def part_decoding(tiny: bool, figures: Figures) -> dict:
    """Milliseconds per decoding step with lesson 03's settings: one batch of 8 articles, every summary
    forced to ``new_tokens`` tokens, after one warm-up batch."""
    from course_utils.from_notebooks.summarizers import summarize_gpt2, summarize_t5
    from course_utils.machinery.paths import data_dir
    from course_utils.models_and_data.models import load_tokenizer, seq2seq_from_config
    from course_utils.models_and_data.sources import read_jsonl

    chosen = sizes(tiny)
    articles = [row["article"] for _, row in read_jsonl(data_dir() / "cnn_dailymail" / "test.jsonl")][:ARTICLES]
    new = chosen["new_tokens"]
    for key, label in (("t5_small", "t5-small, beam 4"), ("t5_base", "t5-base, beam 4"), ("gpt2", "gpt2, greedy")):
        name = chosen["models"][key]
        tokenizer = load_tokenizer(name)
        model = causal_from_config(name) if key == "gpt2" else seq2seq_from_config(name)
        write = summarize_gpt2 if key == "gpt2" else summarize_t5
        write(model, tokenizer, articles[:2], max_new_tokens=4)  # warm-up: kernels, allocator
        start = time.perf_counter()
        write(model, tokenizer, articles, max_new_tokens=new, min_new_tokens=new, batch_size=ARTICLES)
        synchronize()
        seconds = time.perf_counter() - start
        figures[label] = {"ms_per_step": 1000 * seconds / new, "batch": len(articles), "new_tokens": new}
        del model
    return figures


def causal_from_config(name: str):
    """A causal LM with ``name``'s architecture (a folder or a stand-in) and seeded random weights, on the
    training device: GPT-2's counterpart of ``models.seq2seq_from_config``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from course_utils.machinery.hardware import training_device
    from course_utils.models_and_data.models import resolve_model

    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(resolve_model(name))).to(training_device())


def synchronize() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


PARTS = {
    "environment": part_environment,
    "assets": part_assets,
    "gpu_tests": part_gpu_tests,
    "matmul": part_matmul,
    "finetune_step": part_finetune_step,
    "pretrain_step": part_pretrain_step,
    "decoding": part_decoding,
}


# The driver: each part in a process of its own, results written as they come. ---------------------------


def part_environment_variables(out: Path, site: Path | None = None) -> dict:
    """The parts' environment: one GPU (the node's count kept apart), no Hub (an empty Hugging Face home), the
    repository importable, and the installed wheels (``site``) before the node's own packages."""
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        HF_HOME=str(out / "hf"),
        GPU_CHECK_ASSETS=str(out / "assets"),
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
    )
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    env["CUDA_VISIBLE_DEVICES"] = "0" if visible is None else visible.split(",")[0].strip()
    paths = [str(ROOT), *([str(site)] if site else []), os.environ.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def run_limited(command: list[str], log: Path, limit: float, env: dict | None = None) -> tuple[int | None, str]:
    """(exit status, stdout) of ``command`` in a process group of its own; None when it ran past ``limit``
    seconds, after which the whole group (the part and every process it started) is ended: SIGTERM, then
    SIGKILL after ``STOP_GRACE_SECONDS``. stderr goes to ``log``."""
    with open(log, "w") as handle:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=handle, text=True, cwd=ROOT, env=env, start_new_session=True
        )
        try:
            stdout, _ = process.communicate(timeout=limit)
            return process.returncode, stdout
        except subprocess.TimeoutExpired:
            end_group(process)
            return None, ""


def end_group(process: subprocess.Popen) -> None:
    """End ``process``'s whole group, politely first."""
    for signal_number, wait in ((signal.SIGTERM, STOP_GRACE_SECONDS), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, signal_number)
        except ProcessLookupError:
            return
        try:
            process.communicate(timeout=wait)
            if signal_number == signal.SIGTERM:
                os.killpg(process.pid, signal.SIGKILL)  # the part is gone; its children may not be
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def run_part(name: str, out: Path, tiny: bool, limit: float, site: Path | None = None) -> dict:
    """``name`` in a fresh process; {"status": ok|failed|timed out, "seconds", "figures" (what it measured, also
    when it failed or ran out of time), "error"}."""
    log, partial = out / f"{name}.log", out / f"{name}.figures.json"
    partial.unlink(missing_ok=True)
    command = [sys.executable, str(Path(__file__).resolve()), "--part", name, "--out", str(out)] + (["--tiny"] * tiny)
    start = time.perf_counter()
    status, stdout = run_limited(command, log, limit, part_environment_variables(out, site))
    seconds = round(time.perf_counter() - start, 1)
    measured = json.loads(partial.read_text()) if partial.exists() else {}
    if status is None:
        return {
            "status": "timed out",
            "seconds": seconds,
            "figures": measured,
            "error": f"over its {limit:.0f} s limit; see {log}",
        }
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if status or not lines:
        tail = " | ".join(log.read_text().strip().splitlines()[-3:])
        return {"status": "failed", "seconds": seconds, "figures": measured, "error": f"exit {status}: {tail[-600:]}"}
    return {"status": "ok", "seconds": seconds, "figures": json.loads(lines[-1])}


def wheel_set(wheels: Path) -> str:
    """A fingerprint of the wheels in ``wheels``: their names and sizes."""
    digest = hashlib.sha256()
    for wheel in sorted(wheels.glob("*.whl")):
        digest.update(f"{wheel.name} {wheel.stat().st_size}\n".encode())
    return digest.hexdigest()[:16]


def install_wheels(wheels: Path, limit: float) -> dict:
    """The wheels installed into ``wheels/site`` and compiled, once: a later run with the same wheels finds
    them there. {"status", "seconds", "site"}."""
    site, stamp = wheels / "site", wheels / "site" / ".installed"
    if not list(wheels.glob("*.whl")):
        return {"status": "no wheels", "seconds": 0.0, "site": None}
    if stamp.exists() and stamp.read_text() == wheel_set(wheels):
        return {"status": "installed already", "seconds": 0.0, "site": str(site)}
    start = time.perf_counter()
    shutil.rmtree(site, ignore_errors=True)
    log = wheels / "install.log"
    steps = (
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--no-compile",
            "--target",
            str(site),
            *map(str, sorted(wheels.glob("*.whl"))),
        ],
        [
            sys.executable,
            "-c",
            "import compileall, sys; compileall.compile_dir(sys.argv[1], quiet=2, workers=0)",
            str(site),
        ],
    )
    for command in steps:
        left = limit - (time.perf_counter() - start)
        status, _ = run_limited(command, log, max(left, 1))
        if status != 0:
            return {
                "status": "failed",
                "seconds": round(time.perf_counter() - start, 1),
                "site": None,
                "error": f"{command[2]} {'ran past its limit' if status is None else f'exited {status}'}; see {log}",
            }
    stamp.write_text(wheel_set(wheels))
    return {"status": "installed", "seconds": round(time.perf_counter() - start, 1), "site": str(site)}


def budget_lines(tiny: bool) -> list[str]:
    """The check's time budget: each part's limit, adding up to the whole."""
    factor = 3 if tiny else 1
    steps = {"wheels (once)": INSTALL_LIMIT, **LIMITS}
    return [
        f"[gpu-check] budget: {', '.join(f'{name} {limit * factor} s' for name, limit in steps.items())} "
        f"= {sum(steps.values()) * factor} s (of {BUDGET * factor} s)"
    ]


def run_check(
    out: Path, tiny: bool, only: list[str] | None = None, budget: float = BUDGET, wheels: Path | None = None, echo=print
) -> dict:
    """The wheels installed (once), then every part in order, all within ``budget`` seconds; ``out/gpu_check.json``
    after each. Returns the results."""
    out.mkdir(parents=True, exist_ok=True)
    results = {"when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "tiny": tiny, "parts": {}}
    start = time.perf_counter()
    deadline = start + budget
    for line in budget_lines(tiny):
        echo(line, flush=True)
    site = None
    if wheels is not None:
        installed = install_wheels(wheels, min(INSTALL_LIMIT * (3 if tiny else 1), budget))
        results["wheels"] = installed
        echo(f"[gpu-check] wheels: {installed['status']} ({installed['seconds']} s)", flush=True)
        site = Path(installed["site"]) if installed["site"] else None
    for name in only or list(PARTS):
        left = deadline - time.perf_counter()
        if left < 5:
            results["parts"][name] = {"status": "not run", "seconds": 0, "error": "the check's time budget ran out"}
        else:
            limit = min(LIMITS[name] * (3 if tiny else 1), left)
            echo(f"[gpu-check] {name} (limit {limit:.0f} s) ...", flush=True)
            results["parts"][name] = run_part(name, out, tiny, limit, site)
            echo(
                f"[gpu-check] {name}: {results['parts'][name]['status']} in {results['parts'][name]['seconds']} s",
                flush=True,
            )
        (out / RESULT).write_text(json.dumps(results, indent=1))
    results["seconds"] = round(time.perf_counter() - start, 1)
    (out / RESULT).write_text(json.dumps(results, indent=1))
    return results


def table(results: dict) -> str:
    """The figures a first full run asks about, one line each."""
    parts = results["parts"]

    def figures(name: str) -> dict | None:  # a finished part's; a stopped one's are listed with its error
        return parts.get(name, {}).get("figures") if parts.get(name, {}).get("status") == "ok" else None

    lines = [f"GPU node check ({'tiny, stand-ins' if results['tiny'] else 'full sizes'}), {results['when']}:"]
    if env := figures("environment"):
        d, v = env["device"], env["versions"]
        lines.append(
            f"  device: {d['device']} {d['gpu_name'] or d['cpu_name']} ({d['gpu_memory_gib']} GiB), "
            f"native bf16 {env['native_bf16']}, torch.compile builds kernels: {env['compile']['compiles']} "
            f"({env['compile']['seconds']} s){' - ' + env['compile']['error'] if env['compile']['error'] else ''}"
        )
        lines.append(
            f"  python {v['python']}, torch {v['torch_runtime']} (CUDA {v['cuda'] or '-'}), "
            f"transformers {v['transformers']}, accelerate {v['accelerate']}, datasets {v['datasets']}, "
            f"deepspeed {v['deepspeed']}"
        )
        lines.append(f"  nvidia-smi: {env['nvidia_smi']}")
    if tests := figures("gpu_tests"):
        lines.append(
            f"  gpu tests: {tests['passed']} passed, {len(tests['failed'])} failed, {tests['skipped']} skipped"
            + (f" ({'; '.join(tests['skip_reasons'])})" if tests["skip_reasons"] else "")
        )
        lines += [f"    FAILED {failure}" for failure in tests["failed"]]
    if mm := figures("matmul"):
        lines.append(f"  matmul: {mm['tflops']:.1f} TFLOP/s ({mm['dtype']}, {mm['size']}^3 on {mm['device']})")
    if ft := figures("finetune_step"):
        lines.append(
            f"  lesson 01 fine-tune step: {ft['seconds_per_step']:.3f} s ({ft['model']}, {ft['batch']}, "
            f"{ft['precision']}; first step {ft['first_step_seconds']:.1f} s, peak {ft['peak_memory_mib']:.0f} MiB)"
        )
    if pt := figures("pretrain_step"):
        lines.append(
            f"  lesson 04 pretraining step: {pt['seconds_per_step']:.3f} s ({pt['batch']}, {pt['precision']}, "
            f"compiled {pt['compiled']}, {pt['gradient_accumulation_steps']} x {pt['micro_batch_rows']} rows, "
            f"{pt['out_of_memory_doublings']} out-of-memory doublings; first step {pt['first_step_seconds']:.1f} s)"
        )
        lines.append(
            f"    peak {pt['peak_memory_mib'] / 1024:.1f} GiB = {pt['model_states_gib']:.1f} GiB model states + "
            f"{pt['peak_gib_per_micro_batch_row']:.3f} GiB per micro-batch row (the rule assumes "
            f"{pt['rule_gib_per_row']:.3f})"
        )
    if dec := figures("decoding"):
        lines.append(
            "  decoding: "
            + ", ".join(f"{label} {row['ms_per_step']:.1f} ms per step" for label, row in dec.items())
            + f" (batch {next(iter(dec.values()))['batch']})"
        )
    if wheels := results.get("wheels"):
        lines.append(f"  wheels: {wheels['status']} ({wheels['seconds']} s)")
    for name, part in parts.items():
        if part["status"] != "ok":
            measured = ", ".join(f"{key} {value}" for key, value in (part.get("figures") or {}).items())
            lines.append(
                f"  {name}: {part['status'].upper()} - {part['error']}"
                + (f" (measured before it stopped: {measured[:400]})" if measured else "")
            )
    total = sum(part["seconds"] for part in parts.values())
    lines.append(f"  {sum(p['status'] == 'ok' for p in parts.values())} of {len(parts)} parts ok in {total:.0f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("gpu-check"),
        help="folder for gpu_check.json, each part's log, the assets (default: gpu-check)",
    )
    parser.add_argument("--tiny", action="store_true", help="toy sizes on the stand-ins: rehearses the check on a CPU")
    parser.add_argument("--only", default="", help="comma-separated parts to run (default: all, in order)")
    parser.add_argument("--budget", type=float, default=BUDGET, help="seconds for the whole check")
    parser.add_argument(
        "--wheels",
        type=Path,
        default=None,
        help="the folder of make wheels: installed once into its site/, which the parts then import first",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="keep the figures in benchmarks/gpu_check.json and the table in benchmarks/RESULTS.md",
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        default=None,
        help="an earlier run's gpu_check.json: print (and with --record keep) it instead of running",
    )
    parser.add_argument(
        "--list-wheels",
        type=Path,
        default=None,
        help="a folder of wheels: list their sizes and fail above the 64 MiB a node can be sent",
    )
    parser.add_argument("--part", default="", help=argparse.SUPPRESS)  # the driver's way of running one part
    args = parser.parse_args(argv)
    if args.list_wheels:
        return list_wheels(args.list_wheels)
    if args.from_json:
        results = json.loads(args.from_json.read_text())
        print(table(results))
        if args.record:
            record(results, table(results))
        return 0
    if args.part:
        os.chdir(args.out)  # assets and scratch files stay in the output folder
        figures = Figures(Path(f"{args.part}.figures.json"))  # written as each figure is measured
        print(json.dumps(PARTS[args.part](args.tiny, figures), default=str), flush=True)
        return 0
    only = [name.strip() for name in args.only.split(",") if name.strip()] or None
    unknown = sorted(set(only or []) - set(PARTS))
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; parts: {', '.join(PARTS)}")
    results = run_check(
        args.out.resolve(), args.tiny, only, args.budget, args.wheels.resolve() if args.wheels else None
    )
    text = table(results)
    print(text, flush=True)
    if args.record:
        record(results, text)
    return 0 if all(part["status"] == "ok" for part in results["parts"].values()) else 1


MEASURED = ROOT / "benchmarks" / "gpu_check.json"  # the figures of the last recorded GPU run, beside RESULTS.md
WHEEL_LIMIT_MIB = 64


def record(results: dict, text: str) -> None:
    """The figures into benchmarks/gpu_check.json (full_run_cost.py reads them) and the table into
    RESULTS.md's "gpu_check" section. Only a run at full sizes on a GPU is kept."""
    from results import write_section

    device = results["parts"].get("environment", {}).get("figures", {}).get("device", {})
    if results["tiny"] or device.get("device") != "cuda":
        raise SystemExit("Only a full-size run on a CUDA GPU is recorded (this one was tiny or on a CPU).")
    MEASURED.write_text(json.dumps(results, indent=1) + "\n")
    body = "\n".join(
        [
            "<!-- begin gpu_check -->",
            "## gpu_check",
            "",
            "`make gpu-check OUT=...`, then `python tools/gpu_check.py --from-json "
            "OUT/gpu_check.json --record` (the figures are kept beside it, in gpu_check.json):",
            "",
            "```text",
            text,
            "```",
            "<!-- end gpu_check -->",
        ]
    )
    write_section("gpu_check", body)
    print(f"(recorded in {MEASURED} and RESULTS.md)")


def list_wheels(folder: Path) -> int:
    """Each wheel's size and the total, which must stay within ``WHEEL_LIMIT_MIB``."""
    wheels = sorted(folder.glob("*.whl"))
    for wheel in wheels:
        print(f"{wheel.stat().st_size / 2**20:7.2f} MiB  {wheel.name}")
    total = sum(w.stat().st_size for w in wheels) / 2**20
    print(f"{total:7.2f} MiB  in all, {len(wheels)} wheels (limit {WHEEL_LIMIT_MIB} MiB)")
    return 0 if total <= WHEEL_LIMIT_MIB else 1


if __name__ == "__main__":
    sys.exit(main())
