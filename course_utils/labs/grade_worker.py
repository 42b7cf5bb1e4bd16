"""One submission's cells, run inside the grader's sandbox; the checks' outcomes written to the grader alone.

    python -m course_utils.labs.grade_worker RESULTS_FD < plan.json     # started by labs/grading.py, never by hand

The plan is the lab's student copy with the submission's answer cells put in (``grading.plan``). Cells run in
order in one IPython shell, as in a kernel. Before each check or question cell, every ``course_utils`` module is
dropped and the checks are imported again from the grader's read-only copy, so an answer that rebinds
``check.x`` or patches a reference function has no effect on the verdict. The verdict is what the check raised or
did not raise, recorded here; nothing the cells print reaches the grader (their output goes to a log file in the
working directory). Each cell has a time limit (SIGALRM); an attempt to open a network connection is refused by an
audit hook and recorded. What stays out of reach: code that patches Python itself (its import system, the audit
machinery, the interpreter's frames), as with nbgrader and otter-grader.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback

PACKAGE = "course_utils"


class CellTimeout(BaseException):  # BaseException: an answer's `except Exception` does not swallow it
    """A cell ran past its time limit."""


def _refuse_network(log: list[str]):
    def hook(event: str, args) -> None:
        if event == "socket.connect":
            address = args[1] if len(args) > 1 else "?"
            log.append(f"a network connection to {address}")
            raise PermissionError("the grader's sandbox has no network")

    return hook


def _fresh_checks():
    """``course_utils.labs.check`` imported anew: no module of the package survives from the answers' reach."""
    import importlib

    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    # The package's own finder of old module names, put on sys.meta_path by its import, goes with it.
    sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith(PACKAGE + ".")]
    importlib.invalidate_caches()
    return importlib.import_module(f"{PACKAGE}.labs.check")


def _message(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def main() -> int:
    results = os.fdopen(int(sys.argv[1]), "w", buffering=1)
    plan = json.load(sys.stdin)
    log = open("cells.log", "w", buffering=1)  # what the cells print: for the curious, never read by the grader
    sys.stdout = sys.stderr = log
    attempts: list[str] = []
    sys.addaudithook(_refuse_network(attempts))

    def on_alarm(signum, frame):
        raise CellTimeout(f"the cell ran past its {plan['cell_timeout']} s limit")

    signal.signal(signal.SIGALRM, on_alarm)
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance(colors="nocolor")
    checked = None

    def send(record: dict) -> None:
        results.write(json.dumps(record) + "\n")

    for cell in plan["cells"]:
        send({"started": cell["index"]})
        if cell["kind"] in ("check", "question"):
            checked = _fresh_checks()
            shell.user_ns["check"] = checked
        before = len(attempts)
        signal.alarm(plan["cell_timeout"])
        try:
            outcome = shell.run_cell(cell["source"], store_history=False)
        except CellTimeout as err:  # raised between IPython's own handlers
            outcome, timed_out = None, err
        else:
            timed_out = None
        finally:
            signal.alarm(0)
        error = timed_out or (outcome.error_before_exec or outcome.error_in_exec if outcome else None)
        network = attempts[before:]
        if cell["kind"] in ("check", "question"):
            passed = error is None
            message = "" if passed else _message(error)
            if isinstance(error, NotImplementedError):
                message = f"not done: {' '.join(str(error).split())}"
            elif error is not None and checked is not None and not isinstance(error, checked.CheckFailed):
                message = f"the check could not run: {message}"
            send({"item": cell["item"], "passed": passed, "message": message, "network": network})
        elif error is not None or network:
            send(
                {
                    "cell": cell["index"],
                    "kind": cell["kind"],
                    "error": _message(error) if error else "",
                    "network": network,
                }
            )
        if isinstance(error, MemoryError):
            send({"memory": True})
    send({"done": True})
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # noqa: BLE001 - the grader reads the reason from the log
        traceback.print_exc()
        sys.exit(3)
