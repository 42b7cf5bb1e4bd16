"""Load models and tokenizers by name or path, the same way in both profiles.

A model name is a Hub id (``t5-small``), a local folder, or ``standin:<name>`` for a tiny
stand-in built from a config (see ``standins.py``). ``resolve_model`` turns the last kind
into the path of the saved stand-in; everything is then loaded with ``from_pretrained``.
When the Hub is switched off and a model is not in the cache, the error says so in one
line and names the fix instead of a long traceback.
"""

from __future__ import annotations

import os

from .environment import is_offline

STANDIN_PREFIX = "standin:"


class MissingAssetError(RuntimeError):
    """A model or data set needed offline is not in the local Hugging Face cache."""


def missing_asset_message(names: list[str]) -> str:
    return (f"Not in the local Hugging Face cache and the Hub is off (HF_HUB_OFFLINE=1): "
            f"{', '.join(names)}. Run `course prefetch --profile full` on a machine with internet access.")


def resolve_model(name: str, cache: str | os.PathLike | None = None) -> str:
    """A name ``from_pretrained`` accepts: stand-ins become their saved folder, others pass through."""
    if name.startswith(STANDIN_PREFIX):
        from .standins import ensure_standin

        return str(ensure_standin(name[len(STANDIN_PREFIX):], cache))
    return name


def _load(loader, name: str, **kwargs):
    try:
        return loader.from_pretrained(resolve_model(name), **kwargs)
    except OSError as err:
        if is_offline() and not os.path.isdir(name):
            raise MissingAssetError(missing_asset_message([name])) from err
        raise


def model_options(attn_implementation: str | None) -> dict:
    """Keyword arguments for from_pretrained: the attention kernel when one is chosen, else none."""
    return {"attn_implementation": attn_implementation} if attn_implementation else {}


def load_tokenizer(name: str, **kwargs):
    """The tokenizer for ``name`` (a Hub id, a folder or ``standin:<name>``)."""
    from transformers import AutoTokenizer

    return _load(AutoTokenizer, name, **kwargs)


def load_seq2seq_model(name: str, **kwargs):
    """An encoder-decoder model such as T5 for ``name``."""
    from transformers import AutoModelForSeq2SeqLM

    return _load(AutoModelForSeq2SeqLM, name, **kwargs)


def load_causal_lm(name: str, **kwargs):
    """A decoder-only model such as GPT-2 for ``name``."""
    from transformers import AutoModelForCausalLM

    return _load(AutoModelForCausalLM, name, **kwargs)
