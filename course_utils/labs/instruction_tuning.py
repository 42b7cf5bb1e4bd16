"""Lab 01L's checks, instruction tuning a decoder-only model: the prompt, the labels (-100 on the prompt and
the padding, EOS learned), the falling loss, batched generation, and the LoRA adapter's size, each against
the course's reference code in ``instruct.py`` on fixed examples."""

from __future__ import annotations

import functools

from course_utils.labs.verdict import answer_check, compare_sequences, expect_type, fail, kind, passed
from course_utils.lessons.instruct import (
    LORA_RANK,
    LORA_TARGETS,
    InstructionConfig,
    load_dolly,
    lora_trainable_parameters,
    prompt_text,
)
from course_utils.machinery.profiles import Profile, get_profile
from course_utils.models_and_data.models import load_model, load_tokenizer

EXAMPLES = (
    {
        "instruction": "What is the capital of Norway?",
        "context": "",
        "response": "The capital of Norway is Oslo.",
        "category": "open_qa",
    },
    {
        "instruction": "Where does Ada live?",
        "context": "Ada Quinn is a ship captain who lives in Porto.",
        "response": "Ada lives in Porto.",
        "category": "closed_qa",
    },
    {
        "instruction": "  Summarize this text in one sentence.  ",
        "context": "The council met on Monday. It voted to close the old bridge for a year of repairs.",
        "response": "The old bridge closes for a year. ",
        "category": "summarization",
    },
)
MAX_LENGTH = 256


@answer_check
def prompt_template(build_prompt) -> None:
    """``build_prompt(row) -> str`` against the course's template, with and without a context."""
    for row in EXAMPLES:
        got = build_prompt(dict(row))
        expect_type("prompt_template", "the prompt", got, str, "return the prompt as one string")
        expected = prompt_text(row)
        if got != expected:
            where = next((i for i, (a, b) in enumerate(zip(expected, got)) if a != b), min(len(expected), len(got)))
            fail(
                "prompt_template",
                f"{expected!r}",
                f"{got!r} (first difference at character {where})",
                "instruction, then '### Input:' only when the context is not empty, then '### Response:' and a "
                "newline, the parts stripped and separated by a blank line; the response itself is not in the prompt",
            )
    passed("prompt_template", f"{len(EXAMPLES)} rows, with and without a context")


def reference_features(row: dict, tokenizer, max_length: int) -> dict | None:
    """The lab's answer to tokenizing ``row``: prompt ids, then response ids and the EOS, labels -100 on the prompt;
    None when the whole is longer than ``max_length``."""
    prompt = tokenizer(prompt_text(row), add_special_tokens=False)["input_ids"]
    response = tokenizer(row["response"].strip(), add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    if len(prompt) + len(response) > max_length:
        return None
    ids = prompt + response
    return {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": [-100] * len(prompt) + response}


def _features(check: str, tokenize_example, tokenizer, row, max_length: int = MAX_LENGTH) -> dict | None:
    """The student's features of ``row``: None, or a dict of three lists of ints (anything else fails ``check``)."""
    features = tokenize_example(dict(row), tokenizer, max_length)
    if features is None:
        return None
    if not isinstance(features, dict) or not {"input_ids", "attention_mask", "labels"} <= set(features):
        fail(check, "a dict with input_ids, attention_mask and labels", features, "return the three lists")
    out = {}
    for key in ("input_ids", "attention_mask", "labels"):
        value = features[key]
        values = value.tolist() if hasattr(value, "tolist") else value
        if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            fail(
                check, f"{key} as a list of ints", f"{kind(value)} {str(value)[:60]}", "return plain lists of token ids"
            )
        out[key] = values
    return out


def long_rows(tokenizer) -> list[tuple[dict, int]]:
    """Rows whose prompt, response or both are long, each with its reference length (prompt + response + EOS)."""
    words = "the council met on monday and voted to close the old bridge for a year of repairs".split()
    text = lambda n: " ".join(words[i % len(words)] for i in range(n))  # noqa: E731
    rows = [
        {"instruction": "Summarize this text.", "context": text(120), "response": "The bridge closes.", "category": ""},
        {"instruction": "Tell me a story.", "context": "", "response": text(150) + ".", "category": ""},
        {"instruction": text(40), "context": text(60), "response": text(70) + ".", "category": ""},
    ]
    return [(row, len(reference_features(row, tokenizer, 10**9)["input_ids"])) for row in rows]


@answer_check
def prompt_masked(tokenize_example, tokenizer) -> None:
    """Labels are -100 on every prompt token and copy every response token (the EOS is eos_learned's business); the
    ids are the prompt's, the response's and one EOS, nothing between; an example longer than ``max_length``, EOS
    included, is None, and one of exactly ``max_length`` is kept."""
    for number, row in enumerate(EXAMPLES):
        features = _features("prompt_masked", tokenize_example, tokenizer, row)
        if features is None:
            fail("prompt_masked", f"the features of example {number}", None, "return None only for a too-long example")
        reference = reference_features(row, tokenizer, MAX_LENGTH)
        ids, labels = features["input_ids"], features["labels"]
        if len(labels) != len(ids):
            fail(
                "prompt_masked",
                f"as many labels as input_ids ({len(ids)}) in example {number}",
                len(labels),
                "one label per token: the Trainer's model shifts them itself",
            )
        prompt = tokenizer(prompt_text(row), add_special_tokens=False)["input_ids"]
        compare_sequences(
            "prompt_masked",
            f"the prompt's input_ids in example {number}",
            prompt,
            ids[: len(prompt)],
            "tokenize the prompt and the response apart and put the prompt first",
        )
        before_eos = lambda seq: seq[:-1] if seq[-1:] == [tokenizer.eos_token_id] else seq  # noqa: E731
        compare_sequences(
            "prompt_masked",
            f"input_ids of example {number} (before the final EOS, eos_learned's business)",
            before_eos(reference["input_ids"]),
            before_eos(ids),
            "the prompt's ids, then the stripped response's ids: nothing between them, nothing added",
        )
        expected = [-100] * len(prompt) + [
            t if t != tokenizer.eos_token_id else labels[i] for i, t in enumerate(ids[len(prompt) :], start=len(prompt))
        ]
        compare_sequences(
            "prompt_masked",
            f"labels of example {number}",
            expected,
            labels,
            "-100 on each prompt token, so the loss ignores it; the response's own ids after it, "
            "unshifted (the model shifts them)",
        )
    rows = long_rows(tokenizer)
    for row, length in rows:
        for limit, kept in ((length, True), (length - 1, False)):
            features = _features("prompt_masked", tokenize_example, tokenizer, row, limit)
            if (features is not None) != kept:
                fail(
                    "prompt_masked",
                    f"{'the features' if kept else 'None'} for an example of {length} tokens (prompt, response and "
                    f"EOS) with max_length {limit}",
                    "None" if features is None else f"features of {len(features['input_ids'])} tokens",
                    "count the prompt, the response and the EOS together against max_length; keep an example of "
                    "exactly max_length, return None for a longer one",
                )
    passed(
        "prompt_masked",
        f"{len(EXAMPLES)} examples: -100 on the prompt, the response's ids after it; the length limit on "
        f"{len(rows)} long ones",
    )


@answer_check
def eos_learned(tokenize_example, collate, tokenizer) -> None:
    """After tokenizing and padding, each example ends in the EOS token, and the EOS is among its labels."""
    batch = _batch("eos_learned", collate, [_features("eos_learned", tokenize_example, tokenizer, r) for r in EXAMPLES])
    eos = tokenizer.eos_token_id
    for number in range(len(EXAMPLES)):
        real = [i for i, m in enumerate(batch["attention_mask"][number]) if int(m) == 1]
        ids = [int(batch["input_ids"][number][i]) for i in real]
        labels = [int(batch["labels"][number][i]) for i in real]
        if ids[-1] != eos or eos not in labels:
            fail(
                "eos_learned",
                f"example {number}'s last real token and one of its labels = {eos} (EOS)",
                f"last token {ids[-1]}, labels ending {labels[-3:]}",
                "append the EOS to the response and keep it in the labels; mask the padding by the attention "
                "mask, not by the token id, since EOS and padding share one id here",
            )
    passed("eos_learned", f"{len(EXAMPLES)} examples end in an EOS that the loss counts, after padding")


def _batch(check: str, collate, features: list) -> dict:
    """``collate(features)``, a dict of integer tensors (token ids and labels must be integers for the model)."""
    import torch

    batch = collate(features)
    expect_type(check, "the batch", batch, dict, "return a dict of tensors")
    for key in ("input_ids", "attention_mask", "labels"):
        value = batch.get(key)
        if not torch.is_tensor(value) or value.dtype not in (torch.int64, torch.int32):
            fail(
                check,
                f"{key} as a tensor of integers (torch.long)",
                kind(value),
                "torch.tensor(rows, dtype=torch.long): the embedding looks ids up and the loss needs integer labels",
            )
    return batch


@answer_check
def padding_masked(collate, tokenizer) -> None:
    """``collate(features) -> batch``: equal lengths, pad id, attention 0 and labels -100 on every padding position,
    and the real tokens' labels untouched, the EOS that ends each response included (Pythia pads with EOS)."""
    eos = tokenizer.eos_token_id
    rows = [
        {"input_ids": [5, 6, 7, 8, eos], "attention_mask": [1] * 5, "labels": [-100, -100, 7, 8, eos]},
        {"input_ids": [5, eos], "attention_mask": [1, 1], "labels": [-100, eos]},
    ]
    batch = _batch("padding_masked", collate, rows)
    for key in ("input_ids", "attention_mask", "labels"):
        shape = tuple(getattr(batch.get(key), "shape", ()))
        if shape != (2, 5):
            fail(
                "padding_masked", f"{key} of shape (2, 5)", shape, "pad every row to the longest one and return tensors"
            )
    pad = tokenizer.pad_token_id
    compare_sequences(
        "padding_masked",
        "padded input_ids of the short row",
        [5, eos, pad, pad, pad],
        batch["input_ids"][1].tolist(),
        "pad on the right with tokenizer.pad_token_id",
    )
    compare_sequences(
        "padding_masked",
        "attention_mask of the short row",
        [1, 1, 0, 0, 0],
        batch["attention_mask"][1].tolist(),
        "0 on padding, so no token attends to it",
    )
    compare_sequences(
        "padding_masked",
        "labels of the short row",
        [-100, eos, -100, -100, -100],
        batch["labels"][1].tolist(),
        "-100 on padding, found by the attention mask: the pad id is also the EOS id here, and the EOS "
        "that ends the response must stay in the labels",
    )
    compare_sequences(
        "padding_masked",
        "labels of the long row",
        [-100, -100, 7, 8, eos],
        batch["labels"][0].tolist(),
        "leave the labels of real tokens as they are, the EOS included",
    )
    passed("padding_masked", "padding: the pad id, attention 0, labels -100; real tokens and their EOS untouched")


def training_loss(model, features: list[dict], pad_id: int) -> float:
    """The mean loss per response token of ``model`` on ``features``, in batches of 8, without training."""
    import torch

    total, tokens, training = 0.0, 0, model.training
    model.eval()
    for start in range(0, len(features), 8):
        rows = features[start : start + 8]
        width = max(len(r["input_ids"]) for r in rows)
        pad = lambda key, value: torch.tensor(  # noqa: E731
            [r[key] + [value] * (width - len(r[key])) for r in rows], device=model.device
        )
        ids, mask, labels = pad("input_ids", pad_id), pad("attention_mask", 0), pad("labels", -100)
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask).logits.float()
        losses = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), reduction="sum"
        )
        total, tokens = total + losses.item(), tokens + int((labels[:, 1:] != -100).sum())
    model.train(training)  # the student's model left in the mode it came in
    return total / tokens


LOSS_ROWS = 32  # training examples on which loss_falls measures the loss before and after


@functools.lru_cache(maxsize=4)
def untrained_loss(config: InstructionConfig, device: str, dtype) -> tuple[list[dict], int, float]:
    """(the first LOSS_ROWS training examples as the reference tokenizes them, the pad id, the untrained model's loss
    on them): the same on every call for one config, so measured once."""
    tokenizer = load_tokenizer(config.model_name)
    splits, _ = load_dolly(config.data, config.max_train_rows, config.test_rows, config.seed)
    features = [reference_features(row, tokenizer, config.max_length) for row in splits["train"]]
    features = [f for f in features if f is not None][:LOSS_ROWS]
    untrained = load_model(config.model_name, device=device, dtype=dtype)
    return features, tokenizer.eos_token_id, training_loss(untrained, features, tokenizer.eos_token_id)


@answer_check
def loss_falls(trainer, profile) -> None:
    """The model ``trainer`` trained has a loss on the lab's training examples at least the lab's margin for
    ``profile`` below the untrained model's on the same examples. The check measures both losses itself, on
    examples it tokenizes with the reference, and takes the margin from the course's own profile of that name: it
    believes no log, no label and no setting that the student's code could have written."""
    from transformers import Trainer

    expect_type("loss_falls", "the trainer", trainer, Trainer, "pass the Trainer itself, after trainer.train()")
    expect_type(
        "loss_falls", "the profile", profile, Profile, "pass the session's profile: loss_falls(trainer, profile)"
    )
    state = trainer.state
    if not state.max_steps or state.global_step != state.max_steps:
        fail(
            "loss_falls",
            f"a finished run ({state.max_steps} steps)",
            f"{state.global_step} steps done",
            "call trainer.train() before the check",
        )
    config = InstructionConfig.for_profile(get_profile(profile.name, require_gpu=False, quick=profile.quick))
    margin = config.loss_margin
    model = trainer.model
    features, pad_id, first = untrained_loss(config, str(model.device), next(model.parameters()).dtype)
    last = training_loss(model, features, pad_id)
    if not last <= (1 - margin) * first:
        fail(
            "loss_falls",
            f"a loss on {len(features)} training examples at least {margin:.0%} below the untrained model's {first:.3f}",
            f"{last:.3f} ({(last - first) / first:+.1%})",
            "check the learning rate (0 or far too small learns nothing; far too large diverges) and that the labels "
            "are not all -100",
        )
    passed(
        "loss_falls",
        f"loss on {len(features)} training examples {first:.3f} before training -> {last:.3f} after "
        f"({(first - last) / first:.0%} lower; the lab asks for {margin:.0%} in this profile)",
    )


PROMPTS = (
    "### Instruction:\nWhat is the capital of Peru?\n\n### Response:\n",
    "### Instruction:\nIs this review positive or negative?\n\n### Input:\nI thought the script of The Quiet "
    "Harbor was dull and the pacing was slow.\n\n### Response:\n",
    "### Instruction:\nHow do I repot a houseplant?\n\n### Response:\n",
)


def reference_responses(model, tokenizer, prompts, max_new_tokens: int) -> list[str]:
    """Greedy responses generated one prompt at a time (no padding at all), new tokens only."""
    import torch

    texts = []
    for prompt in prompts:
        ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(model.device)
        with torch.no_grad():
            out = model.generate(
                **ids, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id
            )
        texts.append(tokenizer.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True))
    return texts


@answer_check
def responses(respond, model, tokenizer, max_new_tokens: int = 8) -> None:
    """``respond(model, tokenizer, prompts, max_new_tokens) -> list[str]``, batched, against one prompt at a time."""
    got = respond(model, tokenizer, list(PROMPTS), max_new_tokens)
    expect_type("responses", "the responses", got, (list, tuple), "return a list of strings, one per prompt")
    expected = reference_responses(model, tokenizer, PROMPTS, max_new_tokens)
    compare_sequences(
        "responses",
        "greedy responses (new tokens only)",
        expected,
        list(got),
        "pad on the left (tokenizer.padding_side = 'left') so every prompt ends where generation "
        "starts, pass the attention mask, and decode only the tokens after the prompt",
    )
    passed("responses", f"{len(PROMPTS)} prompts of different lengths, batched, as generated one by one")


@answer_check
def lora_parameters(model) -> None:
    """The adapter: rank LORA_RANK on LORA_TARGETS only, everything else frozen."""
    expected = lora_trainable_parameters(model.config, LORA_RANK)
    trainable = {name: p.numel() for name, p in model.named_parameters() if p.requires_grad}
    frozen_wrongly = [name for name in trainable if "lora_" not in name]
    if frozen_wrongly:
        fail(
            "lora_parameters",
            "only the adapter's lora_A and lora_B weights trainable",
            f"{len(frozen_wrongly)} other trainable tensors, e.g. {frozen_wrongly[0]}",
            "get_peft_model freezes the base model; do not set requires_grad back on",
        )
    if sum(trainable.values()) != expected:
        targets = sorted({name.split(".lora_")[0].rsplit(".", 1)[-1] for name in trainable})
        fail(
            "lora_parameters",
            f"{expected:,} trainable parameters (rank {LORA_RANK} on {', '.join(LORA_TARGETS)})",
            f"{sum(trainable.values()):,} on {', '.join(targets)}",
            f"LoraConfig(r={LORA_RANK}, target_modules={list(LORA_TARGETS)}): A is r x in, B is out x r",
        )
    passed("lora_parameters", f"{expected:,} trainable parameters: rank {LORA_RANK} on {', '.join(LORA_TARGETS)}")
