"""Git repositories that look like the Hub's, for the full-profile rehearsal (``make rehearse``).

A Hub-compatible server (olah, see ``hub_server.py``) serves them on the loopback interface, so
``course prefetch --profile full`` fetches them through huggingface_hub's own code exactly as it
fetches the real ones. What they hold:

- ``t5-small``, ``t5-base``, ``gpt2`` and ``google/t5-v1_1-base`` with their published configs
  (full size, seeded random weights, safetensors) and tokenizers of the published sizes trained
  on the text in ``data/``: T5's has 32,000 pieces plus ``<extra_id_0..99>`` (32,100, in a model
  vocabulary of 32,128), GPT-2's a 50,257-entry byte-level BPE ending in ``<|endoftext|>``. The
  corpus supports far fewer pieces than that, so the rest are placeholders that never match text.
  The T5 tokenizers' configs leave ``model_max_length`` out, as some Hub repos do.
- ``Qwen/Qwen2.5-0.5B-Instruct`` (lesson 05's judge) with its published config, its weights in bfloat16 as
  published, and a Qwen2 tokenizer of the published size: a byte-level BPE of 151,643 entries, then Qwen's 22
  special tokens (``<|endoftext|>`` 151643, ``<|im_start|>``, ``<|im_end|>`` ...), with its ChatML chat template.
- ``EleutherAI/pythia-70m-deduped`` (lab 01L) with its published config, its weights in float16 as
  published (transformers 5 loads a checkpoint in its stored dtype unless told otherwise), and a
  GPT-NeoX tokenizer of the published size: 50,277 entries, ``<|endoftext|>`` as id 0 and
  ``<|padding|>`` as id 1, with no pad token named, in a model vocabulary of 50,304.
- ``stanfordnlp/imdb`` (``plain_text`` parquet), ``abisee/cnn_dailymail`` (``3.0.0`` parquet),
  ``allenai/c4`` (``en/c4-{train,validation}.NNNNN-of-NNNNN.json.gz``) and
  ``databricks/databricks-dolly-15k`` (one ``databricks-dolly-15k.jsonl``) and ``EleutherAI/lambada_openai``
  (``default/test/0000.parquet``, a ``text`` column), with the rows of ``data/``
  in the Hub's file names and formats.

    python tests/rehearsal/hub_repos.py [--root .cache/rehearsal]    # build (or find) them all

Each repo is a plain git repo on branch ``main`` under ``<root>/mirrors/<models|datasets>/<id>``,
committed with a fixed date so the same recipe always gives the same commit; its files live only in
git's objects (``git -C <repo> show main:config.json``), where olah reads them. The set is rebuilt
only when its fingerprint (this file and ``data/``) changes.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from course_utils.standins import corpus_files, iter_corpus  # noqa: E402

T5_PIECES, T5_EXTRA_IDS, T5_MODEL_VOCAB = 32_000, 100, 32_128
GPT2_VOCAB = 50_257
PYTHIA_TOKENS, PYTHIA_MODEL_VOCAB = 50_277, 50_304
QWEN_BPE, QWEN_MODEL_VOCAB = 151_643, 151_936
# Qwen2.5's 22 special tokens, ids 151643 to 151664, in order.
QWEN_SPECIAL_TOKENS = (
    "<|endoftext|> <|im_start|> <|im_end|> <|object_ref_start|> <|object_ref_end|> <|box_start|> <|box_end|> "
    "<|quad_start|> <|quad_end|> <|vision_start|> <|vision_end|> <|vision_pad|> <|image_pad|> <|video_pad|> "
    "<tool_call> </tool_call> <|fim_prefix|> <|fim_middle|> <|fim_suffix|> <|fim_pad|> <|repo_name|> <|file_sep|>"
).split()
_T5_COMMON = dict(
    architectures=["T5ForConditionalGeneration"],
    d_kv=64,
    decoder_start_token_id=0,
    dropout_rate=0.1,
    eos_token_id=1,
    initializer_factor=1.0,
    is_encoder_decoder=True,
    layer_norm_epsilon=1e-06,
    model_type="t5",
    n_positions=512,
    output_past=True,
    pad_token_id=0,
    relative_attention_num_buckets=32,
    vocab_size=T5_MODEL_VOCAB,
)
_T5_SUMMARIZE = {
    "summarization": {
        "early_stopping": True,
        "length_penalty": 2.0,
        "max_length": 200,
        "min_length": 30,
        "no_repeat_ngram_size": 3,
        "num_beams": 4,
        "prefix": "summarize: ",
    }
}
# The published config.json of each model (the Hub's, as of 2024).
PUBLISHED_CONFIGS = {
    "t5-small": {
        **_T5_COMMON,
        "d_ff": 2048,
        "d_model": 512,
        "num_heads": 8,
        "num_layers": 6,
        "task_specific_params": _T5_SUMMARIZE,
    },
    "t5-base": {
        **_T5_COMMON,
        "d_ff": 3072,
        "d_model": 768,
        "num_heads": 12,
        "num_layers": 12,
        "task_specific_params": _T5_SUMMARIZE,
    },
    "google/t5-v1_1-base": {
        **{k: v for k, v in _T5_COMMON.items() if k != "n_positions"},
        "d_ff": 2048,
        "d_model": 768,
        "feed_forward_proj": "gated-gelu",
        "num_decoder_layers": 12,
        "num_heads": 12,
        "num_layers": 12,
        "tie_word_embeddings": False,
    },
    "gpt2": {
        "activation_function": "gelu_new",
        "architectures": ["GPT2LMHeadModel"],
        "attn_pdrop": 0.1,
        "bos_token_id": 50256,
        "embd_pdrop": 0.1,
        "eos_token_id": 50256,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "model_type": "gpt2",
        "n_ctx": 1024,
        "n_embd": 768,
        "n_head": 12,
        "n_layer": 12,
        "n_positions": 1024,
        "resid_pdrop": 0.1,
        "summary_activation": None,
        "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
        "vocab_size": GPT2_VOCAB,
    },
    "EleutherAI/pythia-70m-deduped": {
        "architectures": ["GPTNeoXForCausalLM"],
        "bos_token_id": 0,
        "classifier_dropout": 0.1,
        "eos_token_id": 0,
        "hidden_act": "gelu",
        "hidden_size": 512,
        "initializer_range": 0.02,
        "intermediate_size": 2048,
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": 2048,
        "model_type": "gpt_neox",
        "num_attention_heads": 8,
        "num_hidden_layers": 6,
        "rotary_emb_base": 10000,
        "rotary_pct": 0.25,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
        "transformers_version": "4.24.0",
        "use_cache": True,
        "use_parallel_residual": True,
        "vocab_size": PYTHIA_MODEL_VOCAB,
    },
    "Qwen/Qwen2.5-0.5B-Instruct": {
        "architectures": ["Qwen2ForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": 151643,
        "eos_token_id": 151645,
        "hidden_act": "silu",
        "hidden_size": 896,
        "initializer_range": 0.02,
        "intermediate_size": 4864,
        "max_position_embeddings": 32768,
        "max_window_layers": 21,
        "model_type": "qwen2",
        "num_attention_heads": 14,
        "num_hidden_layers": 24,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-06,
        "rope_theta": 1000000.0,
        "sliding_window": 32768,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.43.1",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": QWEN_MODEL_VOCAB,
    },
}
# Parameters of the published models (model cards; T5 v1.1 with its own output layer).
PUBLISHED_PARAMETERS = {
    "t5-small": 60_506_624,
    "t5-base": 222_903_552,
    "google/t5-v1_1-base": 247_577_856,
    "gpt2": 124_439_808,
    "EleutherAI/pythia-70m-deduped": 70_426_624,
    "Qwen/Qwen2.5-0.5B-Instruct": 494_032_768,
}
GENERATION_CONFIGS = {
    "t5": {"decoder_start_token_id": 0, "eos_token_id": 1, "pad_token_id": 0},
    "gpt2": {"bos_token_id": 50256, "eos_token_id": 50256},
    "gpt_neox": {"bos_token_id": 0, "eos_token_id": 0},
    "qwen2": {
        "bos_token_id": 151643,
        "do_sample": True,
        "eos_token_id": [151645, 151643],
        "pad_token_id": 151643,
        "repetition_penalty": 1.1,
        "temperature": 0.7,
        "top_k": 20,
        "top_p": 0.8,
    },
}
# Published in float16: the weights are saved in it, as the Hub's files are.
FLOAT16_WEIGHTS = ("EleutherAI/pythia-70m-deduped",)
BFLOAT16_WEIGHTS = ("Qwen/Qwen2.5-0.5B-Instruct",)
# Repos given only PyTorch's pickled pytorch_model.bin, as older Hub repos may hold, so that the
# prefetch's fallback for repos without safetensors runs (lesson 04 loads these weights).
PYTORCH_WEIGHTS_ONLY = ("google/t5-v1_1-base",)
C4_TRAIN_SHARDS = 8  # of the Hub's 1,024: as many as `course prefetch --profile full` takes
RECIPE = 4  # bump when the build changes in a way the fingerprint does not see


def t5_tokenizer(texts):
    """A T5Tokenizer of T5's published size: pieces trained on ``texts``, placeholders, then the sentinels."""
    from transformers import T5Tokenizer

    from course_utils.standins import train_t5_tokenizer

    trained = train_t5_tokenizer(texts, extra_ids=0)
    vocab = trained.backend_tokenizer.to_str()
    pieces = [tuple(p) for p in json.loads(vocab)["model"]["vocab"]]
    fillers = [(f"<unused_{i}>", -1e4) for i in range(T5_PIECES - len(pieces))]  # never matched by real text
    sentinels = [(f"<extra_id_{i}>", 0.0) for i in range(T5_EXTRA_IDS - 1, -1, -1)]
    return T5Tokenizer(vocab=pieces + fillers + sentinels, extra_ids=T5_EXTRA_IDS)


def gpt2_tokenizer(texts):
    """A GPT2Tokenizer of GPT-2's size: a byte-level BPE trained on ``texts``, placeholders, <|endoftext|> last."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Tokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=GPT2_VOCAB - 1, min_frequency=2)
    trained = json.loads(bpe._tokenizer.to_str())["model"]
    vocab = dict(trained["vocab"])
    vocab.update({f"<unused_{i}>": i for i in range(len(vocab), GPT2_VOCAB - 1)})
    vocab["<|endoftext|>"] = GPT2_VOCAB - 1  # id 50256, as in GPT-2
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in trained["merges"]]
    return GPT2Tokenizer(
        vocab=vocab,
        merges=merges,
        model_max_length=1024,
        unk_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
    )


def gpt_neox_tokenizer(texts):
    """A GPTNeoXTokenizer of Pythia's size: <|endoftext|> (0), <|padding|> (1), a BPE trained on ``texts``,
    placeholders; bos, eos and unk are <|endoftext|> and no pad token is named, as published."""
    from course_utils.standins import train_gpt_neox_tokenizer

    trained = json.loads(train_gpt_neox_tokenizer(texts, vocab_size=PYTHIA_TOKENS).backend_tokenizer.to_str())["model"]
    vocab, merges = dict(trained["vocab"]), trained["merges"]
    vocab.update({f"<unused_{i}>": i for i in range(len(vocab), PYTHIA_TOKENS)})
    from transformers import GPTNeoXTokenizer

    tokenizer = GPTNeoXTokenizer(
        vocab=vocab,
        merges=[tuple(m) if not isinstance(m, str) else tuple(m.split(" ")) for m in merges],
        model_max_length=2048,
    )
    tokenizer.pad_token = None
    return tokenizer


def qwen2_tokenizer(texts):
    """A Qwen2Tokenizer of Qwen2.5's size: a byte-level BPE trained on ``texts`` padded with placeholders to 151,643
    entries, then the 22 special tokens; <|im_end|> ends a turn, <|endoftext|> pads, no BOS; ChatML's template."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import AddedToken, Qwen2Tokenizer

    from course_utils.standins import QWEN_CHAT_TEMPLATE

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=QWEN_BPE, min_frequency=2)
    trained = json.loads(bpe._tokenizer.to_str())["model"]
    vocab = dict(trained["vocab"])
    vocab.update({f"<unused_{i}>": i for i in range(len(vocab), QWEN_BPE)})
    vocab.update({token: QWEN_BPE + i for i, token in enumerate(QWEN_SPECIAL_TOKENS)})  # their published ids
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in trained["merges"]]
    tokenizer = Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        model_max_length=131072,
    )
    tokenizer.add_special_tokens(
        {"additional_special_tokens": [AddedToken(t, special=True) for t in QWEN_SPECIAL_TOKENS[1:]]}
    )
    if tokenizer.convert_tokens_to_ids("<|im_end|>") != 151645 or len(tokenizer) != QWEN_BPE + len(QWEN_SPECIAL_TOKENS):
        raise RuntimeError(f"the Qwen2 tokenizer came out with {len(tokenizer)} entries, <|im_end|> not at 151645")
    tokenizer.chat_template = QWEN_CHAT_TEMPLATE
    return tokenizer


def write_model_repo(name: str, folder: Path, texts: list[str]) -> None:
    """Published config, seeded random weights and a trained tokenizer of the published size, in ``folder``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    from course_utils.models_and_data.models import untie_output_layer

    published = PUBLISHED_CONFIGS[name]
    family = published["model_type"]
    config = AutoConfig.for_model(**published)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        if family == "t5":
            model = AutoModelForSeq2SeqLM.from_config(config)
            if published.get("tie_word_embeddings") is False:
                untie_output_layer(model)
        else:
            model = AutoModelForCausalLM.from_config(config)
    if name in FLOAT16_WEIGHTS:
        model = model.half()
    if name in BFLOAT16_WEIGHTS:
        model = model.bfloat16()
    count = sum(p.numel() for p in model.parameters())
    if count != PUBLISHED_PARAMETERS[name]:
        raise RuntimeError(
            f"{name}: built {count:,} parameters, the published model has {PUBLISHED_PARAMETERS[name]:,}."
        )
    if name in PYTORCH_WEIGHTS_ONLY:  # config.json and generation_config.json are written below
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
    else:
        model.save_pretrained(folder)
    write_model_files(name, folder, texts)


def write_model_files(name: str, folder: Path, texts: list[str], tokenizer=None) -> None:
    """Everything of a model repo but the weights: the published config and generation config, and a
    tokenizer of the published size trained on ``texts`` unless one is given (the GPU check builds its
    models from these)."""
    published = PUBLISHED_CONFIGS[name]
    family = published["model_type"]
    folder.mkdir(parents=True, exist_ok=True)
    tokenizers = {"t5": t5_tokenizer, "gpt2": gpt2_tokenizer, "gpt_neox": gpt_neox_tokenizer, "qwen2": qwen2_tokenizer}
    tokenizer = tokenizer or tokenizers[family](texts)
    tokenizer.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps(published, indent=2) + "\n")  # the Hub's file, not transformers 5's
    (folder / "generation_config.json").write_text(json.dumps(GENERATION_CONFIGS[family], indent=2) + "\n")
    if (folder / "chat_template.jinja").exists():  # published with transformers 4: the template in the config
        settings = json.loads((folder / "tokenizer_config.json").read_text())
        settings["chat_template"] = (folder / "chat_template.jinja").read_text()
        (folder / "tokenizer_config.json").write_text(json.dumps(settings, indent=2) + "\n")
        (folder / "chat_template.jinja").unlink()
    if family == "t5":  # as in Hub repos whose tokenizer config never set it: transformers 5 then reports ~1e30
        settings = json.loads((folder / "tokenizer_config.json").read_text())
        settings.pop("model_max_length", None)
        (folder / "tokenizer_config.json").write_text(json.dumps(settings, indent=2) + "\n")
    (folder / "README.md").write_text(f"# {name}\n\nRehearsal copy: published config, random weights.\n")


def _rows(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _card(pretty: str, configs: list[dict], extra: str = "") -> str:
    import yaml

    return f"---\n{yaml.safe_dump({'configs': configs}, sort_keys=False)}{extra}---\n# {pretty}\n\nRehearsal copy.\n"


def write_imdb(folder: Path) -> None:
    """stanfordnlp/imdb: plain_text/{train,test,unsupervised}-00000-of-00001.parquet, label a ClassLabel."""
    from datasets import ClassLabel, Dataset, Features, Value

    features = Features({"text": Value("string"), "label": ClassLabel(names=["neg", "pos"])})
    (folder / "plain_text").mkdir(parents=True)
    for split in ("train", "test", "unsupervised"):
        Dataset.from_list(_rows(ROOT / "data" / "imdb" / f"{split}.jsonl"), features=features).to_parquet(
            str(folder / "plain_text" / f"{split}-00000-of-00001.parquet")
        )
    configs = [
        {
            "config_name": "plain_text",
            "data_files": [{"split": s, "path": f"plain_text/{s}-*"} for s in ("train", "test", "unsupervised")],
            "default": True,
        }
    ]
    (folder / "README.md").write_text(_card("IMDB", configs))


def write_cnn_dailymail(folder: Path) -> None:
    """abisee/cnn_dailymail: 3.0.0/{train,validation,test}-NNNNN-of-NNNNN.parquet."""
    from datasets import Dataset

    (folder / "3.0.0").mkdir(parents=True)
    for split in ("train", "validation", "test"):
        Dataset.from_list(_rows(ROOT / "data" / "cnn_dailymail" / f"{split}.jsonl")).to_parquet(
            str(folder / "3.0.0" / f"{split}-00000-of-00001.parquet")
        )
    configs = [
        {
            "config_name": "3.0.0",
            "data_files": [{"split": s, "path": f"3.0.0/{s}-*"} for s in ("train", "validation", "test")],
        }
    ]
    (folder / "README.md").write_text(_card("CNN/DailyMail", configs))


def write_c4(folder: Path) -> None:
    """allenai/c4: en/c4-train.NNNNN-of-01024.json.gz (the first few) and en/c4-validation.00000-of-00008.json.gz."""
    (folder / "en").mkdir(parents=True)
    train = _rows(ROOT / "data" / "c4" / "train.jsonl")
    shards = {f"c4-train.{i:05d}-of-01024.json.gz": train[i::C4_TRAIN_SHARDS] for i in range(C4_TRAIN_SHARDS)}
    shards["c4-validation.00000-of-00008.json.gz"] = _rows(ROOT / "data" / "c4" / "validation.jsonl")
    for name, rows in shards.items():
        with gzip.GzipFile(folder / "en" / name, "wb", mtime=0) as handle:  # mtime 0: the same bytes every build
            handle.write("".join(json.dumps(r) + "\n" for r in rows).encode())
    configs = [
        {
            "config_name": "en",
            "data_files": [
                {"split": "train", "path": "en/c4-train.*-of-01024.json.gz"},
                {"split": "validation", "path": "en/c4-validation.*-of-00008.json.gz"},
            ],
        }
    ]
    (folder / "README.md").write_text(_card("C4", configs))


def write_dolly(folder: Path) -> None:
    """databricks/databricks-dolly-15k: one databricks-dolly-15k.jsonl at the top, no configs in the card."""
    folder.mkdir(parents=True)
    shutil.copyfile(ROOT / "data" / "dolly" / "train.jsonl", folder / "databricks-dolly-15k.jsonl")
    (folder / "README.md").write_text("---\nlicense: cc-by-sa-3.0\n---\n# databricks-dolly-15k\n\nRehearsal copy.\n")


def write_lambada(folder: Path) -> None:
    """EleutherAI/lambada_openai: default/test/0000.parquet (one ``text`` column), as the Hub's parquet conversion."""
    from datasets import Dataset

    (folder / "default" / "test").mkdir(parents=True)
    Dataset.from_list(_rows(ROOT / "data" / "lambada" / "test.jsonl")).to_parquet(
        str(folder / "default" / "test" / "0000.parquet")
    )
    configs = [{"config_name": "default", "data_files": [{"split": "test", "path": "default/test/*"}], "default": True}]
    (folder / "README.md").write_text(_card("LAMBADA (OpenAI)", configs))


DATASETS = {
    "stanfordnlp/imdb": write_imdb,
    "abisee/cnn_dailymail": write_cnn_dailymail,
    "allenai/c4": write_c4,
    "databricks/databricks-dolly-15k": write_dolly,
    "EleutherAI/lambada_openai": write_lambada,
}


def git_commit(folder: Path) -> str:
    """Commit ``folder`` as a fresh repo on ``main`` with a fixed date; return the commit."""
    when = "2024-01-01T00:00:00+00:00"
    env = dict(
        os.environ,
        GIT_AUTHOR_DATE=when,
        GIT_COMMITTER_DATE=when,
        GIT_AUTHOR_NAME="rehearsal",
        GIT_AUTHOR_EMAIL="rehearsal@localhost",
        GIT_COMMITTER_NAME="rehearsal",
        GIT_COMMITTER_EMAIL="rehearsal@localhost",
    )

    def git(*args):
        return subprocess.run(
            ["git", "-C", str(folder), *args], check=True, env=env, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    git("config", "core.compression", "0")  # random weights do not compress; storing them plainly is fast
    git("add", "-A")
    git("commit", "-q", "-m", "rehearsal copy")
    return git("rev-parse", "main")


def drop_work_tree(folder: Path) -> None:
    """Delete the checked-out files of the repo in ``folder``, keeping ``.git``."""
    for path in folder.iterdir():
        if path.name != ".git":
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def store_as_repo(folder: Path) -> str:
    """Commit ``folder`` as a repo whose files live in git's objects alone; return the commit. olah serves every
    file from the objects, so a checkout would only hold each model's weights a second time (3.5 GiB in all)."""
    commit = git_commit(folder)
    drop_work_tree(folder)
    return commit


STAMP = "BUILT.json"  # in the root: the fingerprint the repos were built from, and their commits


def fingerprint() -> str:
    digest = hashlib.sha256(f"{RECIPE}".encode())
    for path in [Path(__file__), *sorted((ROOT / "data").rglob("*.jsonl"))]:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def is_built(root: Path) -> bool:
    """Whether ``root`` holds the repos of this recipe and this ``data/`` (its stamp carries their fingerprint)."""
    stamp = root / STAMP
    return stamp.exists() and json.loads(stamp.read_text()).get("fingerprint") == fingerprint()


def build(root: Path, echo=print) -> Path:
    """Every repo under ``root / "mirrors"``, built once per fingerprint; returns the mirrors folder."""
    mirrors, stamp = root / "mirrors", root / STAMP
    if is_built(root):
        return mirrors
    shutil.rmtree(mirrors, ignore_errors=True)
    texts = list(iter_corpus(corpus_files()))
    commits = {}
    for name in PUBLISHED_CONFIGS:
        folder = mirrors / "models" / name
        folder.mkdir(parents=True)
        echo(f"building model repo {name} ...", flush=True)
        standin = name.split("/")[-1]  # Pythia's tokenizer also learns from the shipped instructions
        write_model_repo(
            name, folder, list(iter_corpus(corpus_files(name=standin))) if standin == "pythia-70m-deduped" else texts
        )
        commits[f"models/{name}"] = store_as_repo(folder)
    for name, writer in DATASETS.items():
        folder = mirrors / "datasets" / name
        echo(f"building dataset repo {name} ...", flush=True)
        writer(folder)
        commits[f"datasets/{name}"] = store_as_repo(folder)
    stamp.write_text(json.dumps({"fingerprint": fingerprint(), "commits": commits}, indent=2))
    return mirrors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT / ".cache" / "rehearsal", help="where the repos are built")
    args = parser.parse_args()
    print(build(args.root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
