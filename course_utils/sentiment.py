"""IMDB sentiment as text-to-text: checked data, label words, tokenization, batched classification.

T5 answers in words, so the task is "review in, word out": label 0 becomes "negative",
1 becomes "positive", and a generated answer that is neither counts as wrong ("unknown").

    splits, dropped = prepare_imdb(load_imdb(source), max_train_rows=None, max_eval_rows=None, seed=42)
    tokenized = tokenize_for_seq2seq(splits["train"], tokenizer, prefix, max_source_length, max_target_length)
    predictions = classify(model, tokenizer, texts, prefix, max_source_length, max_new_tokens)
    report = accuracy_report(predictions, [LABEL_WORDS[y] for y in labels])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .configs import InputError
from .tokens import generate_texts, generation_settings, tokenize_pairs

LABEL_WORDS = ("negative", "positive")  # IMDB: 0 = neg, 1 = pos
UNKNOWN = "unknown"                     # any generated answer that is neither label word
COLUMNS = ("text", "label")


def check_imdb_split(split, name: str) -> None:
    """Raise ValueError naming the column or row when ``split`` is not clean labelled IMDB data."""
    missing = [c for c in COLUMNS if c not in split.column_names]
    if missing:
        raise InputError(f"IMDB split {name!r} has no column(s) {missing}; found {split.column_names}.")
    for row, (text, label) in enumerate(zip(split["text"], split["label"], strict=True)):
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"IMDB split {name!r}, row {row + 1} (counting from 1): 'text' must be a non-empty string, got {text!r}.")
        if label not in (0, 1):
            raise InputError(f"IMDB split {name!r}, row {row + 1} (counting from 1): 'label' is {label!r}; expected 0 (negative) "
                             "or 1 (positive).")


def _first_rows(split, limit: int | None, seed: int):
    """A seeded random subset of ``limit`` rows (all of them when limit is None)."""
    if limit is None or limit >= len(split):
        return split
    return split.shuffle(seed=seed).select(range(limit))


def prepare_imdb(imdb, max_train_rows: int | None = None, max_eval_rows: int | None = None,
                 seed: int = 42):
    """Checked train/test splits with a ``label_text`` column; also {reason: rows left out}.

    The ``unsupervised`` split (label -1) is left out: it has no answers to learn from or
    score against. Nothing is dropped silently; every row left out is counted by reason.
    """
    from datasets import DatasetDict

    for name in ("train", "test"):
        if name not in imdb:
            raise InputError(f"IMDB has no {name!r} split; found {list(imdb)}.")
        check_imdb_split(imdb[name], name)
    dropped = {}
    if "unsupervised" in imdb:
        dropped["unsupervised split (label -1, no answer)"] = len(imdb["unsupervised"])
    train = _first_rows(imdb["train"], max_train_rows, seed)
    test = _first_rows(imdb["test"], max_eval_rows, seed)
    dropped["train rows beyond max_train_rows"] = len(imdb["train"]) - len(train)
    dropped["test rows beyond max_eval_rows"] = len(imdb["test"]) - len(test)

    def add_words(batch):
        return {"label_text": [LABEL_WORDS[y] for y in batch["label"]]}

    splits = DatasetDict(train=train, test=test).map(add_words, batched=True, desc="label words")
    return splits, dropped


def tokenize_for_seq2seq(split, tokenizer, prefix: str, max_source_length: int, max_target_length: int):
    """input_ids / attention_mask / labels, truncated but NOT padded: the collator pads each batch."""
    return tokenize_pairs(split, tokenizer, "text", "label_text", prefix, max_source_length, max_target_length)


def token_lengths(texts: Sequence[str], tokenizer, prefix: str) -> list[int]:
    """Tokens per text with the prefix and </s>, before any truncation."""
    # verbose=False: measuring texts longer than the model's limit is the point here.
    return [len(ids) for ids in tokenizer([prefix + t for t in texts], verbose=False)["input_ids"]]


def truncated_count(texts: Sequence[str], tokenizer, prefix: str, max_source_length: int) -> int:
    """How many texts are longer than ``max_source_length`` tokens (and so lose their end)."""
    return sum(n > max_source_length for n in token_lengths(texts, tokenizer, prefix))


def to_label_word(answer: str) -> str:
    """The label word a generated answer names, or "unknown"."""
    word = answer.strip().lower().rstrip(".!")
    return word if word in LABEL_WORDS else UNKNOWN


def generate_answers(model, tokenizer, texts: Sequence[str], prefix: str, max_source_length: int,
                     max_new_tokens: int, batch_size: int = 32, progress: bool = False) -> list[str]:
    """The model's greedy answer to each text, decoded, in the input order (one generate per batch)."""
    settings = generation_settings(model, max_new_tokens=max_new_tokens, do_sample=False, num_beams=1)
    return generate_texts(model, tokenizer, texts, prefix, max_source_length, settings, batch_size, progress)


def classify(model, tokenizer, texts: Sequence[str], prefix: str, max_source_length: int,
             max_new_tokens: int, batch_size: int = 32, progress: bool = False) -> list[str]:
    """Label words ("negative", "positive" or "unknown") for ``texts``, in the input order."""
    answers = generate_answers(model, tokenizer, texts, prefix, max_source_length, max_new_tokens,
                               batch_size, progress)
    return [to_label_word(a) for a in answers]


@dataclass(frozen=True)
class AccuracyReport:
    accuracy: float
    confusion: dict[str, dict[str, int]]  # confusion[true word][predicted word] = count
    unknown: int                           # answers that were neither label word

    def confusion_frame(self):
        import pandas as pd

        frame = pd.DataFrame(self.confusion).T.reindex(index=list(LABEL_WORDS),
                                                         columns=[*LABEL_WORDS, UNKNOWN])
        frame.index.name, frame.columns.name = "true", "predicted"
        return frame.fillna(0).astype(int)


def accuracy_report(predicted: Sequence[str], truth: Sequence[str]) -> AccuracyReport:
    """Accuracy (an "unknown" answer is wrong) and the confusion counts."""
    if len(predicted) != len(truth):
        raise ValueError(f"{len(predicted)} predictions for {len(truth)} answers.")
    if not truth:
        raise ValueError("No answers to score against.")
    confusion = {t: {p: 0 for p in (*LABEL_WORDS, UNKNOWN)} for t in LABEL_WORDS}
    for p, t in zip(predicted, truth, strict=True):
        confusion[t][p] += 1
    correct = sum(p == t for p, t in zip(predicted, truth, strict=True))
    return AccuracyReport(correct / len(truth), confusion, sum(p == UNKNOWN for p in predicted))
