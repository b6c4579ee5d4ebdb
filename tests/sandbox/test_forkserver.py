"""The fork server that starts the nbgrader path's kernels, attacked from a kernel it forked.

One batch of three lab 2 submissions on one worker, so that all three kernels come from the same
server.  The attacker hands in a complete solution and two cells: one leaves a process in its
kernel's session and kills the kernel; the next, run in a new kernel from the same server, asks the
server (its socket is named in the server's command line) for a kernel of its own in the next
student's folder, looks for the instructor's variables in its environment and its whole memory,
and kills its parent: the server, or with namespaces the init of the kernel's own PID namespace
(the server is out of its sight there).  Then come a complete solution and the untouched release.  Each must get its
own score, and nothing the attacker started may be left; under every kind of isolation.
"""
import hashlib
import json
import os

import nbformat
import pytest

from autograder import cli, sandbox
from autograder.nbgrader_path import course
from support import ROOT
from support.residue import leftovers
from support.sandboxing import KINDS, LAB, autograded_report, hand_in

SECRET = "mini-instructor-secret-4f1d"
MARK = f"mini-forkserver-leftover-{os.getpid()}"
SLEEPER = "sleep 297"                   # what the attacks leave running, marked with MARK

ATTACK = r'''
import hashlib, json, os, re, signal, socket
found = {}
found["parent"] = open(f"/proc/{os.getppid()}/cmdline", "rb").read().replace(b"\0", b" ").decode()
found["parent pid"] = os.getppid()
found["processes"] = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
found["answers"] = []
for path in re.findall(r'"socket": "([^"]+)"', found["parent"]):    # the server's own argument
    try:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        client.connect(path)
        client.send(json.dumps({"cwd": os.path.join(os.path.dirname(os.getcwd()), "..", "b_full", LAB),
                                "arguments": ["-f", os.path.abspath("evil.json")],
                                "environment": {}}).encode())
        found["answers"].append(client.recv(64).decode())
    except OSError as error:
        found["answers"].append("refused: " + type(error).__name__)
def holds(data):
    """Whether the secret is in ``data``: its head, then bytes that hash as its tail (so that
    the secret itself is never in this kernel's memory, where the search would find it)."""
    start = data.find(HEAD)
    while start >= 0:
        tail = data[start + len(HEAD):start + len(HEAD) + TAIL_LENGTH]
        if hashlib.sha256(tail).hexdigest() == TAIL_SHA256:
            return True
        start = data.find(HEAD, start + 1)
    return False
found["environ"] = holds(open("/proc/self/environ", "rb").read())
def memory_holds(test=holds):
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as memory:
        for line in maps:
            span, permissions = line.split()[:2]
            if not permissions.startswith("rw"):
                continue
            start, end = (int(part, 16) for part in span.split("-"))
            try:
                memory.seek(start)
                if test(memory.read(end - start)):
                    return True
            except (OSError, OverflowError, ValueError):
                continue
    return False
found["memory"] = memory_holds()
found["scanner sees its own head"] = memory_holds(lambda data: HEAD in data)
try:                # the server only: a kernel started the usual way has the worker as parent
    if "autograder.nbgrader_path.forkserver" in found["parent"]:
        os.kill(os.getppid(), signal.SIGKILL)
    found["kill the server"] = "ok"
except OSError as error:
    found["kill the server"] = "refused: " + type(error).__name__
found["parent"] = found["parent"][:200]     # its command, not its long confinement argument
print("FORK " + json.dumps(found))
'''

# a process in the kernel's session, then the kernel dies where ipykernel cannot clean up; the
# cells after it run in a new kernel, forked by the same server
LEAVE = '''
import os, signal, subprocess
subprocess.Popen(["sleep", "297"], env={"MARK": MARK})
os.kill(os.getpid(), signal.SIGKILL)
'''


@pytest.fixture(params=KINDS + ["namespaces"] * ("namespaces" in KINDS),
                ids=KINDS + ["namespaces-only"] * ("namespaces" in KINDS))
def isolation(request, tmp_path, monkeypatch):
    if request.node.callspec.id == "namespaces-only":
        monkeypatch.setattr(sandbox, "_landlock_works", lambda: False)
        monkeypatch.setenv("MINI_SANDBOX", "namespaces-only")     # the workers see this one
    else:
        monkeypatch.setenv("MINI_SANDBOX", request.param)
    monkeypatch.setenv("MINI_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setenv("MINI_RELEASE_DIR", str(tmp_path / "release"))
    monkeypatch.setenv("MINI_TEST_SECRET", SECRET)
    sandbox.isolation.cache_clear()
    yield request.node.callspec.id
    sandbox.isolation.cache_clear()


def test_a_kernel_cannot_use_or_stop_the_server_that_forked_it(isolation, tmp_path):
    solution = nbformat.read(ROOT / "solutions" / LAB / f"{LAB}.ipynb", as_version=4)
    attacker = nbformat.from_dict(json.loads(json.dumps(solution)))
    attacker.cells.append(nbformat.v4.new_code_cell(f"MARK = {MARK!r}\n" + LEAVE))
    attacker.cells.append(nbformat.v4.new_code_cell(
        f"LAB = {LAB!r}\nHEAD = {SECRET[:12].encode()!r}\n"
        f"TAIL_LENGTH = {len(SECRET) - 12}\n"
        f"TAIL_SHA256 = {hashlib.sha256(SECRET[12:].encode()).hexdigest()!r}\n" + ATTACK))
    hand_in(tmp_path, {"a_attacker": attacker, "b_full": solution, "c_untouched": None})
    assert cli.main(["autograde", "lab2", "--workers", "1"]) == 0

    found = autograded_report("a_attacker", "FORK ")
    assert "autograder.nbgrader_path.forkserver" in found.pop("parent")       # it was forked, not started
    parent, processes = found.pop("parent pid"), found.pop("processes")
    if isolation.startswith("namespaces"):  # its own PID namespace: its parent is the namespace's
        assert parent == 1 and processes == [1, 2]      # init, a fork of the server's child
    assert found.pop("environ") is False and found.pop("memory") is False
    killed = found.pop("kill the server")
    if isolation == "namespaces-only":      # no Landlock to stop the signal, but it reaches only
        assert killed == "ok"               # the namespace's init, which ignores it
    else:
        assert killed.startswith("refused"), killed
    assert found.pop("scanner sees its own head") is True
    answers = found.pop("answers")          # hidden with namespaces; reached, but no use, without
    assert len(answers) == 1 and not answers[0].startswith("pid"), answers  # no kernel for it
    if isolation.startswith("namespaces"):
        assert answers[0] == "refused: FileNotFoundError", answers
    assert found == {}
    assert not (tmp_path / "course" / "autograded" / "b_full" / LAB / "evil.json").exists()

    from nbgrader.api import Gradebook
    grader = course.api()
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        scores = [gb.find_submission(LAB, student).score
                  for student in ("a_attacker", "b_full", "c_untouched")]
    assert scores == [100, 100, 0]          # the server killed or not, the next two graded right
    assert leftovers(SLEEPER, MARK) == []                # killed with the first kernel's session

