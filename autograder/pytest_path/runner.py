"""The pytest-path grader: one worker process per submission, verdicts in the grader's process.

For each submission the grader reads the lab's SOURCE notebook (solutions/), which alone decides
which cells are tests and what they are worth, so a submission that deletes, edits or re-marks its
test cells changes nothing.  It draws the checks' cases here (the grader half,
``autograder.checks``), starts ``autograder.pytest_path.worker`` in a scratch folder with a scrubbed
environment, resource limits and a student edition of mini, sends it the student's code cells, in
the place of each test cell the visible part of the SOURCE's test, and each case's task (a probe
and its inputs, plain data), and reads back plain JSON: the probes' outcomes, and the questions of
stand-ins, answered here while the worker waits.  Each case is then verified here, with
``autograder.checks.tally``, in a process that never ran student code.  A test cell whose
visible tests ran without an error earns the share of each behaviour of its fill-in whose checks
all pass, as on the nbgrader path.

If a worker dies or hangs (an uninterruptible loop, a crash, a memory limit), the step it announced
last is marked as failed with the reason, and a fresh worker carries on after it.
"""
import dataclasses
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from autograder import edition, sandbox
from autograder.checks import answer, cases, ptx, tally
from autograder.labs import fill_in_tested_by
from autograder.notebooks import (hand_graded_points, names_tests_read, read_notebook,
                                  read_source, skips_demo, test_cells, visible_tests)
from autograder.sandbox import REPO, Limits, cgroups
from autograder.sandbox import scratch as folders

MAX_EVENT_BYTES = 16 * 2**20
STEP_GRACE = 5.0            # seconds past a cell's or a check's limit before the worker is stopped


@dataclasses.dataclass
class TestResult:
    name: str
    score: float
    max_score: float
    output: str

    @property
    def status(self):
        return "passed" if self.score == self.max_score else "failed"


@dataclasses.dataclass
class SubmissionResult:
    student: str
    lab: str
    seed: int
    tests: list
    notes: list

    @property
    def score(self):
        return sum(t.score for t in self.tests)

    @property
    def max_score(self):
        return sum(t.max_score for t in self.tests)

    def gradescope(self):
        """The results.json format of Gradescope's autograder."""
        return {
            "score": self.score,
            "output": "\n".join(self.notes + [f"Checks drawn with seed {self.seed} "
                                              f"(AUTOGRADER_SEED={self.seed} reproduces them)."]),
            "tests": [{"name": t.name, "score": t.score, "max_score": t.max_score,
                       "status": t.status, "output": t.output, "visibility": "visible"}
                      for t in self.tests],
        }


def cells_to_run(notebook_path, lab):
    """``[(index, source, fill-in or None)]``: the code the worker runs, in the notebook's order.

    The submission's code cells, but for its test cells the visible part of the SOURCE's test
    (``fill-in`` names whose checks run after it); a test cell the submission deleted is put back
    after the cell that comes before it in the source, as nbgrader does, and a cell claiming a
    grade id already seen is dropped, as
    :class:`autograder.nbgrader_path.preprocessors.RestoreCells` does.  Demo cells are skipped
    (:func:`skips_demo`).

    Raises ValueError with a readable reason when the file is not a usable notebook.
    """
    nb = read_notebook(notebook_path, lab)
    source = read_source(lab)
    order = [cell.metadata["nbgrader"]["grade_id"] for cell in source.cells
             if "grade_id" in cell.metadata.get("nbgrader", {})]
    tests = {grade_id for grade_id, _ in test_cells(lab)}
    visible = visible_tests(lab)
    read = names_tests_read(lab)
    rows, seen = [], set()                  # (grade id, cell to run or None) per submitted cell
    for index, cell in enumerate(nb.cells):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in order:
            if grade_id in seen:
                continue
            seen.add(grade_id)
        if grade_id in tests:
            rows.append((grade_id, (index, visible[grade_id], fill_in_tested_by(grade_id))))
        elif cell.cell_type == "code" and not skips_demo(cell, read):
            rows.append((grade_id, (index, cell.source, None)))
        else:
            rows.append((grade_id, None))
    for position, grade_id in enumerate(order):
        if grade_id in tests and grade_id not in seen:
            before = [i for i, (g, _) in enumerate(rows) if position and g == order[position - 1]]
            at = before[-1] + 1 if before else (0 if not position else len(rows))
            rows.insert(at, (grade_id, (grade_id, visible[grade_id], fill_in_tested_by(grade_id))))
            seen.add(grade_id)
    return [row for _, row in rows if row is not None]


def grade_submission(notebook_path, lab, student, seed, limits=None):
    """Grade one submitted notebook; never raises for anything the submission does."""
    notebook_path, limits = Path(notebook_path), limits or Limits()
    tested = test_cells(lab)
    drawn = {f"{fill_in}/{n}": case
             for fill_in in (fill_in_tested_by(grade_id) for grade_id, _ in tested)
             for n, case in enumerate(cases(lab, fill_in, seed))}
    notes, visible_failures = [], {}
    try:
        cells = cells_to_run(notebook_path, lab)
    except ValueError as error:
        cells = None
        notes.append(str(error))
    with ptx.one_submission():              # lab 5's kernels: one compiling process
        outcomes = (_run_workers(cells, drawn, lab, limits, notes, visible_failures)
                    if cells is not None else {})
        tests = [_verdict(grade_id, points, drawn, outcomes, visible_failures, seed)
                 for grade_id, points in tested]
    notes.append(sandbox.isolation_note())
    by_hand = hand_graded_points(lab)
    if by_hand:
        notes.append(f"The written answers ({by_hand:g} points) are graded by hand: this score, "
                     f"out of {sum(points for _, points in tested):g}, leaves them out.")
    return SubmissionResult(student, lab, seed, tests, notes)


def _verdict(grade_id, points, drawn, outcomes, visible_failures, seed):
    """The :class:`TestResult` of one test cell: 0 if its visible tests failed, else the share
    of each behaviour whose checks all passed (:func:`autograder.checks.tally`)."""
    fill_in = fill_in_tested_by(grade_id)
    if fill_in in visible_failures:
        return TestResult(grade_id, 0.0, points, f"the visible tests of {grade_id} failed: "
                                                 f"{visible_failures[fill_in]}")
    keys = [key for key in drawn if key.rsplit("/", 1)[0] == fill_in]
    verdict = tally([drawn[key] for key in keys],
                    [outcomes.get(key, {"error": "NotGraded: the notebook could not be run"})
                     for key in keys], points)
    return TestResult(grade_id, verdict.score, points, verdict.report(fill_in, seed))


def _run_workers(cells, drawn, lab, limits, notes, visible_failures):
    """Run workers until every case has an outcome; a step that kills a worker is skipped.

    The first error of each test cell's visible tests goes into ``visible_failures``
    (``{fill-in: message}``); the errors of other cells go into ``notes``.
    """
    outcomes, skip_cells = {}, set()
    tested = {index: fill_in for index, _, fill_in in cells if fill_in}
    while True:
        remaining = {key: case for key, case in drawn.items() if key not in outcomes}
        events, reason = _run_worker([c for c in cells if c[0] not in skip_cells], remaining, lab,
                                     limits)
        last = None
        for event in events:
            if event["event"] in ("cell", "check"):
                last = event
            elif event["event"] == "cell_done":
                last = None
                if event["error"] and event["index"] in tested:
                    visible_failures.setdefault(tested[event["index"]], event["error"])
                elif event["error"]:
                    notes.append(f"cell {event['index']}: {event['error']}")
            elif event["event"] == "outcome":
                last = None
                outcomes[event["key"]] = event["outcome"]
            elif event["event"] == "output" and event["text"].strip():
                text = event["text"]
                if len(text) > limits.output_chars + 200:      # the worker's own cut, enforced
                    text = sandbox.cut(text, limits.output_chars)
                notes.append("printed output:\n" + text)
        if reason is None or last is None:
            if reason:
                notes.append(f"the worker stopped: {reason}")
            return outcomes
        if last["event"] == "cell":
            skip_cells.add(last["index"])
            if last["index"] in tested:
                visible_failures.setdefault(tested[last["index"]], f"they stopped the worker "
                                                                   f"({reason})")
            notes.append(f"cell {last['index']} stopped the worker ({reason}); it was skipped")
        else:
            outcomes[last["key"]] = {"error": f"WorkerStopped: {reason}"}


def _run_worker(cells, drawn, lab, limits):
    """One worker process, in the sandbox with its scratch folder as its only writable one and the
    lab's student edition of mini as the only mini.  Returns (events, None) or (events so far,
    why it was stopped)."""
    scratch = folders.make("mini-worker-")      # swept by the next one if this one is killed
    events_read, events_write = os.pipe()
    answers_read, answers_write = os.pipe()
    tasks = sandbox.user_tasks()
    student_mini = edition.for_grading(lab)
    seen = sandbox.seen_at(student_mini)
    by_fill_in = {}
    for key, case in drawn.items():
        by_fill_in.setdefault(key.rsplit("/", 1)[0], []).append(case.task())
    request = {"lab": lab, "edition": seen, "cells": cells, "tasks": by_fill_in,
               "events_fd": events_write, "answers_fd": answers_read,
               "cell_seconds": limits.cell_seconds, "check_seconds": limits.check_seconds,
               "output_limit": limits.output_chars,
               "confine": sandbox.confinement([scratch], seen),
               "namespaces": sandbox.isolation() == "namespaces"}
    python = [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); "
              "from autograder.pytest_path.worker import main; main()"]
    try:
        with cgroups.scope(limits.processes, limits.memory_bytes) as cgroup:
            process = subprocess.Popen(
                sandbox.sandboxed(python, keep=[scratch], editions=[student_mini],
                                  private_bytes=limits.folder_bytes),
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                cwd=scratch, env=_worker_environment(scratch),
                pass_fds=(events_write, answers_read), start_new_session=True,
                preexec_fn=lambda: sandbox.start_limited(limits.rlimits(), tasks, cgroup))
            os.close(events_write)
            os.close(answers_read)
            process.stdin.write(json.dumps(request).encode())
            process.stdin.close()
            return _read_events(events_read, answers_write, drawn, process, limits.worker_seconds,
                                max(limits.cell_seconds, limits.check_seconds) + STEP_GRACE)
    finally:
        for fd in (events_read, answers_write):
            os.close(fd)
        shutil.rmtree(scratch, ignore_errors=True)


def _read_events(read_fd, answers_fd, drawn, process, seconds, step_seconds):
    """The worker's events, read until it exits, each stand-in question answered as it comes
    (:func:`autograder.checks.answer`, for the case of ``drawn`` it names); the worker is stopped
    when the whole run passes ``seconds``, or when nothing arrives for ``step_seconds`` (the
    worker reports each cell and check as it starts and ends, and its own alarm ends a slow one
    well before: a step that blocks that alarm costs its own limit, not the whole submission's).
    Events stop at the first line that is not one (student code shares the worker's process)."""
    deadline = time.monotonic() + seconds
    quiet_until = time.monotonic() + step_seconds
    buffer, received, events, reason = b"", 0, [], None
    os.set_blocking(read_fd, False)
    while True:
        ready, _, _ = select.select([read_fd], [], [], 0.05)    # an answer waits for no tick
        try:
            chunk = os.read(read_fd, 1 << 16) if ready else None
        except BlockingIOError:
            chunk = None
        if chunk:
            received += len(chunk)
            quiet_until = time.monotonic() + step_seconds
            if received > MAX_EVENT_BYTES:
                reason = "it sent more data back than any honest run does"
                break
            *lines, buffer = (buffer + chunk).split(b"\n")
            if not _take(lines, events, answers_fd, drawn):
                reason = "it sent back something that is not an event"
                break
            continue
        if chunk == b"" and process.poll() is not None:
            break
        if time.monotonic() > deadline:
            reason = f"it ran past the {seconds:g} s limit for a whole submission"
            break
        if time.monotonic() > quiet_until:
            reason = f"one cell or check ran past {step_seconds:g} s, ignoring its time limit"
            break
        if chunk == b"":            # the pipe closed while the worker lives: wait for its exit
            time.sleep(0.01)
    if reason is None and process.wait() != 0:
        reason = _exit_reason(process.returncode)
    elif reason is None and not any(event.get("event") == "output" for event in events):
        reason = "it exited before the end of the notebook (os._exit?)"   # its last event says
    _kill_group(process)
    return events, reason


def _take(lines, events, answers_fd, drawn):
    """Add the events of ``lines`` to ``events``, answering the questions among them; False at
    a line that is not an event."""
    for line in lines:
        try:
            event = json.loads(line)
            kind = event["event"]
        except (ValueError, TypeError, KeyError):
            return False
        if kind == "ask":
            case = drawn.get(event.get("key")) if isinstance(event.get("key"), str) else None
            reply = (answer(case, event.get("question")) if case is not None
                     else {"refused": "not a case of this submission"})
            if not _send(answers_fd, json.dumps(reply).encode() + b"\n"):
                return False
        else:
            events.append(event)
    return True


def _send(fd, data, seconds=STEP_GRACE):
    """Write ``data`` to the worker within ``seconds``; False if it does not take it (it has
    gone, or does not read)."""
    os.set_blocking(fd, False)
    deadline = time.monotonic() + seconds
    while data:
        try:
            data = data[os.write(fd, data):]
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)
        except OSError:
            return False
    return True


def _exit_reason(code):
    if code < 0:
        name = signal.Signals(-code).name
        why = {"SIGKILL": "killed (out of memory or a limit)", "SIGSEGV": "crashed",
               "SIGXCPU": "used up its CPU time", "SIGXFSZ": "wrote a file larger than allowed"}
        return f"the worker was {why.get(name, 'stopped')} ({name})"
    return f"the worker exited with status {code}"


def _kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def _worker_environment(scratch):
    """Only what Python, numpy and numba need, one thread each; nothing of the instructor's."""
    return {**sandbox.student_environment(scratch), "MPLBACKEND": "Agg",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
