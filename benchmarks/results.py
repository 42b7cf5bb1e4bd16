"""Each benchmark's latest figures, kept in ``benchmarks/RESULTS.md`` by the benchmark itself.

    if __name__ == "__main__":
        sys.exit(recorded("bench_padding", main))

``recorded`` runs ``main`` with its output printed as usual and copied; when ``main`` succeeds, the
copy becomes the benchmark's section of RESULTS.md, under the command that printed it, the machine
and the date. Other sections stay as they are, so the file always holds each benchmark's latest run.
Nobody edits the file by hand, and the README links to it instead of copying figures.
"""

from __future__ import annotations

import io
import re
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
HEADER = """# Benchmark results

Written by the benchmarks in this folder, never by hand: each section is the output of the command
above it, replaced whenever that benchmark finishes (`benchmarks/results.py`). The figures are
measurements of one machine on one day; rerun a benchmark for yours.
"""
START, END = "<!-- begin {name} -->", "<!-- end {name} -->"
# The Trainer prints its logs as dicts, a line each: progress, not figures (see figures_only).
TRAINER_LOG = re.compile(r"^\{'(loss|train_runtime|eval_\w+)': .*\}$")


class _Tee(io.TextIOBase):
    def __init__(self, stream):
        self.stream, self.copy = stream, io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


def machine() -> str:
    """This machine in a few words: CPU and cores, the GPU if there is one, torch's version."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import torch

    from course_utils.machinery.machine import describe_device

    info = describe_device()
    words = f"{info['cpu_name']}, {info['cpu_cores']} cores, {info['ram_gib']} GiB"
    if info["gpu_count"]:
        words += f"; {info['gpu_count']} x {info['gpu_name']} ({info['gpu_memory_gib']} GiB)"
    return f"{words}; torch {torch.__version__}"


def figures_only(output: str) -> str:
    """The output without the Trainer's progress dicts (``{'loss': ..., 'epoch': ...}``, one per log step)."""
    return "\n".join(line for line in output.splitlines() if not TRAINER_LOG.match(line))


def section(name: str, command: str, output: str, when: datetime) -> str:
    return "\n".join(
        [
            START.format(name=name),
            f"## {name}",
            "",
            f"`{command}` on {machine()}, {when:%Y-%m-%d %H:%M} UTC:",
            "",
            "```text",
            figures_only(output).rstrip(),
            "```",
            END.format(name=name),
        ]
    )


def write_section(name: str, text: str) -> None:
    """Put ``text`` in place of ``name``'s section of RESULTS (added when there is none); sections stay sorted."""
    path = RESULTS
    old = path.read_text(encoding="utf-8") if path.exists() else HEADER
    sections = {m.group(1): m.group(0) for m in re.finditer(r"<!-- begin (\S+) -->.*?<!-- end \1 -->", old, re.S)}
    sections[name] = text
    head = old.split("<!-- begin ", 1)[0].rstrip()
    path.write_text(head + "\n\n" + "\n\n".join(sections[k] for k in sorted(sections)) + "\n", encoding="utf-8")


def recorded(name: str, main, argv: list[str] | None = None) -> int:
    """``main()``'s exit status; its output, when it succeeded, becomes ``name``'s section of RESULTS.md."""
    command = shlex.join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *(sys.argv[1:] if argv is None else argv)])
    when = datetime.now(timezone.utc)
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    try:
        status = main() or 0
    finally:
        sys.stdout = tee.stream
    if status == 0:
        write_section(name, section(name, command, tee.copy.getvalue(), when))
        print(f"(recorded in {RESULTS})")
    return status
