"""The course as a website: Sphinx with MyST-NB and the book theme, built from what `course run` wrote.

    course site [--profile smoke|full] [--with-solutions] [--source-url URL]   # outputs/<profile>/site/index.html

It never executes a notebook: each lesson page shows the executed copy in ``outputs/<profile>/``, with the
profile, date, commit and device it ran with (``provenance``). A lab page shows the student copy from
``notebooks/labs/`` and links it for download; the solutions, executed by ``course run --labs``, only with
``--with-solutions``. The home page includes the README's description and its lesson and lab tables (between its
``<!-- site: ... -->`` markers), and the report page is written from ``metrics.json``.

Before building, every lesson must be in the run folder, stamped by a run of this profile, and executed to its
last cell; otherwise it stops with one line that names the command to run. The site is built in a folder of its
own and moved into place only when Sphinx finished without a warning, so a failed build never leaves a site that
looks complete. The pages make no request outside the site's folder: MathJax, the fonts and the search index
are copied in, and the notebooks' widget outputs (progress bars) are dropped.
"""

from __future__ import annotations

import copy
import io
import os
import posixpath
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from course_utils.machinery.metrics import read_metrics
from course_utils.machinery.paths import notebooks_dir, output_dir, repo_root
from course_utils.machinery.provenance import provenance_of
from course_utils.machinery.runner import NotebookResult, find_notebooks, render_report, student_labs

SITE_FOLDER = "site"
WARNINGS_FILE = "site-warnings.txt"  # Sphinx's warnings of a build that failed, beside the run
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "widgets"  # the notebook-metadata key of the widgets' saved state
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# A tqdm bar written as text: "generate:  40%|####      | 2/5 [00:01<00:02,  1.9it/s]".
TQDM_LINE = re.compile(r"\d+%\|.*\|\s*\d+/\d+")
# Where Python's warnings module names the warning's source: "/path/file.py:12: UserWarning: text", then the line.
WARNING_SOURCE = re.compile(r"^\S+\.py:\d+: (\w+(?:Warning|Error)): ")
FAVICON = "_course/favicon.svg"
FAVICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1f5f8b"/>'
    '<text x="8" y="12" font-size="10" text-anchor="middle" fill="white" font-family="sans-serif">LM</text></svg>'
)
README_PARTS = ("description", "lessons", "labs")  # the README's regions between <!-- site: NAME --> markers
README_END = "<!-- site: end -->"
SMOKE_NOTE = (
    "These figures come from the **smoke profile**: small stand-in models, pretrained by the course on synthetic "
    "data and run on a CPU. They show what the lesson teaches; they are not comparable with published figures, "
    "which come from the full profile's real models and data sets on a GPU."
)


class SiteError(RuntimeError):
    """The run folder cannot make a site; the message is one line that says what to run."""


@dataclass(frozen=True)
class SiteSettings:
    """What one build of the site reads and writes; settled before anything is built."""

    profile: str  # "smoke" or "full": the run whose notebooks the pages show
    run_dir: Path  # where that run wrote its notebooks and metrics.json (outputs/<profile>)
    with_solutions: bool = False  # also the labs' solutions, executed by `course run --labs`
    source_url: str | None = None  # links to the repository's files go to SOURCE_URL/path; plain paths without

    @property
    def site_dir(self) -> Path:
        return self.run_dir / SITE_FOLDER

    @property
    def rerun(self) -> str:
        """The command that makes a complete run of this profile."""
        return "make course" if self.profile == "smoke" else f"course run --profile {self.profile}"

    @classmethod
    def for_profile(cls, profile: str, run_dir: Path | None = None, **options) -> SiteSettings:
        return cls(profile=profile, run_dir=Path(run_dir or output_dir(profile)), **options)


def lesson_names() -> list[str]:
    return [path.stem for path in find_notebooks(notebooks_dir())]


def lab_names() -> list[str]:
    return [path.stem for path in student_labs(notebooks_dir())]


def stopped_at(notebook) -> str | None:
    """Where an executed notebook stopped short, in words; None when it ran to its last cell."""
    code = [(i, cell) for i, cell in enumerate(notebook["cells"]) if cell["cell_type"] == "code"]
    for i, cell in code:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                return f"failed at cell {i} ({output.get('ename', 'an error')}: {output.get('evalue', '')[:80]})"
    if notebook.get("metadata", {}).get("papermill", {}).get("exception"):
        return "failed (papermill recorded an exception)"
    unrun = [i for i, cell in code if cell.get("execution_count") is None and "".join(cell["source"]).strip()]
    if unrun:
        return f"stopped before cell {unrun[0]}"
    return None


def executed_notebooks(settings: SiteSettings, names: list[str], what: str, rerun: str) -> dict[str, dict]:
    """Each named notebook as the run wrote it, checked to be this profile's and complete; SiteError otherwise."""
    import nbformat

    if not settings.run_dir.is_dir():
        raise SiteError(f"no run of the {settings.profile} profile in {settings.run_dir}: run `{rerun}` first.")
    found = {}
    for name in names:
        path = settings.run_dir / f"{name}.ipynb"
        if not path.exists():
            raise SiteError(f"{what} {name} is missing from {settings.run_dir}: run `{rerun}` first.")
        try:
            notebook = nbformat.read(path, as_version=4)
        except Exception as err:  # noqa: BLE001 - nbformat raises several kinds for a broken file
            raise SiteError(f"{path} is not a readable notebook ({type(err).__name__}): run `{rerun}` again.") from err
        record = provenance_of(notebook)
        if record is None:
            raise SiteError(f"{path} was not executed by `course run` (no provenance): run `{rerun}` again.")
        if record.get("profile") != settings.profile:
            raise SiteError(
                f"{path} was executed in the {record.get('profile')} profile, not {settings.profile}: "
                f"run `{rerun}` again."
            )
        stop = stopped_at(notebook)
        if stop:
            raise SiteError(f"{what} {name} {stop} in {settings.run_dir}: fix it and run `{rerun}` again.")
        found[name] = notebook
    return found


def clean_stream(text: str) -> str:
    """A stream's text without ANSI codes, tqdm bars or the source lines of warnings."""
    kept, skip_source = [], False
    for line in ANSI.sub("", text).replace("\r\n", "\n").split("\n"):
        line = line.rsplit("\r", 1)[-1]  # what a terminal shows after carriage returns
        if skip_source:  # the source line Python prints under a warning
            skip_source = False
            if line.startswith("  "):
                continue
        if TQDM_LINE.search(line):
            continue
        match = WARNING_SOURCE.match(line)
        if match:
            line, skip_source = f"{match.group(1)}: {line[match.end() :]}", True
        kept.append(line)
    return "\n".join(kept)


def clean_outputs(notebook) -> None:
    """Drop what a page should not show: widget views (a progress bar frozen at 0 % when no kernel runs them),
    their saved state, tqdm text, ANSI codes; errors' tracebacks keep their text without colour."""
    notebook["metadata"].pop(WIDGET_STATE, None)
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        outputs = []
        for output in cell.get("outputs", []):
            if WIDGET_VIEW in output.get("data", {}):
                continue
            if output.get("output_type") == "stream":
                output["text"] = clean_stream("".join(output["text"]))
                if not output["text"].strip():
                    continue
            if output.get("output_type") == "error":
                output["traceback"] = [ANSI.sub("", line) for line in output.get("traceback", [])]
            outputs.append(output)
        cell["outputs"] = outputs


def provenance_line(record: dict) -> str:
    quick = ", quick (rows and steps capped)" if record.get("quick") else ""
    return (
        f"Executed in the **{record['profile']}** profile{quick} on {record['executed']}, "
        f"commit `{record['commit']}`, on {record['device']}."
    )


def span(records: list[dict], key: str) -> str:
    """One value, or "first to last" (dates), or "a, b" (commits, devices) across a run's notebooks."""
    values = sorted({str(r[key]) for r in records})
    if len(values) == 1:
        return values[0]
    return f"{values[0]} to {values[-1]}" if key == "executed" else ", ".join(values)


def run_line(records: list[dict]) -> str:
    """Where a whole run comes from, for the home page and the report."""
    quick = " quick" if any(r.get("quick") for r in records) else ""
    return (
        f"Its {len(records)} lessons were executed in the **{records[0]['profile']}** profile{quick} on "
        f"{span(records, 'executed')}, commit `{span(records, 'commit')}`, on {span(records, 'device')}."
    )


def smoke_admonition() -> str:
    return f"```{{admonition}} Smoke profile\n:class: warning smoke-note\n{SMOKE_NOTE}\n```\n"


def page_header(record: dict) -> str:
    """The markdown a lesson page opens with: where its figures come from, and in smoke, what they are."""
    lines = [f"```{{admonition}} Where these figures come from\n:class: course-provenance\n{provenance_line(record)}"]
    lines.append("```")
    if record["profile"] == "smoke":
        lines += ["", smoke_admonition()]
    return "\n".join(lines)


def with_header(notebook, header: str):
    """A copy of ``notebook`` with a markdown cell holding ``header`` right under its title (the first cell's
    ``# `` line, which is split from the text after it), or first when it has none."""
    import nbformat

    staged = copy.deepcopy(notebook)
    cells = staged["cells"]
    first = "".join(cells[0]["source"]) if cells and cells[0]["cell_type"] == "markdown" else ""
    if first.lstrip().startswith("# "):
        title, _, rest = first.lstrip().partition("\n")
        cells[0]["source"] = title
        added = [nbformat.v4.new_markdown_cell(header)]
        if rest.strip():
            added.append(nbformat.v4.new_markdown_cell(rest.strip("\n")))
        cells[1:1] = added
    else:
        cells.insert(0, nbformat.v4.new_markdown_cell(header))
    for cell in cells:  # nbformat wants unique ids; a new cell must not repeat one
        cell.pop("id", None)
    staged["nbformat_minor"] = 4  # ids are optional before 4.5
    return staged


def report_page(settings: SiteSettings, lessons: dict[str, dict]) -> str:
    """The measured figures, as `course run` reports them, from metrics.json and the notebooks' own records."""
    results = [
        NotebookResult(name, settings.run_dir / f"{name}.ipynb", provenance_of(nb).get("seconds", 0.0))
        for name, nb in lessons.items()
    ]
    records = [provenance_of(nb) for nb in lessons.values()]
    quick = any(r.get("quick") for r in records)
    report = render_report(
        results, read_metrics(settings.run_dir), settings.profile, quick, when=span(records, "executed")
    )
    title, rest = report.split("\n", 1)
    return f"{title}\n\n{run_line(records)}\n{rest}"


def home_page(
    settings: SiteSettings, source: Path, lessons: dict[str, dict], labs: list[str], solutions: list[str]
) -> str:
    """The home page: the README's parts, included from README.md itself, around where this run comes from."""
    readme = os.path.relpath(repo_root() / "README.md", source)
    parts = [
        f"```{{include}} {readme}\n:start-after: <!-- site: {part} -->\n:end-before: {README_END}\n```\n"
        for part in README_PARTS
    ]
    toc = ["```{toctree}", ":hidden:", ":caption: Lessons", "", *(f"notebooks/{name}" for name in lessons), "```"]
    toc += ["", "```{toctree}", ":hidden:", ":caption: Labs", "", *(f"notebooks/labs/{name}" for name in labs), "```"]
    if solutions:
        toc += ["", "```{toctree}", ":hidden:", ":caption: Solutions", ""]
        toc += [*(f"notebooks/labs/solutions/{name}" for name in solutions), "```"]
    toc += ["", "```{toctree}", ":hidden:", ":caption: Figures", "", "report", "```"]
    return "\n".join(
        [
            "# Fine-tuning and Evaluating LLMs",
            "",
            parts[0],
            f"This site shows one run of the course. {run_line([provenance_of(nb) for nb in lessons.values()])}",
            smoke_admonition() if settings.profile == "smoke" else "",
            parts[1],
            parts[2],
            "\n".join(toc),
            "",
        ]
    )


def lab_header(name: str) -> str:
    """The header of a lab's page: what the student copy is, and its download (the pristine copy, not the page)."""
    return (
        "```{admonition} The student copy\n:class: course-lab-download\n"
        f"Its cells have not been run. {{download}}`Download {name}.ipynb <download/{name}.ipynb>`, open it in "
        "Jupyter (`.venv/bin/jupyter lab`) and write each task's code; the check after each task tells you at once "
        "whether it is right.\n```"
    )


def stage(settings: SiteSettings, source: Path, lessons: dict, labs: list[str], solutions: dict) -> None:
    """Sphinx's source folder, laid out as the repository is (``notebooks/``, ``notebooks/labs/``), so that a link
    from one notebook to another, or from the README, resolves as it does on disk."""
    import nbformat

    for name, notebook in lessons.items():
        page = with_header(notebook, page_header(provenance_of(notebook)))
        clean_outputs(page)
        nbformat.write(page, source / "notebooks" / f"{name}.ipynb")
    downloads = source / "notebooks" / "labs" / "download"
    downloads.mkdir(parents=True)
    for name in labs:
        student = notebooks_dir() / "labs" / f"{name}.ipynb"
        shutil.copyfile(student, downloads / student.name)
        notebook = nbformat.read(student, as_version=4)
        nbformat.write(with_header(notebook, lab_header(name)), source / "notebooks" / "labs" / student.name)
    if solutions:
        (source / "notebooks" / "labs" / "solutions").mkdir()
    for name, notebook in solutions.items():
        page = with_header(notebook, page_header(provenance_of(notebook)))
        clean_outputs(page)
        nbformat.write(page, source / "notebooks" / "labs" / "solutions" / f"{name}.ipynb")
    (source / FAVICON).parent.mkdir()
    (source / FAVICON).write_text(FAVICON_SVG, encoding="utf-8")
    (source / "report.md").write_text(report_page(settings, lessons), encoding="utf-8")
    index = home_page(settings, source, lessons, labs, list(solutions))
    (source / "index.md").write_text(index, encoding="utf-8")


def sphinx_settings(settings: SiteSettings) -> dict:
    """Sphinx's configuration (no conf.py: the course's one place for it is here)."""
    return {
        "project": "Fine-tuning and Evaluating LLMs",
        "html_title": f"Fine-tuning and Evaluating LLMs ({settings.profile} run)",
        "extensions": ["myst_nb", "sphinx_copybutton", "sphinx-mathjax-offline", "course_utils.machinery.site"],
        "html_theme": "sphinx_book_theme",
        "html_theme_options": {
            "use_download_button": False,  # a lab's download is its student copy, linked on the page itself
            "use_fullscreen_button": False,
            "home_page_in_toc": True,
            "show_toc_level": 2,
        },
        "html_context": {
            "default_mode": "light"
        },  # the theme's switch starts from a mode, not from "" (a console error)
        "html_favicon": FAVICON,  # written into the source folder: a browser asks for one
        "html_show_sphinx": False,
        "html_copy_source": False,
        # Search results without each page's summary: the summary is fetched, and a page opened from disk may not
        # fetch another (Chromium refuses file:// requests), so the search would fail there.
        "html_show_search_summary": False,
        "html_last_updated_fmt": None,
        "exclude_patterns": ["notebooks/labs/download/**", "_course/**"],
        "nb_execution_mode": "off",  # the pages show the run; nothing is executed
        "nb_ipywidgets_js": {},  # no widget scripts from a CDN: the widget outputs are dropped
        "nb_merge_streams": True,
        "myst_enable_extensions": ["dollarmath", "amsmath", "colon_fence"],
        "myst_heading_anchors": 3,
        "course_source_url": settings.source_url or "",
    }


def build_site(settings: SiteSettings, echo=print) -> Path:
    """Check the run, then build its site into ``settings.site_dir``; SiteError with one line when it cannot."""
    from sphinx.application import Sphinx
    from sphinx.errors import SphinxError
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    start = time.perf_counter()
    lessons = executed_notebooks(settings, lesson_names(), "lesson", settings.rerun)
    labs = lab_names()
    solutions = (
        executed_notebooks(settings, labs, "the solution of lab", f"course run --profile {settings.profile} --labs")
        if settings.with_solutions
        else {}
    )
    echo(f"Building the site of {len(lessons)} lessons and {len(labs)} labs from {settings.run_dir} ...", flush=True)
    work = Path(tempfile.mkdtemp(prefix=".site-building-", dir=settings.run_dir))
    try:
        source = work / "source"
        (source / "notebooks").mkdir(parents=True)
        stage(settings, source, lessons, labs, solutions)
        warnings = io.StringIO()
        try:  # as sphinx-build does it: docutils' registries restored afterwards, so a second build is clean
            with patch_docutils(str(source)), docutils_namespace():
                app = Sphinx(
                    str(source),
                    None,
                    str(work / "html"),
                    str(work / "doctrees"),
                    "html",
                    confoverrides=sphinx_settings(settings),
                    status=None,
                    warning=warnings,
                    warningiserror=True,
                    freshenv=True,
                )
                app.build()
        except SphinxError as err:
            raise SiteError(f"Sphinx stopped: {str(err).splitlines()[0]}") from err
        problems = [ANSI.sub("", line) for line in warnings.getvalue().splitlines() if line.strip()]
        log = settings.run_dir / WARNINGS_FILE
        log.unlink(missing_ok=True)
        if problems or app.statuscode:
            log.write_text("\n".join(problems) + "\n", encoding="utf-8")
            first = problems[0].replace(str(source) + "/", "") if problems else f"status {app.statuscode}"
            raise SiteError(
                f"Sphinx warned {len(problems)} time(s), so no site was written; the first: {first} (all in {log})"
            )
        old = work / "previous-site"
        if settings.site_dir.exists():
            settings.site_dir.rename(old)
        (work / "html").rename(settings.site_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    echo(f"Site: {settings.site_dir / 'index.html'} ({time.perf_counter() - start:.0f} s)", flush=True)
    return settings.site_dir


# ---- the Sphinx extension: links from the README and the notebooks to the repository's own files ----


def repository_path(docname: str, target: str) -> str | None:
    """The repository path a page's link names (the source folder mirrors the repository), or None."""
    if not target or "://" in target or target.startswith(("mailto:", "#")):
        return None
    path = posixpath.normpath(posixpath.join(posixpath.dirname(docname), target.split("#", 1)[0]))
    if path.startswith("..") or path == ".":
        return None
    return path if (repo_root() / path).exists() else None


def _post_transform():
    """The transform, made on first use: Sphinx is imported only when a site is built."""
    from docutils import nodes
    from sphinx import addnodes
    from sphinx.transforms.post_transforms import SphinxPostTransform

    class RepositoryLinks(SphinxPostTransform):
        """A link to a file of the repository that is no page of the site (``course_utils/``, ``data/README.md``)
        goes to ``course_source_url`` when one is given, and is shown as its path otherwise. It runs before MyST
        resolves the links (priority 9); a link to nothing that exists is left to MyST, which warns, and the
        build stops."""

        default_priority = 8  # before MyST resolves the links (9)

        def run(self, **kwargs) -> None:
            base = self.config.course_source_url.rstrip("/")
            for node in list(self.document.findall(addnodes.pending_xref)):
                if node.get("reftype") != "myst":
                    continue
                target = node.get("reftarget", "")
                if node.get("refdomain") == "doc":
                    if target in self.env.all_docs:
                        continue
                    candidates = [target + suffix for suffix in (".md", ".ipynb", "")]
                    path = next((p for p in candidates if (repo_root() / p).exists()), None)
                else:
                    path = repository_path(node.get("refdoc", self.env.docname), target)
                if path is None:
                    continue
                text = node.astext()
                if base:
                    node.replace_self(nodes.reference(text, "", nodes.literal(text, text), refuri=f"{base}/{path}"))
                else:
                    node.replace_self(nodes.literal(text, text))

    return RepositoryLinks


def setup(app):
    app.add_config_value("course_source_url", "", "html")
    app.add_post_transform(_post_transform())
    return {"parallel_read_safe": True, "parallel_write_safe": True}
