"""How a lab's check reports: one line that raises on a wrong answer, one short line printed on a right one.

    fail("prompt_masked", expected="-100 at position 3 (a prompt token)", got=2054, hint="mask every prompt token")
    passed("prompt_masked", "4 examples, prompt and response positions as expected")
    where = first_difference([1, 2, 3], [1, 5, 3])      # 1: the first index at which they differ

    @answer_check                                        # on a check: whatever the answer, CheckFailed or a ✔ line
    def rouge_l(rouge_l_fn): ...

A failing check raises ``CheckFailed``, an ``AssertionError``, so that a student in Jupyter, papermill
and nbval all stop at the same cell with the same message (otter's ``grader.check`` returns a result
instead, and a lab whose check fails would still pass CI). In Jupyter the verdict shows as its one
line, without the check's own frames (``_render_traceback_``, which IPython calls to draw an error).
"""

from __future__ import annotations

import functools
import numbers
import traceback
from collections.abc import Sequence
from pathlib import Path

PACKAGE = str(Path(__file__).resolve().parent.parent)  # course_utils/: frames in it are the course's, not the answer's


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


def kind(value) -> str:
    """The type of ``value`` as a student would name it: ``str``, ``NoneType``, ``torch.float32 tensor``."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and hasattr(value, "shape"):
        return f"{dtype} {type(value).__name__}"
    return type(value).__name__


def expect_type(check: str, what: str, value, types, hint: str) -> None:
    """Fail ``check`` unless ``value`` is an instance of ``types``, naming the type expected and the one got."""
    if not isinstance(value, types):
        names = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
        fail(check, f"{what} as {names}", f"{kind(value)} {_short(repr(value), 60)}", hint)


def number(check: str, what: str, value, hint: str) -> float:
    """``value`` as a float when it is a number (int, float, a numpy scalar, a 0-d array or tensor); anything else,
    a string such as "0.75" or a bool included, fails ``check`` naming its type."""
    if getattr(value, "shape", None) == () and hasattr(value, "item"):  # numpy or torch 0-d
        value = value if isinstance(value, numbers.Real) else value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        fail(check, f"{what} as a number", f"{kind(value)} {_short(repr(value), 60)}", hint)
    return float(value)


def _precision(value) -> float:
    """The relative rounding of ``value``'s own float type: float32's 6e-8 for a numpy or torch float32."""
    import numpy as np

    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return 0.0
    try:
        return float(np.finfo(np.dtype(str(dtype).replace("torch.", ""))).eps)
    except (TypeError, ValueError):  # an integer type: exact
        return 0.0


def _digits(expected: float, got: float) -> tuple[str, str]:
    """Both numbers with as many digits as it takes to tell them apart."""
    for places in (6, 9, 12, 17):
        a, b = f"{expected:.{places}g}", f"{got:.{places}g}"
        if a != b:
            return a, b
    return a, b


def close(check: str, what: str, expected: float, got, hint: str, rel: float = 1e-6, abs_: float = 1e-9) -> None:
    """Fail ``check`` unless ``got`` is a number within the tolerances of ``expected``. A float32 answer (numpy or
    torch) is held to float32's precision where the tolerance is finer."""
    value = number(check, what, got, hint)
    rel = max(rel, 2 * _precision(got))
    if not abs(value - expected) <= max(abs_, rel * abs(expected)):
        want, have = _digits(expected, value)
        fail(check, f"{what} = {want}", have, hint)


def _where(error: BaseException) -> str:
    """Where ``error`` was raised: the last frame of the student's code, else the check's own line."""
    frames = traceback.extract_tb(error.__traceback__)
    theirs = [f for f in frames if not f.filename.startswith(PACKAGE)]
    frame = (theirs or frames)[-1] if frames else None
    if frame is None:
        return ""
    if theirs:
        return f" in {frame.name}, line {frame.lineno}"
    return f" inside the check ({Path(frame.filename).name}, line {frame.lineno}), on what your answer returned"


def answer_check(check):
    """A lab's check that reports in one line whatever it is given: its own ``CheckFailed`` passes through, and so
    does the ``NotImplementedError`` of a task's stub not written yet (its message names the task); any other error,
    raised by the student's code or by the check on an answer of the wrong kind, becomes a CheckFailed naming that
    error and where it was raised."""

    @functools.wraps(check)
    def checked(*args, **kwargs):
        try:
            return check(*args, **kwargs)
        except (CheckFailed, NotImplementedError):  # a wrong answer, or a task not started yet (its stub's message)
            raise
        except Exception as error:  # noqa: BLE001 (every error becomes the check's one line)
            message = _short(" ".join(str(error).split()) or "(no message)", 100)
            raise CheckFailed(
                f"{check.__name__}: expected an answer the check can run, got {type(error).__name__}: {message}"
                f"{_where(error)}. Hint: call your code on the task's example in a cell of its own, fix the error, "
                "then run the check again"
            ) from error

    return checked
