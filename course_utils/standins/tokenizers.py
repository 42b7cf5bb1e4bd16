"""The stand-ins' tokenizers, trained here on the shipped training splits, with the real models' conventions.

    tokenizer = train_t5_tokenizer(iter_corpus(corpus_files()))          # T5: pad 0, eos 1, unk 2, 100 sentinels last
    tokenizer = train_gpt2_tokenizer(iter_corpus(corpus_files()))        # GPT-2: byte-level BPE, <|endoftext|>
    tokenizer = train_tokenizer("qwen2", iter_corpus(corpus_files()))    # by family

T5's keeps T5's conventions: pad 0, eos 1, unk 2 and 100 sentinels ``<extra_id_N>`` counting down from the end
of the vocabulary. GPT-2's, GPT-NeoX's (Pythia) and Qwen2's are byte-level BPEs with their special tokens; Qwen2's
carries Qwen's chat tokens and a ChatML chat template. The rehearsal (tests/rehearsal/hub_repos.py) and the GPU
check train their full-size tokenizers with the same functions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from course_utils.machinery.paths import data_dir
from course_utils.models_and_data.tokens import T5_EXTRA_IDS

TOKENIZER_VOCAB_SIZE = 3000  # an upper bound: the sample corpus supports about 1,400 unigram pieces
# Stand-ins whose tokenizer also learns from more of the shipped data (the others keep their vocabularies).
EXTRA_CORPUS = {"pythia-70m-deduped": ("dolly/train.jsonl",)}


def corpus_files(root: Path | None = None, name: str = "") -> list[Path]:
    """The shipped training splits the stand-in tokenizers learn from (``name``'s extra ones included)."""
    root = root or data_dir()
    return [
        root / "imdb" / "train.jsonl",
        root / "cnn_dailymail" / "train.jsonl",
        root / "c4" / "train.jsonl",
        *(root / extra for extra in EXTRA_CORPUS.get(name, ())),
    ]


def iter_corpus(files: Iterable[Path]) -> Iterator[str]:
    """Every text field of every row (reviews, articles, highlights, web pages, instructions)."""
    for path in files:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                for key in ("text", "article", "highlights", "instruction", "context", "response"):
                    if key in row:
                        yield row[key]


def train_t5_tokenizer(texts: Iterable[str], vocab_size: int = TOKENIZER_VOCAB_SIZE, extra_ids: int = T5_EXTRA_IDS):
    """A unigram T5Tokenizer trained with SentencePiece (as T5's was), with T5's ids and sentinels."""
    import io

    import sentencepiece as spm
    from transformers import T5Tokenizer

    model = io.BytesIO()
    # One thread and no sampling: the same corpus always gives the same pieces and scores.
    # (tokenizers' own UnigramTrainer was tried first; its scores differ from run to run.)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=model,
        model_type="unigram",
        vocab_size=vocab_size,
        hard_vocab_limit=False,  # the small corpus supports fewer pieces
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,  # T5's ids; T5 has no BOS
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        character_coverage=1.0,
        num_threads=1,
        input_sentence_size=0,
        shuffle_input_sentence=False,
        max_sentence_length=1 << 20,
        minloglevel=2,
    )
    proc = spm.SentencePieceProcessor(model_proto=model.getvalue())
    pieces = [(proc.id_to_piece(i), proc.get_score(i)) for i in range(proc.get_piece_size())]
    # T5 puts the sentinels last, <extra_id_0> at the very end: append 99, 98, ..., 0.
    sentinels = [(f"<extra_id_{i}>", 0.0) for i in range(extra_ids - 1, -1, -1)]
    return T5Tokenizer(vocab=pieces + sentinels, extra_ids=extra_ids, model_max_length=512)


def byte_level_bpe(texts: Iterable[str], vocab_size: int, special_tokens: list[str]) -> tuple[dict, list[tuple]]:
    """(vocab, merges) of a byte-level BPE trained on ``texts``, its special tokens first (ids 0, 1, ...): what
    GPT-2's, GPT-NeoX's and Qwen2's tokenizers are built from."""
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=2, special_tokens=special_tokens)
    trained = json.loads(bpe._tokenizer.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in trained["merges"]]
    return trained["vocab"], merges


def train_gpt_neox_tokenizer(texts: Iterable[str], vocab_size: int = TOKENIZER_VOCAB_SIZE):
    """A byte-level BPE GPTNeoXTokenizer with Pythia's special tokens: <|endoftext|> (id 0: BOS, EOS and
    unknown) and <|padding|> (id 1), which Pythia's tokenizer does not name as its pad token."""
    from transformers import GPTNeoXTokenizer

    vocab, merges = byte_level_bpe(texts, vocab_size, ["<|endoftext|>", "<|padding|>"])
    tokenizer = GPTNeoXTokenizer(vocab=vocab, merges=merges, model_max_length=2048)
    tokenizer.pad_token = None  # as published: the lab chooses the padding itself
    return tokenizer


def train_gpt2_tokenizer(texts: Iterable[str], vocab_size: int = TOKENIZER_VOCAB_SIZE):
    """A byte-level BPE GPT2Tokenizer whose only special token is <|endoftext|>, as in GPT-2."""
    from transformers import GPT2Tokenizer

    vocab, merges = byte_level_bpe(texts, vocab_size, ["<|endoftext|>"])
    return GPT2Tokenizer(vocab=vocab, merges=merges, model_max_length=1024)


# Qwen2.5's chat tokens and its chat template (ChatML), without the tool-calling branches: a system turn (Qwen's
# default one when the messages bring none), then each turn between <|im_start|>role and <|im_end|>.
QWEN_CHAT_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
QWEN_DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
QWEN_CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>system\\n" + QWEN_DEFAULT_SYSTEM + "<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if not (message['role'] == 'system' and loop.first) %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def train_qwen2_tokenizer(texts: Iterable[str], vocab_size: int = TOKENIZER_VOCAB_SIZE):
    """A byte-level BPE Qwen2Tokenizer with Qwen's chat tokens and chat template: <|im_end|> ends a turn (EOS),
    <|endoftext|> pads, and there is no BOS, as in Qwen2.5's instruct models."""
    from transformers import Qwen2Tokenizer

    vocab, merges = byte_level_bpe(texts, vocab_size, list(QWEN_CHAT_TOKENS))
    tokenizer = Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        model_max_length=32768,
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
    )
    tokenizer.chat_template = QWEN_CHAT_TEMPLATE
    return tokenizer


def train_tokenizer(family: str, texts: Iterable[str]):
    """The tokenizer of a stand-in of ``family`` ("t5", "gpt2", "gpt_neox" or "qwen2"), trained on ``texts``."""
    trainers = {
        "t5": train_t5_tokenizer,
        "gpt2": train_gpt2_tokenizer,
        "gpt_neox": train_gpt_neox_tokenizer,
        "qwen2": train_qwen2_tokenizer,
    }
    if family not in trainers:
        raise ValueError(f"No tokenizer for the family {family!r}; known: {', '.join(trainers)}.")
    return trainers[family](texts)
