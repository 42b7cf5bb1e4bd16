"""metrics.json: one object per notebook, figures with values and units, written atomically."""

import json

import numpy as np
import pytest

from course_utils.machinery.metrics import forget_metrics, read_metrics, record_metrics


def test_record_merges_figures_per_notebook(tmp_path):
    record_metrics(tmp_path, "01_a", {"accuracy": (0.5, "fraction")})
    record_metrics(tmp_path, "01_a", {"seconds": (12.0, "s")})
    record_metrics(tmp_path, "02_b", {"loss": (np.float32(1.25), "nats")})
    data = json.loads((tmp_path / "metrics.json").read_text())
    assert data["01_a"]["figures"] == {
        "accuracy": {"value": 0.5, "unit": "fraction"},
        "seconds": {"value": 12.0, "unit": "s"},
    }
    assert data["02_b"]["figures"]["loss"] == {"value": 1.25, "unit": "nats"}
    assert "recorded_at" in data["01_a"]
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]  # no temporary files left


@pytest.mark.parametrize(
    "figure, message",
    [
        ((float("nan"), "s"), "finite"),
        ((1.0,), "pair"),
        (([1], "s"), "value of type list"),
        ((1.0, None), "unit string"),
    ],
)
def test_bad_figures_are_refused_by_name(tmp_path, figure, message):
    with pytest.raises(ValueError, match=message) as err:
        record_metrics(tmp_path, "01_a", {"bad_one": figure})
    assert "bad_one" in str(err.value)
    assert not (tmp_path / "metrics.json").exists()


def test_forget_drops_only_the_named_notebooks(tmp_path):
    record_metrics(tmp_path, "01_a", {"x": (1, "")})
    record_metrics(tmp_path, "02_b", {"y": (2, "")})
    forget_metrics(tmp_path, ["01_a"])
    assert list(read_metrics(tmp_path)) == ["02_b"]


def test_corrupt_file_gives_a_clear_error(tmp_path):
    (tmp_path / "metrics.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_metrics(tmp_path)


def test_nested_figures_and_tables_flatten_with_one_unit_per_kind(tmp_path):
    import pandas as pd

    table = pd.DataFrame({"rouge1": [0.3, 0.4], "words": [50.0, float("nan")]}, index=["t5_small", "lead 3"])
    entry = record_metrics(
        tmp_path,
        "03_c",
        {"systems": table, "accuracy": {"before": 0.5, "after": 0.75}, "device": ("cpu", "")},
        units={"rouge1": "F", "words": "words", "accuracy": "fraction"},
    )
    assert {name: (f["value"], f["unit"]) for name, f in entry["figures"].items()} == {
        "systems_t5_small_rouge1": (0.3, "F"),
        "systems_t5_small_words": (50.0, "words"),
        "systems_lead_3_rouge1": (0.4, "F"),  # the empty cell is left out, not recorded as NaN
        "accuracy_before": (0.5, "fraction"),
        "accuracy_after": (0.75, "fraction"),
        "device": ("cpu", ""),
    }


def test_a_figure_without_a_unit_is_named():
    from course_utils.machinery.metrics import flatten_figures

    with pytest.raises(ValueError, match="'runs_plain_seconds' has no unit.*runs, plain, seconds"):
        flatten_figures({"runs": {"plain": {"seconds": 3.0}}}, units={"loss": "nats"})
    assert flatten_figures(
        {"runs": {"plain": {"seconds": 3.0}}}, units={"runs_plain_seconds": "s", "seconds": "min"}
    ) == {"runs_plain_seconds": (3.0, "s")}  # the whole name wins over a key
