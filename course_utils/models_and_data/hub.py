"""The Hugging Face cache: what the full profile downloads, what is there offline, and its one error.

    course prefetch --profile full                # on a login node with internet access
    HF_HUB_OFFLINE=1 course run --profile full    # then, on the compute nodes

Models come as their weights, config and tokenizer files. IMDB and CNN/DailyMail come as
their parquet files (LAMBADA too), Dolly-15k as its one JSON Lines file, and C4 as its first few train shards and one validation shard
(``Profile.c4_prefetch_train_shards``), since all of it is hundreds of GB.

Offline, data sets are read straight from the files huggingface_hub put in its cache
(``$HF_HOME/hub``), with datasets' own parquet and json readers. Nothing depends on a
prepared ``datasets`` cache: it may be missing on the compute nodes, live elsewhere
(``HF_DATASETS_CACHE``) or be read-only (then a temporary folder takes its place). This
matters for C4, which is streamed and never prepared: datasets cannot reload it offline
by its Hub id.

    missing_assets(profile)                         # what the cache lacks; never uses the network
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from course_utils.machinery.offline import STANDIN_PREFIX, MissingAssetError, is_offline, missing_asset_message
from course_utils.models_and_data.sources import (
    C4_TRAIN_SHARDS,
    C4_VALIDATION_SHARDS,
    cached_snapshot,
    data_file_patterns,
)

# Weights as safetensors, plus configs, tokenizer files and a chat template (newer repos keep it in its own
# chat_template.jinja, as transformers 5 saves it; older ones inside tokenizer_config.json); skips the .bin/.h5/.msgpack copies
# (the .bin is taken instead where a repo has no safetensors).
MODEL_FILES = ("*.json", "*.safetensors", "*.model", "*.txt", "*.jinja")
LEGACY_WEIGHT_FILES = ("pytorch_model*.bin",)  # fetched only for a repo without safetensors


@dataclass(frozen=True)
class HubAsset:
    repo_id: str
    repo_type: str  # "model" or "dataset"
    allow_patterns: tuple[str, ...] | None = None
    config: str | None = None  # the data set's config, for the message

    def __str__(self) -> str:
        return self.repo_id if self.config is None else f"{self.repo_id} ({self.config})"


def on_hub(name: str) -> bool:
    """True for a Hub id, False for a stand-in or a local folder."""
    return not name.startswith(STANDIN_PREFIX) and not os.path.isdir(name)


def c4_shard_patterns(train_shards: int, config: str = "en") -> tuple[str, ...]:
    """File names of the first C4 shards: 1,024 train and 8 validation shards in all."""
    train = [f"{config}/c4-train.{i:05d}-of-{C4_TRAIN_SHARDS:05d}.json.gz" for i in range(train_shards)]
    return tuple(train + [f"{config}/c4-validation.00000-of-{C4_VALIDATION_SHARDS:05d}.json.gz"])


def hub_assets(profile) -> list[HubAsset]:
    """Every Hub model and data set ``profile`` reads (none for smoke, which ships its own)."""
    names = [*profile.models.values(), *([profile.released_weights] if profile.released_weights else [])]
    assets = [HubAsset(name, "model", MODEL_FILES) for name in dict.fromkeys(names) if on_hub(name)]
    for source in (profile.imdb, profile.cnn_dailymail, profile.dolly, profile.lambada):
        if on_hub(source.path):
            patterns = tuple(data_file_patterns(source.path, source.config).values())
            assets.append(HubAsset(source.path, "dataset", patterns, source.config or "default"))
    c4 = profile.c4
    if on_hub(c4.path) and profile.c4_prefetch_train_shards > 0:
        assets.append(
            HubAsset(c4.path, "dataset", c4_shard_patterns(profile.c4_prefetch_train_shards, c4.config or "en"))
        )
    return assets


def missing_assets(profile) -> list[str]:
    """Names of the assets ``profile`` needs that the local cache lacks; never uses the network."""
    return [str(a) for a in hub_assets(profile) if cached_snapshot(a.repo_id, a.repo_type, a.allow_patterns) is None]


def check_offline_assets(profile) -> None:
    """Raise MissingAssetError (one line) if the Hub is off and something ``profile`` needs is absent."""
    if is_offline():
        missing = missing_assets(profile)
        if missing:
            raise MissingAssetError(missing_asset_message(missing))


def prefetch(profile, echo=print) -> list[HubAsset]:
    """Download every asset of ``profile`` into the Hugging Face cache; return what was fetched."""
    from huggingface_hub import snapshot_download

    assets = hub_assets(profile)
    for i, asset in enumerate(assets, start=1):
        echo(f"[{i}/{len(assets)}] {asset} ...", flush=True)
        folder = snapshot_download(
            asset.repo_id,
            repo_type=asset.repo_type,
            allow_patterns=list(asset.allow_patterns) if asset.allow_patterns else None,
        )
        if asset.repo_type == "model" and not any(Path(folder).glob("*.safetensors")):
            # An older repo may hold its weights only in PyTorch's own format.
            snapshot_download(asset.repo_id, repo_type="model", allow_patterns=list(LEGACY_WEIGHT_FILES))
    return assets
