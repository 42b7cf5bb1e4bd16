"""Load models and tokenizers by name or path, the same way in both profiles.

A model name is a Hub id (``t5-small``), a local folder, or ``standin:<name>`` for a small
stand-in shipped in ``standins/`` (see ``course_utils/standins/``). ``resolve_model`` turns the last kind
into the path of the shipped stand-in, its files checked against its manifest; everything is then loaded with ``from_pretrained`` and
moved to the training device (the GPU when there is one), so evaluation and generation run
where training does. When the Hub is switched off and a model is not in the cache, the error
says so in one line and names the fix instead of a long traceback.

    model = load_model("t5-small", attn_implementation=None)   # T5 or GPT-2, on hardware.training_device()
    model = seq2seq_from_config("google/t5-v1_1-base")  # random weights, output layer as published
"""

from __future__ import annotations

import contextlib
import os

from course_utils.machinery.hardware import training_device
from course_utils.machinery.offline import STANDIN_PREFIX, MissingAssetError, is_offline, missing_asset_message
from course_utils.machinery.quiet import messages_dropped
from course_utils.models_and_data.standin_files import standin_path


def resolve_model(name: str | os.PathLike) -> str:
    """A name ``from_pretrained`` accepts: stand-ins become their shipped folder, others pass through."""
    name = str(name)
    if name.startswith(STANDIN_PREFIX):
        return str(standin_path(name[len(STANDIN_PREFIX) :]))
    return name


@contextlib.contextmanager
def opened(name: str | os.PathLike):
    """The name ``from_pretrained`` reads for ``name`` (resolved once); a loader's OSError for a model that is
    not cached while the Hub is off becomes MissingAssetError: one line that names the fix, not a traceback."""
    path = resolve_model(name)
    try:
        yield path
    except OSError as err:
        if is_offline() and not os.path.isdir(path):
            raise MissingAssetError(missing_asset_message([str(name)])) from err
        raise


# transformers 5 marks every T5 as tied (T5Config forces tie_word_embeddings=True), but T5 v1.1
# checkpoints have an output layer of their own. from_pretrained then keeps the checkpoint's separate
# output layer, which is right, and warns at every load that the config says otherwise.
UNTIED_HEAD_NOTICE = "but both are present in the checkpoints with different values"


def load_tokenizer(name: str, **kwargs):
    """The tokenizer for ``name`` (a Hub id, a folder or ``standin:<name>``)."""
    from transformers import AutoTokenizer

    with opened(name) as path:
        return AutoTokenizer.from_pretrained(path, **kwargs)


def load_model(name: str, device=None, **kwargs):
    """The model ``name`` holds (a Hub id, a folder or ``standin:<name>``) on ``device`` (default: the training
    device): an encoder-decoder such as T5, or a decoder-only model such as GPT-2, as its config says."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    kwargs = {key: value for key, value in kwargs.items() if value is not None}  # e.g. attn_implementation=None
    with opened(name) as path, messages_dropped("transformers.modeling_utils", UNTIED_HEAD_NOTICE):
        encoder_decoder = AutoConfig.from_pretrained(path).is_encoder_decoder
        loader = AutoModelForSeq2SeqLM if encoder_decoder else AutoModelForCausalLM
        model = loader.from_pretrained(path, **kwargs).to(device or training_device())
    if not encoder_decoder and model.loss_type is None:
        # transformers picks a model's loss by its class name, and GPT2LMHeadModel's predates the
        # naming scheme: name it here (causal-LM cross-entropy, what it would fall back to, noisily).
        model.loss_type = "ForCausalLM"
    return model


def publishes_tied_embeddings(name: str) -> bool:
    """What the model's own config.json says about tying the output layer to the embeddings.

    Read from the file itself, because transformers 5's T5Config overwrites the value with True.
    A published T5 v1.1 config says ``tie_word_embeddings: false``; one that transformers 5 wrote
    keeps that choice only as ``scale_decoder_outputs: false`` (v1.1 neither ties nor scales).
    """
    from transformers import PretrainedConfig

    with opened(name) as path:
        raw, _ = PretrainedConfig.get_config_dict(path)
    return raw.get("tie_word_embeddings", True) is not False and raw.get("scale_decoder_outputs", True) is not False


def untie_output_layer(model) -> None:
    """Give a T5 an output layer of its own, as T5 v1.1 and nanoT5 have, initialised as T5 initialises one.

    T5's rule for an untied head is a normal with std = initializer_factor (1.0): that is why a fresh
    T5 v1.1 starts with losses above 50. The head is also dropped from the model's tying map, so
    save_pretrained stores it and from_pretrained keeps it. (An explicit ``model.tie_weights()``
    would tie it again, because transformers 5's config says "tied"; nothing in the course calls it.)
    """
    import torch

    vocab, width = model.shared.weight.shape
    head = torch.nn.Linear(width, vocab, bias=False, device=model.shared.weight.device, dtype=model.shared.weight.dtype)
    torch.nn.init.normal_(head.weight, mean=0.0, std=model.config.initializer_factor)
    model.lm_head = head
    model.all_tied_weights_keys.pop("lm_head.weight", None)


def seq2seq_from_config(name: str, device=None, config_changes: dict | None = None, **kwargs):
    """A T5 with ``name``'s architecture and random weights (seed them first), on the training device.

    ``config_changes`` are set on the config before the model is built (e.g. ``{"dropout_rate": 0.0}``).
    A T5 v1.1 config (``tie_word_embeddings: false``) gets its untied output layer back: 247,577,856
    parameters for google/t5-v1_1-base, not the 222,903,552 transformers 5 would build.
    """
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    with opened(name) as path:
        config = AutoConfig.from_pretrained(path)
        tied = publishes_tied_embeddings(path)
    for key, value in (config_changes or {}).items():
        setattr(config, key, value)
    kwargs = {key: value for key, value in kwargs.items() if value is not None}  # e.g. attn_implementation=None
    model = AutoModelForSeq2SeqLM.from_config(config, **kwargs)
    if not tied:
        untie_output_layer(model)
    return model.to(device or training_device())
