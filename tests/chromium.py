"""Debian's Chromium, as the browser tests drive it through Playwright (tests/test_browser.py, tests/test_site_in_browser.py).

browser = launch(playwright)     # fails the test, naming the package, when Chromium is missing
"""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# Chromium's own calls home are refused on a closed network, many at a time: switch them off.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def require_chromium() -> None:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: `make test` installs Debian's chromium package (apt-get install chromium)."
        )


def launch(playwright):
    require_chromium()
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
