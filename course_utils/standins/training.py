"""The loop that trains a stand-in through one stage: batches drawn by step number, a checkpoint that survives a kill.

    draw = pair_batches({"summarize": pairs, "sst2": more}, weights, tokenizer, 16, 512, seed=0)   # step -> batch
    losses = train(model, draw, stage, folder)                # resumes from folder/checkpoint.pt when there is one

Every batch is a function of the stage's seed and the step number alone, and nothing else is random (no dropout),
so a run killed and resumed from its checkpoint ends with the same weights as one that never stopped; on the same
machine and thread count, two builds write the same weights. (Lesson 04's pretraining, which the T5 stand-ins'
span-corruption stage runs, keeps its own checkpoints the same way.)
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from course_utils.pretraining.optim import build_scheduler

CHECKPOINT = "checkpoint.pt"
CHECKPOINT_EVERY = 250  # steps between checkpoints: at most a minute or two of work lost to a kill
LOG_EVERY = 50  # steps per entry of the loss history (its mean)


def step_rng(seed: int, step: int) -> np.random.Generator:
    """The random generator of one step: the same (seed, step) always draws the same batch."""
    return np.random.default_rng([seed, step])


def padded(rows: list[list[int]], value: int) -> np.ndarray:
    """Rows of token ids padded on the right with ``value`` to the longest: (rows, longest)."""
    width = max(len(r) for r in rows)
    return np.array([r + [value] * (width - len(r)) for r in rows], dtype=np.int64)


def pair_batches(tasks: dict, weights: dict, tokenizer, batch_size: int, max_length: int, seed: int, target_length=128):
    """step -> a seq2seq batch of one task, drawn by ``weights``: input_ids, attention_mask and labels (-100 pads).

    ``tasks`` maps a task's name to its (source, target) texts, tokenized once here; each step draws one task, then
    ``batch_size`` of its pairs without replacement, so a batch pads only to its own task's lengths."""
    import torch

    names = sorted(tasks)
    p = np.array([weights[n] for n in names], dtype=float)
    encoded = {}
    for name in names:
        sources, targets = zip(*tasks[name])
        inputs = tokenizer(list(sources), max_length=max_length, truncation=True, verbose=False).input_ids
        labels = tokenizer(list(targets), max_length=target_length, truncation=True).input_ids
        encoded[name] = list(zip(inputs, labels))

    def draw(step: int) -> dict:
        rng = step_rng(seed, step)
        rows = encoded[names[rng.choice(len(names), p=p / p.sum())]]
        chosen = [rows[i] for i in rng.choice(len(rows), size=min(batch_size, len(rows)), replace=False)]
        input_ids = padded([c[0] for c in chosen], tokenizer.pad_token_id)
        return {
            "input_ids": torch.from_numpy(input_ids),  # (batch, longest source)
            "attention_mask": torch.from_numpy((input_ids != tokenizer.pad_token_id).astype(np.int64)),
            "labels": torch.from_numpy(padded([c[1] for c in chosen], -100)),  # (batch, longest target)
        }

    return draw


def block_batches(blocks: np.ndarray, batch_size: int, seed: int):
    """step -> a causal-LM batch of ``batch_size`` blocks drawn from ``blocks`` (rows, length): the labels are the
    inputs, which the model shifts by one itself."""
    import torch

    def draw(step: int) -> dict:
        rows = blocks[step_rng(seed, step).choice(len(blocks), size=batch_size, replace=False)]
        ids = torch.from_numpy(np.ascontiguousarray(rows))  # (batch, length)
        return {"input_ids": ids, "labels": ids.clone()}

    return draw


def causal_batches(pools: dict, weights: dict, pad_id: int, batch_size: int, seed: int):
    """step -> a causal-LM batch of one pool, drawn by ``weights``. Each pool is a list of token-id rows (a block of
    the packed corpus, or one whole story); a batch pads to its own longest row, the padding masked (attention 0,
    labels -100), so a story starts at position 0 as a LAMBADA passage does when it is scored."""
    import torch

    names = sorted(pools)
    p = np.array([weights[n] for n in names], dtype=float)

    def draw(step: int) -> dict:
        rng = step_rng(seed, step)
        rows = pools[names[rng.choice(len(names), p=p / p.sum())]]
        chosen = [list(rows[i]) for i in rng.choice(len(rows), size=min(batch_size, len(rows)), replace=False)]
        ids = padded(chosen, pad_id)  # (batch, longest row)
        mask = padded([[1] * len(row) for row in chosen], 0)
        return {
            "input_ids": torch.from_numpy(ids),
            "attention_mask": torch.from_numpy(mask),
            "labels": torch.from_numpy(np.where(mask == 1, ids, -100)),
        }

    return draw


def chat_examples(chats: list[tuple[list[dict], str]], tokenizer, max_length: int) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, answer ids) of each (messages, answer): the chat template with the assistant's turn opened, then
    the answer and the end of the turn. The prompt is tokenized alone, as a judge reads it, so the answer's first
    token is exactly the one a judge scores. A prompt too long for ``max_length`` is cut from the left."""
    examples = []
    end = tokenizer.encode(tokenizer.eos_token, add_special_tokens=False)
    for messages, answer in chats:
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
        reply = tokenizer.encode(answer, add_special_tokens=False) + end
        examples.append((list(prompt)[-(max_length - len(reply)) :], reply))
    return examples


def chat_batches(tasks: dict, weights: dict, pad_id: int, batch_size: int, seed: int):
    """step -> an instruction-tuning batch of one task: prompt and answer, the loss on the answer only (-100 on the
    prompt and on the right padding)."""
    import torch

    names = sorted(tasks)
    p = np.array([weights[n] for n in names], dtype=float)

    def draw(step: int) -> dict:
        rng = step_rng(seed, step)
        rows = tasks[names[rng.choice(len(names), p=p / p.sum())]]
        chosen = [rows[i] for i in rng.choice(len(rows), size=min(batch_size, len(rows)), replace=False)]
        ids = padded([prompt + reply for prompt, reply in chosen], pad_id)
        labels = padded([[-100] * len(prompt) + reply for prompt, reply in chosen], -100)
        mask = padded([[1] * (len(prompt) + len(reply)) for prompt, reply in chosen], 0)
        return {
            "input_ids": torch.from_numpy(ids),  # (batch, longest chat)
            "attention_mask": torch.from_numpy(mask),
            "labels": torch.from_numpy(labels),
        }

    return draw


def checkpoint_stage(folder: Path, step: int, model, optimizer, scheduler, history: list) -> None:
    """Everything the loop needs to go on from ``step``, written to a temporary file and renamed: a kill in the
    middle of a save leaves the previous checkpoint whole."""
    import torch

    temporary = folder / f".{CHECKPOINT}.partial"
    state = {
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "history": history,
    }
    torch.save(state, temporary)
    os.replace(temporary, folder / CHECKPOINT)


def resume_stage(folder: Path, model, optimizer, scheduler) -> tuple[int, list]:
    """(step, loss history) of the checkpoint in ``folder``, its states loaded; (0, []) when there is none."""
    import torch

    path = folder / CHECKPOINT
    if not path.exists():
        return 0, []
    state = torch.load(path, weights_only=False)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    return state["step"], state["history"]


def train(model, draw, stage, folder: Path, progress: bool = True, desc: str = "", checkpoint_every: int | None = None):
    """Train ``model`` for ``stage.steps`` steps of ``draw(step)``: AdamW at the stage's rate (lesson 04's warm-up
    and cosine), gradients clipped to norm 1.0; resumed from ``folder``'s checkpoint. Returns the loss history, one
    mean per ``LOG_EVERY`` steps."""
    import torch
    from tqdm.auto import tqdm

    folder.mkdir(parents=True, exist_ok=True)
    checkpoint_every = checkpoint_every or CHECKPOINT_EVERY

    optimizer = torch.optim.AdamW(model.parameters(), lr=stage.learning_rate, weight_decay=0.0)
    # lesson 04's schedule (nanoT5's): a linear warm-up, then a cosine down to a tenth of the peak
    scheduler = build_scheduler("cosine", optimizer, stage.warmup_steps, stage.steps, stage.learning_rate / 10)
    step, history = resume_stage(folder, model, optimizer, scheduler)
    window = []
    model.train()
    with tqdm(total=stage.steps, initial=step, desc=desc, disable=not progress, mininterval=2.0) as bar:
        while step < stage.steps:
            step += 1
            loss = model(**draw(step)).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            window.append(float(loss.detach()))
            if step % LOG_EVERY == 0 or step == stage.steps:
                history.append((step, sum(window) / len(window)))
                bar.set_postfix(loss=f"{history[-1][1]:.3f}", refresh=False)
                window = []
            bar.update(1)
            if step % checkpoint_every == 0 and step < stage.steps:
                checkpoint_stage(folder, step, model, optimizer, scheduler, history)
    model.eval()
    return history
