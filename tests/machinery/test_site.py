"""The site builder on made-up runs: what it refuses (one line each, no site), what it cleans off the pages, and
what it keeps. tests/test_site_in_browser.py builds the site of the real smoke run and opens it in Chromium."""

from __future__ import annotations

import base64
import json
import subprocess

import nbformat
import pytest
from conftest import course_command

from course_utils.machinery import site
from course_utils.machinery.paths import notebooks_dir
from course_utils.machinery.provenance import provenance_of, stamp

# A 1x1 PNG: the made-up lessons' figure.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fe"
        "a7d6a5a50000000049454e44ae426082"
    )
).decode()
WIDGET = {"model_id": "abc", "version_major": 2, "version_minor": 0}


def lesson(name: str, last_cell_fails: bool = False, extra_markdown: str = "") -> nbformat.NotebookNode:
    """A made-up executed lesson: a title, some math, a figure, a frozen progress bar, coloured and tqdm text."""
    code = nbformat.v4.new_code_cell("print('hello')", execution_count=1)
    code.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="accuracy 0.93\n"),
        nbformat.v4.new_output(
            "display_data", data={"application/vnd.jupyter.widget-view+json": WIDGET, "text/plain": "generate:   0%|"}
        ),
        nbformat.v4.new_output(
            "stream",
            name="stderr",
            text="generate: 100%|##########| 8/8 [00:01<00:00,  6.1it/s]\r\n\x1b[31mred words\x1b[0m\n"
            "/x/site-packages/lib.py:12: UserWarning: a library's notice\n  warnings.warn(\n",
        ),
        nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"}),
    ]
    last = nbformat.v4.new_code_cell("1 / 0", execution_count=2)
    if last_cell_fails:
        last.outputs = [nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero")]
    title = name.replace("_", " ")
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(f"# {title}\n\nWhat this lesson does, with $m = 16 \\Psi$ bytes.\n"),
            nbformat.v4.new_markdown_cell(f"## The work\n\n{extra_markdown}"),
            code,
            last,
        ],
        metadata={
            "widgets": {"application/vnd.jupyter.widget-state+json": {"state": {}}},
            "language_info": {"name": "python"},
        },
    )
    return notebook


def write_run(
    folder, profile: str = "smoke", skip: str = "", failing: str = "", extra: dict | None = None, labs: bool = False
):
    """A run folder as `course run` leaves it, every lesson stamped; ``skip`` one missing, ``failing`` one failed;
    ``labs``: the labs' solutions too, as `course run --labs` adds them."""
    folder.mkdir(parents=True, exist_ok=True)
    record = {"profile": profile, "quick": False, "commit": "0123456789ab", "device": "CPU: test (2 cores)"}
    for name in site.lesson_names() + (site.lab_names() if labs else []):
        if name == skip:
            continue
        notebook = lesson(name, last_cell_fails=name == failing, extra_markdown=(extra or {}).get(name, ""))
        stamp(notebook, {**record, "seconds": 1.5})
        nbformat.write(notebook, folder / f"{name}.ipynb")
    (folder / "metrics.json").write_text(json.dumps({}))
    return folder


def refused(run, **options) -> str:
    with pytest.raises(site.SiteError) as caught:
        site.build_site(site.SiteSettings.for_profile("smoke", run, **options), echo=lambda *a, **k: None)
    return str(caught.value)


def no_site_left(run) -> bool:
    return not (run / site.SITE_FOLDER).exists() and not list(run.glob(".site-building-*"))


def test_a_run_folder_that_is_not_there_names_the_command(tmp_path):
    result = subprocess.run(
        course_command("site", "--output-dir", tmp_path / "nothing"), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"course site: no run of the smoke profile in {tmp_path / 'nothing'}: run `make course` first."
    ]


def test_a_missing_lesson_gives_one_line_and_no_site(tmp_path):
    run = write_run(tmp_path / "run", skip="03_cnn_dailymail_rouge")
    result = subprocess.run(course_command("site", "--output-dir", run), capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert (
        "lesson 03_cnn_dailymail_rouge is missing from" in result.stderr and "run `make course` first" in result.stderr
    )
    assert no_site_left(run)


def test_a_lesson_whose_last_cell_failed_gives_one_line_and_no_site(tmp_path):
    run = write_run(tmp_path / "run", failing="04_nanot5_pretraining")
    message = refused(run)
    assert message == (
        f"lesson 04_nanot5_pretraining failed at cell 3 (ZeroDivisionError: division by zero) in {run}: "
        "fix it and run `make course` again."
    )
    assert no_site_left(run)


def test_a_lesson_that_stopped_early_or_came_from_elsewhere_is_refused(tmp_path):
    run = write_run(tmp_path / "run")
    path = run / "01_t5_small_imdb_finetune.ipynb"
    notebook = nbformat.read(path, as_version=4)
    notebook.cells[3].execution_count = None  # the kernel died before the last cell
    nbformat.write(notebook, path)
    assert "lesson 01_t5_small_imdb_finetune stopped before cell 3" in refused(run)
    del notebook.metadata["course"]  # executed by hand in Jupyter, not by `course run`
    nbformat.write(notebook, path)
    assert "was not executed by `course run` (no provenance)" in refused(run)
    full = write_run(tmp_path / "full-run", profile="full")
    assert "was executed in the full profile, not smoke" in refused(full)
    assert no_site_left(run) and no_site_left(full)


def test_solutions_are_asked_for_only_when_they_ran(tmp_path):
    run = write_run(tmp_path / "run")
    message = refused(run, with_solutions=True)
    assert message.startswith("the solution of lab 00L_what_fits is missing from")
    assert message.endswith("run `course run --profile smoke --labs` first.")


def test_a_stream_loses_its_colours_bars_and_warning_source_lines():
    text = (
        "generate:  40%|####      | 2/5 [00:01<00:02,  1.9it/s]\rgenerate: 100%|##########| 5/5 [00:02<00:00]\n"
        "\x1b[1;31mbold red\x1b[0m and plain\n"
        "/env/lib/python3.11/site-packages/x.py:7: FutureWarning: `foo` is deprecated\n"
        "  warnings.warn(\n"
        "  an indented line of the notebook's own\n"
    )
    assert site.clean_stream(text) == (
        "bold red and plain\nFutureWarning: `foo` is deprecated\n  an indented line of the notebook's own\n"
    )


def test_the_header_goes_under_the_title():
    notebook = lesson("01_x")
    stamp(notebook, {"profile": "smoke", "quick": False, "commit": "abc", "device": "CPU"})
    staged = site.with_header(notebook, site.page_header(provenance_of(notebook)))
    sources = ["".join(cell.source) for cell in staged.cells]
    assert sources[0] == "# 01 x"
    assert "Executed in the **smoke** profile on" in sources[1] and "smoke-note" in sources[1]
    assert sources[2].startswith("What this lesson does")
    assert len(notebook.cells) == 4, "the run's own notebook is left as it was"


@pytest.mark.slow
def test_a_complete_run_becomes_clean_pages_and_a_warning_keeps_the_last_site(tmp_path):
    run = write_run(
        tmp_path / "run", extra={"02_deepspeed_zero": "The configs: [deepspeed_configs/](../deepspeed_configs/)."}
    )
    built = site.build_site(site.SiteSettings.for_profile("smoke", run), echo=lambda *a, **k: None)
    assert built == run / "site" and not list(run.glob(".site-building-*"))
    pages = {name: (built / "notebooks" / f"{name}.html").read_text() for name in site.lesson_names()}
    for name, html in pages.items():
        assert 'class="warning smoke-note admonition"' in html, name
        assert "Executed in the <strong>smoke</strong> profile on" in html and "0123456789ab" in html
        assert "accuracy 0.93" in html and "red words" in html and "UserWarning: a library's notice" in html
        for residue in ("widget-view+json", "widget-state", "it/s]", "\x1b[", "warnings.warn(", "Loading widget"):
            assert residue not in html, (name, residue)
        assert html.count('<img alt="_images/') + html.count('<img alt="../_images/') == 1, name
    # A link to a repository file that is no page: its path, shown plainly (no --source-url).
    assert '<span class="pre">deepspeed_configs/</span></code>.</p>' in pages["02_deepspeed_zero"]
    labs = {path.stem for path in (notebooks_dir() / "labs").glob("*.ipynb")}
    for lab in labs:
        html = (built / "notebooks" / "labs" / f"{lab}.html").read_text()
        href = html.split('class="reference download internal" download="" href="', 1)[1].split('"', 1)[0]
        downloaded = (built / "notebooks" / "labs" / href).resolve()
        assert downloaded.read_bytes() == (notebooks_dir() / "labs" / f"{lab}.ipynb").read_bytes(), lab
    assert not (built / "notebooks" / "labs" / "solutions").exists()
    index = (built / "index.html").read_text()
    assert "The lessons" in index and "00L_what_fits" in index and "smoke-note" in index
    assert "Its 6 lessons were executed in the <strong>smoke</strong> profile" in index
    assert (built / "_static" / "mathjax" / "tex-chtml.js").exists()

    # A broken link fails the build: the site of the last good build stays whole, and no half-built one is left.
    before = (built / "index.html").stat().st_mtime_ns
    broken = write_run(run, extra={"03_cnn_dailymail_rouge": "See [the notes](notes_that_do_not_exist.md)."})
    message = refused(broken)
    assert message.startswith("Sphinx warned 1 time(s), so no site was written; the first: notebooks/03_cnn")
    assert "notes_that_do_not_exist" in message and str(run / site.WARNINGS_FILE) in message
    assert (built / "index.html").stat().st_mtime_ns == before and not list(run.glob(".site-building-*"))


@pytest.mark.slow
def test_a_full_run_has_no_smoke_note_links_the_repository_and_its_solutions_when_asked(tmp_path):
    extra = {"02_deepspeed_zero": "[configs](../deepspeed_configs/)"}
    run = write_run(tmp_path / "run", profile="full", extra=extra, labs=True)
    settings = site.SiteSettings.for_profile(
        "full", run, with_solutions=True, source_url="https://example.org/course/blob/main"
    )
    built = site.build_site(settings, echo=lambda *a, **k: None)
    for name in site.lab_names():
        solution = (built / "notebooks" / "labs" / "solutions" / f"{name}.html").read_text()
        assert "Executed in the <strong>full</strong> profile" in solution and "accuracy 0.93" in solution
    html = (built / "notebooks" / "02_deepspeed_zero.html").read_text()
    assert "smoke-note" not in html and "Executed in the <strong>full</strong> profile" in html
    assert 'href="https://example.org/course/blob/main/deepspeed_configs"' in html
    assert 'href="https://example.org/course/blob/main/course_utils"' in (built / "index.html").read_text()
