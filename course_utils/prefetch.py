"""Download what the full profile needs, for GPU clusters whose compute nodes have no internet.

    course prefetch --profile full        # on a login node with internet access
    HF_HUB_OFFLINE=1 course run --profile full    # then, on the compute nodes

Models come as their weights, config and tokenizer files; IMDB and CNN/DailyMail whole
(and prepared, so ``load_dataset`` finds them offline); C4 as its first few train shards
and one validation shard (``Profile.c4_prefetch_train_shards``), since all of it is
hundreds of GB. ``missing_assets`` checks the cache without touching the network.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .models import STANDIN_PREFIX, MissingAssetError, missing_asset_message
from .profiles import DataSource, Profile

# Weights as safetensors, plus configs and tokenizer files; skips the .bin/.h5/.msgpack copies.
MODEL_FILES = ("*.json", "*.safetensors", "*.model", "*.txt")


@dataclass(frozen=True)
class HubAsset:
    repo_id: str
    repo_type: str                        # "model" or "dataset"
    allow_patterns: tuple[str, ...] | None = None
    config: str | None = None             # a dataset config to prepare after download

    def __str__(self) -> str:
        return self.repo_id if self.config is None else f"{self.repo_id} ({self.config})"


def _on_hub(name: str) -> bool:
    return not name.startswith(STANDIN_PREFIX) and not os.path.isdir(name)


def c4_shard_patterns(train_shards: int, config: str = "en") -> tuple[str, ...]:
    """File names of the first C4 shards: 1,024 train and 8 validation shards in all."""
    train = [f"{config}/c4-train.{i:05d}-of-01024.json.gz" for i in range(train_shards)]
    return tuple(train + [f"{config}/c4-validation.00000-of-00008.json.gz"])


def hub_assets(profile: Profile) -> list[HubAsset]:
    """Every Hub model and data set ``profile`` reads (none for smoke, which ships its own)."""
    assets = [HubAsset(name, "model", MODEL_FILES) for name in dict.fromkeys(profile.models.values())
              if _on_hub(name)]
    for source in (profile.imdb, profile.cnn_dailymail):
        if _on_hub(source.path):
            pattern = (f"{source.config}/*", "README.md") if source.config else None
            assets.append(HubAsset(source.path, "dataset", pattern, source.config or "default"))
    c4: DataSource = profile.c4
    if _on_hub(c4.path) and profile.c4_prefetch_train_shards > 0:
        assets.append(HubAsset(c4.path, "dataset", c4_shard_patterns(profile.c4_prefetch_train_shards,
                                                                      c4.config or "en")))
    return assets


def is_cached(asset: HubAsset) -> bool:
    """True when every file ``asset`` names is already in the local Hugging Face cache."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = snapshot_download(asset.repo_id, repo_type=asset.repo_type, local_files_only=True,
                                   allow_patterns=list(asset.allow_patterns or ["*"]))
    except (LocalEntryNotFoundError, FileNotFoundError, OSError):
        return False
    return any(Path(folder).iterdir())


def missing_assets(profile: Profile) -> list[str]:
    """Names of the assets ``profile`` needs that the local cache lacks; never uses the network."""
    return [str(a) for a in hub_assets(profile) if not is_cached(a)]


def check_offline_assets(profile: Profile) -> None:
    """Raise MissingAssetError (one line) if the Hub is off and something ``profile`` needs is absent."""
    from .environment import is_offline

    if is_offline():
        missing = missing_assets(profile)
        if missing:
            raise MissingAssetError(missing_asset_message(missing))


def prefetch(profile: Profile, echo=print) -> list[HubAsset]:
    """Download every asset of ``profile`` into the Hugging Face cache; return what was fetched."""
    from datasets import load_dataset
    from huggingface_hub import snapshot_download

    assets = hub_assets(profile)
    for i, asset in enumerate(assets, start=1):
        echo(f"[{i}/{len(assets)}] {asset} ...", flush=True)
        snapshot_download(asset.repo_id, repo_type=asset.repo_type,
                          allow_patterns=list(asset.allow_patterns) if asset.allow_patterns else None)
        if asset.config is not None:
            # Prepare the Arrow cache too: offline, load_dataset reuses it.
            load_dataset(asset.repo_id, None if asset.config == "default" else asset.config)
    return assets
