"""Lesson 05's set-up: its settings, what it reads from the earlier lessons, and lm-eval's tasks on local files.

    config = evaluation_config(profile)                          # lesson 05's settings: profile.evaluation applied
    answers = read_answers(session.output_dir, "01 after")       # a lesson's per-review answers, or a clear error
    articles = read_per_article(session.output_dir)              # lesson 03's summaries and ROUGE, per article
    task = lm_eval_task(task_file("course_imdb"), {"test": jsonl_file})   # a task YAML, on local data

The statistics, the judge's prompt and the scoring stand in the notebook's cells (``evaluation.py``).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from course_utils.machinery.configs import InputError, checked_replace
from course_utils.machinery.paths import repo_root
from course_utils.models_and_data.sources import writable_datasets_cache


@dataclass(frozen=True)
class EvaluationConfig:
    """Lesson 05's settings; the profile's ``evaluation`` changes them."""

    resamples: int = 10_000  # bootstrap resamples and permutations: Monte Carlo error about 0.1 % at 95 %
    level: float = 0.95  # the intervals' confidence level
    seed: int = 0  # of every resampling, so a rerun gives the same intervals
    lambada_rows: int | None = None  # LAMBADA passages scored (None: all 5,153 in full)
    lm_eval_batch_size: int = 16  # rows per forward pass in lm-eval's scoring
    judge_rows: int | None = None  # lesson 03's articles the judge reads (None: all of them)
    judge_article_words: int = 400  # the article's first words in the judge's prompt (the lead carries the story)

    def __post_init__(self):
        if self.resamples < 100 or not 0.5 <= self.level < 1:
            raise InputError(f"EvaluationConfig needs resamples >= 100 and 0.5 <= level < 1, got {self}.")


def evaluation_config(profile) -> EvaluationConfig:
    """EvaluationConfig with ``profile.evaluation`` applied (an unknown key is an error)."""
    return checked_replace(EvaluationConfig(), profile.evaluation, "Profile.evaluation setting")


@dataclass(frozen=True)
class LessonOutput:
    notebook: str  # the notebook that writes it
    path: str  # relative to the output folder


# What lesson 05 reads, by a short name: where each earlier lesson writes it.
LESSON_OUTPUTS = {
    "01 before": LessonOutput("01_t5_small_imdb_finetune", "01_t5_small_imdb/answers_before.json"),
    "01 after": LessonOutput("01_t5_small_imdb_finetune", "01_t5_small_imdb/answers_after.json"),
    "01 model": LessonOutput("01_t5_small_imdb_finetune", "01_t5_small_imdb/model"),
    "02 plain": LessonOutput("02_deepspeed_zero", "02_plain/answers.json"),
    "02 zero": LessonOutput("02_deepspeed_zero", "02_zero/answers.json"),
    "03 articles": LessonOutput("03_cnn_dailymail_rouge", "03_cnn_dailymail_rouge/per_article.json"),
    "04 pretrained": LessonOutput("04_nanot5_pretraining", "04_payoff/pretrained/answers.json"),
    "04 random init": LessonOutput("04_nanot5_pretraining", "04_payoff/random_init/answers.json"),
}


class MissingLessonOutput(FileNotFoundError):
    """An earlier lesson's output that lesson 05 reads is not there; the message names the notebook to run."""


def lesson_output(output_dir, name: str) -> Path:
    """The path of ``name`` (a key of LESSON_OUTPUTS) in ``output_dir``; MissingLessonOutput when it is absent."""
    wanted = LESSON_OUTPUTS[name]
    path = Path(output_dir) / wanted.path
    if not path.exists():
        raise MissingLessonOutput(
            f"Lesson 05 reads {path}, which notebooks/{wanted.notebook}.ipynb writes. Run that notebook first, with "
            f"the same profile and output folder (course run --only {wanted.notebook[:2]}), then this one again."
        )
    return path


def read_answers(output_dir, name: str) -> dict[str, list[str]]:
    """{"answers": [...], "truth": [...]}: the per-review answers lesson ``name`` wrote (write_answers)."""
    path = lesson_output(output_dir, name)
    answers = json.loads(path.read_text())
    if len(answers["answers"]) != len(answers["truth"]) or not answers["truth"]:
        raise InputError(f"{path}: answers and truth must pair up, and be some.")
    return answers


def read_per_article(output_dir) -> dict:
    """Lesson 03's articles with every system's summary and ROUGE per article (summary_setup.write_per_article)."""
    return json.loads(lesson_output(output_dir, "03 articles").read_text())


def write_jsonl(path, rows: Iterable[dict]) -> Path:
    """``rows`` as JSON Lines at ``path``: the local data file of an lm-eval task."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


@functools.lru_cache(maxsize=None)
def task_file(name: str) -> Path:
    """A task YAML: the course's own (``course_utils/lessons/lm_eval_tasks/<name>.yaml``) or, failing that, lm-eval's
    (found once per process: lm-eval's task folder holds thousands of files)."""
    own = repo_root() / "course_utils" / "lessons" / "lm_eval_tasks" / f"{name}.yaml"
    if own.exists():
        return own
    import lm_eval.tasks

    # lm-eval keeps a task in <its folder>/<task>.yaml, mostly; building its TaskManager indexes thousands (seconds).
    for path in sorted(Path(lm_eval.tasks.__file__).parent.rglob(f"{name}.yaml")):
        if f"task: {name}\n" in path.read_text():
            return path
    raise InputError(f"No lm-eval task YAML called {name!r}, in the course's lm_eval_tasks/ or in lm-eval's.")


def lm_eval_task(yaml_file, data_files: dict[str, str | Path]) -> dict:
    """The task in ``yaml_file`` as a dict that reads its rows from local ``data_files`` ({split: file}), as
    ``lm_eval.simple_evaluate(tasks=[...])`` takes it. dataset_path becomes the files' format (json or parquet) and
    the Hub's data set name goes; the rows are read by ``read_local_files`` (lm-eval's ``custom_dataset``), not by
    ``load_dataset``, which reports every load to the Hub's usage counter unless HF_DATASETS_OFFLINE is set: so
    nothing leaves the machine, online or off."""
    import yaml

    task = yaml.safe_load(Path(yaml_file).read_text())
    suffixes = {Path(f).suffix for f in data_files.values()}
    if len(suffixes) != 1 or not suffixes <= {".jsonl", ".json", ".parquet"}:
        raise InputError(f"lm_eval_task reads .jsonl, .json or .parquet files of one kind, got {data_files}.")
    task.pop("dataset_name", None)
    task["dataset_path"] = "parquet" if suffixes == {".parquet"} else "json"
    task["dataset_kwargs"] = {"data_files": {split: str(f) for split, f in data_files.items()}}
    task["custom_dataset"] = read_local_files
    return task


def read_local_files(data_files: dict[str, str], **_):
    """{split: file} as a DatasetDict, with datasets' own readers (``Dataset.from_json``, ``from_parquet``), as
    ``sources`` reads the course's data; lm-eval passes its metadata too, which a local file does not need."""
    from datasets import Dataset, DatasetDict

    def read(path: str):
        reader = Dataset.from_parquet if path.endswith(".parquet") else Dataset.from_json
        return reader(path, cache_dir=writable_datasets_cache())

    return DatasetDict({split: read(path) for split, path in data_files.items()})


@contextlib.contextmanager
def quiet_lm_eval():
    """lm-eval without its chatter: its log lines (the defaults it fills in, an already-loaded model noted), its
    progress bars (bookkeeping: building contexts, tokenizing) and transformers' warnings inside it (a review
    longer than 512 tokens, which lm-eval truncates itself). Errors still show."""
    import transformers

    loggers = [logging.getLogger(name) for name in ("lm_eval", "lm-eval")]
    levels = [logger.level for logger in loggers]
    verbosity = transformers.logging.get_verbosity()
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    transformers.logging.set_verbosity_error()
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
        transformers.logging.set_verbosity(verbosity)
