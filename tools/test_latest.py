"""An early warning when the libraries move: the course's fast tests and lessons 01 and 03 on the newest releases.

    make test-latest            # builds .venv-latest, runs it all, writes benchmarks/LATEST.md

The course pins every package (``pyproject.toml``) so that every student gets the same numbers; a pin that is a few
releases old hides what the next upgrade will break. This builds a separate environment, ``.venv-latest``, with
the course's pins except for the newest releases of the libraries it leans on (``LATEST``), runs ``make
test-fast``'s tests (deprecations are errors there, ``pyproject.toml``) and lessons 01 and 03 in smoke, and writes
``benchmarks/LATEST.md``: each package's version, pinned and newest, and each failure's first error or deprecation
with its file and line. It is not part of ``make test``: an upstream release must not break CI.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from datetime import date
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-latest"
WORK = ROOT / ".cache" / "latest"
REPORT = ROOT / "benchmarks" / "LATEST.md"
LATEST = ("transformers", "datasets", "accelerate", "peft", "deepspeed", "evaluate", "lm-eval")
LESSONS = "01,03"


def sh(*command, **kwargs) -> subprocess.CompletedProcess:
    print("+", " ".join(map(str, command)), flush=True)
    return subprocess.run([str(c) for c in command], cwd=ROOT, text=True, **kwargs)


def build() -> None:
    """``.venv-latest``: the course installed as ``make install`` does, then ``LATEST`` upgraded to the newest."""
    python = VENV / "bin" / "python"
    if not python.exists():
        sh(getattr(sys, "_base_executable", sys.executable), "-m", "venv", VENV, check=True)
    pin = re.search(r'"(torch==[^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    sh(python, "-m", "pip", "install", "--quiet", pin, "setuptools", "wheel", check=True)
    sh(python, "-m", "pip", "install", "--quiet", "--no-build-isolation", "-e", ".[dev]", check=True)
    sh(
        python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--upgrade",
        "--upgrade-strategy",
        "only-if-needed",
        *LATEST,
        check=True,
    )


def versions() -> list[tuple[str, str, str]]:
    """(package, the course's pin, the version in .venv-latest) for each of ``LATEST``."""
    pins = dict(re.findall(r'"([\w-]+)==([^"]+)"', (ROOT / "pyproject.toml").read_text()))
    script = f"import json; from importlib import metadata; print(json.dumps({{p: metadata.version(p) for p in {list(LATEST)!r}}}))"
    done = sh(VENV / "bin" / "python", "-c", script, capture_output=True, check=True)
    latest = json.loads(done.stdout)
    return [(name, pins.get(name, "-"), latest[name]) for name in LATEST]


def first_line_of(failure: str) -> str:
    """A failure's first error or deprecation, with the file and line it was raised at (the course's own frame
    where there is one)."""
    lines = failure.splitlines()
    error = next((line.strip() for line in lines if re.match(r"^E\s+\w+(Error|Warning|Exception)\b", line)), "")
    error = error.removeprefix("E").strip() or (lines[-1].strip() if lines else "")
    frames = re.findall(r"^([\w/.-]+\.py):(\d+): ", failure, re.M)
    ours = [f for f in frames if f[0].startswith(("course_utils", "tests", "tools"))]
    where = ":".join((ours or frames or [("?", "?")])[-1])
    return f"`{where}`: {error[:300]}"


def fast_tests() -> tuple[int, int, list[str]]:
    """(passed, failed, a line per failure) of make test-fast's tests in .venv-latest."""
    junit = WORK / "fast.xml"
    sh(
        VENV / "bin" / "python",
        "-m",
        "pytest",
        "tests",
        "-m",
        "not slow and not gpu",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
    )
    suite = ET.parse(junit).getroot().find("testsuite")
    lines, passed = [], 0
    for case in suite.iter("testcase"):
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        if problem is None:
            passed += case.find("skipped") is None
            continue
        lines.append(f"- `{case.get('classname')}::{case.get('name')}`: {first_line_of(problem.text or '')}")
    return passed, len(lines), lines


def lessons() -> list[str]:
    """A line per lesson run in smoke in .venv-latest: passed, or its first error; and each deprecation it printed."""
    out = WORK / "outputs"
    sh(VENV / "bin" / "course", "run", "--profile", "smoke", "--only", LESSONS, "--output-dir", out)
    lines = []
    for notebook in sorted(out.glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
        errors = [o for o in outputs if o["output_type"] == "error"]
        state = f"failed: {errors[0]['ename']}: {errors[0]['evalue'][:300]}" if errors else "ran to the end"
        lines.append(f"- `{notebook.name}`: {state}")
        streams = "".join("".join(o.get("text", "")) for o in outputs if o["output_type"] == "stream")
        for warning in sorted(set(re.findall(r"^(\S+\.py:\d+: (?:Future|Deprecation)Warning: .*)$", streams, re.M))):
            lines.append(f"  - {warning[:300]}")
    return lines


def main() -> int:
    WORK.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    build()
    table = versions()
    passed, failed, failures = fast_tests()
    lesson_lines = lessons()
    commit = sh("git", "rev-parse", "--short", "HEAD", capture_output=True).stdout.strip()
    body = [
        "# The course on the newest releases",
        "",
        f"Written by `make test-latest` (`tools/test_latest.py`) on {date.today()} at commit {commit}, in"
        f" {(time.monotonic() - start) / 60:.0f} minutes. Python {sys.version.split()[0]}; torch"
        f" {metadata.version('torch')} as pinned. Not part of `make test`.",
        "",
        "| package | the course's pin | newest |",
        "|---|---|---|",
        *(f"| {name} | {pin} | {new}{' (newer)' if new != pin else ''} |" for name, pin, new in table),
        "",
        f"## `make test-fast`'s tests (deprecations are errors): {passed} passed, {failed} failed",
        "",
        *(failures or ["No failure."]),
        "",
        f"## Lessons {LESSONS.replace(',', ' and ')} in smoke",
        "",
        *lesson_lines,
        "",
    ]
    REPORT.write_text("\n".join(body))
    print(f"wrote {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
