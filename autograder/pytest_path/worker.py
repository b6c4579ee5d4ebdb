"""The worker: runs ONE submission's code in its own process and reports plain data.

It is started by ``autograder.pytest_path.runner`` with a JSON request on stdin and never decides a
grade.  It imports the student edition of mini the request names (the answers of the graded lab, and
of every lab it does not build on, left out) and the student half of the lab's checks
(``autograder.probes``), and nothing else of the grader.  It executes the notebook's code cells in
order, each test cell as the visible part of the lab's own test (the grader sends it), and right
after a test cell whose visible tests passed, the tasks of that fill-in's checks (probes and
their inputs, plain data).  It writes one JSON line per event to the file descriptor named in the
request:

    {"event": "cell", "index": 3}                    a cell is about to run
    {"event": "cell_done", "index": 3, "error": ...}  it finished (error is null or a message)
    {"event": "check", "key": "backward_pass/0"}      a check is about to run
    {"event": "ask", "key": ..., "question": {...}}   a stand-in's question to the grader, whose
                                                      reply is one JSON line on the answers fd
    {"event": "outcome", "key": ..., "outcome": {...}} what the student's code returned or raised

Announcing each step before it runs lets the grader tell, when the process is killed, which cell or
check was at fault, and start a fresh worker after it.  Output the student prints is kept to a
bounded tail; nothing they print can reach the event stream.
"""
import io
import json
import os
import signal
import sys
import traceback

from autograder import sandbox
from autograder.sandbox import pid_namespace


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
        return sandbox.cut("".join(self.parts), self.limit, more=self.size - self.limit)


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
    answers = os.fdopen(request["answers_fd"], "r")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)                       # C-level output of student code goes nowhere
    os.dup2(devnull, 2)
    printed = BoundedText(request["output_limit"])
    sys.stdout = sys.stderr = printed
    sys.stdin = io.StringIO("")               # input() gets EOF instead of waiting forever
    signal.signal(signal.SIGALRM, _on_alarm)

    def emit(**event):
        events.write(json.dumps(event) + "\n")

    # What runs the checks is imported now, before any student code: mini from the student
    # edition, the lab's probes; then the grader's source is out of reach and cannot be imported.
    sys.path.insert(0, request["edition"])
    from autograder import probes
    from autograder.sandbox import guard
    lab = request["lab"]
    kept = probes.lab_probes(lab)
    guard.hide_autograder(keep=["autograder.probes", kept])
    sandbox.seal_off(request["confine"], request["namespaces"])
    run = probes.run

    def asking(key):
        def ask(question):
            emit(event="ask", key=key, question=question)
            line = answers.readline()
            return json.loads(line) if line else {"refused": "the grader did not answer"}
        return ask

    namespace = {"__name__": "__main__"}
    out_of_time = set()                       # fill-ins whose code already hit the time limit

    def run_checks(fill_in):
        for number, task in enumerate(request["tasks"].pop(fill_in, [])):
            key = f"{fill_in}/{number}"
            if fill_in in out_of_time:
                emit(event="outcome", key=key, outcome={"error": "Skipped: an earlier check of "
                                                                 "this fill-in ran out of time"})
                continue
            emit(event="check", key=key)
            outcome = {}
            error = _run_limited(
                lambda: outcome.update(run(lab, task, namespace, asking(key), number)),
                request["check_seconds"])
            if error and error.startswith("TimeLimit"):
                out_of_time.add(fill_in)
            emit(event="outcome", key=key, outcome=outcome if not error else {"error": error})

    for index, source, fill_in in request["cells"]:
        emit(event="cell", index=index)
        error = _run_limited(lambda: exec(compile(source, f"<cell {index}>", "exec"), namespace),
                             request["cell_seconds"])
        emit(event="cell_done", index=index, error=error)
        if fill_in and not error:
            run_checks(fill_in)
    emit(event="output", text=printed.getvalue())


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
