"""The course's site, built from the smoke run that the lessons' lane just made (nbval's executed lessons, kept by
tests/conftest.py), without executing a notebook, then read in Chromium as a student would: served by Python's
http.server, and a few pages opened from disk.

Screenshots of the home page and lesson 03 go to the test's output folder (``$COURSE_OUTPUT_DIR/screenshots``).
Run alone (without the lessons), it builds from a complete ``make course`` run in outputs/smoke, copied.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from chromium import launch
from conftest import LESSONS_COLLECTED, ROOT, course_command

from course_utils.machinery import site

pytestmark = pytest.mark.slow
LESSONS = site.lesson_names()
LABS = site.lab_names()
# What a page must never show: a widget's JSON, a frozen tqdm bar, an escape code, a widget waiting for a kernel.
RESIDUE = {
    "widget JSON": re.compile(r"application/vnd\.jupyter\.widget"),
    "a tqdm bar": re.compile(r"\d+%\|[^|<]*\|\s*\d+/\d+"),
    "an ANSI escape": re.compile(r"\x1b\[|\u241b\["),
    "Loading widget": re.compile(r"Loading widget"),
}


@pytest.fixture(scope="module")
def smoke_run(request, tmp_path_factory) -> Path:
    """The lane's run; alone, a copy of make course's run (the site is built beside it, so the copy)."""
    if request.config.stash.get(LESSONS_COLLECTED, False):
        return Path(os.environ["COURSE_OUTPUT_DIR"])
    made = ROOT / "outputs" / "smoke"
    try:
        site.executed_notebooks(site.SiteSettings.for_profile("smoke", made), LESSONS, "lesson", "make course")
    except site.SiteError as err:
        pytest.skip(f"no smoke run to build from ({err}); make test runs the lessons first, in this lane")
    copy = tmp_path_factory.mktemp("smoke-run")
    for name in [*(f"{n}.ipynb" for n in LESSONS), "metrics.json"]:
        shutil.copy(made / name, copy / name)
    return copy


@pytest.fixture(scope="module")
def built(smoke_run) -> Path:
    """`course site` on the run, as an instructor types it; it must not execute anything, only read."""
    before = {p: p.stat().st_mtime_ns for p in smoke_run.glob("*.ipynb")}
    start = time.perf_counter()
    result = subprocess.run(
        course_command("site", "--output-dir", smoke_run), capture_output=True, text=True, timeout=600
    )
    print(f"course site: {time.perf_counter() - start:.1f} s\n{result.stdout}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert {p: p.stat().st_mtime_ns for p in smoke_run.glob("*.ipynb")} == before, "the run's notebooks changed"
    return smoke_run / site.SITE_FOLDER


@pytest.fixture(scope="module")
def served(built):
    """The site over http://127.0.0.1, from its own folder alone."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(built)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


class Visit:
    """A page opened in a fresh tab, with its console errors and every request outside the site recorded."""

    def __init__(self, browser, url: str, inside: str):
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url}"))
        self.page.on(
            "request", lambda r: None if r.url.startswith((inside, "data:", "blob:")) else self.outside.append(r.url)
        )
        response = self.page.goto(url)
        assert response is None or response.ok, f"{url}: HTTP {response.status}"
        self.page.wait_for_load_state("networkidle")

    def clean(self) -> None:
        assert not self.errors, f"{self.page.url}: console errors {self.errors}"
        assert not self.outside, f"{self.page.url}: requests outside the site {self.outside}"

    def close(self) -> None:
        self.page.close()


def screenshot_folder() -> Path:
    folder = Path(os.environ.get("COURSE_OUTPUT_DIR") or ROOT / "outputs" / "smoke") / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


QUOTES = str.maketrans("’‘“”", "''\"\"")  # Sphinx's smart quotes, back to plain ones


def plain(text: str) -> str:
    """A heading's text as a page shows it: no code ticks, emphasis or link targets, plain quotes."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[`*]", "", text).translate(QUOTES).strip()


def headings(notebook) -> list[str]:
    found = []
    for cell in notebook.cells:
        if cell.cell_type != "markdown":
            continue
        fenced = False
        for line in cell.source.splitlines():
            fenced ^= line.lstrip().startswith("```")
            if not fenced and re.match(r"#{1,6} ", line):
                found.append(plain(line.lstrip("#")))
    return found


def image_outputs(notebook) -> int:
    return sum(
        any(mime.startswith("image/") for mime in output.get("data", {}))
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )


def page_path(name: str) -> str:
    return f"notebooks/labs/{name}.html" if name in LABS else f"notebooks/{name}.html"


def test_every_page_loads_clean_with_nothing_from_outside(built, served, browser):
    pages = sorted(p.relative_to(built).as_posix() for p in built.rglob("*.html") if "_static" not in p.parts)
    expected = {"index.html", "report.html", "search.html", *(page_path(n) for n in [*LESSONS, *LABS])}
    assert expected <= set(pages), expected - set(pages)
    for path in pages:
        visit = Visit(browser, served + path, served)
        visit.clean()
        html = visit.page.content()
        for what, pattern in RESIDUE.items():
            assert not pattern.search(html), f"{path} shows {what}: {pattern.search(html).group(0)!r}"
        visit.close()


def test_each_lesson_page_shows_its_figures_headings_and_the_smoke_note(smoke_run, built, served, browser):
    for name in LESSONS:
        notebook = nbformat.read(smoke_run / f"{name}.ipynb", as_version=4)
        visit = Visit(browser, served + page_path(name), served)
        article = visit.page.locator("article.bd-article")
        images = article.locator("img")
        assert images.count() == image_outputs(notebook), name
        for i in range(images.count()):  # each image loaded, not a broken icon
            assert images.nth(i).evaluate("img => img.complete && img.naturalWidth > 0"), (name, i)
        shown = [plain(t.replace("#", "")) for t in article.locator("h1, h2, h3, h4, h5, h6").all_inner_texts()]
        missing = [h for h in headings(notebook) if h not in shown]
        assert not missing, f"{name}: headings not on the page: {missing} (page: {shown})"
        assert visit.page.locator(".smoke-note").first.is_visible(), name
        assert "Executed in the smoke profile on" in visit.page.locator(".course-provenance").inner_text(), name
        assert article.locator("button.copybtn").count() > 0, f"{name}: no copy button on its code"
        visit.close()


def test_the_math_is_typeset_offline(built, served, browser):
    """The ZeRO formulas (lesson 02) and the articles the bootstrap needs (lesson 05), by MathJax from the site's
    own folder, served and opened from disk."""
    for base in (served, built.as_uri() + "/"):
        for name in ("02_deepspeed_zero", "05_is_it_really_better"):
            visit = Visit(browser, base + page_path(name), base)
            visit.page.wait_for_selector("mjx-container", timeout=30_000)
            text = visit.page.locator("article.bd-article").inner_text()
            assert "\\frac" not in text and "\\sqrt" not in text, f"{name}: TeX left as text"
            visit.clean()
            visit.close()


def test_next_and_previous_walk_through_the_lessons_in_order(served, browser):
    visit = Visit(browser, served + page_path(LESSONS[0]), served)
    walked = [LESSONS[0]]
    for _ in LESSONS[1:]:
        visit.page.locator("a.right-next").click()
        visit.page.wait_for_load_state("networkidle")
        walked.append(visit.page.url.rsplit("/", 1)[-1].removesuffix(".html"))
    assert walked == LESSONS
    visit.page.locator("a.left-prev").click()
    visit.page.wait_for_load_state("networkidle")
    assert visit.page.url.endswith(page_path(LESSONS[-2]))
    visit.close()


def test_searching_rouge_finds_lesson_03_and_lab_03L_from_a_server_and_from_disk(built, served, browser):
    for base in (served, built.as_uri() + "/"):
        visit = Visit(browser, base + "search.html?q=ROUGE", base)
        visit.page.wait_for_selector("#search-results li a", timeout=30_000)
        found = {
            a.split("?")[0].split("#")[0]
            for a in visit.page.locator("#search-results li a").evaluate_all("links => links.map(a => a.href)")
        }
        visit.clean()
        assert base + page_path("03_cnn_dailymail_rouge") in found, found
        assert base + page_path("03L_rouge_from_scratch") in found, found
        visit.close()


def test_a_lab_page_links_the_student_copy_for_download(served, browser):
    for name in LABS:
        visit = Visit(browser, served + page_path(name), served)
        link = visit.page.locator("a.download").first
        assert link.inner_text().strip() == f"Download {name}.ipynb"
        href = link.evaluate("a => a.href")
        visit.close()
        with urllib.request.urlopen(href) as response:
            downloaded = response.read()
        assert downloaded == (ROOT / "notebooks" / "labs" / f"{name}.ipynb").read_bytes(), name
        assert downloaded != (ROOT / "notebooks" / "labs" / "solutions" / f"{name}.ipynb").read_bytes(), name


def test_the_home_page_and_lesson_03_as_screenshots(served, browser):
    folder = screenshot_folder()
    for path, shot in (("index.html", "site_home.png"), (page_path("03_cnn_dailymail_rouge"), "site_lesson_03.png")):
        visit = Visit(browser, served + path, served)
        visit.page.screenshot(path=str(folder / shot))
        visit.close()
        print(f"screenshot: {folder / shot}")
        assert (folder / shot).stat().st_size > 20_000  # a rendered page, not a blank one
    home = Visit(browser, served + "index.html", served)
    text = home.page.locator("article").inner_text()
    assert "The lessons" in text and "Labs" in text and "03L_rouge_from_scratch" in text
    assert home.page.locator(".smoke-note").first.is_visible()
    home.close()
