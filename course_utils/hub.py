"""The Hugging Face cache: what the full profile downloads, what is there offline, and its one error.

    course prefetch --profile full                # on a login node with internet access
    HF_HUB_OFFLINE=1 course run --profile full    # then, on the compute nodes

Models come as their weights, config and tokenizer files. IMDB and CNN/DailyMail come as
their parquet files, and C4 as its first few train shards and one validation shard
(``Profile.c4_prefetch_train_shards``), since all of it is hundreds of GB.

Offline, data sets are read straight from the files huggingface_hub put in its cache
(``$HF_HOME/hub``), with datasets' own parquet and json readers. Nothing depends on a
prepared ``datasets`` cache: it may be missing on the compute nodes, live elsewhere
(``HF_DATASETS_CACHE``) or be read-only (then a temporary folder takes its place). This
matters for C4, which is streamed and never prepared: datasets cannot reload it offline
by its Hub id.

    files = local_data_files("allenai/c4", "en")   # {"train": [...json.gz], "validation": [...]}
    missing_assets(profile)                         # what the cache lacks; never uses the network
"""

from __future__ import annotations

import fnmatch
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from .configs import InputError
from .offline import STANDIN_PREFIX, MissingAssetError, is_offline, missing_asset_message

# Weights as safetensors, plus configs and tokenizer files; skips the .bin/.h5/.msgpack copies
# (the .bin is taken instead where a repo has no safetensors).
MODEL_FILES = ("*.json", "*.safetensors", "*.model", "*.txt")
LEGACY_WEIGHT_FILES = ("pytorch_model*.bin",)  # fetched only for a repo without safetensors
C4_TRAIN_SHARDS, C4_VALIDATION_SHARDS = 1024, 8
# Where each data set keeps each split on the Hub, as (repo id, config) -> {split: file pattern}.
HUB_DATA_FILES = {
    ("stanfordnlp/imdb", None): {split: f"plain_text/{split}-*.parquet" for split in ("train", "test", "unsupervised")},
    ("abisee/cnn_dailymail", "3.0.0"): {split: f"3.0.0/{split}-*.parquet" for split in ("train", "validation", "test")},
    ("allenai/c4", "en"): {"train": f"en/c4-train.*-of-{C4_TRAIN_SHARDS:05d}.json.gz",
                           "validation": f"en/c4-validation.*-of-{C4_VALIDATION_SHARDS:05d}.json.gz"},
}


@dataclass(frozen=True)
class HubAsset:
    repo_id: str
    repo_type: str                        # "model" or "dataset"
    allow_patterns: tuple[str, ...] | None = None
    config: str | None = None             # the data set's config, for the message

    def __str__(self) -> str:
        return self.repo_id if self.config is None else f"{self.repo_id} ({self.config})"


def on_hub(name: str) -> bool:
    """True for a Hub id, False for a stand-in or a local folder."""
    return not name.startswith(STANDIN_PREFIX) and not os.path.isdir(name)


def data_file_patterns(repo_id: str, config: str | None) -> dict[str, str]:
    """{split: file pattern} of a data set the course knows; a clear error for any other."""
    try:
        return HUB_DATA_FILES[(repo_id, config)]
    except KeyError:
        known = ", ".join(f"{r} ({c})" if c else r for r, c in HUB_DATA_FILES)
        raise InputError(f"The course does not know the file layout of {repo_id} ({config}); known: {known}. "
                         "Point data_path at a local folder of files instead.") from None


def c4_shard_patterns(train_shards: int, config: str = "en") -> tuple[str, ...]:
    """File names of the first C4 shards: 1,024 train and 8 validation shards in all."""
    train = [f"{config}/c4-train.{i:05d}-of-{C4_TRAIN_SHARDS:05d}.json.gz" for i in range(train_shards)]
    return tuple(train + [f"{config}/c4-validation.00000-of-{C4_VALIDATION_SHARDS:05d}.json.gz"])


def hub_assets(profile) -> list[HubAsset]:
    """Every Hub model and data set ``profile`` reads (none for smoke, which ships its own)."""
    names = [*profile.models.values(), *([profile.released_weights] if profile.released_weights else [])]
    assets = [HubAsset(name, "model", MODEL_FILES) for name in dict.fromkeys(names) if on_hub(name)]
    for source in (profile.imdb, profile.cnn_dailymail):
        if on_hub(source.path):
            patterns = tuple(data_file_patterns(source.path, source.config).values())
            assets.append(HubAsset(source.path, "dataset", patterns, source.config or "default"))
    c4 = profile.c4
    if on_hub(c4.path) and profile.c4_prefetch_train_shards > 0:
        assets.append(HubAsset(c4.path, "dataset", c4_shard_patterns(profile.c4_prefetch_train_shards,
                                                                      c4.config or "en")))
    return assets


def cached_snapshot(repo_id: str, repo_type: str, allow_patterns) -> Path | None:
    """The cache's snapshot folder holding files matching ``allow_patterns``, or None; never uses the network."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = Path(snapshot_download(repo_id, repo_type=repo_type, local_files_only=True,
                                        allow_patterns=list(allow_patterns or ["*"])))
    except (LocalEntryNotFoundError, FileNotFoundError, OSError):
        return None
    return folder if any(folder.iterdir()) else None


def missing_assets(profile) -> list[str]:
    """Names of the assets ``profile`` needs that the local cache lacks; never uses the network."""
    return [str(a) for a in hub_assets(profile) if cached_snapshot(a.repo_id, a.repo_type, a.allow_patterns) is None]


def check_offline_assets(profile) -> None:
    """Raise MissingAssetError (one line) if the Hub is off and something ``profile`` needs is absent."""
    if is_offline():
        missing = missing_assets(profile)
        if missing:
            raise MissingAssetError(missing_asset_message(missing))


def local_data_files(repo_id: str, config: str | None) -> dict[str, list[str]]:
    """{split: sorted file paths} of a data set from the Hub cache (downloaded first when the Hub is on)."""
    from huggingface_hub import snapshot_download

    patterns = data_file_patterns(repo_id, config)
    if is_offline():
        folder = cached_snapshot(repo_id, "dataset", patterns.values())
        if folder is None:
            raise MissingAssetError(missing_asset_message([repo_id]))
    else:
        folder = Path(snapshot_download(repo_id, repo_type="dataset", allow_patterns=list(patterns.values())))
    found = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    files = {split: [str(folder / f) for f in found if fnmatch.fnmatch(f, pattern)] for split, pattern in patterns.items()}
    files = {split: paths for split, paths in files.items() if paths}
    if not files:
        raise MissingAssetError(missing_asset_message([repo_id]))
    return files


def writable_datasets_cache() -> str | None:
    """None when datasets' own cache can be written to; else a fresh temporary folder (with a warning)."""
    import datasets.config

    cache = Path(datasets.config.HF_DATASETS_CACHE)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=cache):
            pass
        return None
    except OSError as err:
        chosen = tempfile.mkdtemp(prefix="course-datasets-")
        warnings.warn(f"The datasets cache {cache} cannot be written to ({err.strerror}); reading the data through "
                      f"{chosen} instead. Set HF_DATASETS_CACHE to a writable folder to keep it.", stacklevel=2)
        return chosen


def prefetch(profile, echo=print) -> list[HubAsset]:
    """Download every asset of ``profile`` into the Hugging Face cache; return what was fetched."""
    from huggingface_hub import snapshot_download

    assets = hub_assets(profile)
    for i, asset in enumerate(assets, start=1):
        echo(f"[{i}/{len(assets)}] {asset} ...", flush=True)
        folder = snapshot_download(asset.repo_id, repo_type=asset.repo_type,
                                   allow_patterns=list(asset.allow_patterns) if asset.allow_patterns else None)
        if asset.repo_type == "model" and not any(Path(folder).glob("*.safetensors")):
            # An older repo may hold its weights only in PyTorch's own format.
            snapshot_download(asset.repo_id, repo_type="model", allow_patterns=list(LEGACY_WEIGHT_FILES))
    return assets
