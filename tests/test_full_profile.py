"""The full profile's defects, each pinned by a test (issue 13, points 1-12).

GPU-only behaviour is tested with the device choice mocked. The whole path (prefetch through a
Hub server, then an offline quick run at full size) is ``test_rehearsal.py``.
"""

import gzip
import json
import os
import sys
from pathlib import Path

import pytest
import torch

from course_utils import hub, sources
from course_utils.data import read_imdb
from course_utils.environment import gpu_required, one_gpu, start_session
from course_utils.hardware import NoGPUError, resolve_precision, training_device
from course_utils.models import (
    UNTIED_HEAD_NOTICE,
    load_model,
    load_tokenizer,
    publishes_tied_embeddings,
    seq2seq_from_config,
)
from course_utils.offline import OFFLINE_VARIABLES, MissingAssetError
from course_utils.memory import T5_BASE_PARAMETERS, choose_accumulation, rows_that_fit
from course_utils.pretraining.config import PretrainConfig, choose_accumulation_steps
from course_utils.pretraining.data import iter_texts
from course_utils.configs import DataSource
from course_utils.profiles import FULL_NOTEBOOK_PRETRAIN, QUICK_CAPS, get_profile
from course_utils.summary_setup import summary_config

sys.path.insert(0, str(Path(__file__).parent / "rehearsal"))
from hub_repos import PUBLISHED_CONFIGS, PUBLISHED_PARAMETERS  # noqa: E402

GIB = 2**30


@pytest.fixture
def hub_snapshot(tmp_path, monkeypatch):
    """A folder laid out like the Hub's repos, returned by the cache look-up, with the Hub switched off."""
    folder = tmp_path / "snapshot"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(sources, "cached_snapshot", lambda repo_id, repo_type, patterns: folder)
    return folder


# 1. Offline C4 after prefetch ----------------------------------------------------------------


def _write_c4_shards(folder: Path) -> None:
    (folder / "en").mkdir(parents=True)
    for name, texts in (
        ("c4-train.00000-of-01024.json.gz", ["train one", "train two", "train three"]),
        ("c4-train.00001-of-01024.json.gz", ["train four"]),
        ("c4-validation.00000-of-00008.json.gz", ["held out"]),
    ):
        with gzip.open(folder / "en" / name, "wt") as handle:
            handle.writelines(
                json.dumps({"text": t, "timestamp": "2019-04-18T03:56:52Z", "url": "u"}) + "\n" for t in texts
            )


def test_offline_c4_is_read_from_the_prefetched_shards(hub_snapshot):
    _write_c4_shards(hub_snapshot)
    assert list(iter_texts("allenai/c4", "en", "train")) == ["train one", "train two", "train three", "train four"]
    assert list(iter_texts("allenai/c4", "en", "validation")) == ["held out"]
    # Two processes share the shards without overlap, as split_dataset_by_node hands them out.
    shares = [list(iter_texts("allenai/c4", "en", "train", rank, 2)) for rank in (0, 1)]
    assert sorted(shares[0] + shares[1]) == sorted(["train one", "train two", "train three", "train four"])
    assert not set(shares[0]) & set(shares[1])


def test_offline_c4_without_its_shards_is_the_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(sources, "cached_snapshot", lambda *args: None)
    with pytest.raises(MissingAssetError, match="allenai/c4.*course prefetch --profile full"):
        list(iter_texts("allenai/c4", "en", "train"))


def test_an_unknown_hub_data_set_names_the_known_ones():
    with pytest.raises(ValueError, match="allenai/c4 \\(en\\)"):
        sources.data_file_patterns("someone/else", None)


# 11. The datasets cache: missing, elsewhere or read-only ------------------------------------


def _write_imdb_parquet(folder: Path) -> None:
    from datasets import ClassLabel, Dataset, Features, Value

    features = Features({"text": Value("string"), "label": ClassLabel(names=["neg", "pos"])})
    (folder / "plain_text").mkdir(parents=True)
    for split, rows in (
        ("train", [("fine film", 1), ("dull film", 0)]),
        ("test", [("great", 1)]),
        ("unsupervised", [("no label", -1)]),
    ):
        Dataset.from_dict({"text": [t for t, _ in rows], "label": [y for _, y in rows]}, features=features).to_parquet(
            str(folder / "plain_text" / f"{split}-00000-of-00001.parquet")
        )


@pytest.mark.parametrize("cache", ["missing", "elsewhere", "read-only"])
def test_offline_imdb_needs_only_the_hub_cache(hub_snapshot, tmp_path, monkeypatch, cache):
    import datasets.config

    _write_imdb_parquet(hub_snapshot)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    where = {
        "missing": tmp_path / "never-made",
        "elsewhere": tmp_path / "other" / "datasets",
        "read-only": blocker / "datasets",
    }[cache]  # under a file: no one, root included, can write there
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", where)
    if cache == "read-only":
        with pytest.warns(UserWarning, match="cannot be written to"):
            imdb = read_imdb(DataSource("stanfordnlp/imdb"))
    else:
        imdb = read_imdb(DataSource("stanfordnlp/imdb"))
        assert where.is_dir()  # made (missing) or used (elsewhere) where HF_DATASETS_CACHE points
    assert imdb["train"]["text"] == ["fine film", "dull film"] and imdb["train"]["label"] == [1, 0]
    assert imdb["train"].features["label"].names == ["neg", "pos"]
    assert imdb["unsupervised"]["label"] == [-1]


# 2. Evaluation and generation on the training device ------------------------------------------


def test_the_training_device_is_this_process_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert training_device() == torch.device("cuda", 0)
    monkeypatch.setenv("LOCAL_RANK", "3")  # under a launcher, each process owns its GPU
    assert training_device() == torch.device("cuda", 3)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert training_device() == torch.device("cpu")


def test_loaded_models_go_to_the_training_device(monkeypatch):
    # The meta device stands in for a GPU: a model that lands there was moved by the loader.
    monkeypatch.setattr("course_utils.models.training_device", lambda: torch.device("meta"))
    model = load_model("standin:t5-small")
    assert {p.device.type for p in model.parameters()} == {"meta"}
    built = seq2seq_from_config("standin:t5-v1_1-base")
    assert {p.device.type for p in built.parameters()} == {"meta"}
    assert load_model("standin:t5-small", device="cpu").device.type == "cpu"


# 3. and 9. One recipe for the command; a notebook-sized run in the full profile -------------


def test_the_command_defaults_are_nanot5s_recipe():
    from course_utils.configs import argument_parser

    recipe = PretrainConfig()
    assert (
        recipe.total_steps,
        recipe.batch_size,
        recipe.input_length,
        recipe.learning_rate,
        recipe.warmup_steps,
        recipe.optimizer,
        recipe.lr_scheduler,
        recipe.final_learning_rate,
    ) == (65536, 128, 512, 2e-2, 10000, "adamwscale", "cosine", 1e-5)
    assert recipe.compile and recipe.eval_batches == 100 and recipe.checkpoint_every == 5000
    parsed = argument_parser(PretrainConfig, "p", "d").parse_args([])
    assert PretrainConfig(**vars(parsed)) == recipe


def test_the_full_notebook_changes_only_its_budget():
    config = PretrainConfig.for_profile(get_profile("full"), "out")
    recipe = PretrainConfig(output_dir="out")
    changed = {name for name in recipe.__dataclass_fields__ if getattr(config, name) != getattr(recipe, name)}
    assert changed == set(FULL_NOTEBOOK_PRETRAIN)
    assert config.checkpoint_every and config.total_steps * 0.56 / 3600 <= 1.0  # within an hour on an A100


def test_any_pretraining_field_can_be_set_from_the_profile_and_typos_are_refused():
    profile = get_profile("full", pretrain={"gradient_accumulation_steps": 4})
    assert PretrainConfig.for_profile(profile, "out").gradient_accumulation_steps == 4
    with pytest.raises(ValueError, match="gradient_acumulation_steps"):
        PretrainConfig.for_profile(get_profile("full", pretrain={"gradient_acumulation_steps": 4}), "out")


@pytest.mark.parametrize("gib, steps", [(22.0, 8), (39.4, 4), (44.5, 2), (79.1, 1), (139.8, 1)])
def test_accumulation_follows_the_gpu_memory(gib, steps):
    # 24 GB, 40 GB and 48 GB cards, an 80 GB A100/H100 and an H200, as torch reports them (GiB), in bf16.
    fitting = rows_that_fit(gib, PUBLISHED_PARAMETERS["google/t5-v1_1-base"], 512 + 114, "bf16")
    assert choose_accumulation(128, 1, fitting) == steps
    assert choose_accumulation(128, 8, fitting) == 1  # 16 rows per GPU fit everywhere


def test_accumulation_is_chosen_only_when_asked(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda index: type("Props", (), {"total_memory": int(22.0 * GIB)})()
    )
    assert choose_accumulation_steps(PretrainConfig(), 1, 247_577_856) == 8
    assert choose_accumulation_steps(PretrainConfig(gradient_accumulation_steps=8), 1, 1) == 8
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert choose_accumulation_steps(PretrainConfig(), 1, 247_577_856) == 1


# 4. Every notebook refuses the full profile without a GPU -------------------------------------


def test_the_full_session_stops_without_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(NoGPUError, match="REQUIRE_GPU=0"):
        start_session("full", tmp_path)
    assert start_session("full", tmp_path, require_gpu="0").profile.name == "full"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)  # restore what one_gpu set


@pytest.mark.slow
def test_switching_the_hub_off_switches_every_library_off(tmp_path):
    import subprocess

    code = f"""
import json, os
for key in {sorted(OFFLINE_VARIABLES)!r}:
    os.environ.pop(key, None)
os.environ["HF_HUB_OFFLINE"] = "1"  # all a cluster user sets
from course_utils.environment import start_session
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


def test_a_cpu_build_of_torch_is_named(monkeypatch):
    from course_utils.hardware import require_gpu

    monkeypatch.setattr(torch.version, "cuda", None)
    with pytest.raises(NoGPUError, match="CPU-only build"):
        require_gpu({"device": "cpu"})


def test_every_lesson_notebook_checks_the_gpu_in_its_set_up_cell():
    nbformat = pytest.importorskip("nbformat")  # imported here: `pytest -m gpu` collects this file on bare nodes
    for path in sorted((Path(__file__).parents[1] / "notebooks").glob("0[1-4]_*.ipynb")):
        code = "\n".join("".join(c["source"]) for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        assert 'start_session(PROFILE, OUTPUT_DIR, quick=QUICK == "1", require_gpu=REQUIRE_GPU, seed=SEED)' in code, (
            path.name
        )
        assert "check_gpu=False" not in code, path.name


def test_require_gpu_parameter_is_checked():
    full = get_profile("full")
    assert gpu_required(full) and not gpu_required(full, "0") and gpu_required(get_profile("smoke"), "1")
    with pytest.raises(ValueError, match="REQUIRE_GPU"):
        gpu_required(full, "yes")


# 5. One GPU per notebook process (no DataParallel) ----------------------------------------


@pytest.mark.parametrize("visible, chosen", [(None, "0"), ("3,5", "3"), (" 2 , 4", "2"), ("1", None), ("", None)])
def test_a_notebook_sees_one_gpu(monkeypatch, visible, chosen):
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert one_gpu() == ({} if chosen is None else {"CUDA_VISIBLE_DEVICES": chosen})
    assert os.environ["CUDA_VISIBLE_DEVICES"] == (visible if chosen is None else chosen)
    assert one_gpu() == {}  # a second call changes nothing


# 6. bf16 only where the GPU has it natively ---------------------------------------------------


@pytest.mark.parametrize("native, expected", [(False, "fp32"), (True, "bf16")])
def test_auto_precision_ignores_emulated_bf16(monkeypatch, native, expected):
    # A V100 or T4 emulates bf16: is_bf16_supported() says True unless emulation is excluded.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation or native)
    assert resolve_precision("auto") == expected
    assert resolve_precision("fp32") == "fp32"


# 7. T5 inputs truncated at 512 whatever the tokenizer says ------------------------------------


def test_t5_summaries_truncate_at_512_even_when_the_tokenizer_knows_no_limit():
    from course_utils.summarizers import summarize_t5

    tokenizer = load_tokenizer("standin:t5-small")
    tokenizer.model_max_length = int(1e30)  # what a Hub tokenizer without the setting reports
    model = load_model("standin:t5-small")
    seen = []
    model.generate = lambda input_ids, attention_mask, **settings: seen.append(input_ids.shape) or input_ids[:, :3]
    summarize_t5(model, tokenizer, ["word " * 3000, "short article"], max_new_tokens=4, batch_size=2)
    assert seen == [torch.Size([2, 512])]


# 8. T5 v1.1 keeps its own output layer ------------------------------------------------------


def test_t5_v1_1_base_is_built_with_its_untied_output_layer(tmp_path):
    folder = tmp_path / "t5-v1_1-base"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(PUBLISHED_CONFIGS["google/t5-v1_1-base"]))
    assert not publishes_tied_embeddings(str(folder))
    with torch.device("meta"):
        model = seq2seq_from_config(str(folder), device="meta")
    assert model.lm_head.weight is not model.shared.weight
    assert model.num_parameters() == PUBLISHED_PARAMETERS["google/t5-v1_1-base"] == 247_577_856
    # The course's memory rule (lab 00L, memory.rows_that_fit) is measured on this model, the one lesson 04 trains.
    assert model.num_parameters() == T5_BASE_PARAMETERS


def test_the_original_t5_stays_tied(tmp_path):
    folder = tmp_path / "t5-base"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(PUBLISHED_CONFIGS["t5-base"]))
    with torch.device("meta"):
        model = seq2seq_from_config(str(folder), device="meta")
    assert model.lm_head.weight is model.shared.weight and model.num_parameters() == 222_903_552


def test_save_and_reload_keep_the_output_layer_untied_and_intact(tmp_path, transformers_notices):
    torch.manual_seed(0)
    model = seq2seq_from_config("standin:t5-v1_1-base")
    assert model.lm_head.weight is not model.shared.weight
    assert float(model.lm_head.weight.detach().std()) == pytest.approx(1.0, rel=0.05)  # T5's init for an untied head
    model.save_pretrained(tmp_path)
    transformers_notices.clear()
    reloaded = load_model(str(tmp_path))
    assert not [
        n for n in transformers_notices if UNTIED_HEAD_NOTICE in n
    ]  # right, and so not worth a warning at every load
    assert reloaded.lm_head.weight is not reloaded.shared.weight
    assert reloaded.num_parameters() == model.num_parameters()
    expected = model.state_dict()
    for name, tensor in reloaded.state_dict().items():
        assert torch.equal(tensor, expected[name]), name
    assert seq2seq_from_config(str(tmp_path)).lm_head.weight is not None  # its config still says "untied"
    assert not publishes_tied_embeddings(str(tmp_path))


# 10. The kernel is this interpreter -----------------------------------------------------------


@pytest.mark.slow
def test_notebooks_run_in_the_interpreter_that_runs_course(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    from course_utils.runner import KERNEL_NAME, run_course

    decoys = tmp_path / "user-data" / "kernels"
    for name in ("python3", KERNEL_NAME):  # user-level kernelspecs pointing at something else
        (decoys / name).mkdir(parents=True)
        (decoys / name / "kernel.json").write_text(
            json.dumps({"argv": ["/bin/false", "{connection_file}"], "display_name": "decoy", "language": "python"})
        )
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "user-data"))
    record = tmp_path / "interpreter.txt"
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(f"import sys\nopen({str(record)!r}, 'w').write(sys.executable)")],
        metadata={
            "kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"},
            "language_info": {"name": "python"},
        },
    )  # as the course's notebooks are stored
    nbformat.write(notebook, tmp_path / "00_which.ipynb")
    results = run_course([tmp_path / "00_which.ipynb"], "smoke", tmp_path / "out", echo=lambda *a, **k: None)
    assert results[0].ok, results[0].failure
    assert record.read_text() == sys.executable


# 12. Lesson 02 compares like with like --------------------------------------------------------


def test_the_zero_comparison_trains_both_runs_in_the_same_precision(tmp_path, monkeypatch):
    import dataclasses

    from course_utils.finetune import FinetuneConfig, deepspeed_path

    monkeypatch.setattr("course_utils.hardware.native_bf16", lambda: True)  # an A100: "auto" would mean bf16
    # Notebook 02's two configs, as its cell builds them.
    plain = FinetuneConfig.for_profile(get_profile("full"), str(tmp_path / "plain"), precision="fp32")
    zero = dataclasses.replace(plain, output_dir=str(tmp_path / "zero2"), deepspeed="zero2")
    assert FinetuneConfig.for_profile(get_profile("full"), "x").precision == "bf16"  # what "auto" would have chosen
    assert resolve_precision(plain.precision) == resolve_precision(zero.precision) == "fp32"
    differ = {f for f in plain.__dataclass_fields__ if getattr(plain, f) != getattr(zero, f)}
    assert differ == {"output_dir", "deepspeed"} and deepspeed_path(zero).endswith("zero2.json")


# --quick -------------------------------------------------------------------------------------


def test_quick_caps_rows_and_steps_and_keeps_the_rest():
    full, quick = get_profile("full"), get_profile("full", quick=True)
    assert quick.quick and not full.quick
    assert quick.models == full.models and quick.imdb == full.imdb and quick.require_gpu
    assert quick.finetune["max_train_rows"] == QUICK_CAPS["finetune"]["max_train_rows"] == 4
    from course_utils.finetune import FinetuneConfig

    for profile in (quick, get_profile("smoke", quick=True)):  # every capped key is a FinetuneConfig field
        capped = FinetuneConfig.for_profile(profile, "out")
        assert (capped.max_train_rows, capped.test_rows, capped.num_train_epochs) == (4, 4, 1.0)
    assert summary_config(quick).test_rows == 4 and summary_config(full).test_rows == 100
    config = PretrainConfig.for_profile(quick, "out")
    assert (config.input_length, config.total_steps, config.batch_size, config.gradient_accumulation_steps) == (
        512,
        2,
        4,
        2,
    )
    assert config.compile and config.learning_rate == PretrainConfig().learning_rate
    smoke_quick = get_profile("smoke", quick=True)  # a cap never raises a value
    assert smoke_quick.pretrain["input_length"] == 128 and smoke_quick.finetune["max_train_rows"] == 4


def test_a_quick_report_says_so():
    from course_utils.runner import render_report

    assert "quick" in render_report([], {}, "full", quick=True).splitlines()[0]
    assert "quick" not in render_report([], {}, "full").lower()


# Issue 14, section 6: lesson 04's third start ------------------------------------------------


def test_the_released_weights_are_the_full_profiles_third_start_and_are_prefetched():
    full, smoke = get_profile("full"), get_profile("smoke")
    assert full.released_weights == "google/t5-v1_1-base" and smoke.released_weights == "standin:t5-v1_1-base"
    assert "google/t5-v1_1-base" in [a.repo_id for a in hub.hub_assets(full)]
    other = get_profile("full", released_weights="someone/t5-v1_1-base-continued")
    assert "someone/t5-v1_1-base-continued" in [a.repo_id for a in hub.hub_assets(other)]


def test_a_repo_without_safetensors_is_prefetched_with_its_pytorch_weights(tmp_path, monkeypatch):
    import huggingface_hub

    calls = []

    def snapshot_download(repo_id, repo_type, allow_patterns):
        calls.append((repo_id, tuple(allow_patterns or ())))
        folder = tmp_path / repo_id.replace("/", "--")
        folder.mkdir(exist_ok=True)
        if repo_id == "t5-small":
            (folder / "model.safetensors").write_bytes(b"")
        return str(folder)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    profile = get_profile(
        "full",
        models={"t5_small": "t5-small", "t5_v1_1_base": "google/t5-v1_1-base"},
        c4_prefetch_train_shards=0,
        imdb=DataSource(str(tmp_path)),
        cnn_dailymail=DataSource(str(tmp_path)),
        dolly=DataSource(str(tmp_path)),
        lambada=DataSource(str(tmp_path)),
    )
    hub.prefetch(profile, echo=lambda *a, **k: None)
    assert calls == [
        ("t5-small", hub.MODEL_FILES),
        ("google/t5-v1_1-base", hub.MODEL_FILES),
        ("google/t5-v1_1-base", hub.LEGACY_WEIGHT_FILES),
    ]
