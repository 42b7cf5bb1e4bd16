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

- ``specs``       what each stand-in is: its architecture and its stages
- ``tokenizers``  the tokenizers, trained on the shipped data with the real models' conventions
- ``corpus``      what each stage reads: documents, the mixture's tasks, the judging pairs
- ``training``    the loop of the mixture, language-model and instruction stages: batches by step, checkpoints
- ``build``       a stand-in built stage by stage, resumably, into its shipped folder
- ``saved``       a model and its tokenizer loaded from and saved to a folder
- ``evaluate``    its held-out figures, for its model card
- ``card``        the model card (the Hub's README.md with a YAML header)
- ``__main__``    the command: list, check or rebuild the shipped stand-ins
- ``fingerprint`` what a build depends on (recipe, code, data) and whether a shipped stand-in still matches it

Loading a shipped stand-in, and checking that it is whole, is ``course_utils.standin_files`` (``models`` uses it).
"""

from .specs import STANDINS, Stage, StandInSpec
from .tokenizers import (
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
