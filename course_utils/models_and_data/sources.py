"""Where a data set's files are and how they are read: a local folder of JSONL files, or the Hugging Face cache.

    source = DataSource("stanfordnlp/imdb")         # or DataSource("data/imdb"), a folder of <split>.jsonl files
    imdb = load_source(source, features)            # datasets' DatasetDict with the Hub's schema, rows checked
    files = local_data_files("allenai/c4", "en")    # {"train": [...json.gz], "validation": [...]} from the cache
    for number, row in read_jsonl("data/imdb/train.jsonl", ("text", "label")): ...   # errors name file and line

Offline, data sets are read straight from the files huggingface_hub put in its cache, with datasets'
own parquet and json readers; nothing depends on a prepared ``datasets`` cache (``hub.py`` says why).
"""

from __future__ import annotations

import fnmatch
import json
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

from course_utils.machinery.configs import DataSource, InputError
from course_utils.machinery.offline import MissingAssetError, is_offline, missing_asset_message

C4_TRAIN_SHARDS, C4_VALIDATION_SHARDS = 1024, 8
# Where each data set keeps each split on the Hub, as (repo id, config) -> {split: file pattern}.
HUB_DATA_FILES = {
    ("stanfordnlp/imdb", None): {split: f"plain_text/{split}-*.parquet" for split in ("train", "test", "unsupervised")},
    ("abisee/cnn_dailymail", "3.0.0"): {split: f"3.0.0/{split}-*.parquet" for split in ("train", "validation", "test")},
    ("allenai/c4", "en"): {
        "train": f"en/c4-train.*-of-{C4_TRAIN_SHARDS:05d}.json.gz",
        "validation": f"en/c4-validation.*-of-{C4_VALIDATION_SHARDS:05d}.json.gz",
    },
    ("databricks/databricks-dolly-15k", None): {"train": "databricks-dolly-15k.jsonl"},
    ("EleutherAI/lambada_openai", "default"): {"test": "default/test/*.parquet"},
}


def data_file_patterns(repo_id: str, config: str | None) -> dict[str, str]:
    """{split: file pattern} of a data set the course knows; a clear error for any other."""
    try:
        return HUB_DATA_FILES[(repo_id, config)]
    except KeyError:
        known = ", ".join(f"{r} ({c})" if c else r for r, c in HUB_DATA_FILES)
        raise InputError(
            f"The course does not know the file layout of {repo_id} ({config}); known: {known}. "
            "Point data_path at a local folder of files instead."
        ) from None


def cached_snapshot(repo_id: str, repo_type: str, allow_patterns) -> Path | None:
    """The cache's snapshot folder holding files matching ``allow_patterns``, or None; never uses the network."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = Path(
            snapshot_download(
                repo_id, repo_type=repo_type, local_files_only=True, allow_patterns=list(allow_patterns or ["*"])
            )
        )
    except (LocalEntryNotFoundError, FileNotFoundError, OSError):
        return None
    return folder if any(folder.iterdir()) else None


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
    files = {
        split: [str(folder / f) for f in found if fnmatch.fnmatch(f, pattern)] for split, pattern in patterns.items()
    }
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
        warnings.warn(
            f"The datasets cache {cache} cannot be written to ({err.strerror}); reading the data through "
            f"{chosen} instead. Set HF_DATASETS_CACHE to a writable folder to keep it.",
            stacklevel=2,
        )
        return chosen


def local_split_files(folder: Path) -> dict[str, str]:
    """{split: path} for every ``<split>.jsonl`` in ``folder``."""
    order = {"train": 0, "validation": 1, "test": 2, "unsupervised": 3}
    paths = sorted(folder.glob("*.jsonl"), key=lambda p: (order.get(p.stem, 9), p.stem))
    files = {p.stem: str(p) for p in paths}
    if not files:
        raise InputError(f"No <split>.jsonl files in {folder}; regenerate them with `python data/generate.py`.")
    return files


def check_columns(columns: list[str], features, where: str) -> None:
    """Fail, naming the column, when a file or row does not have exactly the Hub's columns."""
    missing = [c for c in features if c not in columns]
    extra = [c for c in columns if c not in features]
    if missing or extra:
        raise InputError(
            f"{where}: missing column(s) {missing or 'none'}, unexpected column(s) "
            f"{extra or 'none'}; expected exactly {list(features)}."
        )


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number counted from 1, as an editor shows it; text) of a UTF-8 file. A line that is
    not UTF-8 is named; the file is read as bytes so that the number is exact."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise InputError(
                    f"{path}, line {number}: not UTF-8 text (byte {err.start + 1} of the line is "
                    f"{raw[err.start]:#04x}); save the file as UTF-8 or remove that line."
                ) from None


def read_jsonl(path: str | Path, columns=None) -> Iterator[tuple[int, dict]]:
    """(line number, row) of a JSON Lines file, blank lines skipped; each row is checked to be a JSON
    object with exactly ``columns`` (None: any), and every error names the file and the line."""
    for number, line in read_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(
                f"{path}, line {number}: not valid JSON ({err.msg}, character {err.pos + 1}); a line cut "
                "short by an interrupted copy looks like this. Fix or delete the line, or copy the "
                "file again."
            ) from None
        if not isinstance(row, dict):
            raise InputError(f"{path}, line {number}: a JSON {type(row).__name__}, not an object with named columns.")
        if columns is not None:
            check_columns(list(row), columns, f"{path}, line {number}")
        yield number, row


def check_labels(number: int, row: dict, features, where: str) -> None:
    """Fail, naming the line, when a label column holds a value its ClassLabel cannot (-1 = no label)."""
    from datasets import ClassLabel

    for name, feature in features.items():
        if isinstance(feature, ClassLabel) and row[name] not in range(-1, feature.num_classes):
            raise InputError(
                f"{where}, line {number}: {name!r} is {row[name]!r}; expected one of "
                f"{list(range(-1, feature.num_classes))} ({', '.join(feature.names)}, or -1 for none)."
            )


def check_local_file(path: str, features) -> None:
    """Read a local split once with our own reader, so a bad file is named with its line before datasets reads it."""
    for number, row in read_jsonl(path, tuple(features)):
        check_labels(number, row, features, path)


def iter_jsonl(paths: list[str], columns: tuple[str, ...]):
    """Rows of JSON Lines files, each checked for exactly ``columns`` (the error names file and line)."""
    for path in paths:
        for _, row in read_jsonl(path, columns):
            yield row


def _load_local(folder: Path, features, streaming: bool):
    # Dataset.from_json / from_generator, not load_dataset("json"): the latter reports each
    # load to a usage counter on the network unless HF_DATASETS_OFFLINE is set.
    from datasets import Dataset, DatasetDict, IterableDataset, IterableDatasetDict

    files = local_split_files(folder)
    if streaming:
        return IterableDatasetDict(
            {
                split: IterableDataset.from_generator(
                    iter_jsonl, features=features, gen_kwargs={"paths": [path], "columns": tuple(features)}
                )
                for split, path in files.items()
            }
        )
    for path in files.values():  # every file checked before any is read, so a bad one stops the load at once
        check_local_file(path, features)
    return DatasetDict({split: Dataset.from_json(path).cast(features) for split, path in files.items()})


def load_source(source: DataSource, features, streaming: bool = False):
    """The data set at ``source``, typed with ``features`` (None: as stored); local folders and Hub ids alike.

    A Hub data set is read from its files in the Hugging Face cache (downloaded first when the
    Hub is on), so an offline run needs nothing but what ``course prefetch`` fetched. C4 is the
    exception online: it is streamed from the Hub, which holds far more of it than any cache.
    """
    folder = Path(source.path)
    if folder.is_dir():
        return _load_local(folder, features, streaming)
    if folder.is_absolute() or source.path.startswith((".", "~")) or folder.exists():
        raise InputError(
            f"{source.path} is not a folder: point the data path at a folder of <split>.jsonl files "
            "or at a Hub data set (such as stanfordnlp/imdb)."
        )
    if streaming and not is_offline():
        from datasets import load_dataset

        stream = load_dataset(source.path, source.config, streaming=True)
        return stream if features is None else stream.cast(features)
    return _load_hub_files(local_data_files(source.path, source.config), features, streaming)


def _load_hub_files(files: dict[str, list[str]], features, streaming: bool):
    # Dataset.from_parquet / from_json, not load_dataset("parquet" / "json"): the latter reports each
    # load to a usage counter on the network unless HF_DATASETS_OFFLINE is set, and a compute node
    # told only HF_HUB_OFFLINE=1 would try it.
    from datasets import Dataset, DatasetDict, IterableDatasetDict

    cache = writable_datasets_cache()
    splits = {}
    for split, paths in files.items():
        reader = Dataset.from_parquet if paths[0].endswith(".parquet") else Dataset.from_json
        data = reader(paths, streaming=streaming, cache_dir=cache)  # several files stay several shards
        if features is not None:
            columns = list(data.features) if data.features is not None else list(features)
            check_columns(columns, features, f"{paths[0]} ({split})")
            data = data.cast(features)
        splits[split] = data
    return (IterableDatasetDict if streaming else DatasetDict)(splits)
