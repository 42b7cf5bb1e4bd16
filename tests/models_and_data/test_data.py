"""Sample data: reproducible from its generator, in the Hub's schemas, and not trivial."""

import json
import re
import statistics
import sys
from pathlib import Path

import pytest

from course_utils.machinery.configs import DataSource, InputError
from course_utils.machinery.paths import data_dir
from course_utils.machinery.profiles import get_profile
from course_utils.models_and_data.data import cnn_dailymail_features, imdb_features, load_cnn_dailymail, read_imdb
from course_utils.models_and_data.sources import load_source

SMOKE = get_profile("smoke")


@pytest.fixture(scope="module")
def generate():
    sys.path.insert(0, str(data_dir()))
    import generate

    return generate


def test_committed_files_equal_a_fresh_seeded_run(generate, capsys):
    assert generate.main(["--check"]) == 0, capsys.readouterr().err


def test_changing_one_set_leaves_every_other_file_as_it_was(generate):
    sizes = {name: dict(splits) for name, splits in generate.SIZES.items()}
    sizes["imdb"]["train"] = 40
    sizes["c4"]["validation"] = 5
    small = generate.build_all(sizes=sizes)
    committed = {rel: (data_dir() / rel).read_text(encoding="utf-8") for rel in small}
    changed = sorted(rel for rel in small if small[rel] != committed[rel])
    assert changed == ["c4/validation.jsonl", "imdb/train.jsonl"]
    assert committed["c4/validation.jsonl"].startswith(small["c4/validation.jsonl"])  # the same draws, fewer


@pytest.fixture(scope="module")
def imdb():
    return read_imdb(SMOKE.imdb)


def test_imdb_has_the_hub_schema_and_splits(imdb):
    assert list(imdb) == ["train", "test", "unsupervised"]
    for split in imdb.values():
        assert split.features == imdb_features()
    assert imdb["train"].features["label"].names == ["neg", "pos"]
    assert set(imdb["unsupervised"]["label"]) == {-1}
    for name in ("train", "test"):
        labels = imdb[name]["label"]
        assert set(labels) == {0, 1} and sum(labels) * 2 == len(labels)  # balanced


def test_reviews_vary_in_length_and_carry_negation(imdb):
    words = [len(t.split()) for t in imdb["train"]["text"]]
    assert 100 <= statistics.median(words) <= 300
    assert sum(w > 380 for w in words) / len(words) > 0.03  # a long tail past 512 tokens
    assert min(words) < 60
    negated = [t for t in imdb["train"]["text"] if re.search(r"\b(not|never|hardly|anything but)\b", t)]
    assert len(negated) / len(words) > 0.3
    assert any("<br /><br />" in t for t in imdb["train"]["text"])
    assert len(set(imdb["train"]["text"])) == len(words)


def test_mixed_reviews_carry_cues_of_both_sides(imdb):
    pos_words = r"\b(brilliant|superb|wonderful|excellent|loved)\b"
    neg_words = r"\b(dull|tedious|awful|boring|dreadful)\b"
    both = [t for t in imdb["train"]["text"] if re.search(pos_words, t) and re.search(neg_words, t)]
    assert len(both) > 100


def test_cnn_dailymail_schema_paragraphs_and_paraphrased_highlights():
    cnn = load_cnn_dailymail(SMOKE.cnn_dailymail)
    assert list(cnn) == ["train", "validation", "test"]
    rows = list(cnn["test"])
    assert cnn["test"].features == cnn_dailymail_features()
    assert all(re.fullmatch(r"[0-9a-f]{40}", r["id"]) for r in rows)
    assert len({r["id"] for s in cnn.values() for r in s}) == sum(len(s) for s in cnn.values())
    for row in rows:
        assert row["article"].count("\n\n") >= 3
        highlights = row["highlights"].split("\n")
        assert 2 <= len(highlights) <= 4
        for h in highlights:
            assert h not in row["article"]  # paraphrased, not copied
        shared = set(re.findall(r"[a-z]+", row["highlights"].lower())) & set(
            re.findall(r"[a-z]+", row["article"].lower())
        )
        assert len(shared) >= 5


def c4_features():
    from datasets import Features, Value

    return Features({"text": Value("string"), "timestamp": Value("string"), "url": Value("string")})  # the Hub's


def load_c4(source):
    return load_source(source, c4_features(), streaming=True)


def test_c4_streams_with_the_hub_schema():
    c4 = load_c4(SMOKE.c4)
    first = next(iter(c4["train"]))
    assert set(first) == {"text", "timestamp", "url"}
    assert c4["train"].features == c4_features()
    assert re.fullmatch(r"2019-04-\d\dT\d\d:\d\d:\d\dZ", first["timestamp"])
    assert first["url"].startswith("https://")
    assert sum(1 for _ in c4["validation"]) == 200


def test_missing_column_is_named(tmp_path):
    (tmp_path / "train.jsonl").write_text(json.dumps({"text": "fine film", "stars": 5}) + "\n")
    with pytest.raises(ValueError) as err:
        read_imdb(DataSource(str(tmp_path)))
    message = str(err.value)
    assert "train.jsonl" in message and "missing column(s) ['label']" in message and "['stars']" in message


def test_empty_folder_says_how_to_regenerate(tmp_path):
    with pytest.raises(InputError, match="python data/generate.py"):
        read_imdb(DataSource(str(tmp_path)))


def test_data_readme_says_it_is_synthetic():
    text = (data_dir() / "README.md").read_text().lower()
    assert "synthetic" in text and "generate.py" in text


def test_a_bad_row_in_a_streamed_file_is_named_by_line(tmp_path):
    rows = [{"text": "a", "timestamp": "t", "url": "u"}, {"text": "b", "timestamp": "t"}]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    stream = load_c4(DataSource(str(tmp_path)))["train"]
    with pytest.raises(ValueError, match=r"train.jsonl, line 2: missing column\(s\) \['url'\]"):
        list(stream)


def test_loading_local_data_makes_no_network_request(netguard_log):
    before = netguard_log.read_text()
    read_imdb(SMOKE.imdb)
    next(iter(load_c4(SMOKE.c4)["train"]))
    assert netguard_log.read_text() == before


def test_a_label_outside_the_class_labels_is_named_with_its_line(tmp_path):
    rows = [{"text": "fine", "label": 1}, {"text": "odd", "label": 7}]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=r"train.jsonl, line 2: 'label' is 7; expected one of \[-1, 0, 1\]"):
        read_imdb(DataSource(str(tmp_path)))


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
