"""Offline behaviour: smoke never touches the network; full offline says what is missing and stops."""

import json
import pickle
import subprocess
import sys
import time

import pytest
import torch
from conftest import course_command, guarded_env

from course_utils.machinery.offline import OFFLINE_VARIABLES, MissingAssetError, missing_asset_message
from course_utils.machinery.profiles import get_profile
from course_utils.models_and_data.hub import c4_shard_patterns, hub_assets, prefetch


def _offline_env(tmp_path, log):
    # An empty Hugging Face cache, the Hub switched off, the network blocked and logged.
    return guarded_env(log, HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")


@pytest.mark.slow
def test_the_guard_really_blocks_and_logs(tmp_path):
    log = tmp_path / "log"
    code = """
import socket
for attempt in (lambda: socket.create_connection(("93.184.216.34", 80), timeout=2),
                lambda: socket.getaddrinfo("huggingface.co", 443)):
    try:
        attempt()
        print("connected")
    except OSError as err:
        print("blocked:", err)
"""
    out = subprocess.run([sys.executable, "-c", code], env=guarded_env(log), capture_output=True, text=True)
    assert out.stdout.count("blocked: network blocked") == 2
    assert "93.184.216.34" in log.read_text() and "huggingface.co" in log.read_text()


@pytest.mark.slow
def test_a_smoke_run_makes_no_network_connection(tmp_path):
    log, out = tmp_path / "net.log", tmp_path / "out"
    env = guarded_env(log)
    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_EVALUATE_OFFLINE"):
        env.pop(key, None)  # the profile itself must switch the libraries off
    proc = subprocess.run(
        course_command("run", "--profile", "smoke", "--only", "00", "--output-dir", str(out)),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert log.read_text() == ""
    report = (out / "report.md").read_text()
    assert "| 00_gpu_check | ok |" in report and "| matmul_throughput |" in report
    figures = json.loads((out / "metrics.json").read_text())["00_gpu_check"]["figures"]
    assert figures["device"]["value"] in {"cpu", "cuda", "mps"} and figures["cpu_cores"]["value"] >= 1


@pytest.mark.slow
def test_full_offline_names_what_is_missing_in_one_line_and_does_not_hang(tmp_path):
    log = tmp_path / "net.log"
    start = time.monotonic()
    proc = subprocess.run(
        course_command("run", "--profile", "full", "--output-dir", str(tmp_path / "out")),
        env=_offline_env(tmp_path, log),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert time.monotonic() - start < 60
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for name in (
        "t5-small",
        "t5-base",
        "gpt2",
        "google/t5-v1_1-base",
        "stanfordnlp/imdb",
        "abisee/cnn_dailymail (3.0.0)",
        "allenai/c4",
        "course prefetch --profile full",
    ):
        assert name in lines[0]
    assert log.read_text() == ""


@pytest.mark.slow
def test_loading_a_missing_model_offline_is_one_clear_error(tmp_path):
    code = """
from course_utils.models_and_data.models import load_tokenizer
from course_utils.machinery.offline import MissingAssetError
from course_utils.models_and_data.data import read_imdb
from course_utils.machinery.configs import DataSource
for attempt in (lambda: load_tokenizer("t5-small"), lambda: read_imdb(DataSource("stanfordnlp/imdb"))):
    try:
        attempt()
    except MissingAssetError as err:
        print("MISSING", err)
"""
    log = tmp_path / "net.log"
    proc = subprocess.run(
        [sys.executable, "-c", code], env=_offline_env(tmp_path, log), capture_output=True, text=True, timeout=120
    )
    missing = [line for line in proc.stdout.splitlines() if line.startswith("MISSING")]
    assert len(missing) == 2, proc.stdout + proc.stderr
    assert "t5-small" in missing[0] and "stanfordnlp/imdb" in missing[1]
    assert all("course prefetch --profile full" in line for line in missing)
    assert log.read_text() == ""


def test_the_missing_asset_error_keeps_its_message_across_processes():
    # A data worker's exception reaches the main process pickled, or rebuilt as type(err)(message) by torch's
    # DataLoader: either way the student must read the same line, not one wrapped twice.
    err = MissingAssetError(missing_asset_message(["allenai/c4"]))
    assert str(pickle.loads(pickle.dumps(err))) == str(err)
    assert str(type(err)(str(err))) == str(err)
    assert str(err).count("Not in the local Hugging Face cache") == 1


def test_prefetch_asks_for_every_full_asset(monkeypatch, tmp_path):
    calls = []
    (tmp_path / "model.safetensors").touch()  # every repo here has safetensors, so no .bin is asked for

    def snapshot_download(repo_id, repo_type, allow_patterns):
        calls.append((repo_id, repo_type, allow_patterns))
        return str(tmp_path)

    monkeypatch.setattr("huggingface_hub.snapshot_download", snapshot_download)
    fetched = prefetch(get_profile("full"), echo=lambda *a, **k: None)
    assert [str(a) for a in fetched] == [
        "t5-small",
        "t5-base",
        "gpt2",
        "google/t5-v1_1-base",
        "EleutherAI/pythia-70m-deduped",
        "Qwen/Qwen2.5-0.5B-Instruct",
        "stanfordnlp/imdb (default)",
        "abisee/cnn_dailymail (3.0.0)",
        "databricks/databricks-dolly-15k (default)",
        "EleutherAI/lambada_openai (default)",
        "allenai/c4",
    ]
    # Data sets come as their files in the Hub's layout, which is all the offline run reads.
    assert (
        "stanfordnlp/imdb",
        "dataset",
        ["plain_text/train-*.parquet", "plain_text/test-*.parquet", "plain_text/unsupervised-*.parquet"],
    ) in calls
    assert (
        "abisee/cnn_dailymail",
        "dataset",
        ["3.0.0/train-*.parquet", "3.0.0/validation-*.parquet", "3.0.0/test-*.parquet"],
    ) in calls
    assert ("databricks/databricks-dolly-15k", "dataset", ["databricks-dolly-15k.jsonl"]) in calls  # its one file
    assert ("EleutherAI/lambada_openai", "dataset", ["default/test/*.parquet"]) in calls  # lm-eval's lambada_openai
    c4 = [c for c in calls if c[0] == "allenai/c4"][0]
    assert c4[1] == "dataset" and len(c4[2]) == 8 + 1
    assert ("t5-small", "model", ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja"]) in calls
    assert len(calls) == len(fetched)


def test_smoke_needs_nothing_from_the_hub():
    assert hub_assets(get_profile("smoke")) == []


def test_c4_shard_names_follow_the_hub_layout():
    assert c4_shard_patterns(2) == (
        "en/c4-train.00000-of-01024.json.gz",
        "en/c4-train.00001-of-01024.json.gz",
        "en/c4-validation.00000-of-00008.json.gz",
    )


@pytest.mark.slow
def test_notebook_00_stops_with_a_clear_message_when_a_gpu_is_required_but_absent(tmp_path):

    if torch.cuda.is_available():
        import pytest

        pytest.skip("this machine has a GPU")
    proc = subprocess.run(
        course_command("run", "--only", "00", "--output-dir", str(tmp_path)),
        env=guarded_env(tmp_path / "net.log", REQUIRE_GPU="1"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1
    assert "FAILED 00_gpu_check" in proc.stderr and "NoGPUError: No CUDA GPU is visible" in proc.stderr
    assert "COURSE_PROFILE=smoke" in proc.stderr


@pytest.mark.slow
def test_switching_the_hub_off_switches_every_library_off(tmp_path):
    import subprocess

    code = f"""
import json, os
for key in {sorted(OFFLINE_VARIABLES)!r}:
    os.environ.pop(key, None)
os.environ["HF_HUB_OFFLINE"] = "1"  # all a cluster user sets
from course_utils.machinery.environment import start_session
session = start_session("full", {str(tmp_path)!r}, require_gpu="0")
print(json.dumps(session.environment))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    changed = json.loads(done.stdout.strip().splitlines()[-1])
    assert {k: v for k, v in changed.items() if k in OFFLINE_VARIABLES} == {
        k: v for k, v in OFFLINE_VARIABLES.items() if k != "HF_HUB_OFFLINE"
    }
    # Besides: one GPU, DeepSpeed told there is none (on a CPU), and, offline, no download bars to show.
    assert set(changed) - set(OFFLINE_VARIABLES) <= {
        "CUDA_VISIBLE_DEVICES",
        "DS_ACCELERATOR",
        "HF_DATASETS_DISABLE_PROGRESS_BARS",
        "HF_HUB_DISABLE_PROGRESS_BARS",
    }
