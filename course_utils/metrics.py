"""Each notebook's key figures, kept in ``outputs/<profile>/metrics.json``.

One object per notebook, each figure with a name, a value and a unit:

    record_metrics(session.output_dir, "01_t5_small_imdb_finetune",
                   {"accuracy_after": (0.91, "fraction"), "train_time": (152.3, "s")})

gives ``{"01_t5_small_imdb_finetune": {"figures": {"accuracy_after": {"value": 0.91,
"unit": "fraction"}, ...}, "recorded_at": "..."}}``. The runner turns the file into
``report.md``. (scrapbook once did this job but is unmaintained.)
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

METRICS_FILE = "metrics.json"


def _check_figure(name: str, figure) -> dict:
    if not isinstance(name, str) or not name:
        raise ValueError(f"Figure names must be non-empty strings, got {name!r}.")
    if not (isinstance(figure, (tuple, list)) and len(figure) == 2):
        raise ValueError(f"Figure {name!r} must be a (value, unit) pair, got {figure!r}.")
    value, unit = figure
    if hasattr(value, "item"):  # numpy / torch scalars
        value = value.item()
    if not isinstance(value, (int, float, str, bool)) or value is None:
        raise ValueError(f"Figure {name!r} has a value of type {type(value).__name__}; "
                         "use a number, a string or a bool.")
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


def record_metrics(output_dir: str | os.PathLike, notebook: str,
                   figures: Mapping[str, tuple]) -> dict:
    """Merge ``figures`` into this notebook's entry in metrics.json; return the entry."""
    checked = {name: _check_figure(name, fig) for name, fig in figures.items()}
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
        _write_atomically(Path(output_dir) / METRICS_FILE,
                          {k: v for k, v in data.items() if k not in notebooks})
