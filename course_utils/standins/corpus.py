"""What the stand-ins learn from: the shipped training splits of ``data/``, as each objective reads them.

    documents()                    # web pages, news articles, reviews and stories: span corruption, causal LM
    summarize_pairs(rows)          # ("summarize: " + article, its highlights): T5's CNN/DailyMail task
    sst2_pairs(rows)               # ("sst2 sentence: " + sentence, "positive"/"negative"): T5's SST-2 task
    judge_pairs(rows, seed=0, article_words=400)   # a reference against each of its worse summaries

Only training splits are read (IMDB's ``train`` and ``unsupervised``, CNN/DailyMail's ``train``, C4's ``train``,
the stories' ``train``, SST-2's ``train``): no lesson scores them. A stand-in's own held-out figures (its model card)
come from CNN/DailyMail's ``validation``, C4's ``validation`` and the last SST-2 rows, which it never trains on.
The prefixes, label words and the judging prompt are the lessons' own, imported from the modules their notebooks
write, so a stand-in learns exactly the task a lesson asks of it.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from course_utils.from_notebooks.evaluation import judge_messages
from course_utils.from_notebooks.sentiment_trainer import LABEL_WORDS
from course_utils.from_notebooks.summarizers import T5_PREFIX, strip_boilerplate
from course_utils.lessons.finetune import FinetuneConfig
from course_utils.machinery.paths import data_dir

# The files each objective reads, relative to data/. Their bytes are part of every stand-in's fingerprint.
DOCUMENT_FILES = (
    "c4/train.jsonl",
    "cnn_dailymail/train.jsonl",
    "imdb/train.jsonl",
    "imdb/unsupervised.jsonl",
    "lambada/train.jsonl",
)
C4_FILES = ("c4/train.jsonl", "c4/validation.jsonl")
MIXTURE_FILES = ("cnn_dailymail/train.jsonl", "cnn_dailymail/validation.jsonl", "sst2/train.jsonl")
INSTRUCTION_FILES = ("cnn_dailymail/train.jsonl", "cnn_dailymail/validation.jsonl")
HELD_OUT_FILES = ("c4/validation.jsonl", "cnn_dailymail/validation.jsonl")
SST2_HELD_OUT = 400  # the last rows of SST-2's train split: the stand-in's own held-out sentences, never trained on


def read_rows(relative: str, root: Path | None = None) -> list[dict]:
    """The rows of one shipped JSON Lines file, ``relative`` to ``data/``."""
    path = (root or data_dir()) / relative
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def documents(root: Path | None = None) -> list[str]:
    """The pretraining corpus: C4-like web pages, news articles, reviews and stories, in the files' order."""
    columns = {"cnn_dailymail/train.jsonl": "article"}
    return [row[columns.get(name, "text")] for name in DOCUMENT_FILES for row in read_rows(name, root)]


def stories(root: Path | None = None) -> list[str]:
    """The LAMBADA-style story passages of the training split (``lambada/test.jsonl`` stays held out)."""
    return [row["text"] for row in read_rows("lambada/train.jsonl", root)]


def write_text_folder(texts: list[str], held_out: list[str], folder: Path) -> Path:
    """``folder`` with ``train.jsonl`` and ``validation.jsonl`` of ``{"text": ...}`` rows: what lesson 04's
    pretraining reads (a folder of split files)."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, rows in (("train", texts), ("validation", held_out)):
        lines = "".join(json.dumps({"text": text}, ensure_ascii=False) + "\n" for text in rows)
        (folder / f"{split}.jsonl").write_text(lines, encoding="utf-8")
    return folder


def one_line_highlights(highlights: str) -> str:
    """CNN/DailyMail's highlights (one per line) as T5's target: one text, sentences joined by spaces."""
    return " ".join(line.strip() for line in highlights.splitlines() if line.strip())


def summarize_pairs(rows: list[dict]) -> list[tuple[str, str]]:
    """Lesson 03's task: ``summarize: `` + the article -> its highlights."""

    return [(T5_PREFIX + row["article"], one_line_highlights(row["highlights"])) for row in rows]


def sst2_pairs(rows: list[dict]) -> list[tuple[str, str]]:
    """Lesson 01's task on SST-2's sentences: ``sst2 sentence: `` + a sentence -> its label word."""

    prefix = FinetuneConfig().task_prefix
    return [(prefix + row["sentence"], LABEL_WORDS[row["label"]]) for row in rows]


def sst2_split(root: Path | None = None) -> tuple[list[dict], list[dict]]:
    """(training rows, held-out rows) of the SST-2-like sentences."""
    rows = read_rows("sst2/train.jsonl", root)
    return rows[:-SST2_HELD_OUT], rows[-SST2_HELD_OUT:]


# ------------------------------------------------------------------------------------------------ the judge

NUMBER = re.compile(r"\$?\d[\d,]*(?:\.\d+)?(?:-\d+)?")
NAME = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*\b")


@dataclass(frozen=True)
class JudgePair:
    """One judging example: the article, the better summary, a worse one and how it was made worse."""

    article: str
    better: str
    worse: str
    how: str  # "other article", "truncated", "shuffled", "fact changed", "padded"


def lines(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if line.strip()]


def word_overlap(a: str, b: str) -> float:
    """The share of the two texts' distinct words they have in common (Jaccard)."""
    first, second = set(a.lower().split()), set(b.lower().split())
    return len(first & second) / len(first | second)


def same_topic(rows: list[dict], index: int) -> str:
    """The highlights of another article of the same kind (a council vote, a storm, a final) and as many lines:
    the other one whose highlights share the largest share of words with ``index``'s. Other facts, the same
    shape, about the same length."""
    own = rows[index]["highlights"]
    others = [j for j in range(len(rows)) if j != index and len(lines(rows[j]["highlights"])) == len(lines(own))]
    best = max(others, key=lambda j: (word_overlap(own, rows[j]["highlights"]), -j))
    return rows[best]["highlights"]


def change_a_fact(summary: str, pool: dict[str, list[str]], rng: random.Random) -> str | None:
    """``summary`` with one name or number swapped for another of as many words from ``pool`` (the corpus's names
    and numbers), or None when it holds neither."""
    spans = [(m, "number") for m in NUMBER.finditer(summary)] + [
        (m, "name") for m in NAME.finditer(summary) if m.start() > 0 and summary[m.start() - 1] != "\n"
    ]
    if not spans:
        return None
    match, kind = spans[rng.randrange(len(spans))]
    words = len(match.group().split())  # the same number of words: the change alters a fact, not the length
    choices = [value for value in pool[kind] if value != match.group() and len(value.split()) == words]
    if not choices:
        return None
    return summary[: match.start()] + rng.choice(choices) + summary[match.end() :]


def fact_pool(rows: list[dict]) -> dict[str, list[str]]:
    """Every number and every capitalised name that the highlights of ``rows`` mention (not a line's first word)."""
    text = "\n".join(row["highlights"] for row in rows)
    names = {m.group() for m in NAME.finditer(text) if m.start() > 0 and text[m.start() - 1] != "\n"}
    return {"number": sorted({m.group() for m in NUMBER.finditer(text)}), "name": sorted(names)}


def worse_summaries(rows: list[dict], index: int, pool: dict, rng: random.Random) -> list[tuple[str, str]]:
    """(how, worse summary) for the article ``index``: another article's highlights on the same topic, the reference
    cut short, its words shuffled, a fact changed, and a sentence of another story added (longer, so that the
    longer summary is the better one no more often than the shorter)."""
    reference = rows[index]["highlights"]
    kept = lines(reference)
    words = reference.split()
    shuffled = words[:]
    rng.shuffle(shuffled)
    other = lines(rows[(index + 1 + rng.randrange(len(rows) - 1)) % len(rows)]["highlights"])
    candidates = [
        ("other article", same_topic(rows, index)),
        ("truncated", "\n".join(kept[:-1]) if len(kept) > 1 else " ".join(words[: len(words) // 2])),
        ("shuffled", " ".join(shuffled)),
        ("fact changed", change_a_fact(reference, pool, rng)),
        ("padded", "\n".join(kept + [rng.choice(other)])),
    ]
    return [(how, text) for how, text in candidates if text and text != reference]


def judge_pairs(rows: list[dict], seed: int, article_words: int) -> list[JudgePair]:
    """A reference against each of its worse summaries, for every article in ``rows``; the article as lesson 05
    shows it to the judge (the story without its byline, its first ``article_words`` words)."""

    rng = random.Random(seed)
    pool = fact_pool(rows)
    pairs = []
    for index, row in enumerate(rows):
        lead = " ".join(strip_boilerplate(row["article"]).split()[:article_words])
        for how, worse in worse_summaries(rows, index, pool, rng):
            pairs.append(JudgePair(lead, row["highlights"], worse, how))
    return pairs


def judge_chats(pairs: list[JudgePair]) -> list[tuple[list[dict], str]]:
    """Each pair as the judging chat in both orders, with the letter of the better summary: as many A's as B's."""

    chats = []
    for pair in pairs:
        chats.append((judge_messages(pair.article, pair.better, pair.worse), "A"))
        chats.append((judge_messages(pair.article, pair.worse, pair.better), "B"))
    return chats


def longer_is_better_share(pairs: list[JudgePair]) -> float:
    """Among the pairs whose summaries differ in length (in words), the share where the better one is longer:
    a judge taught on pairs far from one half would learn to prefer a length."""
    differ = [p for p in pairs if len(p.better.split()) != len(p.worse.split())]
    return sum(len(p.better.split()) > len(p.worse.split()) for p in differ) / len(differ)


HIGHLIGHTS_REQUEST = "Write the highlights of this news article, one per line.\n\n{article}"


def highlights_chats(rows: list[dict], article_words: int) -> list[tuple[list[dict], str]]:
    """An instruction-following task on the same articles: the article -> its highlights, as a chat."""

    chats = []
    for row in rows:
        lead = " ".join(strip_boilerplate(row["article"]).split()[:article_words])
        chats.append(([{"role": "user", "content": HIGHLIGHTS_REQUEST.format(article=lead)}], row["highlights"]))
    return chats
