"""Every promise of the sandbox, checked by a submission that tries to break it.

A probe cell, added to a complete lab 2 notebook, tries to read and list what grading must hide
(the solutions, the course folder, the submissions, another checkout's solutions, the instructor's
home and Jupyter runtime folder with a server's token, another folder of /tmp, this checkout's
history and tests), to write into everything it should not change (the solutions, mini, the
checks, Python's packages, the submissions, the instructor's IPython start-up and Jupyter
configuration folders), to reach a TCP server the test runs on loopback, to import the grader
and read the hidden checks' source, to start more threads than the process limit allows, to write a file over the size limit, and to
leave a process behind.  It prints what it found; the test reads that from the results as an
instructor would, and checks the files themselves.  Both grading paths (the pytest path's worker,
the nbgrader path's kernel), under each layer of isolation (user namespaces with Landlock and
without it, and Landlock as on a machine without them: ``MINI_SANDBOX=landlock``); and a grader
with neither says so and still grades.
"""
import json
import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import nbformat
import pytest

from autograder import cli, edition, sandbox
from autograder.nbgrader_path import course
from support import ROOT
from support.residue import digest, leftovers
from support.sandboxing import KINDS, LAB, autograded_report, hand_in

MARK = f"mini-probe-leftover-{os.getpid()}"   # one per test process: xdist runs two at once
SLEEPER = "sleep 299"                   # what the attacks leave running, marked with MARK
LATER_EDITION = edition.for_grading("lab4_framework")     # lab 2's answers are in it

PROBE = r'''
import ctypes, json, os, socket, subprocess, threading, time
found = {}
def attempt(name, action):
    try:
        result = action()
        found[name] = "ok: " + repr(result)[:120]
    except BaseException as error:
        found[name] = "refused: " + type(error).__name__
def read_all(folder):        # the way to its own folder is no find
    names = [n for n in os.listdir(folder)
             if not os.getcwd().startswith(os.path.join(folder, n) + os.sep)]
    texts = [open(path, "rb").read()[:20] for path in (os.path.join(folder, n) for n in names)
             if os.path.isfile(path)]
    return names if names else "empty"
for name, folder in READ.items():
    attempt("read " + name, lambda: read_all(folder))
attempt("read the solution notebook", lambda: open(SOLUTION).read(50))
def unmount(folder):        # the sandbox's root may unmount what it mounted, unless it is no more
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(folder.encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), "umount2")
    return os.listdir(folder)
attempt("unmount the cover over the solutions", lambda: unmount(READ["solutions"]))
def read_source(path):       # a private copy of a module needs its source
    text = open(path).read()
    if not text:
        raise OSError("empty")
    return len(text)
attempt("read the full mini's source", lambda: read_source(FULL_MINI_SOURCE))
attempt("read a later lab's edition of mini", lambda: read_source(LATER_EDITION_SOURCE))
attempt("read the hidden checks' source", lambda: read_source(CHECKS_SOURCE))
def other_differentiator():  # the import hook removed first: what is left of autograd?
    import sys
    sys.meta_path[:] = [hook for hook in sys.meta_path if type(hook).__name__ != "_Refused"]
    import autograd
    return autograd.grad
attempt("import autograd", lambda: __import__("autograd"))
attempt("use autograd without the import hook", other_differentiator)
for name, folder in WRITE.items():
    attempt("write " + name, lambda: open(os.path.join(folder, "planted.py"), "w").write("x=1"))
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", PORT), timeout=3).close())
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"hi", ("127.0.0.1", PORT)))
attempt("import the grader", lambda: __import__("autograder.checks.lab2"))
def many_threads():
    threading.stack_size(1 << 16)
    stop, started = threading.Event(), []
    try:
        for _ in range(THREADS):
            thread = threading.Thread(target=stop.wait)
            thread.start()
            started.append(thread)
    finally:
        stop.set()
    return len(started)
attempt("threads", many_threads)
attempt("big file", lambda: open("big.bin", "wb").write(b"\0" * (FILE_BYTES + 2**20)))
attempt("see the grader", lambda: open(f"/proc/{GRADER}/cmdline").read(40))
attempt("signal the grader", lambda: os.kill(GRADER, 0))
attempt("leftover", lambda: subprocess.Popen(["sleep", "299"], start_new_session=True,
                                             env={"MARK": MARK}).pid)
print("PROBE " + json.dumps(found))
'''


def probe_notebook(read, write, port, threads, file_bytes):
    nb = nbformat.read(ROOT / "solutions" / LAB / f"{LAB}.ipynb", as_version=4)
    settings = (f"READ = {read!r}\nWRITE = {write!r}\nPORT = {port}\nTHREADS = {threads}\n"
                f"FILE_BYTES = {file_bytes}\nMARK = {MARK!r}\nGRADER = {os.getpid()}\n"
                f"SOLUTION = {str(ROOT / 'solutions' / LAB / (LAB + '.ipynb'))!r}\n"
                f"FULL_MINI_SOURCE = {str(ROOT / 'mini' / 'graph.py')!r}\n"   # lab 2's toposort
                f"LATER_EDITION_SOURCE = {str(LATER_EDITION / 'mini' / 'graph.py')!r}\n"
                f"CHECKS_SOURCE = {str(ROOT / 'autograder' / 'checks' / 'lab2.py')!r}\n")
    nb.cells.append(nbformat.v4.new_code_cell(settings + PROBE))
    return nb




class Listener:
    """A TCP and a UDP server on one loopback port, counting what reaches them."""

    def __init__(self):
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.accepted, self.running = 0, True
        self.threads = [threading.Thread(target=self._serve, args=(server, receive), daemon=True)
                        for server, receive in ((self.tcp, lambda s: s.accept()[0].close()),
                                                (self.udp, lambda s: s.recvfrom(100)))]
        for thread in self.threads:
            thread.start()

    def _serve(self, server, receive):
        server.settimeout(0.2)
        while self.running:
            try:
                receive(server)
                self.accepted += 1
            except OSError:
                continue

    def close(self):
        self.running = False
        for thread in self.threads:
            thread.join()
        self.tcp.close()
        self.udp.close()




@pytest.fixture(params=KINDS + ["namespaces"] * ("namespaces" in KINDS),
                ids=KINDS + ["namespaces-only"] * ("namespaces" in KINDS))
def layers(request, monkeypatch):
    """Each layer alone, so that each must keep its own promises: namespaces with Landlock,
    namespaces without it, Landlock without namespaces."""
    monkeypatch.setenv("MINI_SANDBOX", request.node.callspec.id)    # batch workers read it too
    sandbox.isolation.cache_clear()
    yield request.node.callspec.id
    sandbox.isolation.cache_clear()


@pytest.fixture
def setting(tmp_path, monkeypatch):
    """Folders to find and not to change, a listener, and the course folder of this test."""
    monkeypatch.setenv("MINI_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setenv("MINI_RELEASE_DIR", str(tmp_path / "release"))
    other = tmp_path / "other-checkout" / "solutions"
    other.mkdir(parents=True)
    (other / "answers.py").write_text("def backward_pass(): ...\n")
    (tmp_path / "course" / "submitted").mkdir(parents=True)
    (tmp_path / "course" / "gradebook-notes.txt").write_text("private\n")
    exchange = tmp_path / "exchange" / "mini" / "inbound" / "classmate+lab2_graphs+2026-12-01"
    exchange.mkdir(parents=True)                  # a shared server's exchange, outside the course
    (exchange / f"{LAB}.ipynb").write_text("{}\n")
    monkeypatch.setenv("MINI_EXCHANGE_DIR", str(tmp_path / "exchange"))
    home = tmp_path / "home"          # the instructor's: a server's token, IPython's start-up files
    (home / ".local" / "share" / "jupyter" / "runtime").mkdir(parents=True)
    (home / ".local" / "share" / "jupyter" / "runtime" / "jpserver-1.json").write_text(
        '{"token": "instructor-token"}\n')
    (home / ".ipython" / "profile_default" / "startup").mkdir(parents=True)
    (home / ".jupyter").mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_CONFIG_DIR", "IPYTHONDIR"):
        monkeypatch.delenv(name, raising=False)
    elsewhere = Path(tempfile.mkdtemp(prefix="mini-probe-elsewhere-", dir="/tmp"))
    (elsewhere / "answers.txt").write_text("another course's answers\n")
    listener = Listener()
    yield tmp_path, other, elsewhere, listener
    listener.close()
    shutil.rmtree(elsewhere)
    for folder in (ROOT / "solutions", ROOT / "mini", ROOT / "autograder" / "checks"):
        (folder / "planted.py").unlink(missing_ok=True)


def probe_targets(tmp_path, other, elsewhere, submissions):
    """What the probe reads, what it writes, and the folders whose files must stay as they were
    (not all of the grader's home, where the grader itself writes caches, nor this checkout's
    history and tests, which others may change meanwhile)."""
    site_packages = Path(nbformat.__file__).resolve().parent.parent
    read = {"solutions": str(ROOT / "solutions"), "course": str(tmp_path / "course"),
            "submissions": str(submissions), "other checkout": str(other),
            "exchange": str(next((tmp_path / "exchange" / "mini" / "inbound").iterdir()))}
    home = tmp_path / "home"
    read["jupyter runtime"] = str(home / ".local" / "share" / "jupyter" / "runtime")
    read["other folder of /tmp"] = str(elsewhere)
    watched = [*map(Path, read.values()), site_packages / "numpy", home / ".ipython",
               home / ".jupyter"]
    read.update({"grader's home": str(home), "this checkout's history": str(ROOT / ".git"),
                 "this checkout's tests": str(ROOT / "tests")})
    write = {"solutions": str(ROOT / "solutions"), "mini": str(ROOT / "mini"),
             "checks": str(ROOT / "autograder" / "checks"),
             "site-packages": str(site_packages), "submissions": str(submissions),
             "ipython start-up": str(home / ".ipython" / "profile_default" / "startup"),
             "jupyter config": str(home / ".jupyter")}
    return read, write, watched


def planted():
    """The files the probe tried to create in the grader's own folders."""
    return [path for path in (ROOT / "mini" / "planted.py",
                              ROOT / "autograder" / "checks" / "planted.py") if path.exists()]


def assert_nothing_found(found, path, layers):
    """Every attempt refused (or, for a folder, found empty), but what is allowed by design:
    Landlock alone does not cut UDP nor hide the grader's process.  With namespaces, Landlock or
    not, nothing of the host's files is there but the system, Python and the lab's student
    edition of mini (the grader's source is covered once the process has imported what it needs
    of it, the full mini and other editions are not there, autograd's folder is empty)."""
    allowed = {"leftover"}
    allowed |= {"udp", "see the grader"} if layers == "landlock" else set()
    got = {name: value for name, value in found.items()
           if not value.startswith("refused") and value != "ok: 'empty'" and name not in allowed}
    assert got == {}, (got, found)
    assert len(found) == 32, sorted(found)


def gradebook_scores(*students):
    from nbgrader.api import Gradebook
    grader = course.api()
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        return [gb.find_submission(LAB, student).score for student in students]


def test_the_pytest_path_hides_refuses_and_limits(layers, setting):
    tmp_path, other, elsewhere, listener = setting
    submissions = tmp_path / "inbox"
    read, write, watched = probe_targets(tmp_path, other, elsewhere, submissions)
    nb = probe_notebook(read, write, listener.port, threads=600, file_bytes=64 * 2**20)
    (submissions / "prober").mkdir(parents=True)
    nbformat.write(nb, submissions / "prober" / f"{LAB}.ipynb")
    before = digest(watched)
    out = tmp_path / "results"
    assert cli.main(["grade", "lab2", "--submissions", str(submissions), "--out", str(out),
                     "--seed", "3", "--workers", "1"]) == 0
    assert digest(watched) == before and planted() == []
    result = json.loads((out / LAB / "prober" / "results.json").read_text())
    found = json.loads(next(line for line in result["output"].splitlines()
                            if line.startswith("PROBE "))[len("PROBE "):])
    assert_nothing_found(found, "pytest", layers)
    assert listener.accepted == (layers == "landlock")     # the UDP datagram
    assert result["score"] == 100, result          # the probe costs no points: it is honest code
    assert {"namespaces": "own network namespace", "namespaces-only": "own network namespace",
            "landlock": "Landlock only"}[layers] in result["output"]
    time.sleep(0.5)
    assert leftovers(SLEEPER, MARK) == []


def test_the_nbgrader_kernel_hides_and_refuses(layers, setting):
    tmp_path, other, elsewhere, listener = setting
    submitted = tmp_path / "course" / "submitted"
    read, write, watched = probe_targets(tmp_path, other, elsewhere, submitted)
    watched = [submitted, tmp_path / "course" / "gradebook-notes.txt", *watched[2:]]
    nb = probe_notebook(read, write, listener.port, threads=600, file_bytes=64 * 2**20)
    assert cli.main(["release", "lab2"]) == 0
    (submitted / "prober" / LAB).mkdir(parents=True)
    nbformat.write(nb, submitted / "prober" / LAB / f"{LAB}.ipynb")
    before = digest(watched)
    assert cli.main(["autograde", "lab2", "--workers", "1"]) == 0
    assert digest(watched) == before and planted() == []
    assert_nothing_found(autograded_report("prober", "PROBE "), "nbgrader", layers)
    assert listener.accepted == (layers == "landlock")
    assert gradebook_scores("prober") == [100]      # honest code, confined
    if layers != "landlock" or os.geteuid() == 0:   # its PID namespace, or the batch's cgroup,
        assert leftovers(SLEEPER, MARK) == []                     # ended what left the kernel's session
    for pid in leftovers(SLEEPER, MARK):     # not promised to a grader that is not root: do not leave them
        os.kill(int(pid), 9)


LAUNCH_FILE_ATTACK = r'''
import glob, json, os
# the launch files of this test's batch (they name its course folder, which they hide); the probe
# leaves other batches' alone: another test may be grading with them right now
own = [spec for spec in glob.glob("/tmp/mini-autograde-*/*/jupyter/kernels/*/kernel.json")
       if COURSE in open(spec).read()]
rewritten = []
for spec in own:
    try:
        with open(spec, "w") as file:
            json.dump({"argv": ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                       "display_name": "unsandboxed", "language": "python"}, file)
        rewritten.append(spec)
    except OSError:
        pass
print("LAUNCH " + json.dumps({"found": own, "rewritten": rewritten}))
'''


def test_a_kernel_cannot_rewrite_the_launch_file_of_the_next(setting, monkeypatch):
    """With namespaces and no Landlock (an older kernel), the kernel launch file of the batch's
    worker is out of reach: rewritten, it would start the next submission outside the sandbox."""
    tmp_path, *_ = setting
    monkeypatch.setenv("MINI_SANDBOX", "namespaces-only")   # seen by the batch's workers too
    sandbox.isolation.cache_clear()
    try:
        nb = nbformat.read(ROOT / "solutions" / LAB / f"{LAB}.ipynb", as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(
            LAUNCH_FILE_ATTACK.replace("COURSE", repr(str(tmp_path)))))
        hand_in(tmp_path, {"a_attacker": nb, "b_untouched": None})
        assert cli.main(["autograde", "lab2", "--workers", "1"]) == 0
    finally:
        sandbox.isolation.cache_clear()
    report = autograded_report("a_attacker", "LAUNCH ")
    assert report == {"found": [], "rewritten": []}      # its worker's folder is hidden
    assert gradebook_scores("a_attacker", "b_untouched") == [100, 0]  # the next, same worker


LEAVES = r'''
import os
open(os.path.join(os.environ["HOME"], "left-behind.txt"), "w").write(MARK)
print(MARK)                      # IPython's history of this kernel now holds it too
'''
LOOKS = r'''
import json, os
runtime = os.path.dirname(os.environ["HOME"])       # the worker's runtime folder: home beside
found = []                                           # the connection file
for folder, _, names in os.walk(runtime):
    for name in names:
        path = os.path.join(folder, name)
        if not path.startswith(os.environ["HOME"] + os.sep):
            try:
                if MARK.encode() in open(path, "rb").read():
                    found.append(path)
            except OSError:
                pass
print("LOOKED " + json.dumps({"found": found, "others": sorted(
    name for name in os.listdir(runtime) if name.startswith("home-")
    and os.path.join(runtime, name) != os.environ["HOME"])}))
'''


def test_a_kernel_finds_nothing_of_the_kernels_before_it(setting, monkeypatch):
    """One worker grades a submission that leaves a file in its home and a line in IPython's
    history, then one that searches the worker's runtime folder (where its own home is): what the
    kernels before left there is gone.  Under namespaces without Landlock, the weaker layer."""
    tmp_path, *_ = setting
    monkeypatch.setenv("MINI_SANDBOX", "namespaces-only")   # seen by the batch's workers too
    sandbox.isolation.cache_clear()
    nb = nbformat.read(ROOT / "solutions" / LAB / f"{LAB}.ipynb", as_version=4)
    mark = f"mini-earlier-kernel-{os.getpid()}"
    first, second = (nbformat.v4.new_notebook(cells=[*nb.cells, nbformat.v4.new_code_cell(
        f"MARK = {mark!r}\n" + code)], metadata=nb.metadata) for code in (LEAVES, LOOKS))
    hand_in(tmp_path, {"a_leaves": first, "b_looks": second})
    try:
        assert cli.main(["autograde", "lab2", "--workers", "1"]) == 0
    finally:
        sandbox.isolation.cache_clear()
    assert autograded_report("b_looks", "LOOKED ") == {"found": [], "others": []}
    assert gradebook_scores("a_leaves", "b_looks") == [100, 100]


def test_without_isolation_grading_goes_on_and_says_so(setting, monkeypatch):
    tmp_path, *_ = setting
    monkeypatch.setenv("MINI_SANDBOX", "none")
    sandbox.isolation.cache_clear()
    try:
        submissions = tmp_path / "inbox"
        (submissions / "honest").mkdir(parents=True)
        nbformat.write(nbformat.read(ROOT / "solutions" / LAB / f"{LAB}.ipynb", as_version=4),
                       submissions / "honest" / f"{LAB}.ipynb")
        out = tmp_path / "results"
        assert cli.main(["grade", "lab2", "--submissions", str(submissions), "--out", str(out),
                         "--seed", "3", "--workers", "1"]) == 0
    finally:
        sandbox.isolation.cache_clear()
    result = json.loads((out / LAB / "honest" / "results.json").read_text())
    assert result["score"] == 100
    assert "isolation: NOT available here" in result["output"]


def test_a_sandbox_that_is_asked_for_must_exist(monkeypatch):
    monkeypatch.setenv("MINI_SANDBOX", "jail")
    sandbox.isolation.cache_clear()
    try:
        with pytest.raises(ValueError, match="MINI_SANDBOX='jail': expected one of namespaces"):
            sandbox.isolation()
    finally:
        sandbox.isolation.cache_clear()
