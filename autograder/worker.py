"""The worker: runs ONE submission's code in its own process and reports plain data.

It is started by ``autograder.runner`` with a JSON request on stdin and never decides a grade.  It
executes the notebook's code cells in order, each test cell as the visible part of the lab's own
test (the grader sends it; mini's reference is back while it runs, as in the student's kernel),
and right after a test cell whose visible tests passed, the student's half of each requested check
of that fill-in (``Case.call``).  It writes one JSON line per event to the file descriptor named in
the request:

    {"event": "cell", "index": 3}                    a cell is about to run
    {"event": "cell_done", "index": 3, "error": ...}  it finished (error is null or a message)
    {"event": "check", "key": "backward_pass/0"}      a check is about to run
    {"event": "outcome", "key": ..., "outcome": {...}} what the student's code returned or raised

Announcing each step before it runs lets the grader tell, when the process is killed, which cell or
check was at fault, and start a fresh worker after it.  Output the student prints is kept to a
bounded tail; nothing they print can reach the event stream.
"""
import contextlib
import io
import json
import os
import signal
import sys
import traceback

from autograder import pid_namespace


class BoundedText(io.TextIOBase):
    """A text stream that keeps only the first ``limit`` characters written to it."""

    def __init__(self, limit):
        self.limit, self.parts, self.size = limit, [], 0

    def writable(self):
        return True

    def write(self, text):
        if self.size < self.limit:
            self.parts.append(text[: self.limit - self.size])
        self.size += len(text)
        return len(text)

    def getvalue(self):
        cut = self.size - self.limit
        return "".join(self.parts) + (f"\n... ({cut} more characters cut)" if cut > 0 else "")


class TimeLimit(BaseException):
    """Raised inside student code when its time is up (BaseException: `except Exception` in the
    student's code cannot swallow it)."""


def _on_alarm(signum, frame):
    raise TimeLimit()


def main():
    request = json.loads(sys.stdin.read())
    if request["namespaces"]:                 # what the student's code starts ends with it
        pid_namespace.enter()
    events = os.fdopen(request["events_fd"], "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)                       # C-level output of student code goes nowhere
    os.dup2(devnull, 2)
    printed = BoundedText(request["output_limit"])
    sys.stdout = sys.stderr = printed
    sys.stdin = io.StringIO("")               # input() gets EOF instead of waiting forever
    signal.signal(signal.SIGALRM, _on_alarm)

    def emit(**event):
        events.write(json.dumps(event) + "\n")

    # Everything the checks need is taken now, before any student code runs: what the student
    # patches later (autograder.checks, numpy) cannot reach these names, and the student cannot
    # import the autograder at all.
    from autograder import guard, sandbox
    from autograder.checks import cases, run_case
    keys = {}
    for key in request["checks"]:
        keys.setdefault(key.rsplit("/", 1)[0], []).append(key)
    drawn = {fill_in: cases(request["lab"], fill_in, request["seed"], answers=False)
             for fill_in in keys}
    sources = guard.reference_files(request["lab"])   # no private copy of the reference
    reference_back = guard.switch_off(request["lab"]).back
    guard.hide_autograder()
    sandbox.seal_off(sources, request["confine"], request["namespaces"])

    namespace = {"__name__": "__main__"}
    out_of_time = set()                       # fill-ins whose code already hit the time limit

    def run_checks(fill_in):
        for key in keys.pop(fill_in, []):
            if fill_in in out_of_time:
                emit(event="outcome", key=key, outcome={"error": "Skipped: an earlier check of "
                                                                 "this fill-in ran out of time"})
                continue
            emit(event="check", key=key)
            number = int(key.rsplit("/", 1)[1])
            case = drawn[fill_in][number]
            outcome = {}
            error = _run_limited(lambda: outcome.update(run_case(case, namespace)),
                                 request["check_seconds"])
            if error and error.startswith("TimeLimit"):
                out_of_time.add(fill_in)
            emit(event="outcome", key=key, outcome=outcome if not error else {"error": error})

    for index, source, fill_in in request["cells"]:
        around = reference_back if fill_in else contextlib.nullcontext
        emit(event="cell", index=index)
        error = _run_limited(lambda: _exec_within(around, source, index, namespace),
                             request["cell_seconds"])
        emit(event="cell_done", index=index, error=error)
        if fill_in and not error:
            run_checks(fill_in)
    emit(event="output", text=printed.getvalue())


def _exec_within(context, source, index, namespace):
    with context():
        exec(compile(source, f"<cell {index}>", "exec"), namespace)


def _run_limited(action, seconds):
    """Run ``action`` with an alarm; return None, or the error as one readable line."""
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        action()
        return None
    except TimeLimit:
        return f"TimeLimit: did not finish within {seconds:g} s (an infinite loop?)"
    except BaseException as error:  # SystemExit, KeyboardInterrupt: still only this cell's fault
        frames = traceback.extract_tb(error.__traceback__)
        where = next((f"{f.filename}, line {f.lineno}" for f in reversed(frames)
                      if f.filename.startswith("<cell")), "")
        return f"{type(error).__name__}: {error}" + (f" ({where})" if where else "")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


if __name__ == "__main__":
    main()
