"""The Hub's cache: what course prefetch fetches (course_utils/models_and_data/hub.py)."""

from course_utils.machinery.configs import DataSource
from course_utils.machinery.profiles import get_profile
from course_utils.models_and_data import hub


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
