"""The labs: student copies written from the solutions, the checks proven on known-wrong answers, the questions.

nbval runs every solution notebook top to bottom (``make test``: ``notebooks/labs/solutions``), which shows that
each solution passes each of its checks. Here:

- each committed student copy equals a fresh one, and a solution edited without its copy is caught;
- each untouched student copy stops at its first stub, with that stub's message, and runs nothing after it;
- each check raises on at least two typical wrong answers, and for each wrong answer only the checks it names
  raise: the answers are the solution's own (its cells executed here), with one of them replaced;
- right answers in other forms pass (a float32 schedule, numpy integers, a trailing newline), and the hints name
  the mistake where it can be told (eps's place, a stage written as a string, GB for GiB);
- each question's wrong options raise, its right one prints, and its text is the one the lab shows; an answer
  that is not exactly one letter is refused without giving the answer away.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from course_utils.labs import check
from course_utils.labs.quiz import QUESTIONS, question, question_markdown
from course_utils.labs.verdict import CheckFailed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import labs  # noqa: E402 - tools/labs.py, the student copies' writer (tools/ is no package)

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = {p.name[:3]: p for p in labs.solution_notebooks(ROOT)}
STUB = re.compile(r'raise NotImplementedError\("(.*)"\)')


def code_cells(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def solution_namespace(lab: str, stop_at: str | None = None) -> dict:
    """The solution's code cells executed in order in one namespace (up to the first cell containing ``stop_at``).

    The offline switches are set first, as a kernel's set-up cell would set them before anything imports
    transformers (here other tests have imported it already); the environment is restored afterwards.
    """
    import os

    import matplotlib

    from course_utils.machinery.offline import OFFLINE_VARIABLES

    matplotlib.use("Agg")
    saved = dict(os.environ)
    os.environ.update(OFFLINE_VARIABLES)
    namespace = {"__name__": "__lab__"}
    try:
        for source in code_cells(SOLUTIONS[lab]):
            if stop_at and stop_at in source:
                break
            exec(compile(source, f"{lab} cell", "exec"), namespace)  # noqa: S102 - the course's own notebook
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return namespace


# --------------------------------------------------------------------------- student copies


def test_there_are_six_labs_and_each_has_a_student_copy():
    assert sorted(SOLUTIONS) == ["00L", "01L", "02L", "03L", "04L", "05L"]
    for path in SOLUTIONS.values():
        assert labs.student_path(path).exists(), path


def test_every_student_copy_equals_a_fresh_one():
    assert labs.stale_copies(ROOT) == []


def test_a_solution_edited_without_its_copy_is_caught(tmp_path):
    shutil.copytree(ROOT / "notebooks" / "labs", tmp_path / "notebooks" / "labs")
    solution = tmp_path / "notebooks" / "labs" / "solutions" / SOLUTIONS["03L"].name
    solution.write_text(solution.read_text().replace("Task 2 · ROUGE-N", "Task 2 · ROUGE-n"))
    assert [p.name for p in labs.stale_copies(tmp_path)] == [solution.name]


def test_blocks_become_stubs_named_after_the_task_and_answer_lines_become_ellipses():
    source = 'def f(x):\n    # BEGIN SOLUTION\n    y = x + 1\n    return y\n    # END SOLUTION\nq1 = "b"  # SOLUTION\n'
    assert labs.student_source(source, "Task 2 · Add one", "lab") == (
        'def f(x):\n    raise NotImplementedError("Task 2 · Add one: write your code here, in place of this line")\n'
        "q1 = ...\n"
    )
    with pytest.raises(ValueError, match="without # END SOLUTION"):
        labs.student_source("# BEGIN SOLUTION\nx = 1\n", "Task 1", "lab")
    with pytest.raises(ValueError, match="before any '### Task' heading"):
        labs.student_source("# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n", "", "lab")


def test_no_solution_is_left_in_a_student_copy():
    for path in SOLUTIONS.values():
        student = "\n".join(code_cells(labs.student_path(path)))
        assert "SOLUTION" not in student, path.name
        answers = re.findall(r'^q\d = "[a-d]"', "\n".join(code_cells(path)), re.M)
        assert answers and not re.findall(r'^q\d = "[a-d]"', student, re.M), path.name


@pytest.mark.slow
def test_each_untouched_student_copy_stops_at_its_first_stub_and_runs_nothing_after(tmp_path):
    from course_utils.machinery.runner import run_course

    students = [labs.student_path(p) for p in SOLUTIONS.values()]
    results = run_course(students, "smoke", tmp_path, echo=lambda *a, **k: None)
    for path, result in zip(students, results, strict=True):
        sources = code_cells(path)
        stub_cell = next(i for i, s in enumerate(sources) if STUB.search(s))
        assert result.failure is not None, path.name
        assert result.failure.error == f"NotImplementedError: {STUB.search(sources[stub_cell]).group(1)}", path.name
        executed = [c for c in json.loads(result.output_path.read_text())["cells"] if c["cell_type"] == "code"]
        executed = [c for c in executed if "injected-parameters" not in c["metadata"].get("tags", [])]
        failed = [i for i, c in enumerate(executed) if any(o.get("output_type") == "error" for o in c["outputs"])]
        # The stub raises in its own cell, or, inside a function, in the next cell: the check that calls it.
        assert failed in ([stub_cell], [stub_cell + 1]), (path.name, failed, stub_cell)
        assert all(c["execution_count"] is None for c in executed[failed[0] + 1 :]), path.name


# --------------------------------------------------------------------------- every check is called by its lab


def test_every_check_is_called_in_its_lab_and_every_lab_asks_three_to_five_questions():
    for lab, checks in check.CHECKS.items():
        text = "\n".join(code_cells(SOLUTIONS[lab]))
        for function in checks:
            assert f"check.{function.__name__}(" in text, (lab, function.__name__)
        assert 3 <= len(QUESTIONS[lab]) <= 5
        assert len(re.findall(rf'check\.question\("{lab}", \d', text)) == len(QUESTIONS[lab])


# --------------------------------------------------------------------------- known-wrong answers


def only_these_raise(targets: tuple[str, ...], calls: dict) -> str:
    """Run every check of a lab; assert that the ``targets`` alone raise CheckFailed; return their messages."""
    raised = {}
    for name, call in calls.items():
        try:
            call()
        except CheckFailed as err:
            raised[name] = str(err)
    assert list(raised) == list(targets), raised
    for target in targets:
        message = raised[target]
        assert message.startswith(f"{target}: expected ") and ", got " in message and "Hint: " in message
        assert "\n" not in message  # one line
    return " | ".join(raised[target] for target in targets)


def lab_calls(lab: str, answers: dict) -> dict:
    """{check name: a call of that check with ``answers``} for one lab."""
    a = answers
    table = {
        "00L": {
            "parameter_count": lambda: check.parameter_count(a["t5_parameters"]),
            "training_state_bytes": lambda: check.training_state_bytes(a["training_state_bytes"]),
            "rows_that_fit": lambda: check.rows_that_fit(a["rows_that_fit"]),
        },
        "02L": {
            "zero3_offload_config": lambda: check.zero3_offload_config(a["zero3_offload"]),
            "model_state_bytes": lambda: check.model_state_bytes(a["model_state_bytes"]),
            "cheapest_setup": lambda: check.cheapest_setup(a["cheapest_setup"]),
        },
        "03L": {
            "rouge_tokens": lambda: check.rouge_tokens(a["tokens"]),
            "rouge_n": lambda: check.rouge_n(a["rouge_n"]),
            "rouge_l": lambda: check.rouge_l(a["rouge_l"]),
            "lead_3": lambda: check.lead_3(a["lead_3"]),
        },
        "04L": {
            "noise_mask": lambda: check.noise_mask(a["noise_mask"]),
            "sentinels": lambda: check.sentinels(a["corrupt"]),
            "cosine_schedule": lambda: check.cosine_schedule(a["cosine_lr"]),
            "adamw_rms_step": lambda: check.adamw_rms_step(a["adamw_rms_step"]),
        },
        "05L": {
            "bootstrap_difference": lambda: check.bootstrap_difference(a["bootstrap_difference"]),
            "consistent_winners": lambda: check.consistent_winners(a["consistent_winners"]),
            "win_rate": lambda: check.win_rate(a["win_rate"]),
            "cohen_kappa": lambda: check.cohen_kappa(a["cohen_kappa"]),
            "lm_eval_yaml": lambda: check.lm_eval_yaml(a["capitals_task"](), a["profile"].models["gpt2"]),
        },
        "01L": {
            "prompt_template": lambda: check.prompt_template(a["build_prompt"]),
            "prompt_masked": lambda: check.prompt_masked(a["tokenize_example"], a["tokenizer"]),
            "eos_learned": lambda: check.eos_learned(a["tokenize_example"], a["collate"], a["tokenizer"]),
            "padding_masked": lambda: check.padding_masked(a["collate"], a["tokenizer"]),
            "loss_falls": lambda: check.loss_falls(a["trainer"], a["profile"]),
            "responses": lambda: check.responses(a["respond"], a["model"], a["tokenizer"]),
            "lora_parameters": lambda: check.lora_parameters(a["lora_model"]),
        },
    }
    return table[lab]


@pytest.fixture(scope="module")
def solved():
    """Each lab's right answers: its solution's cells run here (lab 01L up to its training, plus a LoRA model)."""
    answers = {lab: solution_namespace(lab) for lab in ("00L", "02L", "03L", "04L", "05L")}
    instruct = solution_namespace("01L", stop_at="start = time.perf_counter()")  # up to the Trainer, built
    instruct["trainer"].train()  # the lab's own full fine-tune (a few seconds in smoke)
    instruct["lora_model"] = lora_model(instruct)
    answers["01L"] = instruct
    return answers


def real_trainer(namespace, learning_rate: float | None = None, max_steps: int = 6, train_set=None, train=True):
    """A Trainer as the lab builds it (its arguments and collate, a fresh stand-in), run for ``max_steps`` steps."""
    import tempfile

    from transformers import Trainer

    config = namespace["config"]
    rate = config.learning_rate if learning_rate is None else learning_rate
    args = namespace["training_arguments"](tempfile.mkdtemp(), rate)
    args.max_steps = max_steps
    trainer = Trainer(
        model=namespace["load_model"](config.model_name, dtype=torch.float32),
        args=args,
        train_dataset=namespace["train_set"] if train_set is None else train_set,
        data_collator=namespace["collate"],
    )
    if train:
        trainer.train()
    return trainer


def finished_trainer(losses: list[tuple[int, float]], logging_steps: int = 10, steps: int = 20, other=()):
    """A made-up object shaped like a Trainer after a run of ``steps`` steps that logged ``losses`` (step, loss):
    the check must believe none of it."""
    from types import SimpleNamespace

    history = [{"step": step, "loss": loss} for step, loss in losses] + list(other)
    state = SimpleNamespace(log_history=history, logging_steps=logging_steps, global_step=steps, max_steps=steps)
    return SimpleNamespace(state=state, args=SimpleNamespace(logging_first_step=True))


def lora_model(namespace, rank=None, targets=None):
    from peft import LoraConfig, get_peft_model

    from course_utils.lessons.instruct import LORA_RANK, LORA_TARGETS

    base = namespace["load_model"](namespace["config"].model_name, dtype=torch.float32)
    return get_peft_model(
        base,
        LoraConfig(
            r=rank or LORA_RANK,
            lora_alpha=16,
            target_modules=list(targets or LORA_TARGETS),
            lora_dropout=0.0,
            task_type="CAUSAL_LM",
        ),
    )


@pytest.mark.parametrize("lab", ["00L", "01L", "02L", "03L", "04L", "05L"])
def test_the_solutions_answers_pass_every_check(solved, lab):
    for call in lab_calls(lab, solved[lab]).values():
        call()


def wrong_answers(ok: dict) -> list[tuple[str, str, str, object]]:
    """(lab, check that must raise, the mistake, the wrong answer), built from the right answers ``ok``."""
    fits, zero, rouge, nano, ins, judged = ok["00L"], ok["02L"], ok["03L"], ok["04L"], ok["01L"], ok["05L"]
    import math

    def systems_apart(a, b, resamples, seed):  # each system's scores resampled on its own: the pairs broken
        rng = np.random.default_rng(seed)
        a, b = np.asarray(a), np.asarray(b)
        pick = lambda s: s[rng.integers(0, len(s), size=(resamples, len(s)))].mean(axis=1)  # noqa: E731
        return pick(b) - pick(a)

    def without_replacement(a, b, resamples, seed):  # every resample is a permutation: the same mean each time
        rng = np.random.default_rng(seed)
        rows = np.array([rng.permutation(len(a)) for _ in range(resamples)])
        return np.asarray(b)[rows].mean(axis=1) - np.asarray(a)[rows].mean(axis=1)

    def first_order_only(verdicts):  # the first verdict taken at its word, the second order ignored
        return ["x" if first == "A" else "y" for first, _ in verdicts]

    def orders_swapped(verdicts):
        return [{("A", "B"): "y", ("B", "A"): "x"}.get(tuple(pair)) for pair in verdicts]

    def over_all_articles(winners, system):  # the dropped verdicts left in the total
        return sum(w == system for w in winners) / len(winners) if any(winners) else None

    def flips_as_half_wins(winners, system):
        return (sum(w == system for w in winners) + 0.5 * winners.count(None)) / len(winners) if any(winners) else None

    def raw_agreement(first, second):
        return sum(x == y for x, y in zip(first, second)) / len(first)

    def uniform_chance(first, second):  # p_e as if every label were equally likely
        observed, labels = raw_agreement(first, second), len(set(first) | set(second))
        return (observed - 1 / labels) / (1 - 1 / labels)

    def one_raters_shares(first, second):  # p_e from the first rater's shares alone
        observed, shares = raw_agreement(first, second), Counter(first)
        expected = sum((count / len(first)) ** 2 for count in shares.values())
        return (observed - expected) / (1 - expected)

    capitals = judged["capitals_task"]()

    def no_position_biases(config):
        return fits["t5_parameters"](config) - 2 * config.relative_attention_num_buckets * config.num_heads

    def no_cross_attention(config):
        return fits["t5_parameters"](config) - config.num_decoder_layers * (
            4 * config.d_model * config.num_heads * config.d_kv + config.d_model
        )

    def untied_output_layer(config):
        return fits["t5_parameters"](config) + config.vocab_size * config.d_model

    def paper(p, setup, gpus):
        return zero["model_state_bytes"](p, setup, gpus)

    def offload_on_gpu(p, setup, gpus):
        return paper(p, setup.replace(" + offload", ""), gpus) if "offload" in setup else paper(p, setup, gpus)

    def stage1_splits_gradients(p, setup, gpus):
        return paper(p, "stage 2", gpus) if setup == "stage 1" else paper(p, setup, gpus)

    def with_zero(**changes):
        config = json.loads(json.dumps(zero["zero3_offload"]))
        config["zero_optimization"].update(changes)
        return config

    def no_stemming(text):
        return re.sub(r"[^a-z0-9]+", " ", text.lower()).split()

    def not_lowercased(text):  # capitals then count as separators: "The" -> "he"
        words = re.sub(r"[^a-z0-9]+", " ", text).split()
        return [rouge["stemmer"].stem(w) if len(w) > 3 else w for w in words]

    def unclipped(prediction, reference, n):
        pred, ref = rouge["tokens"](prediction), rouge["tokens"](reference)
        grams = set(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
        hits = sum(tuple(pred[i : i + n]) in grams for i in range(len(pred) - n + 1))
        p, r = hits / max(len(pred) - n + 1, 1), min(hits, max(len(ref) - n + 1, 1)) / max(len(ref) - n + 1, 1)
        return p, r, rouge["f_measure"](p, r)

    def set_overlap(prediction, reference, n):
        pred, ref = rouge["tokens"](prediction), rouge["tokens"](reference)
        a, b = (
            {tuple(pred[i : i + n]) for i in range(len(pred) - n + 1)},
            {tuple(ref[i : i + n]) for i in range(len(ref) - n + 1)},
        )
        p, r = len(a & b) / max(len(a), 1), len(a & b) / max(len(b), 1)
        return p, r, rouge["f_measure"](p, r)

    def bag_of_words(prediction, reference):
        return rouge["rouge_n"](prediction, reference, 1)

    def longest_substring(prediction, reference):
        pred, ref = rouge["tokens"](prediction), rouge["tokens"](reference)
        best = max(
            (
                k
                for i in range(len(ref))
                for j in range(len(pred))
                for k in range(1, min(len(ref) - i, len(pred) - j) + 1)
                if ref[i : i + k] == pred[j : j + k]
            ),
            default=0,
        )
        p, r = best / max(len(pred), 1), best / max(len(ref), 1)
        return (0.0, 0.0, 0.0) if not pred or not ref else (p, r, rouge["f_measure"](p, r))

    def mask_starting_noisy(length, density, mean_span, rng):
        return ~nano["noise_mask"](length, density, mean_span, rng)

    def clean_lengths_first(length, density, mean_span, rng):
        noise_tokens = min(max(round(length * density), 1), length - 1)
        spans = max(round(noise_tokens / mean_span), 1)
        clean = nano["random_segment_lengths"](length - noise_tokens, spans, rng)
        noise = nano["random_segment_lengths"](noise_tokens, spans, rng)
        return np.repeat(np.tile([False, True], spans), np.stack([clean, noise], axis=1).reshape(-1))

    def sentinels_counting_up(row, mask, first_sentinel, eos):
        inputs, targets = nano["corrupt"](row, mask, first_sentinel, eos)
        flip = lambda t: 2 * first_sentinel - 99 - t if first_sentinel - 100 < t <= first_sentinel else t  # noqa: E731
        return np.array([flip(t) for t in inputs]), np.array([flip(t) for t in targets])

    def no_eos(row, mask, first_sentinel, eos):
        inputs, targets = nano["corrupt"](row, mask, first_sentinel, eos)
        return inputs[:-1], targets[:-1]

    def warmup_from_zero(step, peak, warmup, total, final):
        return peak * step / warmup if step < warmup else nano["cosine_lr"](step, peak, warmup, total, final)

    def cosine_to_zero(step, peak, warmup, total, final):
        return nano["cosine_lr"](step, peak, warmup, total, 0.0)

    def adam_step(denominator, rms_scaling: bool = True):
        """A student's step of AdamW: eps placed by ``denominator(v, correction)``, the RMS scaling on or off."""

        def step(weight, grad, state, lr, weight_decay):
            if not state:
                state.update(step=0, m=torch.zeros_like(weight), v=torch.zeros_like(weight))
            state["step"] += 1
            state["m"] = 0.9 * state["m"] + 0.1 * grad
            state["v"] = 0.999 * state["v"] + 0.001 * grad * grad
            correction = math.sqrt(1 - 0.999 ** state["step"])
            scale = max(1e-3, (weight.norm() / math.sqrt(weight.numel())).item()) if rms_scaling else 1.0
            weight = weight - lr * correction / (1 - 0.9 ** state["step"]) * scale * state["m"] / denominator(
                state["v"], correction
            )
            return weight - lr * weight_decay * weight

        return step

    without_rms = adam_step(lambda v, correction: v.sqrt() + 1e-6, rms_scaling=False)  # plain AdamW
    eps_inside_the_root = adam_step(lambda v, correction: (v + 1e-6).sqrt())
    eps_after_the_correction = adam_step(lambda v, correction: v.sqrt() + 1e-6 * correction)  # torch.optim.AdamW's

    def coupled_decay(weight, grad, state, lr, weight_decay):
        return nano["adamw_rms_step"](weight, grad + weight_decay * weight, state, lr, 0.0)

    tokenize, collate, tokenizer = ins["tokenize_example"], ins["collate"], ins["tokenizer"]

    def prompt_in_loss(row, tok, max_length):
        features = tokenize(row, tok, max_length)
        if features is None:
            return None
        return {**features, "labels": list(features["input_ids"])}

    def shifted_labels(row, tok, max_length):
        features = tokenize(row, tok, max_length)
        if features is None:
            return None
        return {**features, "labels": features["labels"][1:] + [-100]}

    def eos_masked(row, tok, max_length):
        features = tokenize(row, tok, max_length)
        if features is None:
            return None
        return {**features, "labels": features["labels"][:-1] + [-100]}

    def eos_dropped(row, tok, max_length):
        features = tokenize(row, tok, max_length)
        if features is None:
            return None
        return {key: value[:-1] for key, value in features.items()}

    def masked_by_id(features):
        batch = collate(features)
        batch["labels"][batch["input_ids"] == tokenizer.pad_token_id] = -100
        return batch

    def labels_padded_with_pad_id(features):
        batch = collate(features)
        batch["labels"][batch["attention_mask"] == 0] = tokenizer.pad_token_id
        return batch

    def padding_attended(features):
        batch = collate(features)
        batch["attention_mask"][:] = 1
        return batch

    def right_padded(model, tok, prompts, max_new_tokens):
        tok.padding_side = "right"
        batch = tok(prompts, padding=True, return_tensors="pt", add_special_tokens=False)
        out = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tok.pad_token_id)
        return tok.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)

    def prompt_kept(model, tok, prompts, max_new_tokens):
        answers = ins["respond"](model, tok, prompts, max_new_tokens)
        return [p + a for p, a in zip(prompts, answers, strict=True)]

    def unfrozen(namespace):
        model = lora_model(namespace)
        for p in model.parameters():
            p.requires_grad = True
        return model

    def words_by_regex(text):  # Python's \w keeps é and _, rouge-score's [a-z0-9] does not
        return [rouge["stemmer"].stem(w) if len(w) > 3 else w for w in re.findall(r"\w+", text.lower())]

    def bigrams_unclipped(prediction, reference, n):
        return unclipped(prediction, reference, n) if n == 2 else rouge["rouge_n"](prediction, reference, n)

    def fits_in_gb(p, n, g, a):  # bytes / 1e9 where the card's size is in GiB
        return next((s for s in zero["SPEED_ORDER"] if paper(p, s, n) / 1e9 + a <= g), None)

    def one_sentinel_per_noise_token(row, mask, first_sentinel, eos):
        sentinels = first_sentinel - np.arange(int(mask.sum()))
        inputs = row.copy()
        inputs[mask] = sentinels
        targets = np.stack([sentinels, row[mask]], axis=1).reshape(-1)
        return np.append(inputs, eos), np.append(targets, eos)

    def targets_without_sentinels(row, mask, first_sentinel, eos):
        inputs, targets = nano["corrupt"](row, mask, first_sentinel, eos)
        return inputs, np.array([t for t in targets if not first_sentinel - 100 < t <= first_sentinel])

    row_with_response = "### Response:\n"
    return [
        ("00L", "parameter_count", "the relative position biases forgotten", {"t5_parameters": no_position_biases}),
        ("00L", "parameter_count", "no cross-attention in the decoder", {"t5_parameters": no_cross_attention}),
        (
            "00L",
            "parameter_count",
            "the output layer counted apart from the embedding",
            {"t5_parameters": untied_output_layer},
        ),
        (
            "00L",
            "training_state_bytes",
            "AdamW's states without the fp32 master weights",
            {"training_state_bytes": lambda p: {"weights": 2 * p, "gradients": 2 * p, "optimizer": 8 * p}},
        ),
        (
            "00L",
            "training_state_bytes",
            "weights kept in fp32",
            {"training_state_bytes": lambda p: {"weights": 4 * p, "gradients": 2 * p, "optimizer": 12 * p}},
        ),
        (
            "00L",
            "rows_that_fit",
            "the buffers forgotten",
            {
                "rows_that_fit": lambda g, p, t, pr="bf16": fits["rows_that_fit"](
                    g + fits["BUFFERS_GIB"] / 0.9, p, t, pr
                )
            },
        ),
        (
            "00L",
            "rows_that_fit",
            "rounded instead of rounded down",
            {
                "rows_that_fit": lambda g, p, t, pr="bf16": max(
                    round(
                        (0.9 * g - 3 - 16 * p / 2**30)
                        / (fits["ROW_GIB_T5_BASE"][pr] * p / fits["T5_BASE_PARAMETERS"] * t / fits["T5_BASE_TOKENS"])
                    ),
                    1,
                )
            },
        ),
        (
            "00L",
            "rows_that_fit",
            "no floor of one row",
            {
                "rows_that_fit": lambda g, p, t, pr="bf16": math.floor(
                    (0.9 * g - 3 - 16 * p / 2**30)
                    / (fits["ROW_GIB_T5_BASE"][pr] * p / fits["T5_BASE_PARAMETERS"] * t / fits["T5_BASE_TOKENS"])
                )
            },
        ),
        ("02L", "zero3_offload_config", "stage 2 with the weights offloaded", {"zero3_offload": with_zero(stage=2)}),
        (
            "02L",
            "zero3_offload_config",
            "the weights not offloaded",
            {
                "zero3_offload": {
                    **with_zero(),
                    "zero_optimization": {
                        k: v for k, v in with_zero()["zero_optimization"].items() if k != "offload_param"
                    },
                }
            },
        ),
        (
            "02L",
            "zero3_offload_config",
            "a fixed batch that disagrees with the run",
            {"zero3_offload": {**with_zero(), "train_batch_size": 16}},
        ),
        ("02L", "model_state_bytes", "offloaded states counted on the GPU", {"model_state_bytes": offload_on_gpu}),
        (
            "02L",
            "model_state_bytes",
            "stage 1 partitioning the gradients too",
            {"model_state_bytes": stage1_splits_gradients},
        ),
        ("02L", "zero3_offload_config", "the stage written as a string", {"zero3_offload": with_zero(stage="3")}),
        ("02L", "cheapest_setup", "the states in GB, the card in GiB", {"cheapest_setup": fits_in_gb}),
        (
            "02L",
            "cheapest_setup",
            "never None: the last setup when none fits",
            {"cheapest_setup": lambda p, n, g, a: zero["cheapest_setup"](p, n, g, a) or "stage 3 + offload"},
        ),
        (
            "02L",
            "cheapest_setup",
            "the activations forgotten",
            {"cheapest_setup": lambda p, n, g, a: zero["cheapest_setup"](p, n, g, 0.0)},
        ),
        (
            "02L",
            "cheapest_setup",
            "the last setup that fits, not the first",
            {
                "cheapest_setup": lambda p, n, g, a: next(
                    (s for s in reversed(zero["SPEED_ORDER"]) if paper(p, s, n) / 2**30 + a <= g), None
                )
            },
        ),
        ("03L", "rouge_tokens", "stemming off", {"tokens": no_stemming}),
        ("03L", "rouge_tokens", "the text not lowercased", {"tokens": not_lowercased}),
        ("03L", "rouge_tokens", "\\w+ tokens (é and _ kept)", {"tokens": words_by_regex}),
        ("03L", "rouge_n", "ROUGE-2 not clipped while ROUGE-1 is", {"rouge_n": bigrams_unclipped}),
        (
            "03L",
            "lead_3",
            "the byline and dateline kept",
            {"lead_3": lambda a: "\n".join(rouge["split_sentences"](a)[:3])},
        ),
        ("03L", "rouge_n", "n-gram counts not clipped", {"rouge_n": unclipped}),
        ("03L", "rouge_n", "a set of n-grams instead of counts", {"rouge_n": set_overlap}),
        ("03L", "rouge_l", "ROUGE-L as a bag of words", {"rouge_l": bag_of_words}),
        ("03L", "rouge_l", "the longest common substring", {"rouge_l": longest_substring}),
        (
            "03L",
            "lead_3",
            "sentences joined by spaces",
            {"lead_3": lambda a: " ".join(rouge["split_sentences"](a)[:3])},
        ),
        ("03L", "lead_3", "the first three paragraphs", {"lead_3": lambda a: "\n".join(a.split("\n\n")[:3])}),
        ("04L", "noise_mask", "the row starting with noise", {"noise_mask": mask_starting_noisy}),
        ("04L", "noise_mask", "the clean lengths drawn first", {"noise_mask": clean_lengths_first}),
        ("04L", "sentinels", "sentinels counting up", {"corrupt": sentinels_counting_up}),
        ("04L", "sentinels", "no EOS", {"corrupt": no_eos}),
        ("04L", "sentinels", "one sentinel per noise token", {"corrupt": one_sentinel_per_noise_token}),
        ("04L", "sentinels", "targets without sentinels", {"corrupt": targets_without_sentinels}),
        ("04L", "adamw_rms_step", "eps inside the square root", {"adamw_rms_step": eps_inside_the_root}),
        (
            "04L",
            "adamw_rms_step",
            "eps after the bias correction (a step off by about 3e-6)",
            {"adamw_rms_step": eps_after_the_correction},
        ),
        ("04L", "cosine_schedule", "warm-up starting at zero", {"cosine_lr": warmup_from_zero}),
        ("04L", "cosine_schedule", "the cosine ending at zero, not at the final rate", {"cosine_lr": cosine_to_zero}),
        ("04L", "adamw_rms_step", "no RMS scaling", {"adamw_rms_step": without_rms}),
        ("04L", "adamw_rms_step", "weight decay added to the gradient (coupled)", {"adamw_rms_step": coupled_decay}),
        (
            "01L",
            "prompt_template",
            "the response in the prompt",
            {"build_prompt": lambda row: ins["build_prompt"](row) + row["response"]},
        ),
        (
            "01L",
            "prompt_template",
            "an empty Input section kept",
            {
                "build_prompt": lambda row: (
                    ins["build_prompt"](row)
                    if row["context"].strip()
                    else ins["build_prompt"](row).replace(row_with_response, "### Input:\n\n\n" + row_with_response)
                )
            },
        ),
        ("01L", "prompt_masked", "the prompt left in the loss", {"tokenize_example": prompt_in_loss}),
        ("01L", "prompt_masked", "labels shifted by one", {"tokenize_example": shifted_labels}),
        ("01L", "eos_learned", "EOS masked in the labels", {"tokenize_example": eos_masked}),
        ("01L", "eos_learned", "no EOS appended", {"tokenize_example": eos_dropped}),
        (
            "01L",
            ("eos_learned", "padding_masked"),
            "padding masked by id, which masks EOS too",
            {"collate": masked_by_id},
        ),
        ("01L", "padding_masked", "labels padded with the pad id", {"collate": labels_padded_with_pad_id}),
        ("01L", "padding_masked", "attention on the padding", {"collate": padding_attended}),
        (
            "01L",
            "loss_falls",
            "a flat loss (learning rate 0)",
            {"trainer": finished_trainer([(1, 8.0), (10, 8.0), (20, 7.9)])},
        ),
        (
            "01L",
            "loss_falls",
            "no loss logged (logging_steps past the run)",
            {"trainer": finished_trainer([], logging_steps=500, other=[{"train_runtime": 3.0}])},
        ),
        (
            "01L",
            "loss_falls",
            "a diverging loss",
            {"trainer": finished_trainer([(1, 8.0), (10, 9.5), (20, float("nan"))])},
        ),
        (
            "01L",
            "loss_falls",
            "a history typed in, not the Trainer's",
            {"trainer": finished_trainer([(1, 8.0), (2, 1.0)])},
        ),
        (
            "01L",
            "loss_falls",
            "the log history passed instead of the Trainer",
            {"trainer": finished_trainer([(1, 8.0), (10, 5.0), (20, 3.1)]).state.log_history},
        ),
        ("01L", "responses", "padding on the right", {"respond": right_padded}),
        ("01L", "responses", "the prompt kept in the response", {"respond": prompt_kept}),
        ("01L", "lora_parameters", "rank 16", {"lora_model": lora_model(ins, rank=16)}),
        (
            "01L",
            "lora_parameters",
            "the attention's output projection adapted too",
            {"lora_model": lora_model(ins, targets=("query_key_value", "dense"))},
        ),
        ("01L", "lora_parameters", "the base model left trainable", {"lora_model": unfrozen(ins)}),
        ("05L", "bootstrap_difference", "each system resampled on its own", {"bootstrap_difference": systems_apart}),
        (
            "05L",
            "bootstrap_difference",
            "items drawn without replacement",
            {"bootstrap_difference": without_replacement},
        ),
        (
            "05L",
            "bootstrap_difference",
            "a - b instead of b - a",
            {"bootstrap_difference": lambda a, b, r, s: -judged["bootstrap_difference"](a, b, r, s)},
        ),
        ("05L", "consistent_winners", "the first order's verdict only", {"consistent_winners": first_order_only}),
        ("05L", "consistent_winners", "the orders' roles swapped", {"consistent_winners": orders_swapped}),
        ("05L", "win_rate", "the dropped verdicts left in the total", {"win_rate": over_all_articles}),
        ("05L", "win_rate", "a flipped verdict counted as half a win", {"win_rate": flips_as_half_wins}),
        ("05L", "cohen_kappa", "the raw agreement", {"cohen_kappa": raw_agreement}),
        ("05L", "cohen_kappa", "chance as if the labels were equally likely", {"cohen_kappa": uniform_chance}),
        ("05L", "cohen_kappa", "chance from one rater's shares", {"cohen_kappa": one_raters_shares}),
        (
            "05L",
            "lm_eval_yaml",
            "the prompt without its Answer: line",
            {"capitals_task": lambda: capitals.replace("\\nAnswer:", "")},
        ),
        (
            "05L",
            "lm_eval_yaml",
            "the same four choices for every row",
            {"capitals_task": lambda: capitals.replace('"{{choices}}"', '["Lyon", "Paris", "Nice", "Lille"]')},
        ),
        (
            "05L",
            "lm_eval_yaml",
            "output_type loglikelihood",
            {"capitals_task": lambda: capitals.replace("multiple_choice", "loglikelihood")},
        ),
    ]


@pytest.fixture(scope="module")
def mistakes(solved):
    return wrong_answers(solved) + answers_a_grade_must_refuse(solved)


def test_every_check_catches_at_least_two_known_wrong_answers(solved, mistakes):
    caught = Counter()
    for lab, targets, mistake, replacement in mistakes:
        targets = (targets,) if isinstance(targets, str) else targets
        answers = {**solved[lab], **replacement}
        message = only_these_raise(targets, lab_calls(lab, answers))
        caught.update(targets)
        print(f"{lab} {' and '.join(targets)} catch {mistake}: {message}")
    for checks in check.CHECKS.values():
        for function in checks:
            assert caught[function.__name__] >= 2, function.__name__


# --------------------------------------------------------------------------- questions


def right_letter(q) -> str:
    """The right option's letter, found as anyone could: by trying each against the question's key."""
    (letter,) = [letter for letter in q.letters() if q.is_right(letter)]
    return letter


def test_each_lab_shows_its_questions_as_the_table_has_them():
    for lab, questions in QUESTIONS.items():
        markdown = "\n".join(
            "".join(c["source"])
            for c in json.loads(SOLUTIONS[lab].read_text())["cells"]
            if c["cell_type"] == "markdown"
        )
        for number in range(1, len(questions) + 1):
            assert question_markdown(lab, number) in markdown, (lab, number)


def test_every_wrong_option_raises_with_its_explanation_and_the_right_one_prints(capsys):
    for lab, questions in QUESTIONS.items():
        for number, q in enumerate(questions, start=1):
            for letter, (_, why) in zip(q.letters(), q.options):
                if letter == right_letter(q):
                    question(lab, number, letter)
                    assert why in capsys.readouterr().out
                else:
                    with pytest.raises(CheckFailed, match=re.escape(why)):
                        question(lab, number, letter)
            with pytest.raises(CheckFailed, match="no answer yet"):
                question(lab, number, ...)
            with pytest.raises(CheckFailed, match="answer with one option's letter"):
                question(lab, number, "z")


def test_the_right_answers_position_varies():
    for lab, questions in QUESTIONS.items():
        assert len({right_letter(q) for q in questions}) > 1, lab
    assert len({right_letter(q) for questions in QUESTIONS.values() for q in questions}) == 4


def test_nbval_collects_the_solutions_and_leaves_the_student_copies_to_this_module():
    import subprocess
    import sys

    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "--nbval-lax", "-p", "no:cacheprovider", "notebooks"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    ).stdout
    notebooks = {line.split("::")[0] for line in listed.splitlines() if ".ipynb::" in line}
    assert {f"notebooks/labs/solutions/{p.name}" for p in SOLUTIONS.values()} <= notebooks
    assert not [n for n in notebooks if n.startswith("notebooks/labs/") and "/solutions/" not in n], notebooks


def test_a_question_takes_exactly_one_letter_and_a_malformed_answer_gives_nothing_away(capsys):
    q = QUESTIONS["03L"][0]
    right = right_letter(q)
    wrong = next(letter for letter in q.letters() if letter != right)
    for form in (right.upper(), f" ({right}) ", f"({right.upper()})", f"{right} "):
        question("03L", 1, form)
        assert "✔ question 1" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match=re.escape(q.options[q.letters().index(wrong)][1])):
        question("03L", 1, wrong.upper())
    explanations = [why for _, why in q.options]
    for malformed in ("", "ab", "a b", f"({right}", "((a))", 1, "1", "abcd", None, ["a"]):
        with pytest.raises(CheckFailed) as raised:
            question("03L", 1, malformed)
        message = str(raised.value)
        assert not any(why in message for why in explanations), (malformed, message)
        assert "Right" not in message and f"({right})" not in message, (malformed, message)


def test_right_answers_in_other_forms_pass(solved):
    fits, rouge, nano, ins = solved["00L"], solved["03L"], solved["04L"], solved["01L"]
    # 00L: a whole number of rows, as numpy's int64 or as a float
    check.rows_that_fit(lambda *a: np.int64(fits["rows_that_fit"](*a)))
    check.rows_that_fit(lambda *a: float(fits["rows_that_fit"](*a)))
    with pytest.raises(CheckFailed):
        check.rows_that_fit(lambda *a: fits["rows_that_fit"](*a) + 0.5)  # not a whole number of rows
    # 03L: whitespace rougeLsum ignores: a trailing newline, spaces around the lines
    check.lead_3(lambda article: rouge["lead_3"](article) + "\n")
    check.lead_3(lambda article: "\n".join(f" {line} " for line in rouge["lead_3"](article).split("\n")))
    # 04L: the schedule computed in float32
    check.cosine_schedule(lambda *a: float(np.float32(nano["cosine_lr"](*a))))
    # 01L: the margin is the check's, set by the profile; the student has no say
    import inspect

    from course_utils.machinery.profiles import get_profile

    assert list(inspect.signature(check.loss_falls).parameters) == ["trainer", "profile"]
    check.loss_falls(ins["trainer"], get_profile("smoke", quick=True))  # quick asks only that the loss does not rise
    # 02L: bytes as numpy's float32 (right to float32's precision) or int64
    zero = solved["02L"]
    check.model_state_bytes(lambda *a: np.float32(zero["model_state_bytes"](*a)))
    check.model_state_bytes(lambda *a: np.int64(round(zero["model_state_bytes"](*a))))
    # 05L: a win rate as numpy's float32; a kappa as a 0-d array
    judged = solved["05L"]
    check.win_rate(lambda w, s: None if judged["win_rate"](w, s) is None else np.float32(judged["win_rate"](w, s)))
    check.cohen_kappa(lambda a, b: np.asarray(judged["cohen_kappa"](a, b)))
    # 01L: a prompt whose row is read with extra whitespace stripped in another order
    check.prompt_template(lambda row: ins["build_prompt"]({key: value for key, value in row.items()}))


def test_the_hints_point_at_the_mistake(solved, mistakes):
    def message(lab, target, mistake):
        _, _, _, replacement = next(m for m in mistakes if m[0] == lab and m[2] == mistake)
        with pytest.raises(CheckFailed) as raised:
            lab_calls(lab, {**solved[lab], **replacement})[target]()
        return str(raised.value)

    assert "your step puts eps inside the square root" in message("04L", "adamw_rms_step", "eps inside the square root")
    assert "eps after the bias correction" in message(
        "04L", "adamw_rms_step", "eps after the bias correction (a step off by about 3e-6)"
    )
    assert "string" in message("02L", "zero3_offload_config", "the stage written as a string")
    for mistake in ("one sentinel per noise token", "targets without sentinels"):
        said = message("04L", "sentinels", mistake)
        assert "first difference at index" in said or "of length" in said, said  # where they differ, not a list
    assert "bytes / 2**30" in message("02L", "cheapest_setup", "the states in GB, the card in GiB")


# --------------------------------------------------------------------------- checks a grade can rest on


def answers_a_grade_must_refuse(ok: dict) -> list[tuple[str, str, str, object]]:
    """Wrong answers of the kinds a grade cannot let through: the wrong type, the length limit, a loss that did
    not fall behind a log that says it did, a loose bootstrap, ties in the LCS, a peek at the check's locals."""
    import yaml

    from course_utils.machinery.profiles import get_profile

    fits, zero, rouge, ins, judged = ok["00L"], ok["02L"], ok["03L"], ok["01L"], ok["05L"]
    tokenize, collate, tokenizer = ins["tokenize_example"], ins["collate"], ins["tokenizer"]
    eos = tokenizer.eos_token_id
    capitals = judged["capitals_task"]()

    def parts(row, tok):
        prompt = tok(ins["build_prompt"](row), add_special_tokens=False)["input_ids"]
        return prompt, tok(row["response"].strip(), add_special_tokens=False)["input_ids"]

    def features(prompt, response):
        ids = prompt + response
        return {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": [-100] * len(prompt) + response}

    def no_length_limit(row, tok, max_length):
        return tokenize(row, tok, 10**9)

    def eos_not_counted(row, tok, max_length):  # the limit checked before the EOS is appended
        prompt, response = parts(row, tok)
        return None if len(prompt) + len(response) > max_length else features(prompt, response + [eos])

    def response_limited_only(row, tok, max_length):
        prompt, response = parts(row, tok)
        return None if len(response) + 1 > max_length else features(prompt, response + [eos])

    def prompt_limited_only(row, tok, max_length):
        prompt, response = parts(row, tok)
        return None if len(prompt) > max_length else features(prompt, response + [eos])

    def extra_eos_masked(row, tok, max_length):  # an EOS between prompt and response, out of the loss
        prompt, response = parts(row, tok)
        if len(prompt) + len(response) + 2 > max_length:
            return None
        out = features(prompt + [eos], response + [eos])
        return out

    def ids_as(dtype):
        return lambda rows: {key: value.to(dtype) for key, value in collate(rows).items()}

    def ids_as_lists(rows):
        return {key: value.tolist() for key, value in collate(rows).items()}

    unlabelled = ins["train_set"].map(lambda row: {"labels": [-100] * len(row["labels"])})
    flat = real_trainer(ins, learning_rate=0.0)

    def shrunk(factor):  # resampled differences pulled towards their centre: a narrower interval
        def bootstrap(a, b, resamples, seed):
            got = judged["bootstrap_difference"](a, b, resamples, seed)
            return got.mean() + factor * (got - got.mean())

        return bootstrap

    def last_item_never_drawn(a, b, resamples, seed):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        items = np.random.default_rng(seed).integers(0, len(a) - 1, size=(resamples, len(a)))
        return b[items].mean(axis=1) - a[items].mean(axis=1)

    def half_without_replacement(a, b, resamples, seed):
        a, b, rng = np.asarray(a, dtype=float), np.asarray(b, dtype=float), np.random.default_rng(seed)
        items = np.array([rng.choice(len(a), len(a) // 2, replace=False) for _ in range(resamples)])
        return b[items].mean(axis=1) - a[items].mean(axis=1)

    def unseeded(a, b, resamples, seed):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        items = np.random.default_rng().integers(0, len(a), size=(resamples, len(a)))
        return b[items].mean(axis=1) - a[items].mean(axis=1)

    def seeded_once(a, b, resamples, seed, _rng={}):  # one generator per seed, drawn on across calls
        rng = _rng.setdefault(seed, np.random.default_rng(seed))
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        items = rng.integers(0, len(a), size=(resamples, len(a)))
        return b[items].mean(axis=1) - a[items].mean(axis=1)

    def lcs_rouge(lcs):
        def rouge_l(prediction, reference):
            pred, ref = rouge["tokens"](prediction), rouge["tokens"](reference)
            if not pred or not ref:
                return 0.0, 0.0, 0.0
            length = lcs(pred, ref)
            p, r = length / len(pred), length / len(ref)
            return p, r, rouge["f_measure"](p, r)

        return rouge_l

    def diagonal_on_ties(a, b):  # where the words differ, the diagonal instead of the longer way on
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i, x in enumerate(a, 1):
            for j, y in enumerate(b, 1):
                table[i][j] = table[i - 1][j - 1] + 1 if x == y else table[i - 1][j - 1]
        return table[-1][-1]

    def greedy_in_order(a, b):  # each word matched at its first place after the last match
        length, start = 0, 0
        for word in a:
            if word in b[start:]:
                start += b[start:].index(word) + 1
                length += 1
        return length

    def one_side_skips(a, b):  # where the words differ, only the prediction's word is skipped
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i, x in enumerate(a, 1):
            for j, y in enumerate(b, 1):
                table[i][j] = table[i - 1][j - 1] + 1 if x == y else table[i - 1][j]
        return table[-1][-1]

    def peeking(default):  # returns whatever the check's frame holds as its expected answer
        import sys as _sys

        def answer(*args):
            frame = _sys._getframe(1)
            while frame is not None:
                for name in ("expected", "want"):
                    if name in frame.f_locals:
                        return frame.f_locals[name]
                frame = frame.f_back
            return default

        return answer

    def model_state_bytes_as_text(*a):
        return str(zero["model_state_bytes"](*a))

    return [
        # 1. Types: each answer of the wrong type refused in one line that names the type
        ("01L", "prompt_template", "a prompt of None", {"build_prompt": lambda row: None}),
        ("01L", "prompt_template", "the row's dict instead of the prompt", {"build_prompt": lambda row: dict(row)}),
        ("01L", "prompt_template", "the prompt in a list", {"build_prompt": lambda row: [ins["build_prompt"](row)]}),
        (
            "05L",
            "lm_eval_yaml",
            "the loaded dict instead of the YAML text",
            {"capitals_task": lambda: yaml.safe_load(capitals)},
        ),
        ("05L", "lm_eval_yaml", "the function instead of its text", {"capitals_task": lambda: judged["capitals_task"]}),
        ("05L", "lm_eval_yaml", "the YAML as bytes", {"capitals_task": lambda: capitals.encode()}),
        ("05L", "win_rate", "the rate as a string", {"win_rate": lambda w, s: str(judged["win_rate"](w, s))}),
        (
            "05L",
            "win_rate",
            "the rate formatted",
            {"win_rate": lambda w, s: None if judged["win_rate"](w, s) is None else f"{judged['win_rate'](w, s):.2f}"},
        ),
        ("05L", "cohen_kappa", "kappa as a string", {"cohen_kappa": lambda a, b: str(judged["cohen_kappa"](a, b))}),
        ("00L", "rows_that_fit", "rows as a string", {"rows_that_fit": lambda *a: str(fits["rows_that_fit"](*a))}),
        (
            "00L",
            "parameter_count",
            "parameters as a string",
            {"t5_parameters": lambda c: str(fits["t5_parameters"](c))},
        ),
        ("02L", "model_state_bytes", "bytes as a string", {"model_state_bytes": model_state_bytes_as_text}),
        ("01L", ("eos_learned", "padding_masked"), "float32 token ids", {"collate": ids_as(torch.float32)}),
        ("01L", ("eos_learned", "padding_masked"), "int8 token ids", {"collate": ids_as(torch.int8)}),
        ("01L", ("eos_learned", "padding_masked"), "lists instead of tensors", {"collate": ids_as_lists}),
        # 2. The length limit
        ("01L", "prompt_masked", "no length limit", {"tokenize_example": no_length_limit}),
        ("01L", "prompt_masked", "the EOS left out of the count", {"tokenize_example": eos_not_counted}),
        ("01L", "prompt_masked", "the response alone limited", {"tokenize_example": response_limited_only}),
        ("01L", "prompt_masked", "the prompt alone limited", {"tokenize_example": prompt_limited_only}),
        ("01L", "prompt_masked", "an extra EOS between prompt and response", {"tokenize_example": extra_eos_masked}),
        # 3. A loss that did not fall, whatever the log says
        ("01L", "loss_falls", "a real run at learning rate 0", {"trainer": flat}),
        (
            "01L",
            "loss_falls",
            "a real run at rate 0 with a profile whose margin is -1",
            {"trainer": flat, "profile": get_profile("smoke", instruction=dict(loss_margin=-1.0))},
        ),
        (
            "01L",
            "loss_falls",
            "a real run whose labels are all -100",
            {"trainer": real_trainer(ins, train_set=unlabelled)},
        ),
        ("01L", "loss_falls", "a Trainer never trained", {"trainer": real_trainer(ins, train=False)}),
        (
            "01L",
            "loss_falls",
            "the old call: the log history and a margin",
            {"trainer": ins["trainer"].state.log_history, "profile": 0.2},
        ),
        (
            "01L",
            "loss_falls",
            "a real Trainer whose log was edited to fall",
            {"trainer": edited_log(real_trainer(ins, learning_rate=0.0))},
        ),
        # 4. The bootstrap: its spread, its draws, its seed
        ("05L", "bootstrap_difference", "a 90 % interval's spread", {"bootstrap_difference": shrunk(1.645 / 1.96)}),
        ("05L", "bootstrap_difference", "a spread a quarter too wide", {"bootstrap_difference": shrunk(1.25)}),
        ("05L", "bootstrap_difference", "the last item never drawn", {"bootstrap_difference": last_item_never_drawn}),
        (
            "05L",
            "bootstrap_difference",
            "half the items, without replacement",
            {"bootstrap_difference": half_without_replacement},
        ),
        ("05L", "bootstrap_difference", "no seed", {"bootstrap_difference": unseeded}),
        ("05L", "bootstrap_difference", "one generator per seed, reused", {"bootstrap_difference": seeded_once}),
        # 5. Ties in the longest common subsequence
        ("03L", "rouge_l", "the diagonal taken on ties", {"rouge_l": lcs_rouge(diagonal_on_ties)}),
        ("03L", "rouge_l", "a greedy in-order match", {"rouge_l": lcs_rouge(greedy_in_order)}),
        ("03L", "rouge_l", "only the prediction's word skipped", {"rouge_l": lcs_rouge(one_side_skips)}),
        # 7. What a check keeps within reach: its expected answer is not in its frame when the answer is computed
        ("03L", "rouge_l", "the check's expected scores read from its frame", {"rouge_l": peeking((0.0, 0.0, 0.0))}),
        ("03L", "lead_3", "the check's expected Lead-3 read from its frame", {"lead_3": peeking("")}),
        ("00L", "rows_that_fit", "the check's expected rows read from its frame", {"rows_that_fit": peeking(1)}),
    ]


def edited_log(trainer):
    """``trainer`` with its log history rewritten to show a loss that fell by 90 %."""
    for entry in trainer.state.log_history:
        if "loss" in entry:
            entry["loss"] = 10.0 if entry["step"] == 1 else 1.0
    return trainer


def test_the_right_letters_are_written_nowhere_a_student_reads():
    import dataclasses
    import inspect

    from course_utils.labs import quiz

    assert [f.name for f in dataclasses.fields(quiz.Question)] == ["text", "options", "key"]
    for lab, questions in QUESTIONS.items():
        for q in questions:
            assert q.key not in q.letters() and len(q.key) == 16, (lab, q.text)
            assert not any(why.startswith("Right") for _, why in q.options), (lab, q.text)
    assert "Right: {why}" in inspect.getsource(quiz.question)  # said only once the right letter is chosen


class Raising:
    """An answer whose every use raises: called, read, iterated, compared or turned into a number."""

    def __getattr__(self, name):
        raise RuntimeError(f"no {name}")

    def __call__(self, *args, **kwargs):
        raise RuntimeError("called")

    def __iter__(self):
        raise RuntimeError("iterated")

    def __len__(self):
        raise RuntimeError("measured")

    def __eq__(self, other):
        raise RuntimeError("compared")

    __hash__ = None

    def __float__(self):
        raise RuntimeError("made a number")


JUNK = {"None": None, "a string": "0.5", "a dict": {"a": 1}, "a float": 1.5, "an object that raises": Raising()}
# Each check's answers that a student supplies, by the names lab_calls reads them under; a function's answers are
# fed both as the answer itself and as what the function returns. lm_eval_yaml's answer is the text capitals_task()
# returns.
STUDENT_ANSWERS = {
    "00L": {
        "parameter_count": ["t5_parameters"],
        "training_state_bytes": ["training_state_bytes"],
        "rows_that_fit": ["rows_that_fit"],
    },
    "01L": {
        "prompt_template": ["build_prompt"],
        "prompt_masked": ["tokenize_example"],
        "eos_learned": ["tokenize_example", "collate"],
        "padding_masked": ["collate"],
        "loss_falls": ["trainer", "profile"],
        "responses": ["respond"],
        "lora_parameters": ["lora_model"],
    },
    "02L": {
        "zero3_offload_config": ["zero3_offload"],
        "model_state_bytes": ["model_state_bytes"],
        "cheapest_setup": ["cheapest_setup"],
    },
    "03L": {"rouge_tokens": ["tokens"], "rouge_n": ["rouge_n"], "rouge_l": ["rouge_l"], "lead_3": ["lead_3"]},
    "04L": {
        "noise_mask": ["noise_mask"],
        "sentinels": ["corrupt"],
        "cosine_schedule": ["cosine_lr"],
        "adamw_rms_step": ["adamw_rms_step"],
    },
    "05L": {
        "bootstrap_difference": ["bootstrap_difference"],
        "consistent_winners": ["consistent_winners"],
        "win_rate": ["win_rate"],
        "cohen_kappa": ["cohen_kappa"],
        "lm_eval_yaml": ["capitals_task"],
    },
}


def test_every_check_answers_any_answer_in_one_line(solved):
    assert {lab: sorted(names) for lab, names in STUDENT_ANSWERS.items()} == {
        lab: sorted(f.__name__ for f in checks) for lab, checks in check.CHECKS.items()
    }
    for checks in check.CHECKS.values():
        assert all(hasattr(function, "__wrapped__") for function in checks)  # each through answer_check
    assert hasattr(check.question, "__wrapped__")
    tried = 0
    for lab, names in STUDENT_ANSWERS.items():
        calls_of = lambda answers: lab_calls(lab, {**solved[lab], **answers})  # noqa: E731
        for name, keys in names.items():
            for key in keys:
                callable_answer = callable(solved[lab][key])
                for what, junk in JUNK.items():
                    forms = {"returned": lambda *a, _j=junk, **k: _j} if callable_answer else {}
                    if key != "capitals_task":
                        forms["given"] = junk
                    for form, answer in forms.items():
                        with pytest.raises(CheckFailed) as raised:
                            calls_of({key: answer})[name]()
                        message = str(raised.value)
                        assert message.startswith(f"{name}: expected ") and "\n" not in message, (name, what, form)
                        assert "Hint: " in message, message
                        tried += 1
    for junk in JUNK.values():
        with pytest.raises(CheckFailed) as raised:
            check.question("03L", 1, junk)
        assert str(raised.value).startswith("question 1: expected ") and "\n" not in str(raised.value)
    print(f"{tried} wrong-typed answers, each refused in one line")


def test_a_check_names_the_type_it_expected_and_the_one_it_got(solved):
    ins, zero = solved["01L"], solved["02L"]
    with pytest.raises(CheckFailed, match=r"as a number, got str '0\.75'"):
        check.win_rate(lambda w, s: "0.75")
    with pytest.raises(CheckFailed, match=r"the task as str, got dict"):
        check.lm_eval_yaml({"task": "capitals"}, solved["05L"]["profile"].models["gpt2"])
    with pytest.raises(CheckFailed, match=r"the prompt as str, got NoneType None"):
        check.prompt_template(lambda row: None)
    with pytest.raises(
        CheckFailed, match=r"input_ids as a tensor of integers \(torch.long\), got torch.float32 Tensor"
    ):
        check.padding_masked(lambda rows: {k: v.float() for k, v in ins["collate"](rows).items()}, ins["tokenizer"])
    with pytest.raises(CheckFailed, match=r"the trainer as Trainer, got list"):
        check.loss_falls(ins["trainer"].state.log_history, 0.2)
    with pytest.raises(CheckFailed, match=r"got ZeroDivisionError: division by zero in <lambda>, line \d+"):
        check.cohen_kappa(lambda a, b: 1 / 0)  # the student's own error, named with where it was raised
    # a number off by 3 bytes in 933 million: both shown with the digits that tell them apart
    from course_utils.from_notebooks.zero_memory import SETUPS, paper_bytes

    want = round(paper_bytes(60_506_624, SETUPS[0], 1))
    with pytest.raises(CheckFailed, match=rf"1 GPUs = {want}, got {want + 3}\."):
        check.model_state_bytes(lambda p, setup, gpus: zero["model_state_bytes"](p, setup, gpus) + 3)
