"""Where a data set's files are, and their checked reading (course_utils/models_and_data/sources.py): offline C4 from
the prefetched shards.
"""

import gzip
import json
from pathlib import Path

import pytest

from course_utils.machinery.offline import MissingAssetError
from course_utils.models_and_data import sources
from course_utils.pretraining.data import iter_texts


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
