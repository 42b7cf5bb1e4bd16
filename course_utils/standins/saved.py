"""A stand-in's model and tokenizer on disk, between the stages of its build and after it.

model, tokenizer = load(path)     # float32, eager attention (the CPU's fastest at these sizes)
save(model, tokenizer, folder)
"""

from __future__ import annotations

from pathlib import Path


def load(path: Path):
    """(model, tokenizer) saved at ``path``, in float32, with the eager attention the CPU runs fastest here."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    encoder_decoder = AutoConfig.from_pretrained(path).is_encoder_decoder
    loader = AutoModelForSeq2SeqLM if encoder_decoder else AutoModelForCausalLM
    model = loader.from_pretrained(path, dtype="float32", attn_implementation="eager")
    return model, AutoTokenizer.from_pretrained(path)


def save(model, tokenizer, folder: Path) -> None:
    """``model`` and ``tokenizer`` into ``folder`` with ``save_pretrained``."""
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def store_in_float16(folder: Path) -> None:
    """Rewrite ``folder``'s model.safetensors with its float32 tensors in float16: half the bytes to ship. The config
    still says float32, so ``load`` (and the course) upcasts them; the figures are measured on what ships."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    tensors = {k: v.half() if v.dtype == torch.float32 else v for k, v in load_file(path).items()}
    save_file(tensors, path, metadata={"format": "pt"})
