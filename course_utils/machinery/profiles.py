"""The two profiles of the course, and the one place where they differ.

``smoke`` (the default) runs offline on a CPU in minutes: tiny stand-in models of the same
architectures and the sample data shipped in ``data/``. ``full`` uses the real Hub models
and data sets on a GPU. Everything below this module takes a model name or path, a data
source and sizes; nothing else in the package asks which profile is running.

    from course_utils.machinery.profiles import get_profile
    profile = get_profile("smoke")                   # or get_profile("full", require_gpu=False)
    profile.models["t5_small"]                       # "standin:t5-small" or "t5-small"
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from course_utils.machinery.configs import DataSource, InputError, checked_replace
from course_utils.machinery.paths import data_dir

PROFILE_NAMES = ("smoke", "full")
# Which real model each role stands for; the stand-ins are named after them.
MODEL_ROLES = {
    "t5_small": "t5-small",
    "t5_base": "t5-base",
    "gpt2": "gpt2",
    "t5_v1_1_base": "google/t5-v1_1-base",
    "pythia": "EleutherAI/pythia-70m-deduped",
    # Lesson 05's judge: Apache-2.0, safetensors, Qwen2 (native in transformers), 1 GB in bf16 (README: the judge).
    "judge": "Qwen/Qwen2.5-0.5B-Instruct",
}


@dataclass(frozen=True)
class Profile:
    """Names, sizes and device settings for one way of running the course."""

    name: str
    # Smoke never touches the network; full does unless HF_HUB_OFFLINE=1 is set by the user
    # (compute nodes without internet, after `course prefetch --profile full`).
    offline: bool
    # Full runs are meant for a GPU; stopping early beats a silent 50x slower CPU run.
    require_gpu: bool
    # role -> Hub id, local path, or "standin:<name>" (built from a config, see standins.py)
    models: dict[str, str] = field(default_factory=dict)
    imdb: DataSource = DataSource("stanfordnlp/imdb")
    cnn_dailymail: DataSource = DataSource("abisee/cnn_dailymail", "3.0.0")
    c4: DataSource = DataSource("allenai/c4", "en")
    dolly: DataSource = DataSource("databricks/databricks-dolly-15k")
    # Lesson 05's published benchmark: OpenAI's LAMBADA test set as lm-eval's lambada_openai task reads it.
    lambada: DataSource = DataSource("EleutherAI/lambada_openai", "default")
    # Attention kernel passed to from_pretrained (None: the library's default, SDPA). On a CPU
    # at the stand-ins' sizes the eager kernel is about 25% faster per T5 training step.
    attn_implementation: str | None = None
    # Each lesson's settings, as changes to its config's defaults, keyed by the config's own field
    # names and applied with a checked replace (an unknown key is an error):
    # finetune -> finetune.FinetuneConfig (lessons 01, 02 and 04's fine-tunes),
    # summaries -> summary_setup.SummaryConfig (lesson 03), pretrain -> pretraining.config.PretrainConfig (lesson 04).
    # Full: one epoch of t5-small at the usual T5 fine-tuning rate, FinetuneConfig's defaults.
    finetune: dict = field(default_factory=dict)
    # Full: the course scores 100 CNN/DailyMail test articles and scores the released checkpoints
    # as they are (t5-small and t5-base already learned "summarize:" on CNN/DailyMail).
    summaries: dict = field(default_factory=dict)
    # PretrainConfig's defaults are nanoT5's whole recipe (the `python -m course_utils.pretraining` command).
    pretrain: dict = field(default_factory=dict)
    # Lab 01L -> instruct.InstructionConfig. Full: its defaults, 4,000 Dolly examples for one epoch.
    instruction: dict = field(default_factory=dict)
    # Lesson 05 -> evaluation.EvaluationConfig. Full: its defaults, all 5,153 LAMBADA passages.
    evaluation: dict = field(default_factory=dict)
    # Lesson 04's optimizer race: plain AdamW against AdamW with RMS scaling, this many steps each (never
    # more than the lesson's own run), at the lesson's peak rate; 0 runs no race (a quick run: a step or two
    # would measure nothing). Full: 500 steps are about
    # 5 minutes a run on an A100 at nanoT5's 0.56 s per step, plus six evaluations on 10 held-out batches.
    optimizer_race_steps: int = 500
    # Lesson 04's third start, as nanoT5 compares: the released weights of the architecture it
    # pretrains, loaded with from_pretrained (smoke: the shipped stand-in, pretrained by lesson 04's code for three
    # times the notebook's steps). None: no third start.
    released_weights: str | None = None
    # Lesson 04's fine-tunes: lesson 01's recipe (profile.finetune) with these changes. Pretraining pays most where
    # labels are few. Full: none, lesson 01's recipe as it is.
    payoff_finetune: dict = field(default_factory=dict)
    # `course grade`: each submission's time limit, each cell's, and its memory cap. Full: lab 01L trains Pythia-70m
    # on 4,000 examples, minutes on a GPU; smoke: a lab runs in under a minute on 2 cores.
    grading: dict = field(default_factory=lambda: dict(timeout_s=1800, cell_timeout_s=900, memory_gib=32.0))
    # C4 en is hundreds of GB; prefetch takes this many of its 1,024 train shards
    # (about 356k documents each) for clusters that must run offline.
    c4_prefetch_train_shards: int = 8
    # True for `course run --quick`: full architectures and settings, rows and steps capped (QUICK_CAPS).
    quick: bool = False
    # The seed of every training run (the fine-tunes, the pretraining) and of the rows they sample; None: each
    # config's own default. benchmarks/bench_smoke_fidelity.py sets it (COURSE_SEED) to measure the spread.
    seed: int | None = None


def _smoke() -> Profile:
    data = data_dir()
    return Profile(
        name="smoke",
        offline=True,
        require_gpu=False,
        models={role: f"standin:{real.split('/')[-1]}" for role, real in MODEL_ROLES.items()},
        imdb=DataSource(str(data / "imdb")),
        cnn_dailymail=DataSource(str(data / "cnn_dailymail")),
        c4=DataSource(str(data / "c4")),
        dolly=DataSource(str(data / "dolly")),
        lambada=DataSource(str(data / "lambada")),
        c4_prefetch_train_shards=0,
        attn_implementation="eager",
        # The stand-in arrives pretrained (SST-2-like sentences in its mixture), so it needs only a fine-tune:
        # 1,200 of the 2,000 shipped reviews for 2 epochs, 150 steps, about a minute on 2 cores, so lesson 02
        # can run it twice (plain and ZeRO-2). Its 128-wide weights take a larger step than t5-small's 3e-4.
        finetune=dict(num_train_epochs=2.0, learning_rate=1e-3, max_train_rows=1200),
        # Short rows and a small batch at the recipe's peak rate, after a short warm-up. 3,000 steps
        # (about 2.5 minutes on 2 cores) is where the stand-in starts to read its input and its start
        # beats random weights on lesson 01's task (benchmarks/bench_pretrain_payoff.py; 400 steps did
        # not). One data worker: the pipeline runs off the training thread as in full, and on 2 cores
        # more workers would only take the cores from the training.
        pretrain=dict(
            input_length=128,
            batch_size=16,
            total_steps=3000,
            warmup_steps=40,
            logging_steps=100,
            eval_every=200,
            eval_batches=6,
            checkpoint_every=0,
            data_workers=1,
        ),
        optimizer_race_steps=300,
        released_weights="standin:t5-v1_1-base",
        # Few labels, where pretraining should pay most: 400 reviews for 5 epochs (125 steps) at a random start's rate.
        payoff_finetune=dict(max_train_rows=400, num_train_epochs=5.0, learning_rate=6e-3),
        # A smoke lab runs in under a minute on 2 cores; a submission gets five, a cell two, and 8 GiB.
        grading=dict(timeout_s=300, cell_timeout_s=120, memory_gib=8.0),
        # The random-weight stand-in learns the shipped instructions' answer shapes at a large rate: 540 examples
        # for 4 epochs of 16, 136 steps, a few seconds on 2 cores; 40 held out for ROUGE.
        instruction=dict(
            max_train_rows=None,
            test_rows=40,
            max_length=192,
            num_train_epochs=4.0,
            learning_rate=3e-3,
            lora_learning_rate=3e-2,
            logging_steps=10,
            max_new_tokens=24,
        ),
        # The stand-ins summarize as shipped (pretrained with summarize: in their mixture). All 50 shipped test
        # articles are scored.
        summaries=dict(test_rows=None),
    )


# The notebook's share of nanoT5's recipe in full: a run that fits a notebook. At nanoT5's
# 0.56 s per step (A100, bf16 + compile, batch 128 x 512), 6,000 steps take 6,000 x 0.56 s = 56 min,
# 9 % of the recipe's 65,536. Warm-up keeps the recipe's share (10,000 / 65,536, about 15 %).
# A checkpoint every 500 steps (about 5 minutes) bounds what a crash or a job limit can lose.
FULL_NOTEBOOK_PRETRAIN = dict(total_steps=6000, warmup_steps=1000, eval_every=1000, checkpoint_every=500)


def _full() -> Profile:
    return Profile(
        name="full",
        offline=False,
        require_gpu=True,
        models=dict(MODEL_ROLES),
        pretrain=dict(FULL_NOTEBOOK_PRETRAIN),
        released_weights=MODEL_ROLES["t5_v1_1_base"],
    )


# `course run --quick`: the same architectures, settings and code path, with rows and steps capped
# so that an instructor can check a cluster (or this course's CI can rehearse the full profile on a
# CPU) in minutes. Pretraining keeps the real row lengths (568 raw -> 512 inputs / 114 targets) and
# accumulates 2 micro-batches of 2 rows per step, so accumulation and the held-out input swap run.
# Lab 01L trains 32 examples in 8 steps of 4: too few to ask for a 20 % fall of the loss, enough to see that it does
# not rise (margin 0); the rehearsal's random-weight Pythia fell from 11.0 to 9.6 in them.
# 4 reviews make one fine-tuning step of 4 rows: lesson 04 fine-tunes T5 v1.1 base (248 M parameters),
# whose fp32 activations for lesson 01's batch of 16 reviews take about 18 GB on a CPU, and whose one step
# of 8 reviews took 27 to 44 s on 2 cores.
QUICK_CAPS = dict(
    finetune=dict(max_train_rows=4, test_rows=4, num_train_epochs=1.0),
    instruction=dict(
        max_train_rows=32, test_rows=4, max_new_tokens=16, per_device_batch_size=4, logging_steps=1, loss_margin=0.0
    ),
    summaries=dict(test_rows=4, max_new_tokens=24),
    # The judge reads two articles (four verdicts) of its first 120 words: a 494 M judge on a CPU.
    evaluation=dict(lambada_rows=8, judge_article_words=120, judge_rows=2, resamples=1000),
    c4_prefetch_train_shards=1,
    optimizer_race_steps=0,
)
# One checkpoint, at the last step: a 248 M model and its optimizer's states (3 GB) written once at full size.
QUICK_PRETRAIN = dict(
    batch_size=4,
    gradient_accumulation_steps=2,
    total_steps=2,
    warmup_steps=1,
    logging_steps=1,
    eval_every=0,
    eval_batches=1,
    checkpoint_every=2,
)


def _capped(value, cap):
    """``cap``, or ``value`` when it is lower (None, "all of it", and a setting left to its default are capped)."""
    return cap if value is None else min(value, cap)


def quick_profile(profile: Profile) -> Profile:
    """``profile`` with rows and steps capped by QUICK_CAPS (never raised), and ``quick`` set."""
    capped = {}
    for name, cap in QUICK_CAPS.items():
        value = getattr(profile, name)
        capped[name] = (
            {**value, **{k: _capped(value.get(k), c) for k, c in cap.items()}}
            if isinstance(cap, dict)
            else _capped(value, cap)
        )
    pretrain = {**profile.pretrain, **QUICK_PRETRAIN}
    return checked_replace(profile, {**capped, "pretrain": pretrain, "quick": True}, "profile setting")


def get_profile(name: str = "smoke", quick: bool = False, **overrides) -> Profile:
    """The profile called ``name``, with checked overrides (an unknown key is an error), capped when ``quick``."""
    builders = {"smoke": _smoke, "full": _full}
    if name not in builders:
        raise InputError(
            f"Unknown profile {name!r}: choose one of {', '.join(PROFILE_NAMES)} (COURSE_PROFILE or --profile)."
        )
    if "name" in overrides:
        raise InputError("A profile's name cannot be overridden; pick the profile by name instead.")
    profile = checked_replace(builders[name](), overrides, "profile setting")
    return quick_profile(profile) if quick else profile


def sized_by_profile(cls, profile: Profile, model_role: str, data: DataSource, output_dir: str, part: str, **changes):
    """A lesson's config ``cls`` (``FinetuneConfig``, ``PretrainConfig``) as ``profile`` sizes it: the model of
    ``model_role``, the data set ``data``, the profile's attention, its settings for ``part`` ("finetune",
    "pretrain"), its seed, then ``changes``; a setting the config does not have is refused, named."""
    config = cls(
        model_name=profile.models[model_role],
        data_path=data.path,
        data_config=data.config,
        output_dir=output_dir,
        attn_implementation=profile.attn_implementation,
    )
    config = checked_replace(config, getattr(profile, part), f"Profile.{part} setting")
    if profile.seed is not None:
        config = dataclasses.replace(config, seed=profile.seed)
    return checked_replace(config, changes, {"finetune": "fine-tuning", "pretrain": "pretraining"}[part] + " setting")
