"""How a lab's check reports: one line that raises on a wrong answer, one short line printed on a right one.

    fail("prompt_masked", expected="-100 at position 3 (a prompt token)", got=2054, hint="mask every prompt token")
    passed("prompt_masked", "4 examples, prompt and response positions as expected")
    where = first_difference([1, 2, 3], [1, 5, 3])      # 1: the first index at which they differ

A failing check raises ``CheckFailed``, an ``AssertionError``, so that a student in Jupyter, papermill
and nbval all stop at the same cell with the same message (otter's ``grader.check`` returns a result
instead, and a lab whose check fails would still pass CI). In Jupyter the verdict shows as its one
line, without the check's own frames (``_render_traceback_``, which IPython calls to draw an error).
"""

from __future__ import annotations

from collections.abc import Sequence


class CheckFailed(AssertionError):
    """A lab's answer is wrong: the message says what was expected, what came back and a hint."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31mCheckFailed\x1b[0m: {self}"]  # IPython shows this in place of the traceback


def _short(value, limit: int = 160) -> str:
    text = repr(value) if not isinstance(value, str) else value
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fail(check: str, expected, got, hint: str) -> None:
    """Raise the one-line verdict of ``check``."""
    raise CheckFailed(f"{check}: expected {_short(expected)}, got {_short(got)}. Hint: {hint}")


def passed(check: str, what: str) -> None:
    """Print the short line of a right answer."""
    print(f"✔ {check}: {what}")


def first_difference(expected: Sequence, got: Sequence) -> int | None:
    """The first index at which two sequences differ (a length difference counts), or None when they are equal."""
    for index, (a, b) in enumerate(zip(expected, got)):
        if a != b:
            return index
    return None if len(expected) == len(got) else min(len(expected), len(got))


def compare_sequences(check: str, what: str, expected: Sequence, got: Sequence, hint: str) -> None:
    """Fail ``check`` at the first index where ``got`` differs from ``expected``, naming both values there."""
    got = list(got)
    where = first_difference(list(expected), got)
    if where is None:
        return
    if len(got) != len(expected) and where == min(len(got), len(expected)):
        fail(check, f"{what} of length {len(expected)}", f"length {len(got)}", hint)
    fail(
        check,
        f"{what}[{where}] = {_short(expected[where], 60)}",
        f"{_short(got[where], 60)} (first difference at index {where})",
        hint,
    )


def close(check: str, what: str, expected: float, got, hint: str, rel: float = 1e-6, abs_: float = 1e-9) -> None:
    """Fail ``check`` unless ``got`` is a number within the tolerances of ``expected``."""
    try:
        value = float(got)
    except (TypeError, ValueError):
        fail(check, f"{what} as a number", type(got).__name__, hint)
    if not abs(value - expected) <= max(abs_, rel * abs(expected)):
        fail(check, f"{what} = {expected:.6g}", f"{value:.6g}", hint)
