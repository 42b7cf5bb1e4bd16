"""Each notebook's key figures, kept in ``outputs/<profile>/metrics.json``.

One object per notebook, each figure with a name, a value and a unit. A notebook hands over its
figures as they are, nested dicts and pandas tables included, with one unit per kind of figure:

    record_metrics(session.output_dir, "01_t5_small_imdb_finetune",
                   {"accuracy": {"before": 0.51, "after": 0.91}, "train_time": 152.3})

gives ``{"01_t5_small_imdb_finetune": {"figures": {"accuracy_before": {"value": 0.51,
"unit": "fraction"}, "accuracy_after": ..., "train_time": ...}, "recorded_at": "..."}}``.
Nested keys are joined with "_" (a table's row, then its column); a unit is looked up by the
whole name first, then by each key from the innermost out, in ``UNITS`` unless the call passes
its own ``units``; a figure without a unit is an error. The runner turns the file into
``report.md``. (scrapbook once did this job but is unmaintained.)
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

METRICS_FILE = "metrics.json"

# The unit of every figure the notebooks record, by its name or one of its keys; '' for none.
UNITS = {
    # 00: the machine
    "device": "",
    "gpu_name": "",
    "cpu_name": "",
    "bf16_supported": "",
    "version": "",
    "compile_builds_kernels": "",
    "gpu_count": "GPUs",
    "gpus_visible": "GPUs",
    "gpu_memory_gib": "GiB",
    "ram_gib": "GiB",
    "cpu_cores": "cores",
    "matmul_throughput": "TFLOP/s",
    "deepspeed_ops_buildable": "ops",
    # 01, 02 and 04: fine-tuning and pretraining
    "accuracy": "fraction",
    "accuracy_difference": "fraction",
    "agreement": "fraction",
    "unknown_answers": "reviews",
    "rows": "reviews",
    "confusion_after": "reviews",
    "train_loss": "nats/token",
    "final_loss": "nats/token",
    "nll": "nats/token",
    "input_gap": "nats/token",
    "train_time": "s",
    "train_seconds": "s",
    "pretrain_seconds_per_step": "s",
    "train_steps": "steps",
    "pretrain_steps": "steps",
    "train_flops": "FLOPs",
    "model_parameters": "parameters",
    "peak_memory_mib": "MiB",
    "t5_3b_8gpus": "GiB",
    "loss_relative_gap": "fraction",
    "final_loss_relative_gap": "fraction",
    "settings_differ": "settings",
    "learning_rate_gap": "",
    "disagreements": "reviews",
    "relative_drop": "fraction",
    "accuracy_margin_over_random_init": "fraction",
    "payoff": "fraction",  # 04: one start's accuracy minus another's, with its interval
    "gradient_accumulation_steps": "micro-batches per step",
    "raw_row_length": "tokens",
    # lab 01L: instruction tuning
    "examples": "examples",
    "trainable_parameters": "parameters",
    # 03: summaries
    "test_articles": "articles",
    "t5_small_exact_match": "fraction",
    "rouge1": "F",
    "rouge2": "F",
    "rougeL": "F",
    "rougeLsum": "F",
    "repeated_trigrams": "fraction",
    # 05: evaluation
    "rouge1_gap": "F",
    "p": "",
    "articles_needed": "articles",
    "accuracy_gap": "fraction",
    "lm_eval_accuracy": "fraction",
    "generate_accuracy": "fraction",
    "methods_disagree": "reviews",
    "perplexity": "",
    "judge": "fraction",
    "control_judge": "fraction",
    "consistent_articles": "articles",
    "consistent_p": "",
    "articles": "articles",
    "kappa_with_rouge": "",
    "generation_time": "s",
}


def training_losses(log_history: list[dict]) -> list[tuple[int, float]]:
    """[(step, loss)] of the training-loss lines in a Trainer's ``state.log_history``."""
    return [(row["step"], row["loss"]) for row in log_history if "loss" in row]


def _key(part) -> str:
    """A key as a figure-name part: "zero_2 + offload" -> "zero_2_offload"."""
    return re.sub(r"[^0-9A-Za-z.]+", "_", str(part)).strip("_")


def _as_mapping(figures):
    """A pandas table as {row: {column: value}} and a Series as {index: value}, empty cells left out."""
    if hasattr(figures, "to_dict") and hasattr(figures, "columns"):
        return {
            row: {column: value for column, value in cells.items() if not _missing(value)}
            for row, cells in figures.to_dict(orient="index").items()
        }
    if hasattr(figures, "to_dict"):
        return {key: value for key, value in figures.to_dict().items() if not _missing(value)}
    return figures


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def flatten_figures(figures, units: Mapping[str, str] | None = None) -> dict[str, tuple]:
    """{"a": {"b": 1}} -> {"a_b": (1, unit)}; a leaf given as (value, unit) keeps its own unit."""
    units = units or {}
    flat = {}

    def walk(node, path):
        node = _as_mapping(node)
        if isinstance(node, Mapping):
            for key, child in node.items():
                walk(child, (*path, _key(key)))
            return
        name = "_".join(path)
        if isinstance(node, tuple):
            flat[name] = node
            return
        for candidate in (name, *reversed(path)):
            if candidate in units:
                flat[name] = (node, units[candidate])
                return
        raise ValueError(
            f"Figure {name!r} has no unit: give it in units= (by its name or one of its keys, "
            f"{', '.join(path)}), '' for none."
        )

    walk(figures, ())
    return flat


def _check_figure(name: str, figure) -> dict:
    if not isinstance(name, str) or not name:
        raise ValueError(f"Figure names must be non-empty strings, got {name!r}.")
    if not (isinstance(figure, (tuple, list)) and len(figure) == 2):
        raise ValueError(f"Figure {name!r} must be a (value, unit) pair, got {figure!r}.")
    value, unit = figure
    if hasattr(value, "item"):  # numpy / torch scalars
        value = value.item()
    if not isinstance(value, (int, float, str, bool)) or value is None:
        raise ValueError(
            f"Figure {name!r} has a value of type {type(value).__name__}; use a number, a string or a bool."
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"Figure {name!r} is {value}; record only finite numbers.")
    if not isinstance(unit, str):
        raise ValueError(f"Figure {name!r} needs a unit string (use '' for none), got {unit!r}.")
    return {"value": value, "unit": unit}


def read_metrics(output_dir: str | os.PathLike) -> dict:
    """All notebooks' figures recorded under ``output_dir`` ({} when there are none yet)."""
    path = Path(output_dir) / METRICS_FILE
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON ({err}); delete it and run again.") from err


def _write_atomically(path: Path, data: dict) -> None:
    # Write a temporary file and rename it, so a crash never leaves half a file behind.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".metrics-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
    os.replace(tmp, path)


def record_metrics(
    output_dir: str | os.PathLike, notebook: str, figures: Mapping, units: Mapping[str, str] | None = None
) -> dict:
    """Merge ``figures`` (flattened by ``flatten_figures``) into this notebook's entry in metrics.json;
    return the entry."""
    units = UNITS if units is None else units
    checked = {name: _check_figure(name, fig) for name, fig in flatten_figures(figures, units).items()}
    data = read_metrics(output_dir)
    entry = data.get(notebook, {"figures": {}})
    entry["figures"].update(checked)
    entry["recorded_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    data[notebook] = entry
    _write_atomically(Path(output_dir) / METRICS_FILE, data)
    return entry


def forget_metrics(output_dir: str | os.PathLike, notebooks: list[str]) -> None:
    """Drop these notebooks' entries, so a new run never reports stale figures."""
    data = read_metrics(output_dir)
    if any(name in data for name in notebooks):
        _write_atomically(Path(output_dir) / METRICS_FILE, {k: v for k, v in data.items() if k not in notebooks})
