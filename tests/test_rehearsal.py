"""The full profile, end to end on this machine: prefetch through a Hub server on 127.0.0.1, then an
offline `course run --profile full --quick` at full model sizes (tests/rehearsal/rehearse.py).

This is what an instructor meets on a cluster whose compute nodes have no internet. The network
guard of conftest.py stays on: only loopback connections are allowed, and none other is tried.
"""

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "rehearsal"))
from hub_repos import PUBLISHED_CONFIGS, PUBLISHED_PARAMETERS, STAMP, fingerprint, store_as_repo  # noqa: E402
from hub_server import OLAH  # noqa: E402
from rehearse import NotEnoughDisk, check_disk, drop_weights, rehearse  # noqa: E402

NOTEBOOKS = (
    "00_gpu_check",
    "01_t5_small_imdb_finetune",
    "02_deepspeed_zero",
    "03_cnn_dailymail_rouge",
    "04_nanot5_pretraining",
    "05_is_it_really_better",
    "01L_instruction_tuning",
    "03L_rouge_from_scratch",
    "04L_nanot5_parts",
    "05L_evaluation_by_hand",
)


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    if not OLAH.exists():
        pytest.fail(f"{OLAH} is missing: `make test` installs it (make hub-venv).")
    work = tmp_path_factory.mktemp("rehearsal")
    lines = []
    status = rehearse(work, echo=lambda *a, **k: lines.append(" ".join(map(str, a))))
    yield status, work, lines
    drop_weights(work)  # the notebooks after this need the room; the logs and figures stay, to look at


@pytest.mark.slow
def test_the_rehearsal_passes(rehearsal):
    status, work, lines = rehearsal
    assert status == 0, "\n".join(lines) + "\n" + (work / "run.log").read_text()[-4000:]


@pytest.mark.slow
def test_prefetch_filled_the_cache_through_huggingface_hub(rehearsal):
    _, work, _ = rehearsal
    hub = work / "hf" / "hub"
    for repo in (
        "models--t5-small",
        "models--t5-base",
        "models--gpt2",
        "models--google--t5-v1_1-base",
        "models--EleutherAI--pythia-70m-deduped",
        "models--Qwen--Qwen2.5-0.5B-Instruct",
        "datasets--stanfordnlp--imdb",
        "datasets--abisee--cnn_dailymail",
        "datasets--allenai--c4",
        "datasets--databricks--databricks-dolly-15k",
        "datasets--EleutherAI--lambada_openai",
    ):
        assert (hub / repo / "refs" / "main").exists(), repo  # written by huggingface_hub, not by hand
    snapshot = next((hub / "datasets--allenai--c4" / "snapshots").iterdir())
    assert sorted(p.name for p in (snapshot / "en").iterdir()) == (
        [f"c4-train.{i:05d}-of-01024.json.gz" for i in range(8)] + ["c4-validation.00000-of-00008.json.gz"]
    )
    t5_v1_1 = next((hub / "models--google--t5-v1_1-base" / "snapshots").iterdir())
    assert json.loads((t5_v1_1 / "config.json").read_text()) == PUBLISHED_CONFIGS["google/t5-v1_1-base"]
    # Its repo holds only pytorch_model.bin: the prefetch took that instead (lesson 04 fine-tunes these weights).
    assert (t5_v1_1 / "pytorch_model.bin").exists() and not list(t5_v1_1.glob("*.safetensors"))
    assert (next((hub / "models--t5-small" / "snapshots").iterdir()) / "model.safetensors").exists()
    dolly = next((hub / "datasets--databricks--databricks-dolly-15k" / "snapshots").iterdir())
    assert [p.name for p in dolly.iterdir() if p.suffix == ".jsonl"] == ["databricks-dolly-15k.jsonl"]
    pythia = next((hub / "models--EleutherAI--pythia-70m-deduped" / "snapshots").iterdir())
    assert json.loads((pythia / "config.json").read_text())["torch_dtype"] == "float16"  # as published
    judge = next((hub / "models--Qwen--Qwen2.5-0.5B-Instruct" / "snapshots").iterdir())
    assert json.loads((judge / "config.json").read_text()) == PUBLISHED_CONFIGS["Qwen/Qwen2.5-0.5B-Instruct"]
    assert "chat_template" in json.loads((judge / "tokenizer_config.json").read_text())  # the judge's prompt needs it
    lambada = next((hub / "datasets--EleutherAI--lambada_openai" / "snapshots").iterdir())
    assert [p.name for p in (lambada / "default" / "test").iterdir()] == ["0000.parquet"]


@pytest.mark.slow
def test_the_executed_notebooks_show_no_noise(rehearsal):
    from output_rules import noise

    _, work, _ = rehearsal
    found = {}
    for path in sorted((work / "outputs").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        problems = [p for cell in cells if cell["cell_type"] == "code" for p in noise(cell.get("outputs", []))]
        if problems:
            found[path.name] = problems
    assert not found, found


@pytest.mark.slow
def test_every_notebook_ran_offline_at_full_size(rehearsal):
    _, work, _ = rehearsal
    report = (work / "outputs" / "report.md").read_text()
    assert report.splitlines()[0] == "# Course run: profile `full`, quick"
    for name in NOTEBOOKS:
        assert f"| {name} | ok |" in report, report
    figures = {
        name: entry["figures"] for name, entry in json.loads((work / "outputs" / "metrics.json").read_text()).items()
    }
    assert figures["01_t5_small_imdb_finetune"]["model_parameters"]["value"] == PUBLISHED_PARAMETERS["t5-small"]
    assert figures["01_t5_small_imdb_finetune"]["rows_train"]["value"] == 4
    assert figures["04_nanot5_pretraining"]["model_parameters"]["value"] == PUBLISHED_PARAMETERS["google/t5-v1_1-base"]
    assert figures["04_nanot5_pretraining"]["raw_row_length"]["value"] == 568  # 512 inputs, 114 targets
    assert figures["04_nanot5_pretraining"]["gradient_accumulation_steps"]["value"] == 2
    assert figures["04_nanot5_pretraining"]["pretrain_steps"]["value"] == 2
    # Lab 01L at full size: every weight of Pythia-70m trained in float32, then a rank-8 adapter on its 6 layers'
    # query_key_value (512 -> 1,536): 6 x 8 x (512 + 1,536) = 98,304.
    lab = figures["01L_instruction_tuning"]
    assert lab["trainable_parameters_full"]["value"] == PUBLISHED_PARAMETERS["EleutherAI/pythia-70m-deduped"]
    assert lab["trainable_parameters_lora"]["value"] == 6 * 8 * (512 + 3 * 512)
    assert lab["examples_train"]["value"] == 32 and lab["examples_test"]["value"] == 4
    # Lesson 05 at full size: lm-eval's own lambada_openai task on the published GPT-2 shape, the 494 M judge.
    evaluation = figures["05_is_it_really_better"]
    assert evaluation["judge_articles"]["value"] == 2
    assert 0 <= evaluation["lambada_accuracy"]["value"] <= 1 and evaluation["lambada_perplexity"]["value"] > 1
    assert "(lessons " in report and " labs " in report  # the labs' time counted apart


# Disk: the rehearsal writes about 15 GiB; a disk without room stops it before it starts, not halfway ---------------


def test_the_rehearsal_refuses_to_start_when_its_files_would_not_fit(tmp_path, monkeypatch):
    import rehearse as module

    free = shutil.disk_usage(tmp_path).free / 2**30
    monkeypatch.setattr(module, "DISK_GB", {"repos": 0.0, "cache": free, "outputs": free})
    work = tmp_path / "work"
    with pytest.raises(NotEnoughDisk, match=rf"needs {2 * free:.1f} GiB under {work}.*has \d+\.\d GiB free"):
        rehearse(work, repos=tmp_path / "repos")
    assert not work.exists() and not (tmp_path / "repos").exists()  # nothing was started


def test_the_repos_count_only_until_they_are_built(tmp_path, monkeypatch):
    import rehearse as module

    free = shutil.disk_usage(tmp_path).free / 2**30
    monkeypatch.setattr(module, "DISK_GB", {"repos": 0.6 * free, "cache": 0.3 * free, "outputs": 0.2 * free})
    repos = tmp_path / "repos"
    with pytest.raises(NotEnoughDisk, match=rf"and {0.6 * free:.1f} GiB under {repos}"):
        check_disk(tmp_path / "work", repos)
    repos.mkdir()
    (repos / STAMP).write_text(json.dumps({"fingerprint": fingerprint()}))
    check_disk(tmp_path / "work", repos)  # built: only the cache and the outputs are still to come


def test_after_a_rehearsal_only_its_logs_notebooks_and_figures_stay(tmp_path):
    kept = ["run.log", "outputs/report.md", "outputs/04_nanot5_pretraining.ipynb", "outputs/04_pretrain/result.json"]
    dropped = ["hf/hub/models--t5-base/blobs/0a1b", "outputs/04_pretrain/checkpoints/step-2/optimizer.bin"]
    for name in kept + dropped:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        with open(tmp_path / name, "wb") as handle:
            handle.truncate(11 * 2**20 if name in dropped else 2**20)  # sparse: the size is all that counts
    drop_weights(tmp_path)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == sorted(kept)
    assert not (tmp_path / "hf").exists()


def test_a_repo_keeps_its_files_in_git_alone(tmp_path):
    import subprocess

    folder = tmp_path / "models" / "t5-small"
    (folder / "sub").mkdir(parents=True)
    (folder / "config.json").write_text('{"d_model": 512}')
    (folder / "sub" / "weights.bin").write_bytes(bytes(range(256)) * 64)
    commit = store_as_repo(folder)
    assert [p.name for p in folder.iterdir()] == [".git"]  # no second copy of the weights
    show = ["git", "-C", str(folder), "show"]
    assert subprocess.run([*show, "main:config.json"], capture_output=True, check=True).stdout == b'{"d_model": 512}'
    assert subprocess.run([*show, f"{commit}:sub/weights.bin"], capture_output=True, check=True).stdout == (
        bytes(range(256)) * 64
    )


@pytest.mark.slow
def test_a_passing_session_leaves_no_temporary_folders(tmp_path):
    """pytest's folders (tmp_path_retention_policy) and the notebooks' output folder (conftest.py) go when a session
    passes, so that a machine that runs the tests again and again does not fill its disk."""
    import os
    import subprocess

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            f"{__file__}::test_a_repo_keeps_its_files_in_git_alone",
        ],
        cwd=Path(__file__).parents[1],
        env=dict(os.environ, TMPDIR=str(scratch)),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    left = sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*") if p.is_file())
    assert left == [], left  # before: the test's git repo under pytest-of-*/ and course-tests-*/network-attempts.log
