"""benchmarks/RESULTS.md is written by the benchmarks: a run replaces its own section and keeps the others."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import results  # noqa: E402


def test_a_finished_run_replaces_only_its_own_section(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS", tmp_path / "RESULTS.md")
    monkeypatch.setattr(results, "machine", lambda: "a test machine")
    monkeypatch.setattr(sys, "argv", ["bench_b.py", "--rows", "3"])
    for name, figure in (("bench_b", "1.0"), ("bench_a", "2.0"), ("bench_b", "3.0")):
        assert results.recorded(name, lambda f=figure: print(f"rows/s: {f}")) == 0
    text = (tmp_path / "RESULTS.md").read_text()
    assert text.startswith(results.HEADER.rstrip())
    assert text.index("## bench_a") < text.index("## bench_b")  # sorted by name
    assert "rows/s: 2.0" in text and "rows/s: 3.0" in text and "rows/s: 1.0" not in text
    assert "`python benchmarks/bench_b.py --rows 3` on a test machine" in text


def test_a_failed_run_leaves_the_file_alone(tmp_path, monkeypatch):
    path = tmp_path / "RESULTS.md"
    monkeypatch.setattr(results, "write_section", lambda n, t: pytest.fail("a failed run must not write"))
    assert results.recorded("bench_c", lambda: 1) == 1
    assert not path.exists()


def test_every_benchmark_records_its_output():
    for script in sorted((Path(results.__file__).parent).glob("*.py")):
        if script.name != "results.py":
            assert f'recorded("{script.stem}", main)' in script.read_text(), script.name


def test_the_readme_links_to_the_results_and_copies_no_benchmark_table():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "benchmarks/RESULTS.md" in readme
    assert "## Benchmark figures" not in readme and "rows/s" not in readme


def test_every_benchmark_option_has_help():
    import re

    for script in sorted(Path(results.__file__).parent.glob("bench*.py")) + [
        Path(results.__file__).with_name("full_run_cost.py")
    ]:
        for call in re.findall(r"add_argument\((.*?)\)\n", script.read_text(), re.S):
            assert "help=" in call, f"{script.name}: {call}"


def test_the_trainers_progress_dicts_are_left_out_and_the_figures_kept():
    output = (
        "rows  seed  acc\n{'loss': '8.344', 'grad_norm': '6.284', 'epoch': '0.1333'}\n"
        "{'train_runtime': '32.13', 'train_loss': '0.6877', 'epoch': '2'}\n 1200    42   0.848\n"
    )
    assert results.figures_only(output) == "rows  seed  acc\n 1200    42   0.848"
