"""A PID namespace of its own for student code: whatever it starts ends with it, it sees and
signals nothing outside, and to its caller it behaves as one process (signals in, exit status out).

Each case runs a small program in the sandbox (its namespaces and minimal root, whose /proc the
PID namespace replaces), as student code runs: the program calls ``pid_namespace.enter()`` and
then acts as student code would.
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from autograder import sandbox
from support import ROOT
from support.residue import leftovers

MARK = f"mini-pidns-leftover-{os.getpid()}"
SLEEPER = "sleep 296"                   # what the attacks leave running, marked with MARK
NAMESPACES = sandbox._minimal_root_works()

PRELUDE = f"""
import os, signal, subprocess, sys, time
sys.path.insert(0, {str(ROOT)!r})
from autograder.sandbox import pid_namespace
pid_namespace.enter()
"""


def start(body, **popen):
    """The program ``body`` after ``enter()``, in the sandbox."""
    command = [sys.executable, "-I", "-c", PRELUDE + textwrap.dedent(body)]
    return subprocess.Popen(sandbox._in_minimal_root(command, keep=()), stdout=subprocess.PIPE,
                            text=True, **popen)




def ended_within(seconds):
    deadline = time.monotonic() + seconds
    while leftovers(SLEEPER, MARK) and time.monotonic() < deadline:
        time.sleep(0.05)
    return leftovers(SLEEPER, MARK) == []


if not NAMESPACES:
    def test_without_user_namespaces_entering_fails_with_a_reason():
        from autograder.sandbox import pid_namespace
        with pytest.raises(OSError, match="CLONE_NEWPID"):
            pid_namespace.enter()
else:
    def test_student_code_is_process_2_and_sees_only_its_namespace():
        program = start(f"""
            subprocess.Popen(["sleep", "296"], env={{"MARK": {MARK!r}}})
            listed = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
            try:
                os.kill({os.getpid()}, 0)           # the test's own process, outside
                reached = "reached"
            except ProcessLookupError:
                reached = "no such process"
            print(os.getpid(), os.getppid(), listed, reached)
        """)
        out, _ = program.communicate(timeout=30)
        assert program.returncode == 0
        assert out.split(maxsplit=2)[:2] == ["2", "1"]
        assert out.split(maxsplit=2)[2] == "[1, 2, 3] no such process\n"   # init, itself, sleep

    @pytest.mark.parametrize("leave", [
        '["sleep", "296"], start_new_session=True',      # a session of its own
        '["sh", "-c", "sleep 296 &"]'])                    # an orphan, reparented to the init
    def test_what_student_code_started_ends_with_it(leave):
        program = start(f"""
            subprocess.Popen({leave}, env={{"MARK": {MARK!r}}})
            time.sleep(0.3)
            sys.exit(5)
        """)
        program.communicate(timeout=30)
        assert program.returncode == 5                         # its exit status, passed on
        assert ended_within(2), leftovers(SLEEPER, MARK)

    @pytest.mark.parametrize("number", [signal.SIGKILL, signal.SIGSEGV])
    def test_a_student_process_killed_by_a_signal_reads_so_to_its_caller(number):
        program = start(f"os.kill(os.getpid(), {int(number)})")
        program.communicate(timeout=30)
        assert program.returncode == -number      # not hidden by process 1's signal rules

    def test_signals_to_the_stand_in_reach_student_code():
        program = start("""
            signal.signal(signal.SIGINT, lambda *_: (os.write(1, b"interrupted\\n"), sys.exit(7)))
            print("ready", flush=True)
            time.sleep(60)
        """)
        assert program.stdout.readline() == "ready\n"
        program.send_signal(signal.SIGINT)
        out, _ = program.communicate(timeout=30)
        assert (out, program.returncode) == ("interrupted\n", 7)

    def test_killing_the_stand_in_ends_everything_inside():
        program = start(f"""
            subprocess.Popen(["sleep", "296"], env={{"MARK": {MARK!r}}}, start_new_session=True)
            print("ready", flush=True)
            time.sleep(60)
        """)
        assert program.stdout.readline() == "ready\n"
        assert leftovers(SLEEPER, MARK) != []
        program.kill()                  # as a kernel manager or the grader does, the stand-in only
        program.wait(timeout=30)
        assert ended_within(2), leftovers(SLEEPER, MARK)

    def test_killing_whoever_started_the_stand_in_ends_everything_inside():
        """A grader's worker killed with ``kill -9`` cannot stop its kernels: they stop on their
        own once their starter is gone (ipykernel inside would never notice)."""
        body = PRELUDE + textwrap.dedent(f"""
            subprocess.Popen(["sleep", "296"], env={{"MARK": {MARK!r}}}, start_new_session=True)
            print("ready", flush=True)
            time.sleep(60)
        """)
        starter = subprocess.Popen(sandbox._in_minimal_root(
            ["sh", "-c", '"$0" -I -c "$1" & wait', sys.executable, body], keep=()),
            stdout=subprocess.PIPE, text=True)
        assert starter.stdout.readline() == "ready\n"
        assert leftovers(SLEEPER, MARK) != []
        starter.kill()
        starter.wait(timeout=30)
        assert ended_within(3), leftovers(SLEEPER, MARK)
