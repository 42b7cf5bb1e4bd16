"""Lab 01L's checks, instruction tuning a decoder-only model: the prompt, the labels (-100 on the prompt and
the padding, EOS learned), the falling loss, batched generation, and the LoRA adapter's size, each against
the course's reference code in ``instruct.py`` on fixed examples."""

from __future__ import annotations

from ..instruct import LORA_RANK, LORA_TARGETS, InstructionConfig, lora_trainable_parameters, prompt_text
from ..metrics import training_losses
from .verdict import compare_sequences, fail, passed

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


def prompt_template(build_prompt) -> None:
    """``build_prompt(row) -> str`` against the course's template, with and without a context."""
    for row in EXAMPLES:
        expected, got = prompt_text(row), build_prompt(row)
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


def _features(tokenize_example, tokenizer, row) -> dict:
    features = tokenize_example(row, tokenizer, MAX_LENGTH)
    if not isinstance(features, dict) or not {"input_ids", "labels"} <= set(features):
        fail("prompt_masked", "a dict with input_ids, attention_mask and labels", features, "return the three lists")
    return {key: list(value) for key, value in features.items()}


def prompt_masked(tokenize_example, tokenizer) -> None:
    """Labels are -100 on every prompt token and copy every response token (the EOS is eos_learned's business)."""
    for number, row in enumerate(EXAMPLES):
        features = _features(tokenize_example, tokenizer, row)
        prompt = tokenizer(prompt_text(row), add_special_tokens=False)["input_ids"]
        ids, labels = features["input_ids"], features["labels"]
        if len(labels) != len(ids):
            fail(
                "prompt_masked",
                f"as many labels as input_ids ({len(ids)}) in example {number}",
                len(labels),
                "one label per token: the Trainer's model shifts them itself",
            )
        compare_sequences(
            "prompt_masked",
            f"the prompt's input_ids in example {number}",
            prompt,
            ids[: len(prompt)],
            "tokenize the prompt and the response apart and put the prompt first",
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
    passed("prompt_masked", f"{len(EXAMPLES)} examples: -100 on the prompt, the response's ids after it")


def eos_learned(tokenize_example, collate, tokenizer) -> None:
    """After tokenizing and padding, each example ends in the EOS token, and the EOS is among its labels."""
    batch = collate([_features(tokenize_example, tokenizer, row) for row in EXAMPLES])
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


def padding_masked(collate, tokenizer) -> None:
    """``collate(features) -> batch``: equal lengths, pad id, attention 0 and labels -100 on every padding position,
    and the real tokens' labels untouched, the EOS that ends each response included (Pythia pads with EOS)."""
    eos = tokenizer.eos_token_id
    rows = [
        {"input_ids": [5, 6, 7, 8, eos], "attention_mask": [1] * 5, "labels": [-100, -100, 7, 8, eos]},
        {"input_ids": [5, eos], "attention_mask": [1, 1], "labels": [-100, eos]},
    ]
    batch = collate(rows)
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


def logged_steps(trainer) -> list[int]:
    """The steps at which a finished Trainer run logs its training loss: the first (``logging_first_step``) and
    every ``logging_steps``-th (the Trainer's DefaultFlowCallback)."""
    every, last = trainer.state.logging_steps, trainer.state.global_step
    first = [1] if trainer.args.logging_first_step and every != 1 else []
    return first + list(range(every, last + 1, every))


def loss_falls(trainer, profile) -> None:
    """The loss ``trainer`` logged fell, from its first line to its last, by the lab's margin for ``profile``
    (``InstructionConfig.loss_margin``: the check's own, not the student's), and the history is the one a finished
    run of this Trainer writes: a loss at each of its logging steps."""
    margin = InstructionConfig.for_profile(profile).loss_margin
    state = getattr(trainer, "state", None)
    if state is None or not hasattr(trainer, "args"):
        fail(
            "loss_falls",
            "the Trainer itself, after trainer.train()",
            type(trainer).__name__,
            "pass the trainer: the check reads its state and arguments",
        )
    if not state.max_steps or state.global_step != state.max_steps:
        fail(
            "loss_falls",
            f"a finished run ({state.max_steps} steps)",
            f"{state.global_step} steps done",
            "call trainer.train() before the check",
        )
    losses = training_losses(state.log_history)
    compare_sequences(
        "loss_falls",
        "the steps at which the loss was logged",
        logged_steps(trainer),
        [step for step, _ in losses],
        "keep the Trainer's own log: set logging_steps from the config and logging_first_step=True, "
        "train, and pass the trainer",
    )
    (first_step, first), (last_step, last) = losses[0], losses[-1]
    if not last <= (1 - margin) * first:
        fail(
            "loss_falls",
            f"a loss at least {margin:.0%} below step {first_step}'s {first:.3f} by step {last_step}",
            f"{last:.3f} ({(first - last) / first:+.1%})",
            "check the learning rate (0 or far too small learns nothing; far too large diverges) and that the labels "
            "are not all -100",
        )
    passed(
        "loss_falls",
        f"{first:.3f} at step {first_step} -> {last:.3f} at step {last_step} "
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


def responses(respond, model, tokenizer, max_new_tokens: int = 8) -> None:
    """``respond(model, tokenizer, prompts, max_new_tokens) -> list[str]``, batched, against one prompt at a time."""
    expected = reference_responses(model, tokenizer, PROMPTS, max_new_tokens)
    got = respond(model, tokenizer, list(PROMPTS), max_new_tokens)
    compare_sequences(
        "responses",
        "greedy responses (new tokens only)",
        expected,
        list(got),
        "pad on the left (tokenizer.padding_side = 'left') so every prompt ends where generation "
        "starts, pass the attention mask, and decode only the tokens after the prompt",
    )
    passed("responses", f"{len(PROMPTS)} prompts of different lengths, batched, as generated one by one")


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
