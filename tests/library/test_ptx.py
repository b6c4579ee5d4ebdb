"""Kernels judged by what they compile to: mini.kernels.ptx (describe, rebuild, compile, read) and
lab 5's checks of what a kernel compiles to (autograder.checks.ptx).

The kernels below are what students write, right and wrong.  Each wrong one must fail its
fill-in's check of what it compiles to with a message that quotes what was found: a kernel that
calls numpy does not compile, one without its barriers reads a tile before it is stored, one that
accumulates in float64 shows .f64 instructions, a reduction folded by one thread never reads its
shared array.  Right ones written another way (a loop over cuda.blockDim.x, a tree in a loop)
must pass.  Each check compiles in a process of its own, as grading does.
"""
import base64
import inspect
import marshal
import math

import numpy as np
import pytest

from mini.kernels import device, ptx
from autograder import probes
from autograder.checks import case_for, lab5, verify
from autograder.checks import ptx as compiled_ptx

device.choose()
from numba import cuda  # noqa: E402 (after mini's GPU-or-simulator choice)

TILE, THREADS = 4, 16
SEED = 5
FACTORIES = ("map_kernel", "zip_kernel", "reduce_kernel")     # fill-ins that make kernels


def tiled(A, B, C):
    a_tile = cuda.shared.array((TILE, TILE), A.dtype)
    b_tile = cuda.shared.array((TILE, TILE), A.dtype)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    zero = A.dtype.type(0)
    acc = zero
    (M, K), N = A.shape, B.shape[1]
    for t in range((K + TILE - 1) // TILE):
        a_tile[ty, tx] = A[row, t * TILE + tx] if row < M and t * TILE + tx < K else zero
        b_tile[ty, tx] = B[t * TILE + ty, col] if t * TILE + ty < K and col < N else zero
        cuda.syncthreads()
        for kk in range(TILE):
            acc += a_tile[ty, kk] * b_tile[kk, tx]
        cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = acc


def tiled_over_block_dim(A, B, C):
    """Right, written with the block's size where the lab writes TILE."""
    a_tile = cuda.shared.array((TILE, TILE), A.dtype)
    b_tile = cuda.shared.array((TILE, TILE), A.dtype)
    tx, ty, side = cuda.threadIdx.x, cuda.threadIdx.y, cuda.blockDim.x
    row, col = cuda.blockIdx.y * side + ty, cuda.blockIdx.x * side + tx
    (M, K), N = A.shape, B.shape[1]
    zero = A.dtype.type(0)
    acc = zero
    for t in range((K + side - 1) // side):
        a_tile[ty, tx] = A[row, t * side + tx] if row < M and t * side + tx < K else zero
        b_tile[ty, tx] = B[t * side + ty, col] if t * side + ty < K and col < N else zero
        cuda.syncthreads()
        for kk in range(side):
            acc += a_tile[ty, kk] * b_tile[kk, tx]
        cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        C[row, col] = acc


def _variant(source, old, new, count=1):
    """``source`` (a kernel's Python function) with ``count`` times ``old`` made ``new``."""
    text = inspect.getsource(source)
    assert text.count(old) >= count, old
    namespace = {}
    exec(compile(text.replace(old, new, count), f"<{source.__name__} variant>", "exec"),
         {**globals()}, namespace)
    return namespace[source.__name__]


def matmul_with_numpy(A, B, C):
    if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0:
        C[:, :] = np.dot(A, B)


def naive_beside_a_tile(A, B, C):
    unused = cuda.shared.array((TILE, TILE), A.dtype)
    unused[cuda.threadIdx.y, cuda.threadIdx.x] = 0
    col, row = cuda.grid(2)
    cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        acc = A.dtype.type(0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc


def reduce_kernel(fn):
    device_fn = cuda.jit(device=True)(fn)

    @cuda.jit
    def kernel(x, start, partial):
        cache = cuda.shared.array(THREADS, x.dtype)
        t = cuda.threadIdx.x
        acc = start
        for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
            acc = device_fn(acc, x[i])
        cache[t] = acc
        cuda.syncthreads()
        step = cuda.blockDim.x // 2          # a loop the compiler cannot unroll: one per step
        while step > 0:
            if t < step:
                cache[t] = device_fn(cache[t], cache[t + step])
            cuda.syncthreads()
            step //= 2
        if t == 0:
            partial[cuda.blockIdx.x] = cache[0]
    return kernel


def reduce_by_thread_0(fn):
    device_fn = cuda.jit(device=True)(fn)

    @cuda.jit
    def kernel(x, start, partial):
        cache = cuda.shared.array(THREADS, x.dtype)     # written, never read
        cache[cuda.threadIdx.x] = start
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:
            acc = start
            for i in range(cuda.blockIdx.x, x.size, cuda.gridDim.x):
                acc = device_fn(acc, x[i])
            partial[cuda.blockIdx.x] = acc
    return kernel


def reduce_slots_by_thread_0(fn):
    device_fn = cuda.jit(device=True)(fn)

    @cuda.jit
    def kernel(x, start, partial):
        cache = cuda.shared.array(THREADS, x.dtype)
        acc = start
        for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
            acc = device_fn(acc, x[i])
        cache[cuda.threadIdx.x] = acc
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:                       # one thread folds the slots in a row
            for t in range(1, THREADS):
                acc = device_fn(acc, cache[t])
            partial[cuda.blockIdx.x] = acc
    return kernel


def map_with_numpy(fn):
    @cuda.jit
    def kernel(x, out):
        if cuda.grid(1) == 0:
            out[:] = np.vectorize(fn)(np.asarray(x))
    return kernel


def map_by_thread_0(fn):
    device_fn = cuda.jit(device=True)(fn)

    @cuda.jit
    def kernel(x, out):
        if cuda.grid(1) == 0:
            for i in range(x.size):
                out[i] = device_fn(x[i])
    return kernel


def spmv(data, indices, indptr, x, y):
    for r in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        acc = data.dtype.type(0)
        for p in range(indptr[r], indptr[r + 1]):
            acc += data[p] * x[indices[p]]
        y[r] = acc


def _verdict(check, fill_in, kernel, **constants):
    """The verdict of lab 5's ``check`` on a notebook whose ``fill_in`` is ``kernel``: None if it
    passes, else its message.  The student half runs in this process, as on the self-learner's
    path; the grader half compiles in a process of its own."""
    case = case_for(check, SEED, fill_in)
    probes.lab_probes("lab5")
    made = kernel if fill_in in FACTORIES else cuda.jit(kernel)
    namespace = {fill_in: made, "TILE": TILE, "THREADS": THREADS, **constants}
    outcome = probes.run("lab5", case.task(), namespace, lambda question: {"refused": "none"})
    try:
        verify(case, outcome)
    except AssertionError as failure:
        return str(failure)
    return None


RIGHT = [(lab5.matmul_code_check, "matmul_tiled", tiled),
         (lab5.matmul_code_check, "matmul_tiled", tiled_over_block_dim),
         (lab5.reduce_code_check, "reduce_kernel", reduce_kernel),
         (lab5.spmv_code_check, "spmv_kernel", spmv)]


@pytest.mark.parametrize("check, fill_in, kernel", RIGHT, ids=lambda x: getattr(x, "__name__", x))
def test_right_kernels_written_either_way_pass(check, fill_in, kernel):
    assert _verdict(check, fill_in, kernel) is None


WRONG = {
    "numpy in a matmul": (lab5.matmul_code_check, "matmul_tiled", matmul_with_numpy,
                          "'compiles for an NVIDIA GPU (sm_80)'] should be 'yes', got str 'no: "
                          "No implementation of function dot"),
    "no barriers": (lab5.matmul_code_check, "matmul_tiled",
                    _variant(tiled, "        cuda.syncthreads()\n", "", count=2),
                    "'a barrier between storing a tile and reading it'] should be 'yes', got str "
                    "'no: ld.shared.f32"),
    "no second barrier": (lab5.matmul_code_check, "matmul_tiled",
                          _variant(tiled, "            acc += a_tile[ty, kk] * b_tile[kk, tx]\n"
                                          "        cuda.syncthreads()\n",
                                   "            acc += a_tile[ty, kk] * b_tile[kk, tx]\n"),
                          "'a barrier between reading a tile and storing the next'] should be "
                          "'yes', got str 'no: st.shared.f32"),
    "a float64 accumulator": (lab5.matmul_code_check, "matmul_tiled",
                              _variant(tiled, "    acc = zero\n", "    acc = 0.0\n"),
                              "'float64 instructions'] should be 'none', got str"),
    "a naive product beside a tile": (lab5.matmul_code_check, "matmul_tiled", naive_beside_a_tile,
                                      "'shared arrays'] should be '2 of 64 bytes (16 float32)', "
                                      "got str '1 of 64 bytes (16 float32)'"),
    "a float64 SpMV": (lab5.spmv_code_check, "spmv_kernel",
                       _variant(spmv, "acc = data.dtype.type(0)", "acc = 0.0"),
                       "'float64 instructions'] should be 'none', got str"),
    "a reduction by thread 0": (lab5.reduce_code_check, "reduce_kernel", reduce_by_thread_0,
                                "'reads the shared array (the tree)'] should be 'yes', got str "
                                "'no: there is no ld.shared at all'"),
    "the slots folded by thread 0": (lab5.reduce_code_check, "reduce_kernel",
                                     reduce_slots_by_thread_0,
                                     "'most shared loads between two barriers (a step reads 2 "
                                     "slots)'] should be 'at most 2', got str '15, with no "
                                     "bar.sync between them'"),
    "the slots folded by thread 0 in a loop": (lab5.reduce_code_check, "reduce_kernel",
                                               _variant(reduce_slots_by_thread_0,
                                                        "range(1, THREADS)",
                                                        "range(1, cuda.blockDim.x)"),
                                               "should be 'at most 2', got str 'no bound: a loop "
                                               "of ld.shared has no bar.sync in it'"),
    "numpy in a map": (lab5.map_code_check, "map_kernel", map_with_numpy,
                       "'compiles for an NVIDIA GPU (sm_80)'] should be 'yes', got str \"no: "
                       "Untyped global name 'fn': Cannot determine Numba type of function\""),
    "a map by thread 0": (lab5.map_code_check, "map_kernel", map_by_thread_0,
                          "\"reads the grid's size (cuda.gridsize)\"] should be 'yes (%nctaid.x)', "
                          "got str 'no: it never reads %nctaid.x'"),
}


@pytest.mark.parametrize("mistake", WRONG)
def test_each_wrong_kernel_fails_with_what_its_ptx_shows(mistake):
    check, fill_in, kernel, phrase = WRONG[mistake]
    message = _verdict(check, fill_in, kernel)
    assert message is not None and phrase in message, message


def test_the_summary_counts_per_k_step_however_the_compiler_unrolled_the_loops():
    """The tiled kernel with a loop of known length (unrolled) and one over cuda.blockDim.x (not
    unrolled) make the same steps; the naive kernel's step loads 2 TILE numbers."""
    A = np.zeros((8, 8), np.float32)
    counted = {}
    for kernel in (tiled, tiled_over_block_dim, naive_beside_a_tile):
        summary = ptx.summary(cuda.jit(kernel), A, A, A)
        counted[kernel.__name__] = (summary.per_step(TILE),
                                    summary.per_multiply_add("shared loads"))
    assert counted["tiled"] == counted["tiled_over_block_dim"] == (
        {"global loads": 2.0, "barriers": 2.0}, 2.0), counted
    assert counted["naive_beside_a_tile"] == ({"global loads": 2.0 * TILE, "barriers": 0.0}, 0.0)


def test_mini_s_own_tiled_kernel_meets_the_check_and_its_naive_one_does_not():
    from mini.kernels import cuda as kc
    from numba import float32
    for kernel, passes in [(kc.matmul_tiled_kernel(float32, TILE), True),
                           (kc.matmul_naive_kernel(float32), False)]:
        case = case_for(lab5.matmul_code_check, SEED, "matmul_tiled")
        facts = case.interpret(ptx.describe(kernel))
        assert (facts == case.expected()) == passes, facts


def test_a_description_rebuilds_the_function_it_describes():
    scale = 3

    def kernel(v):
        return scale * math.tanh(v) + TILE

    rebuilt = ptx.rebuild(ptx.describe(kernel))
    assert rebuilt(0.5) == kernel(0.5)
    assert rebuilt.__code__.co_filename == "<kernel>"       # no file read for the messages


@pytest.mark.parametrize("broken", [
    {"code": "not base64!"},
    {"code": base64.b64encode(b"\xe3garbage").decode()},
    {"code": base64.b64encode(marshal.dumps(("a", "tuple"))).decode()},
    {"globals": {"np": {"module": "os"}}},
    {"globals": {"f": {"named": "unknown"}}},
    {"globals": {"x": {"number": "1"}}},
    {"closure": [{"number": 1}]},
    {"name": None},
])
def test_what_is_not_a_description_is_refused(broken):
    def kernel(x):
        return x
    with pytest.raises(ValueError, match="not a kernel's description"):
        ptx.rebuild({**ptx.describe(kernel), **broken})


def test_a_kernel_compiles_once_for_every_grading_process(monkeypatch, tmp_path):
    """The PTX is kept on disk: another process (here: this one, its memory cleared) reads it
    there and compiles nothing; a kernel that did not compile is not kept."""
    monkeypatch.setenv("MINI_CACHE_DIR", str(tmp_path))
    compiled_ptx._ptx.cache_clear()
    signature = [["float32", 2]] * 3
    first = compiled_ptx.compiled("lab5", ptx.describe(tiled), signature)
    kept, = (tmp_path / "ptx").rglob("*.ptx")

    def compiler(*_):
        raise AssertionError("compiled again")
    with monkeypatch.context() as patched:
        patched.setattr(compiled_ptx, "_compile", compiler)
        compiled_ptx._ptx.cache_clear()
        again = compiled_ptx.compiled("lab5", ptx.describe(tiled), signature)
    assert again.per_step(TILE) == first.per_step(TILE) and again.shared == first.shared

    with pytest.raises(ptx.CompileError):
        compiled_ptx.compiled("lab5", ptx.describe(matmul_with_numpy), signature)
    assert list((tmp_path / "ptx").rglob("*.ptx")) == [kept]
    compiled_ptx._ptx.cache_clear()


def test_one_submission_s_kernels_share_a_compiling_process_no_other_submission_s(monkeypatch,
                                                                                   tmp_path):
    monkeypatch.setenv("MINI_CACHE_DIR", str(tmp_path))
    compiled_ptx._ptx.cache_clear()
    started = []

    class Counted(compiled_ptx._Compiler):
        def __init__(self, student_mini):
            super().__init__(student_mini)
            started.append(self.process)
    monkeypatch.setattr(compiled_ptx, "_Compiler", Counted)
    matmul = [["float32", 2]] * 3
    with compiled_ptx.one_submission():
        compiled_ptx.compiled("lab5", ptx.describe(tiled), matmul)
        with pytest.raises(ptx.CompileError):           # an answer, not a failure: it goes on
            compiled_ptx.compiled("lab5", ptx.describe(matmul_with_numpy), matmul)
        naive = compiled_ptx.compiled("lab5", ptx.describe(naive_beside_a_tile), matmul)
        assert len(started) == 1 and started[0].poll() is None
    assert started[0].poll() is not None                # stopped with its submission
    assert naive.per_step(TILE)["global loads"] == 2 * TILE
    with compiled_ptx.one_submission():
        compiled_ptx.compiled("lab5", ptx.describe(tiled_over_block_dim), matmul)
    assert len(started) == 2
    compiled_ptx._ptx.cache_clear()


def test_a_code_object_that_breaks_the_compiler_costs_its_check_only(monkeypatch, tmp_path):
    monkeypatch.setenv("MINI_CACHE_DIR", str(tmp_path))      # nothing compiled before counts
    compiled_ptx._ptx.cache_clear()

    def kernel(x, out):
        out[0] = x[0]
    description = ptx.describe(kernel)
    broken = kernel.__code__.replace(co_code=b"\x97\x00" + bytes([100, 250] * 40))
    description["code"] = base64.b64encode(marshal.dumps(broken)).decode()
    with pytest.raises(ptx.CompileError):
        compiled_ptx.compiled("lab5", description, [["float32", 1]] * 2)
    monkeypatch.setattr(compiled_ptx, "MAX_LOOPS", 1)            # spmv has two: rows, nonzeros
    with pytest.raises(ptx.CompileError, match="its PTX has 2 loops"):
        compiled_ptx.compiled("lab5", ptx.describe(spmv), [["float32", 1], ["int64", 1],
                                                           ["int64", 1], ["float32", 1],
                                                           ["float32", 1]])
    monkeypatch.setattr(compiled_ptx, "COMPILE_LIMITS",
                        compiled_ptx.sandbox.Limits(worker_seconds=0.2))
    with pytest.raises(ptx.CompileError, match="did not finish within 0.2 s"):
        compiled_ptx.compiled("lab5", ptx.describe(kernel), [["float32", 1]] * 2)
