"""Lesson 01's data handling: checked rows, counted drops, label words, no padding, scoring."""

import pytest
from datasets import ClassLabel, Dataset, DatasetDict, Features, Value

from course_utils.from_notebooks.sentiment_trainer import (
    LABEL_WORDS,
    add_label_words,
    label_word,
    score_answers,
    tokenize_pairs,
)
from course_utils.models_and_data.data import check_imdb_split, prepare_imdb
from course_utils.models_and_data.models import load_tokenizer

UNKNOWN = "unknown"


def imdb(train_rows, test_rows=None, unsupervised=3):
    features = Features({"text": Value("string"), "label": ClassLabel(names=["neg", "pos"])})

    def split(rows):
        return Dataset.from_dict({"text": [r[0] for r in rows], "label": [r[1] for r in rows]}, features=features)

    test_rows = test_rows or [("fine", 1), ("bad", 0)]
    return DatasetDict(
        train=split(train_rows), test=split(test_rows), unsupervised=split([("unlabelled", -1)] * unsupervised)
    )


GOOD = [("a superb film", 1), ("a dull film", 0), ("not bad at all", 1), ("awful", 0)]


def test_prepare_counts_what_it_leaves_out_and_the_words_follow_the_labels():
    splits, dropped = prepare_imdb(imdb(GOOD), max_train_rows=3, seed=0)
    assert list(splits) == ["train", "test"] and len(splits["train"]) == 3
    worded = add_label_words(splits)  # notebook 01's cell: 0 -> negative, 1 -> positive
    assert [r["label_text"] for r in worded["train"]] == [LABEL_WORDS[r["label"]] for r in splits["train"]]
    assert LABEL_WORDS == ("negative", "positive")
    assert dropped == {
        "unsupervised split (label -1, no answer)": 3,
        "train rows beyond max_train_rows": 1,
        "test rows beyond test_rows": 0,
    }


@pytest.mark.parametrize(
    "rows, message",
    [
        ([("ok", 1), ("   ", 0)], r"row 2 \(counting from 1\): 'text' must be a non-empty string"),
        ([("ok", 1), ("fine", -1)], r"row 2 \(counting from 1\): 'label' is -1"),
    ],
)
def test_bad_rows_are_named(rows, message):
    with pytest.raises(ValueError, match=message):
        prepare_imdb(imdb(rows))


def test_label_outside_0_1_and_non_string_text_are_named():
    split = Dataset.from_dict({"text": ["good", None, "x"], "label": [1, 0, 7]})
    with pytest.raises(
        ValueError, match=r"'train', row 2 \(counting from 1\): 'text' must be a non-empty string, got None"
    ):
        check_imdb_split(split, "train")
    split = Dataset.from_dict({"text": ["good", "bad", "x"], "label": [1, 0, 7]})
    with pytest.raises(ValueError, match=r"row 3 \(counting from 1\): 'label' is 7; expected 0 \(negative\) or 1"):
        check_imdb_split(split, "train")


def test_missing_column_or_split_is_named():
    with pytest.raises(ValueError, match=r"no column\(s\) \['label'\]"):
        check_imdb_split(Dataset.from_dict({"text": ["a"]}), "test")
    with pytest.raises(ValueError, match="no 'test' split"):
        prepare_imdb(DatasetDict(train=Dataset.from_dict({"text": ["a"], "label": [1]})))


def test_tokenizing_truncates_but_does_not_pad():
    tok = load_tokenizer("standin:t5-small")
    splits = add_label_words(prepare_imdb(imdb(GOOD + [("word " * 600, 1)]))[0])
    tokenized = tokenize_pairs(splits["train"], tok, "text", "label_text", "sst2 sentence: ", 64, 8)
    lengths = [len(r["input_ids"]) for r in tokenized]
    assert len(set(lengths)) > 1 and max(lengths) == 64  # truncated, not padded
    assert tok.pad_token_id not in tokenized[0]["input_ids"]
    assert tok.decode(tokenized[0]["labels"], skip_special_tokens=True) == splits["train"][0]["label_text"]


@pytest.mark.parametrize(
    "answer, word",
    [
        ("positive", "positive"),
        (" Negative.", "negative"),
        ("positively", UNKNOWN),
        ("", UNKNOWN),
        ("neutral", UNKNOWN),
    ],
)
def test_answers_map_to_label_words_or_unknown(answer, word):
    assert label_word(answer) == word


def test_accuracy_counts_unknown_as_wrong_and_fills_the_confusion_matrix():
    score = score_answers(
        ["Positive.", "meh", "negative", "positive"], ["positive", "positive", "negative", "negative"]
    )
    assert score.accuracy == 0.5 and score.unknown == 1
    assert score.confusion.to_dict(orient="index") == {
        "negative": {"negative": 1, "positive": 1, "unknown": 0},
        "positive": {"negative": 0, "positive": 1, "unknown": 1},
    }
    assert list(score.confusion.columns) == ["negative", "positive", "unknown"]
    with pytest.raises(ValueError, match="2 answers for 1 reviews"):
        score_answers(["positive", "negative"], ["positive"])
