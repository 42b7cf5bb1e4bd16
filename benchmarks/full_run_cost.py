"""What the full profile costs on one GPU: each notebook's training FLOPs, and their time on an A100 and an H100/H200.

    python benchmarks/full_run_cost.py          # prints the arithmetic and a markdown table

FLOPs. A token that passes through W weights costs 2·W FLOPs forward and 4·W backward, so training
costs 6·W per token (Kaplan et al., 2020), plus attention's own products: 4·d_attn·n per token and
layer for n attended positions, forward (QKᵀ and AV), tripled for training. W counts each stack's
matrices: the encoder's for input tokens, the decoder's and the output layer's for target tokens.
Embedding look-ups are free. The architectures are the published configs, built on PyTorch's meta
device (no weights, no download).

Time. FLOPs / (peak × utilisation). Peaks are NVIDIA's dense bf16 figures: A100 312 TFLOP/s,
H100 SXM and H200 989 TFLOP/s. The utilisation is measured, not assumed: nanoT5's T5 v1.1 base step
(batch 128 × 512 inputs / 114 targets, bf16 + compile) took 0.56 s on an A100, and this script
computes that step's FLOPs and divides. Applying nanoT5's utilisation to the smaller models and
batches of the other lessons is optimistic (small matrices use a GPU less well), so read those
rows as a floor. Generation (notebook 01's accuracy, notebook 03's summaries) is bound by the time
of each decoding step rather than by FLOPs. Once the GPU check has been recorded
(``gpu_check.json`` in this folder, from ``make gpu-check``), a second table multiplies its measured
step times by the same step counts, and says which figures are measured and which estimated.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "rehearsal"))

from hub_repos import PUBLISHED_CONFIGS  # noqa: E402

PEAK_TFLOPS = {"A100": 312.0, "H100/H200": 989.0}
NANOT5_SECONDS_PER_STEP_A100 = 0.56  # nanoT5's README: bf16 + torch.compile, one A100
IMDB_TRAIN, IMDB_TEST = 25_000, 25_000
# Assumed: T5 pieces per IMDB review after the 512 cut (about 230 words at ~1.3 pieces per word).
# Notebook 01's histogram shows the real figure on your run; the time scales with it.
IMDB_MEAN_TOKENS = 300
ANSWER_TOKENS = 3  # "positive" / "negative" and </s>
NOTEBOOK_PRETRAIN_STEPS, RECIPE_STEPS, BATCH, INPUTS, TARGETS = 6000, 65536, 128, 512, 114
# Generation runs one decoding step after another. Counted from the notebooks' settings: accuracy in
# batches of 64 reviews (FinetuneConfig.generate_batch_size) of 3 answer tokens; lesson 03's 100 articles
# in batches of 8 for 80 new tokens, in six passes (t5-small, t5-base and a third T5 pass, GPT-2 three ways).
EVAL_BATCH, ARTICLES, SUMMARY_BATCH, NEW_TOKENS, SUMMARY_PASSES = 64, 100, 8, 80, 6
# Assumed, not measured: the time of one decoding step with Hugging Face generate on a GPU, mostly
# Python and kernel-launch overhead at these sizes. `make rehearse` on a GPU will measure it.
STEP_MS_RANGE = (10, 30)


def t5_weights(name: str) -> dict[str, int]:
    """Matrix weights per token of the encoder stack, the decoder stack and the output layer; widths."""
    import torch
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    from course_utils.models_and_data.models import untie_output_layer

    config = AutoConfig.for_model(**PUBLISHED_CONFIGS[name])
    with torch.device("meta"):
        model = AutoModelForSeq2SeqLM.from_config(config)
        if PUBLISHED_CONFIGS[name].get("tie_word_embeddings") is False:
            untie_output_layer(model)

    def matrices(module) -> int:
        return sum(
            p.numel()
            for n, p in module.named_parameters()
            if p.dim() == 2 and "embed_tokens" not in n and "relative_attention_bias" not in n
        )

    return {
        "encoder": matrices(model.encoder),
        "decoder": matrices(model.decoder),
        "output": model.lm_head.weight.numel(),
        "layers": config.num_layers,
        "inner": config.num_heads * config.d_kv,
    }


def row_flops(w: dict, inputs: int, targets: int) -> float:
    """FLOPs of training on one row: 6·N·D for the encoder's inputs and for the decoder's targets (each weight
    does 2 FLOPs a token forward and 4 backward; Kaplan et al. 2020, section 2.1), plus attention's own
    products (encoder self, decoder self and cross)."""
    matmuls = 6 * w["encoder"] * inputs + 6 * (w["decoder"] + w["output"]) * targets
    attention = 3 * 4 * w["inner"] * w["layers"] * (inputs * inputs + targets * targets + targets * inputs)
    return matmuls + attention


def forward_flops(w: dict, inputs: int, targets: int) -> float:
    return row_flops(w, inputs, targets) / 3


def utilisation() -> float:
    step = BATCH * row_flops(t5_weights("google/t5-v1_1-base"), INPUTS, TARGETS)
    return step / NANOT5_SECONDS_PER_STEP_A100 / (PEAK_TFLOPS["A100"] * 1e12)


def accuracy_steps(runs: int) -> int:
    """Sequential decoding steps of ``runs`` accuracy measurements over IMDB's test split."""
    return runs * -(-IMDB_TEST // EVAL_BATCH) * ANSWER_TOKENS


def decoding_steps() -> dict[str, int]:
    return {
        "01 (1 epoch of t5-small, accuracy twice)": accuracy_steps(2),
        "02 (the same, plain and under ZeRO)": accuracy_steps(2),
        "03 (summaries of 100 articles, six passes)": SUMMARY_PASSES * -(-ARTICLES // SUMMARY_BATCH) * NEW_TOKENS,
        "04 (6,000 pretraining steps, 2 fine-tunes of T5 v1.1 base)": accuracy_steps(2),
        "the recipe's command (65,536 steps)": 0,
    }


def notebook_flops() -> dict[str, float]:
    """Training (and scoring-forward) FLOPs of each full-profile notebook."""
    small, v11 = t5_weights("t5-small"), t5_weights("google/t5-v1_1-base")
    epoch_small = IMDB_TRAIN * row_flops(small, IMDB_MEAN_TOKENS, ANSWER_TOKENS)
    score_small = IMDB_TEST * forward_flops(small, IMDB_MEAN_TOKENS, ANSWER_TOKENS)
    epoch_v11 = IMDB_TRAIN * row_flops(v11, IMDB_MEAN_TOKENS, ANSWER_TOKENS)
    score_v11 = IMDB_TEST * forward_flops(v11, IMDB_MEAN_TOKENS, ANSWER_TOKENS)
    pretrain_step = BATCH * row_flops(v11, INPUTS, TARGETS)
    return {
        "01 (1 epoch of t5-small, accuracy twice)": epoch_small + 2 * score_small,
        "02 (the same, plain and under ZeRO)": 2 * (epoch_small + score_small),
        "03 (summaries of 100 articles, six passes)": 0.0,  # generation only: see the decoding steps
        "04 (6,000 pretraining steps, 2 fine-tunes of T5 v1.1 base)": NOTEBOOK_PRETRAIN_STEPS * pretrain_step
        + 2 * (epoch_v11 + score_v11),
        "the recipe's command (65,536 steps)": RECIPE_STEPS * pretrain_step,
    }


def measured_table(checked: dict) -> list[str]:
    """The notebooks' times from the GPU check's measured steps: fine-tune step (16 x 512), pretraining
    step (128 rows) and decoding steps, times the step counts above. Parts that did not run stay out."""
    parts = {name: part["figures"] for name, part in checked["parts"].items() if part.get("status") == "ok"}
    device = parts.get("environment", {}).get("device", {}).get("gpu_name", "a GPU")
    lines = [
        f"Measured by the GPU check on {device}, {checked['when']}:",
        "",
        "| notebook | measured steps x their time | measured | estimated or left out |",
        "|---|---:|---|---|",
    ]
    finetune, pretraining, decoding = parts.get("finetune_step"), parts.get("pretrain_step"), parts.get("decoding")
    epoch_steps = -(-IMDB_TRAIN // 16)
    decode_ms = {key: row["ms_per_step"] for key, row in (decoding or {}).items()}
    steps = decoding_steps()

    def decode(name: str, label: str | None) -> float:
        if not decode_ms:
            return 0.0
        ms = decode_ms[label] if label else statistics.mean(decode_ms.values())
        return steps[name] * ms / 1000

    rows = {}
    if finetune:
        epoch = epoch_steps * finetune["seconds_per_step"]
        name = "01 (1 epoch of t5-small, accuracy twice)"
        rows[name] = (
            epoch + decode(name, "t5-small, beam 4"),
            "fine-tune step (16 x 512, an upper bound: reviews average fewer tokens), decoding step of t5-small",
            "accuracy decoding is greedy, not beam 4",
        )
        name = "02 (the same, plain and under ZeRO)"
        rows[name] = (2 * epoch + decode(name, "t5-small, beam 4"), "the same, twice", "ZeRO's own overhead")
    if decode_ms:
        name = "03 (summaries of 100 articles, six passes)"
        rows[name] = (decode(name, None), "decoding steps of t5-small, t5-base, GPT-2 (mean)", "-")
    if pretraining:
        name = "04 (6,000 pretraining steps, 2 fine-tunes of T5 v1.1 base)"
        rows[name] = (
            NOTEBOOK_PRETRAIN_STEPS * pretraining["seconds_per_step"] + decode(name, "t5-base, beam 4"),
            "pretraining step (128 rows, bf16, compile)",
            "the 2 fine-tunes (see the FLOP table)",
        )
        rows["the recipe's command (65,536 steps)"] = (
            RECIPE_STEPS * pretraining["seconds_per_step"],
            "pretraining step",
            "evaluations and checkpoints",
        )
    for name, (seconds, what, rest) in rows.items():
        lines.append(f"| {name} | {_duration(seconds)} | {what} | {rest} |")
    return lines


def main() -> int:
    share = utilisation()
    v11 = t5_weights("google/t5-v1_1-base")
    step = BATCH * row_flops(v11, INPUTS, TARGETS)
    print(f"T5 v1.1 base: {v11['encoder']:,} encoder + {v11['decoder']:,} decoder + {v11['output']:,} output weights")
    print(
        f"nanoT5's step: {BATCH} rows x row_flops = {step:.3e} FLOPs; in {NANOT5_SECONDS_PER_STEP_A100} s on an "
        f"A100 that is {step / NANOT5_SECONDS_PER_STEP_A100 / 1e12:.0f} TFLOP/s = {share:.0%} of its "
        f"{PEAK_TFLOPS['A100']:.0f} TFLOP/s peak"
    )
    print(
        f"t5-small, one IMDB epoch: {IMDB_TRAIN:,} reviews x {IMDB_MEAN_TOKENS} tokens (assumed mean) -> "
        f"{IMDB_TRAIN * row_flops(t5_weights('t5-small'), IMDB_MEAN_TOKENS, ANSWER_TOKENS):.2e} FLOPs\n"
    )
    low, high = STEP_MS_RANGE
    print(
        "| notebook | FLOPs (training and scoring) | "
        + " | ".join(f"{gpu} at {share:.0%} of peak" for gpu in PEAK_TFLOPS)
        + f" | decoding steps | at {low}-{high} ms a step (assumed) |"
    )
    print("|---|---:|" + "---:|" * (len(PEAK_TFLOPS) + 2))
    steps = decoding_steps()
    for name, flops in notebook_flops().items():
        times = [flops / (peak * 1e12 * share) for peak in PEAK_TFLOPS.values()]
        decode = (
            f"{_duration(steps[name] * low / 1000)} to {_duration(steps[name] * high / 1000)}" if steps[name] else "-"
        )
        print(
            f"| {name} | {f'{flops:.2e}' if flops else '-'} | "
            + " | ".join(_duration(t) if flops else "-" for t in times)
            + f" | {steps[name]:,} | {decode} |"
        )
    print()
    MEASURED = Path(__file__).with_name("gpu_check.json")  # what tools/gpu_check.py --record keeps

    if MEASURED.exists():
        print("\n".join(measured_table(json.loads(MEASURED.read_text()))))
    else:
        print(f"No GPU check recorded yet ({MEASURED.name}): the decoding times above are assumed, not measured.")
    return 0


def _duration(seconds: float) -> str:
    return (
        f"{seconds / 3600:.1f} h"
        if seconds >= 3600
        else f"{seconds / 60:.0f} min"
        if seconds >= 60
        else f"{seconds:.0f} s"
    )


if __name__ == "__main__":
    from results import recorded

    sys.exit(recorded("full_run_cost", main))
