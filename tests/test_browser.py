"""A lab in a real browser: JupyterLab serves a copy of a student lab, headless Chromium (Debian's package, driven
by Playwright) runs its cells, and the page shows the check's one-line verdict, as a student would see it.

The copy is lab 00L with its first task answered by a typical mistake (the relative position biases forgotten),
so the check after it must raise in the page. The screenshot is saved in the test's output folder
(``$COURSE_OUTPUT_DIR/screenshots``) and named in the test's output.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import labs  # noqa: E402 - tools/labs.py (tools/ is no package)
from chromium import launch, require_chromium  # noqa: E402

WRONG_TASK_1 = """    d, inner = config.d_model, config.num_heads * config.d_kv
    encoder_layer = 4 * d * inner + 2 * d * config.d_ff + 2 * d
    decoder_layer = 8 * d * inner + 2 * d * config.d_ff + 3 * d
    return config.vocab_size * d + config.num_layers * encoder_layer + config.num_decoder_layers * decoder_layer + 2 * d"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab_with_a_wrong_answer(folder: Path) -> Path:
    """Lab 00L's student copy, its first stub replaced by a count that forgets the position biases."""
    student = labs.student_path(next(p for p in labs.solution_notebooks(ROOT) if p.name.startswith("00L")))
    notebook = json.loads(student.read_text())
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if "raise NotImplementedError(" in source:
            line = next(s for s in source.splitlines() if "raise NotImplementedError(" in s)
            cell["source"] = source.replace(line, WRONG_TASK_1).splitlines(keepends=True)
            break
    path = folder / student.name
    path.write_text(json.dumps(notebook, indent=1))
    return path


@pytest.fixture
def jupyterlab(tmp_path):
    require_chromium()
    port, token = free_port(), secrets.token_hex(16)
    root = tmp_path / "labs"
    root.mkdir()
    notebook = lab_with_a_wrong_answer(root)
    # No "get notified about Jupyter news?" pop-up over the page.
    (tmp_path / "config" / "labconfig").mkdir(parents=True)
    (tmp_path / "config" / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    log = open(tmp_path / "jupyterlab.log", "w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--allow-root",
            # Nothing from the internet: no news, no update check, no extension listing from PyPI.
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(
            os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime")
        ),
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail("JupyterLab did not start:\n" + (tmp_path / "jupyterlab.log").read_text()[-3000:])
            time.sleep(0.5)
    yield f"{url}/lab/tree/{notebook.name}?token={token}", tmp_path
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()


def test_a_student_lab_runs_in_chromium_and_shows_the_checks_verdict(jupyterlab):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    url, work = jupyterlab
    shots = Path(os.environ.get("COURSE_OUTPUT_DIR") or work) / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / "lab_00L_check_in_jupyterlab.png"
    with sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            page.goto(url)
            page.wait_for_selector(".jp-Notebook", timeout=60_000)
            try:  # a fresh environment may ask which kernel to start; the proposed one is this Python's
                page.get_by_role("button", name="Select", exact=True).click(timeout=8_000)
            except PlaywrightTimeout:
                pass
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
            for _ in range(3):  # a click before the kernel's websocket is up runs nothing: try again
                page.get_by_role("menuitem", name="Run", exact=True).click()
                page.get_by_text("Run All Cells", exact=True).click()
                try:
                    page.locator(".jp-InputPrompt", has_text="[1]").first.wait_for(timeout=20_000)
                    break
                except PlaywrightTimeout:
                    continue
            verdict = page.locator(".jp-OutputArea-output", has_text="CheckFailed")
            verdict.first.wait_for(timeout=60_000)
            verdict.first.scroll_into_view_if_needed()
            text = verdict.first.text_content()
        finally:
            page.screenshot(path=str(shot))  # on a failure too: it shows where the page stopped
            browser.close()
    print(f"screenshot: {shot}")
    assert "parameter_count: expected 60,506,624 parameters for t5-small" in text, text
    assert "got 60,506,112 (off by -512)" in text and "Hint: " in text, text
    shutil.copy(shot, work / shot.name)
    assert shot.stat().st_size > 10_000  # a rendered page, not an empty image
