"""Small pretrained stand-ins for t5-small, t5-base, t5-v1_1-base, gpt2, pythia-70m-deduped and Qwen2.5-0.5B-Instruct:
the offline smoke profile's models.

No weights can be downloaded in smoke, so each stand-in is the real model's architecture at a CPU's size, with a
tokenizer trained on the shipped data, pretrained here the way the real model was (``specs``), on the shipped
training splits. They are built once and shipped in ``standins/<name>/`` (safetensors, config, tokenizer, a model
card and a MANIFEST.json with the fingerprints of the recipe, the code and the data); the course loads them with
``from_pretrained(path)``, exactly like a Hub model.

    python -m course_utils.standins                      # each shipped stand-in: size, parameters, up to date?
    python -m course_utils.standins --check              # exit 1 when one is stale or damaged
    python -m course_utils.standins --rebuild [NAME ...] # build again (resumable; about an hour on 2 cores)

The map of every module is ``course_utils/README.md``.

Loading a shipped stand-in, and checking that it is whole, is ``course_utils.models_and_data.standin_files``.
"""

from course_utils.standins.specs import STANDINS, Stage, StandInSpec
from course_utils.standins.tokenizers import (
    QWEN_CHAT_TEMPLATE,
    corpus_files,
    iter_corpus,
    train_gpt2_tokenizer,
    train_gpt_neox_tokenizer,
    train_qwen2_tokenizer,
    train_t5_tokenizer,
)

__all__ = [
    "QWEN_CHAT_TEMPLATE",
    "STANDINS",
    "Stage",
    "StandInSpec",
    "corpus_files",
    "iter_corpus",
    "train_gpt2_tokenizer",
    "train_gpt_neox_tokenizer",
    "train_qwen2_tokenizer",
    "train_t5_tokenizer",
]
