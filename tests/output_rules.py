"""What an executed notebook must not show a student: progress bars of the libraries' bookkeeping, a
compiler's error lines, commands that list every default flag, table cells that pandas cut short.

    problems = noise(outputs)    # outputs: one code cell's nbformat outputs; [] when the cell is clean

conftest.py applies it to every cell nbval runs (the smoke notebooks and the labs' solutions), and
test_rehearsal.py to the notebooks the full profile executed. A progress bar is allowed only where the
student waits on real work: the course's own generation bars (``generation.generate_in_order``: "generate",
"t5 summaries", "gpt-2 summaries") and lesson 05's judge ("judge"); the Trainer's training progress is an HTML table, not a bar widget.
"""

from __future__ import annotations

import re

WIDGET = "application/vnd.jupyter.widget-view+json"
ALLOWED_BARS = ("generate", "t5 summaries", "gpt-2 summaries", "judge")
MAX_FLAGS = 19  # a printed command with 20 flags lists defaults, not what the run changes
COMPILER_NOISE = ("collect2", "/usr/bin/ld:")
FLAG = re.compile(r"(?:^|\s)--[a-z]")
# pandas cuts a table cell's text at display.max_colwidth (50 characters by default) and ends it with "...": a
# summary, a review or a span-filling answer cut there hides what the table is for.
# pandas ends a cut cell with exactly three dots; a text that itself ends in a run of dots is not cut.
CUT_CELL = re.compile(r"(?<!\.)\.\.\.</td>")


def bar_description(output: dict) -> str | None:
    """The description of a tqdm widget bar ("Casting the dataset", "generate", ...; "" for none), or None."""
    data = output.get("data", {})
    if WIDGET not in data:
        return None
    text = "".join(data.get("text/plain", ""))
    match = re.match(r"\s*(.*?):?\s*\d+%\|", text)
    return match.group(1).strip() if match else text.strip()


def output_text(output: dict) -> str:
    if output.get("output_type") == "stream":
        return "".join(output.get("text", ""))
    return "".join(output.get("data", {}).get("text/plain", ""))


def noise(outputs: list[dict]) -> list[str]:
    """One line per thing in ``outputs`` that a student should not have to read past."""
    problems = []
    for output in outputs:
        description = bar_description(output)
        if description is not None and description not in ALLOWED_BARS:
            problems.append(f"a progress bar of the libraries' own bookkeeping: {description!r}")
        text = output_text(output)
        for fragment in COMPILER_NOISE:
            if fragment in text:
                problems.append(f"a compiler's error line ({fragment!r}) in the output")
        html = "".join(output.get("data", {}).get("text/html", ""))
        if CUT_CELL.search(html):
            problems.append("a table cell cut short by pandas (set pd.set_option('display.max_colwidth', ...))")
        for line in text.splitlines():
            flags = len(FLAG.findall(line))
            if flags > MAX_FLAGS:
                problems.append(f"a command of {flags} flags: {line[:80]}...")
    return problems
