"""Lab 5's kernels as they compile for a real GPU: their PTX, made where no student code runs, read
as facts in the lab's words, and the checks of each kernel's facts (grader half).

The student half (``autograder.probes.lab5``) sends a kernel as plain data
(``mini.kernels.ptx.describe``: its code object and the values it reads).  It is compiled here in
a process that runs nothing of the student's but the compiler on that code, and compiles no other
student's kernels: sandboxed as a grading worker (``autograder.sandbox.sandboxed``, with the lab's
student edition of mini as its only mini), under limits on time, memory, file size and processes,
and sealed off (the grader covered, Landlock, no capabilities) before it unpacks the code.  A code
object may crash or hang the compiler, or make it write pages of PTX: that costs the check it
belongs to, and nothing else.
The PTX is read here with ``mini.kernels.ptx.Summary``, the reading students run on their own
kernels in the lab.

A check reads a kernel as facts, one per thing the lab asks of it, each a short sentence
(``"a barrier between storing a tile and reading it": "yes"``) that quotes the instructions it
found where it is not what the lab asks; the lab's kernel has the facts the check expects.  Each
check compiles its kernel once, for float32 arguments, with the notebook's ``TILE`` and
``THREADS`` set to the values here, so that what is expected does not depend on the notebook.
"""
import contextlib
import functools
import hashlib
import importlib.metadata
import json
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from autograder import REPO, edition, sandbox
from autograder.checks import Case
from autograder.sandbox import cgroups
from autograder.sandbox import scratch as folders
from mini.kernels import ptx as kernel_ptx

COMPILE_LIMITS = sandbox.Limits(worker_seconds=120.0, memory_bytes=3 * 2**30,
                                file_bytes=16 * 2**20, processes=64)
"""One compilation: wall clock and CPU time, address space (the compiler needs about 600 MB),
largest file, processes and threads."""
MAX_LOOPS = 200
"""The most loops a kernel's PTX may have to be read; a kernel of the lab has a few."""
MAX_REPLY_CHARS = 2**21
"""The most the compiling process may send back; a kernel of the lab makes tens of kilobytes of
PTX."""

COMPILES = "compiles for an NVIDIA GPU (sm_80)"
FLOAT64 = "float64 instructions"
NOT_COMPILED = "(not compiled)"


# ---------------------------------------------------------------------------------------------
# Compiling, in a process of its own
# ---------------------------------------------------------------------------------------------

def compiled(lab, description, argument_types, named=None):
    """The :class:`mini.kernels.ptx.Summary` of the kernel ``description`` compiled for
    ``argument_types`` (``mini.kernels.ptx.signature``), ``named`` (``{label: source of a Python
    function}``) standing for the check's own functions; CompileError if it does not compile or
    the compiler does not finish, ValueError if ``description`` is not one."""
    kernel = json.dumps({"description": description, "signature": argument_types,
                         "named": named or {}, "cc": list(kernel_ptx.CC)})
    summary = kernel_ptx.Summary.of(_ptx(lab, kernel))
    if len(summary.loops) > MAX_LOOPS:          # reading them would take the grader a while
        raise kernel_ptx.CompileError(f"its PTX has {len(summary.loops)} loops, more than any "
                                      "kernel of the lab")
    return summary


@functools.lru_cache(maxsize=64)      # tens of kilobytes each, 2 MiB at most
def _ptx(lab, kernel):
    """The PTX of ``kernel`` (JSON: :func:`compiled`'s arguments).  The same kernel compiles to
    the same PTX, so it is compiled once and kept, in this process and on disk (:func:`_kept`),
    where every grading process finds it: a batch compiles each kernel it meets once (most
    students' kernels are alike, and the checks of a fill-in that another broke send the same
    kernel again).  A kernel that does not compile is tried again, since the compiler may have
    run out of time on a busy machine."""
    student_mini = edition.for_grading(lab)
    kept = _kept(student_mini, kernel)
    try:
        return kept.read_text()
    except OSError:
        ptx = _compile(student_mini, kernel)
    kept.parent.mkdir(parents=True, exist_ok=True)
    descriptor, partial = tempfile.mkstemp(prefix=".partial-", dir=kept.parent)
    with os.fdopen(descriptor, "w") as file:
        file.write(ptx)
    os.replace(partial, kept)                # whole or not at all, whoever writes it first
    return ptx


def _kept(student_mini, kernel):
    """Where the PTX of ``kernel`` compiled with ``student_mini`` is kept: in the grader's cache
    (``autograder.edition.cache``, which no process running student code can read or write),
    under the edition (its name is the digest of mini's source), the compiler's version and
    this module's source (the compiling process runs its :func:`main`)."""
    digest = hashlib.sha256(_compiler_identity())
    digest.update(kernel.encode())
    return edition.cache() / "ptx" / student_mini.name / f"{digest.hexdigest()}.ptx"


@functools.cache
def _compiler_identity():
    """What besides the kernel decides its PTX: numba's versions and this module's source."""
    versions = [importlib.metadata.version(name) for name in ("numba", "numba-cuda")]
    return json.dumps(versions).encode() + Path(__file__).read_bytes()


def _compile(student_mini, kernel):
    """Compile ``kernel``: by the compiling process of the submission being verified
    (:func:`one_submission`), else by a process of its own."""
    compilers = getattr(_submission, "compilers", None)
    if compilers is None:
        with contextlib.closing(_Compiler(student_mini)) as compiler:
            reply = compiler.ask(kernel)
    else:
        compiler = compilers.get(student_mini)
        if compiler is None or not compiler.alive():
            compiler = compilers[student_mini] = _Compiler(student_mini)
        reply = compiler.ask(kernel)
    if "error" in reply:
        raise (ValueError if reply.get("kind") == "description" else kernel_ptx.CompileError)(
            reply["error"])
    return reply["ptx"]


_submission = threading.local()


@contextlib.contextmanager
def one_submission():
    """While one submission's checks are verified (in this thread): its kernels are compiled by
    one process, started for the first of them that is not kept already, and stopped at the
    end.  A compiling process never serves two students; starting one (Python, numba, the
    compiler's first run) costs several times what a kernel of the lab takes to compile."""
    _submission.compilers = {}
    try:
        yield
    finally:
        for compiler in _submission.compilers.values():
            compiler.close()
        _submission.compilers = None


class _Compiler:
    """A compiling process: sandboxed like a grading worker, under :data:`COMPILE_LIMITS`, sealed
    off before it unpacks its first kernel.  It answers one request at a time; one that crashes
    it, hangs it or sends back what is not a reply costs that request alone: the process is
    stopped, and the next request starts another."""

    def __init__(self, student_mini):
        self.scratch = folders.make("mini-ptx-")     # swept by the next one if this is killed
        seen = sandbox.seen_at(student_mini)
        sealing = {"confine": sandbox.confinement([self.scratch], seen),
                   "namespaces": sandbox.isolation() == "namespaces"}
        python = [sys.executable, "-I", "-c", f"import sys; sys.path[:0] = [{seen!r}, "
                  f"{str(REPO)!r}]; from autograder.checks.ptx import main; main()"]
        tasks = sandbox.user_tasks()
        self.cgroup = contextlib.ExitStack()
        try:
            cgroup = self.cgroup.enter_context(cgroups.scope(COMPILE_LIMITS.processes,
                                                               COMPILE_LIMITS.memory_bytes))
            self.process = subprocess.Popen(
                sandbox.sandboxed(python, keep=[self.scratch], editions=[student_mini]),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                cwd=self.scratch, env={**sandbox.student_environment(self.scratch),
                                       "NUMBA_ENABLE_CUDASIM": "0"},
                start_new_session=True,
                preexec_fn=lambda: sandbox.start_limited(COMPILE_LIMITS.rlimits(), tasks, cgroup))
        except BaseException:
            self.cgroup.close()
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise
        self._send(sealing)

    def alive(self):
        return self.process.poll() is None

    def ask(self, kernel):
        """The reply to ``kernel`` (JSON), read within the time limit and up to
        :data:`MAX_REPLY_CHARS`: ``{"ptx": ...}`` or ``{"error": ...}``."""
        seconds = COMPILE_LIMITS.worker_seconds
        if not self._send(json.loads(kernel)):
            return self._failed()
        line, deadline, fd = b"", time.monotonic() + seconds, self.process.stdout.fileno()
        while not line.endswith(b"\n") and len(line) <= MAX_REPLY_CHARS:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.close()
                return {"error": f"the compiler did not finish within {seconds:g} s"}
            chunk = os.read(fd, 2**16)
            if not chunk:
                break
            line += chunk
        try:
            reply = json.loads(line[:MAX_REPLY_CHARS])
            if isinstance(reply, dict) and (isinstance(reply.get("ptx"), str)
                                            or isinstance(reply.get("error"), str)):
                return reply
        except ValueError:
            pass
        return self._failed()

    def _send(self, request):
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
            return True
        except OSError:
            return False

    def _failed(self):
        self.close()
        code = self.process.returncode
        why = (f"was stopped ({signal.Signals(-code).name})" if code < 0
               else f"exited with status {code}")
        return {"error": f"the compiler {why} without an answer"}

    def close(self):
        """Stop the process and everything it started; remove its scratch folder."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.cgroup.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


def main():
    """The compiling process: on stdin, how to seal itself off, then requests (:func:`compiled`'s
    kernel), one JSON object a line; on stdout, a reply to each, one JSON object a line.  numba
    (the real one, not the simulator) is loaded and the process sealed off before a kernel's code
    is unpacked; what the compiler prints goes nowhere."""
    replies, devnull = os.fdopen(os.dup(1), "w"), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    sealing = json.loads(sys.stdin.readline())
    from numba import cuda  # noqa: F401 (loaded before the seal, with the simulator off)
    sandbox.seal_off(sealing["confine"], sealing["namespaces"])
    for line in sys.stdin:
        request = json.loads(line)
        named = {label: eval(source, {"math": math})
                 for label, source in request["named"].items()}
        try:
            reply = {"ptx": kernel_ptx.compile_description(request["description"],
                                                           request["signature"], named,
                                                           request["cc"])}
        except kernel_ptx.CompileError as error:
            reply = {"error": str(error)}
        except ValueError as error:
            reply = {"error": str(error), "kind": "description"}
        text = json.dumps(reply)
        if len(text) > MAX_REPLY_CHARS:
            text = json.dumps({"error": f"its PTX has {len(reply['ptx'])} characters, more than "
                                        "any kernel of the lab"})
        replies.write(text + "\n")
        replies.flush()


# ---------------------------------------------------------------------------------------------
# Facts
# ---------------------------------------------------------------------------------------------

def facts(lab, description, argument_types, named, read, expected):
    """What ``read(summary)`` says of the compiled kernel, after whether it compiles: the keys of
    ``expected`` (the facts of the lab's kernel), each "(not compiled)" where it does not."""
    try:
        summary = compiled(lab, description, argument_types, named)
    except kernel_ptx.CompileError as error:
        return {**{key: NOT_COMPILED for key in expected}, COMPILES: f"no: {said(str(error))}"}
    return {COMPILES: "yes", **read(summary)}


def said(message, room=70):
    """The compiler's message in ``room`` characters: its first sentence, shortened."""
    first = message.split(" found for signature")[0].split(" During:")[0].strip()
    return first if len(first) <= room else first[:room - 3].rstrip() + "..."


def float64(summary):
    """How many float64 instructions there are, quoting one (arithmetic first), or "none"."""
    found = summary.where("float64")
    if not found:
        return "none"
    arithmetic = [i for i in found if summary.ops[i].split(".")[0] in ("add", "sub", "mul", "fma")]
    return f"{len(found)}, e.g. {_quoted(summary, (arithmetic or found)[0])}"


def grid_size(summary, axes="x"):
    """Whether the kernel reads the grid's size along ``axes`` (``cuda.gridsize`` does)."""
    registers = [f"%nctaid.{axis}" for axis in axes]
    missing = [name for name in registers if name not in summary.registers()]
    return f"yes ({', '.join(registers)})" if not missing else f"no: it never reads {missing[0]}"


def shared_arrays(summary, items):
    """The shared arrays declared, by size, in words where they hold ``items`` numbers:
    ``"2 of 64 bytes (16 float32)"``."""
    sizes = sorted(summary.shared.values())
    if not sizes:
        return "none"
    words = {4 * items: f" ({items} float32)", 8 * items: f" ({items} float64)"}
    if len(set(sizes)) == 1:
        return f"{len(sizes)} of {sizes[0]} bytes{words.get(sizes[0], '')}"
    return ", ".join(f"1 of {size} bytes" for size in sizes)


def fenced(summary, first, then):
    """"yes" if a barrier separates every instruction of kind ``first`` from the next of kind
    ``then`` (``mini.kernels.ptx.Summary.unfenced``); else the two instructions, in the order
    they run."""
    pair = summary.unfenced(first, then)
    if pair is None:
        return "yes"
    return f"no: {_quoted(summary, pair[1])} after {_quoted(summary, pair[0])}"


def most_between_barriers(summary, kind):
    """How many instructions of ``kind`` at most run between two barriers: counted down the
    text, and None (no bound) where a loop holds some of them and no barrier."""
    if any(summary.count(kind, loop) and not summary.count("barriers", loop)
           for loop in summary.loops):
        return None
    most = run = 0
    for op in summary.ops:
        if kernel_ptx.KINDS["barriers"].search(op):
            run = 0
        elif kernel_ptx.KINDS[kind].search(op):
            run += 1
            most = max(most, run)
    return most


def number(value):
    """A count for a fact: ``2``, ``0.5``, ``1.33``."""
    return "none found" if value is None else f"{value:.3g}"


def _quoted(summary, index):
    return " ".join(summary.lines[index].rstrip(";").split())


# ---------------------------------------------------------------------------------------------
# The checks: what each kernel of lab 5 compiles to
# ---------------------------------------------------------------------------------------------

LAB = "lab5_kernels"
WORK_TILE, WORK_THREADS = 4, 16          # TILE and THREADS where the checks count
GRID_SIZE = "reads the grid's size (cuda.gridsize)"
SHARED = "shared arrays"

FLOAT32 = ("float32 in, float32 arithmetic: a Python float (0.0, 1.0) in a float32 kernel is a "
           "float64, and so is anything computed with it; consumer GPUs run float64 at 1/32 to "
           "1/64 of the float32 rate, data-centre GPUs at 1/2 (x.dtype.type(0) is a zero of x's "
           "dtype)")
COMPILING = ("a kernel compiles to GPU instructions, so only arithmetic, math, cuda and indexing "
             "of the arrays it is given work inside it: numpy functions, Python objects (lists, "
             "dicts, functions not compiled with cuda.jit) do not compile, even where the "
             "simulator, which runs Python, lets them through")


def _code_case(fill_in, what, argument_types, read, expected, hint, source=None, constants=None):
    """A check of what ``fill_in``'s kernel compiles to: the probe describes the kernel (made by
    the factory for ``source`` where it is one), and the grader compiles and reads it."""
    named = {"fn": source} if source else {}
    return Case(what=f"{what}, compiled for an NVIDIA A100 (sm_80)", probe="kernel_code",
                inputs={"fill_in": fill_in, "source": source, "constants": constants or {}},
                interpret=lambda description: facts(LAB, description, argument_types, named, read,
                                                    expected),
                expected=lambda: expected, hint=f"{hint}; {COMPILING}")


def map_code_check(rng):
    """Compiled for a GPU: it compiles, strides by the grid's size, stays in float32."""
    source = "lambda v: v * v - v"
    expected = {COMPILES: "yes", GRID_SIZE: "yes (%nctaid.x)", FLOAT64: "none"}
    return _code_case(
        "map_kernel", f"map_kernel({source}) for float32 x and out", [["float32", 1]] * 2,
        lambda summary: {GRID_SIZE: grid_size(summary), FLOAT64: float64(summary)},
        expected, source=source, hint=(
            "the grid-stride loop steps by cuda.gridsize(1), which reads the grid's size "
            f"(%nctaid.x); {FLOAT32}"))


def zip_code_check(rng):
    """Compiled for a GPU: it compiles, strides by the grid's size both ways, stays in float32."""
    source = "lambda a, b: a * b - a"
    expected = {COMPILES: "yes", GRID_SIZE: "yes (%nctaid.x, %nctaid.y)", FLOAT64: "none"}
    return _code_case(
        "zip_kernel", f"zip_kernel({source}) for float32 x, y and out", [["float32", 2]] * 3,
        lambda summary: {GRID_SIZE: grid_size(summary, "xy"), FLOAT64: float64(summary)},
        expected, source=source, hint=(
            "the loops over rows and columns step by the grid's size, cuda.gridsize(2), which "
            f"reads %nctaid.x and %nctaid.y; {FLOAT32}"))


TREE_READS = "reads the shared array (the tree)"
MOST_READS = "most shared loads between two barriers (a step reads 2 slots)"
TREE_FENCE = "a barrier between a step's stores and the next step's loads"


def reduce_code_check(rng):
    """Compiled for a GPU: one shared array of x's dtype, read step by step between barriers."""
    source = "lambda a, b: a + b"

    def read(summary):
        most = most_between_barriers(summary, "shared loads")
        return {SHARED: shared_arrays(summary, WORK_THREADS),
                TREE_READS: "yes" if summary.count("shared loads") else (
                    "no: there is no ld.shared at all"),
                MOST_READS: "at most 2" if most is not None and most <= 2 else (
                    f"{most}, with no bar.sync between them" if most else
                    "no bound: a loop of ld.shared has no bar.sync in it"),
                TREE_FENCE: fenced(summary, "shared stores", "shared loads"),
                FLOAT64: float64(summary)}

    expected = {COMPILES: "yes", SHARED: f"1 of {4 * WORK_THREADS} bytes ({WORK_THREADS} float32)",
                TREE_READS: "yes", MOST_READS: "at most 2", TREE_FENCE: "yes", FLOAT64: "none"}
    return _code_case(
        "reduce_kernel", f"reduce_kernel({source}) for float32 x, start and partial, with "
        f"THREADS = {WORK_THREADS}", [["float32", 1], ["float32", 0], ["float32", 1]], read,
        expected, source=source, constants={"THREADS": WORK_THREADS}, hint=(
            "the block combines its THREADS values in ONE shared array of x's dtype (THREADS x 4 "
            "bytes in float32), and the tree reads it: at each step a thread reads two slots "
            "(ld.shared), stores one, and every thread waits at cuda.syncthreads() (bar.sync) "
            f"before the next step reads what it stored; {FLOAT32}"))


STEP = f"per k-step (TILE = {WORK_TILE} multiply-adds)"
TILE_FENCE = "a barrier between storing a tile and reading it"
NEXT_FENCE = "a barrier between reading a tile and storing the next"
STEP_LOADS, STEP_BARRIERS = f"global loads {STEP}", f"barriers {STEP}"
PRODUCT_READS = "shared loads per multiply-add"


def matmul_code_check(rng):
    """Compiled for a GPU: two tiles, read between barriers; per k-step one load of A and one of B
    per thread, two barriers; each multiply-add reads both tiles; float32 throughout."""
    def read(summary):
        step = summary.per_step(WORK_TILE) or {}
        return {SHARED: shared_arrays(summary, WORK_TILE * WORK_TILE),
                TILE_FENCE: fenced(summary, "shared stores", "shared loads"),
                NEXT_FENCE: fenced(summary, "shared loads", "shared stores"),
                STEP_LOADS: number(step.get("global loads")),
                STEP_BARRIERS: number(step.get("barriers")),
                PRODUCT_READS: number(summary.per_multiply_add("shared loads")),
                FLOAT64: float64(summary)}

    items = WORK_TILE * WORK_TILE
    expected = {COMPILES: "yes", SHARED: f"2 of {4 * items} bytes ({items} float32)",
                TILE_FENCE: "yes", NEXT_FENCE: "yes", STEP_LOADS: "2", STEP_BARRIERS: "2",
                PRODUCT_READS: "2", FLOAT64: "none"}
    return _code_case(
        "matmul_tiled", f"matmul_tiled for float32 A, B and C, with TILE = {WORK_TILE}",
        [["float32", 2]] * 3, read, expected, constants={"TILE": WORK_TILE}, hint=(
            "a tiled kernel declares two (TILE, TILE) shared arrays of A's dtype; in each step "
            "along k every thread loads ONE element of A and ONE of B from global memory "
            "(ld.global) into them (st.shared), waits (bar.sync), takes its TILE products from "
            "the tiles (two ld.shared per multiply-add), and waits again before the next step "
            "overwrites them. A naive kernel loads 2 elements from global memory per "
            f"multiply-add, whatever shared array sits unused next to it; {FLOAT32}"))


def spmv_code_check(rng):
    """Compiled for a GPU: it compiles, strides over rows by the grid's size, stays in float32."""
    expected = {COMPILES: "yes", GRID_SIZE: "yes (%nctaid.x)", FLOAT64: "none"}
    return _code_case(
        "spmv_kernel", "spmv_kernel for float32 data, x and y, int64 indices and indptr",
        [["float32", 1], ["int64", 1], ["int64", 1], ["float32", 1], ["float32", 1]],
        lambda summary: {GRID_SIZE: grid_size(summary), FLOAT64: float64(summary)},
        expected, hint=(
            "thread g handles rows g, g + G, ... where G = cuda.gridsize(1), which reads the "
            f"grid's size (%nctaid.x), and accumulates in data's dtype; {FLOAT32}"))


def spmm_code_check(rng):
    """Compiled for a GPU: it compiles, strides by the grid's size both ways, stays in float32."""
    expected = {COMPILES: "yes", GRID_SIZE: "yes (%nctaid.x, %nctaid.y)", FLOAT64: "none"}
    return _code_case(
        "spmm_kernel", "spmm_kernel for float32 data, X and Y, int64 indices and indptr",
        [["float32", 1], ["int64", 1], ["int64", 1], ["float32", 2], ["float32", 2]],
        lambda summary: {GRID_SIZE: grid_size(summary, "xy"), FLOAT64: float64(summary)},
        expected, hint=(
            "the loops over Y's rows and columns step by the grid's size, cuda.gridsize(2), "
            f"which reads %nctaid.x and %nctaid.y, and accumulate in data's dtype; {FLOAT32}"))
