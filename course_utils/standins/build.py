"""Build a stand-in: its tokenizer and architecture, each stage of its recipe in turn, its figures, its model card.

    path = build("t5-small", out=standins_dir())    # resumable: a stage already finished is not run again
    path = build("t5-small", out=other_folder, seed=1)        # the same recipe from other random weights

Work in progress lives in ``<work>/<name>-<fingerprint>/``, one folder a stage: ``0-architecture`` (the
tokenizer and the config), then ``1-span_corruption``, ``2-mixture`` and so on, each with its model once it is
finished, and a checkpoint while it runs. A build killed at any moment and started again goes on from the last
finished stage and the stage's last checkpoint, and ends with the same weights. The finished stand-in is copied
into ``out/<name>/`` whole (written beside it, then renamed), its weights stored in float16 (loaded as float32),
with its ``MANIFEST.json`` and model card; its held-out figures are measured on those shipped weights.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from course_utils.from_notebooks.pretraining_loop import pretrain
from course_utils.lessons.eval_setup import EvaluationConfig
from course_utils.machinery.paths import cache_dir
from course_utils.models_and_data.standin_files import MANIFEST, file_hashes
from course_utils.models_and_data.tokens import encode_documents, raw_rows
from course_utils.pretraining.config import PretrainConfig
from course_utils.standins import corpus, fingerprint
from course_utils.standins.card import model_card
from course_utils.standins.evaluate import held_out_figures
from course_utils.standins.saved import load, save, store_in_float16
from course_utils.standins.specs import Stage, StandInSpec, spec
from course_utils.standins.tokenizers import corpus_files, iter_corpus, train_tokenizer
from course_utils.standins.training import (
    block_batches,
    causal_batches,
    chat_batches,
    chat_examples,
    pair_batches,
    train,
)

DONE = "STAGE.json"  # written into a stage's folder once its model is saved
WEIGHT_FILES = ("model.safetensors",)


def stage_seed(standin: StandInSpec, index: int) -> int:
    """The seed of stage ``index``'s batches: each stage, and each build seed, draws its own."""
    return standin.seed * 100 + index


def config_for(standin: StandInSpec, tokenizer):
    """The transformers config of ``standin``: its family's config with the spec's sizes and the tokenizer's ids."""
    from transformers import GPT2Config, GPTNeoXConfig, Qwen2Config, T5Config

    if standin.family == "t5":
        ids = dict(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
        return T5Config(
            vocab_size=len(tokenizer), decoder_start_token_id=tokenizer.pad_token_id, **ids, **standin.config
        )
    if standin.family in ("gpt2", "gpt_neox"):
        eos = tokenizer.eos_token_id
        config_class = GPT2Config if standin.family == "gpt2" else GPTNeoXConfig
        return config_class(vocab_size=len(tokenizer), bos_token_id=eos, eos_token_id=eos, **standin.config)
    if standin.family == "qwen2":
        return Qwen2Config(
            vocab_size=len(tokenizer),
            bos_token_id=tokenizer.pad_token_id,  # Qwen2.5's config names <|endoftext|> as BOS; the tokenizer adds none
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            **standin.config,
        )
    raise ValueError(f"Stand-in {standin.name!r} has unknown family {standin.family!r} (t5, gpt2, gpt_neox or qwen2).")


def architecture(standin: StandInSpec, folder: Path) -> Path:
    """``folder`` with the trained tokenizer and the config; for a causal model also its seeded random weights (a
    T5's are made by lesson 04's ``initial_model``, from the config, with the same seed)."""
    import torch
    from transformers import AutoModelForCausalLM

    tokenizer = train_tokenizer(standin.family, iter_corpus(corpus_files(name=standin.name)))
    config = config_for(standin, tokenizer)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(folder)
    config.save_pretrained(folder)
    if standin.family != "t5":
        with torch.random.fork_rng(devices=[]):  # seeded weights without touching the caller's generator
            torch.manual_seed(standin.seed)
            AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    return folder


def span_corruption(standin: StandInSpec, stage: Stage, index: int, start: Path, folder: Path, progress: bool) -> dict:
    """Lesson 04's pretraining run (``course_utils.from_notebooks.pretraining_loop.pretrain``) from ``start``'s config: T5 v1.1
    on C4 alone, as Google's; T5-small and T5-base on the whole corpus, as T5 read C4 before its mixture."""

    if standin.name == "t5-v1_1-base":
        data = str(corpus.data_dir() / "c4")
    else:
        held_out = [row["text"] for row in corpus.read_rows("c4/validation.jsonl")]
        data = str(corpus.write_text_folder(corpus.documents(), held_out, folder / "corpus"))
    config = PretrainConfig(
        model_name=str(start),
        data_path=data,
        data_config=None,
        output_dir=str(folder),
        input_length=stage.max_length,
        batch_size=stage.batch_size,
        total_steps=stage.steps,
        learning_rate=stage.learning_rate,
        warmup_steps=stage.warmup_steps,
        logging_steps=100,
        eval_every=1000,
        eval_batches=6,
        checkpoint_every=500,
        keep_checkpoints=1,
        resume="auto",
        seed=stage_seed(standin, index),
        attn_implementation="eager",
        data_workers=1,
    )
    result = pretrain(config, echo=_progress_echo(stage, f"{standin.name} span corruption", progress))
    last = max(result.eval_nll)
    return {
        "held_out_nll": result.eval_nll[last],
        "held_out_nll_start": result.eval_nll[0],
        "losses": result.train_losses,
    }


def _progress_echo(stage: Stage, desc: str, progress: bool):
    """An ``echo`` for lesson 04's loop that moves a progress bar with its "[train] Step N out of M" lines."""
    from tqdm.auto import tqdm

    bar = tqdm(total=stage.steps, desc=desc, disable=not progress, mininterval=2.0)

    def echo(line: str) -> None:
        if line.startswith("[train] Step "):
            bar.update(int(line.split()[2]) - bar.n)
            bar.set_postfix_str(line.split("|")[1].strip(), refresh=False)
            if bar.n >= stage.steps:
                bar.close()
        elif progress:
            bar.write(line)

    return echo


def mixture(standin, stage, index, start, folder, progress) -> dict:
    """T5's multi-task mixture: ``summarize: `` on the training articles and ``sst2 sentence: `` on SST-2's."""

    model, tokenizer = load(start)
    sst2_train, _ = corpus.sst2_split()
    makers = {
        "summarize": lambda: corpus.summarize_pairs(corpus.read_rows("cnn_dailymail/train.jsonl")),
        "sst2": lambda: corpus.sst2_pairs(sst2_train),
    }
    tasks = {name: makers[name]() for name, _ in stage.tasks}
    draw = pair_batches(
        tasks, dict(stage.tasks), tokenizer, stage.batch_size, stage.max_length, stage_seed(standin, index)
    )
    losses = train(model, draw, stage, folder, progress=progress, desc=f"{standin.name} mixture")
    save(model, tokenizer, folder / "model")
    return {"losses": losses}


def causal_lm(standin, stage, index, start, folder, progress) -> dict:
    """Causal language modelling on the corpus, packed into blocks of ``stage.max_length`` tokens. With tasks, each
    step draws one pool by weight: ``corpus`` (those blocks) or ``stories`` (the LAMBADA-style training passages,
    one a row)."""
    import numpy as np

    model, tokenizer = load(start)
    blocks = np.stack(list(raw_rows(corpus.documents(), tokenizer, stage.max_length)))  # (blocks, max_length)
    if stage.tasks:
        pools = {
            "corpus": blocks,
            "stories": [ids[: stage.max_length] for ids in encode_documents(tokenizer, corpus.stories())],
        }
        pad = tokenizer.eos_token_id if tokenizer.pad_token_id is None else tokenizer.pad_token_id
        draw = causal_batches(
            {name: pools[name] for name, _ in stage.tasks},
            dict(stage.tasks),
            pad,
            stage.batch_size,
            stage_seed(standin, index),
        )
    else:
        draw = block_batches(blocks, stage.batch_size, stage_seed(standin, index))
    losses = train(model, draw, stage, folder, progress=progress, desc=f"{standin.name} language model")
    save(model, tokenizer, folder / "model")
    return {"losses": losses, "blocks": len(blocks)}


def instructions(standin, stage, index, start, folder, progress) -> dict:
    """Instruction tuning on chats: the course's pairwise judging prompt (``judge``) and an article's highlights
    (``highlights``), the loss on the answers only."""

    model, tokenizer = load(start)
    rows = corpus.read_rows("cnn_dailymail/train.jsonl")
    words = EvaluationConfig().judge_article_words
    pairs = corpus.judge_pairs(rows, stage_seed(standin, index), words)
    makers = {"judge": lambda: corpus.judge_chats(pairs), "highlights": lambda: corpus.highlights_chats(rows, words)}
    tasks = {name: chat_examples(makers[name](), tokenizer, stage.max_length) for name, _ in stage.tasks}
    draw = chat_batches(tasks, dict(stage.tasks), tokenizer.pad_token_id, stage.batch_size, stage_seed(standin, index))
    losses = train(model, draw, stage, folder, progress=progress, desc=f"{standin.name} instructions")
    save(model, tokenizer, folder / "model")
    return {"losses": losses, "judge_pairs": len(pairs), "longer_is_better": corpus.longer_is_better_share(pairs)}


STAGES = {"span_corruption": span_corruption, "mixture": mixture, "causal_lm": causal_lm, "instructions": instructions}


def run_stages(standin: StandInSpec, work: Path, progress: bool) -> tuple[Path, list[dict]]:
    """Every stage of ``standin`` in ``work``, the finished ones skipped: (the last model's folder, each stage's
    record: its settings, figures and seconds)."""
    start = work / "0-architecture"
    if not (start / DONE).exists():
        architecture(standin, start)
        (start / DONE).write_text("{}")
    records = []
    for index, stage in enumerate(standin.stages, 1):
        folder = work / f"{index}-{stage.objective}"
        if not (folder / DONE).exists():
            began = time.perf_counter()
            figures = STAGES[stage.objective](standin, stage, index, start, folder, progress)
            record = {"stage": dataclasses.asdict(stage), "figures": figures, "seconds": time.perf_counter() - began}
            (folder / DONE).write_text(json.dumps(record, indent=1))
        records.append(json.loads((folder / DONE).read_text()))
        start = folder / "model"
    return start, records


def manifest_record(
    standin: StandInSpec, prints: dict, folder: Path, stages: list[dict], figures: dict, threads: int
) -> dict:
    """The MANIFEST.json of a build of ``standin`` whose files are in ``folder``."""
    import torch
    import transformers

    model, _ = load(folder)
    return {
        "name": standin.name,
        "stands_for": standin.hub_id,
        "family": standin.family,
        "seed": standin.seed,
        "parameters": model.num_parameters(),
        "fingerprints": prints,
        "data_files": fingerprint.data_files(standin),
        "files": file_hashes(folder),
        "stages": stages,
        "figures": figures,
        "built_with": {"torch": torch.__version__, "transformers": transformers.__version__, "threads": threads},
    }


def build(name: str, out: Path, seed: int | None = None, work: Path | None = None, progress: bool = True) -> Path:
    """Build the stand-in ``name`` (``seed`` replaces its spec's) into ``out/<name>``, resuming earlier work."""
    import torch

    standin = spec(name) if seed is None else dataclasses.replace(spec(name), seed=seed)
    prints = fingerprint.fingerprints(standin)
    work = (work or cache_dir() / "standin-builds") / f"{name}-{fingerprint.combined(prints)}"
    model_dir, records = run_stages(standin, work, progress)
    target = out / name
    out.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(dir=out, prefix=f".{name}-"))
    try:
        for path in sorted(model_dir.iterdir()):
            if path.is_file():
                shutil.copy2(path, temporary / path.name)
        store_in_float16(temporary)
        figures = held_out_figures(standin, temporary)
        record = manifest_record(standin, prints, temporary, records, figures, torch.get_num_threads())
        (temporary / MANIFEST).write_text(json.dumps(record, indent=1) + "\n")
        (temporary / "README.md").write_text(model_card(standin, record))
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)  # the shipped folder keeps only whole builds
        raise
    if target.exists():
        shutil.rmtree(target)
    os.replace(temporary, target)
    return target
