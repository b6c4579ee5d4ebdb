"""Lab 5 graded on wrong work: each wrong fill-in loses the share of its own points that the
behaviours it gets wrong are worth, and its message names the mistake and those behaviours, on
the pytest path and on the nbgrader path.

Notebooks made from the solution, each with several fill-ins replaced (one mistake per fill-in,
so that they do not interfere); every fill-in has at least three mistakes across them. CHEATS:
numpy or one thread does the work, or threads are laid out against coalescing, and the numbers come
out right all the same; what gives each away is which thread computed what, or what the kernel
compiles to. SLIPS, as students slip: a loop that strides by the block instead of the grid, a
block's slots folded by one thread, a float64 accumulator in a float32 product, an accumulator not
reset per row, an indptr that forgets the empty rows at the end, an SpMM with x along rows, the
loads of A and B swapped. MORE_SLIPS: a contiguous stretch of elements per thread (right values,
not coalesced), loops over rows (of zip, of spmv) that stride by the block's size, a float64
shared array in the tree, only the positive entries taken as nonzeros, a repeated word's gradient
overwritten instead of added, a float64 SpMM accumulator, the zeros staged past the edges counted
as loads. SHORTCUTS: float64 casts inside a float32 kernel, a product without tiles, the dense
gradient of an embedding (too large for a huge vocabulary), the naive kernel's traffic for the
tiled one. NARROW, code that works on the visible tests' inputs only: CSR arrays built from
lists (float64 when a matrix has no nonzeros), an embedding gradient for (B, T) ids alone, the
naive traffic divided by the tile (right only without edge tiles). CHEATS and MORE_SLIPS are
graded on the nbgrader path too.
"""
import nbformat
import pytest

from autograder import cli, notebooks
from autograder.nbgrader_path import course
from autograder.pytest_path import runner
from autograder.checks import checks_of

from support.wrong_work import (SEED, VISIBLE, named_in, namespace_through, points_lost,
                                verdict)

LAB = "lab5_kernels"

CHEATS = {
    "map_kernel": ('''
    @cuda.jit
    def kernel(x, out):
        if cuda.grid(1) == 0:                           # numpy does the work, in one thread
            out[:] = np.vectorize(fn)(np.asarray(x))
    return kernel
''', "out[i] is the number cuda.grid(1) of the thread that computed element i",
        ["element i computed by thread i mod the grid's size",
         "compiled: a stride of the grid's size", "compiled: float32 throughout"]),
    "zip_kernel": ('''
    @cuda.jit
    def kernel(x, y, out):
        row, col = cuda.grid(2)                         # x threads along rows: not coalesced
        rows, cols = cuda.gridsize(2)
        for i in range(row, out.shape[0], rows):
            for j in range(col, out.shape[1], cols):
                out[i, j] = device_fn(x[i, j], y[i, j])
    return kernel
''', "for the thread (x, y) = cuda.grid(2) that computed element (i, j)",
        ["each entry computed by the thread whose cuda.grid(2) reaches it"]),
    "reduce_kernel": ('''
    @cuda.jit
    def kernel(x, start, partial):
        cache = cuda.shared.array(THREADS, x.dtype)     # written, never read
        cache[cuda.threadIdx.x] = start
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:                       # one thread per block does its part
            acc = start
            for i in range(cuda.blockIdx.x, x.size, cuda.gridDim.x):
                acc = device_fn(acc, x[i])
            partial[cuda.blockIdx.x] = acc
    return kernel
''', "the number of calls of fn along the longest chain in block b",
        ["a tree of folds, each value folded once",
         "compiled: one shared array, read in a tree between barriers"]),
    "matmul_tiled": ('''
    if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0:
        C[:, :] = np.dot(A, B)                          # numpy does the work
''', "got str 'no: No implementation of function dot'",
        ["compiled: shared tiles, one load of A and of B per step, barriers",
         "compiled: float32 throughout"]),
    "spmv_kernel": ('''
    for r in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        acc = 0.0                                       # a Python float: float64
        for p in range(indptr[r], indptr[r + 1]):
            acc += data[p] * x[indices[p]]
        y[r] = acc
''', "the result['float64 instructions'] should be 'none', got str",
        ["compiled: float32 throughout"]),
    "spmm_kernel": ('''
    if cuda.grid(2)[0] == 0 and cuda.grid(2)[1] == 0:   # one thread does all the work
        for r in range(Y.shape[0]):
            for j in range(Y.shape[1]):
                acc = data.dtype.type(0)
                for p in range(indptr[r], indptr[r + 1]):
                    acc += data[p] * X[indices[p], j]
                Y[r, j] = acc
''', "the (x, y) = cuda.grid(2) of the thread that stored it",
        ["each element stored by the thread whose cuda.grid(2) reaches it",
         "compiled: strides of the grid's size"]),
}

SLIPS = {
    "map_kernel": ('''
    @cuda.jit
    def kernel(x, out):
        for i in range(cuda.threadIdx.x, out.size, cuda.blockDim.x):   # the block, not the grid
            out[i] = device_fn(x[i])
    return kernel
''', "out[i] is the number cuda.grid(1) of the thread that computed element i",
        ["element i computed by thread i mod the grid's size",
         "compiled: a stride of the grid's size"]),
    "reduce_kernel": ('''
    @cuda.jit
    def kernel(x, start, partial):
        cache = cuda.shared.array(THREADS, x.dtype)
        acc = start
        for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
            acc = device_fn(acc, x[i])
        cache[cuda.threadIdx.x] = acc
        cuda.syncthreads()
        if cuda.threadIdx.x == 0:                       # no tree: thread 0 folds every slot
            for t in range(1, THREADS):
                acc = device_fn(acc, cache[t])
            partial[cuda.blockIdx.x] = acc
    return kernel
''', "the number of calls of fn along the longest chain in block b",
        ["a tree of folds, each value folded once",
         "compiled: one shared array, read in a tree between barriers"]),
    "matmul_tiled": ('''
    a_tile = cuda.shared.array((TILE, TILE), A.dtype)
    b_tile = cuda.shared.array((TILE, TILE), A.dtype)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    M, K = A.shape
    N = B.shape[1]
    zero = A.dtype.type(0)
    acc = 0.0                                           # a Python float: float64
    for t in range((K + TILE - 1) // TILE):
        a_tile[ty, tx] = A[row, t * TILE + tx] if row < M and t * TILE + tx < K else zero
        b_tile[ty, tx] = B[t * TILE + ty, col] if t * TILE + ty < K and col < N else zero
        cuda.syncthreads()
        for kk in range(TILE):
            acc += a_tile[ty, kk] * b_tile[kk, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row, col] = acc
''', "the result['float64 instructions'] should be 'none', got str",
        ["compiled: float32 throughout"]),
    "spmv_kernel": ('''
    acc = data.dtype.type(0)                            # not reset for each row
    for r in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        for p in range(indptr[r], indptr[r + 1]):
            acc += data[p] * x[indices[p]]
        y[r] = acc
''', "not A @ x", VISIBLE),
    "to_csr": ('''
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows))])    # empty rows at the end lost
    return dense[rows, cols], cols, indptr
''', "the visible tests of test_to_csr failed",
        VISIBLE),
    "spmm_kernel": ('''
    first_row, first_col = cuda.grid(2)                 # x along rows: not coalesced
    n_rows, n_cols = cuda.gridsize(2)
    for r in range(first_row, Y.shape[0], n_rows):
        for j in range(first_col, Y.shape[1], n_cols):
            acc = data.dtype.type(0)
            for p in range(indptr[r], indptr[r + 1]):
                acc += data[p] * X[indices[p], j]
            Y[r, j] = acc
''', "the (x, y) = cuda.grid(2) of the thread that stored it",
        ["each element stored by the thread whose cuda.grid(2) reaches it"]),
    "tiled_traffic": ('''
    return {"A": math.ceil(M / T) * K * N, "B": math.ceil(N / T) * M * K}   # A and B swapped
''', "the 'A' and 'B' counts", ["edge tiles: nothing loaded past the edges"]),
}

MORE_SLIPS = {
    "map_kernel": ('''
    @cuda.jit
    def kernel(x, out):
        chunk = (out.size + cuda.gridsize(1) - 1) // cuda.gridsize(1)   # a stretch per thread
        start = cuda.grid(1) * chunk
        for i in range(start, min(start + chunk, out.size)):
            out[i] = device_fn(x[i])
    return kernel
''', "out[i] is the number cuda.grid(1) of the thread that computed element i",
        ["element i computed by thread i mod the grid's size"]),
    "zip_kernel": ('''
    @cuda.jit
    def kernel(x, y, out):
        col, row = cuda.grid(2)
        cols, rows = cuda.blockDim.x, cuda.blockDim.y   # the block's size, not the grid's
        for i in range(row, out.shape[0], rows):
            for j in range(col, out.shape[1], cols):
                out[i, j] = device_fn(x[i, j], y[i, j])
    return kernel
''', "for the thread (x, y) = cuda.grid(2) that computed element (i, j)",
        ["each entry computed by the thread whose cuda.grid(2) reaches it",
         "compiled: strides of the grid's size"]),
    "reduce_kernel": ('''
    @cuda.jit
    def kernel(x, start, partial):
        cache = cuda.shared.array(THREADS, np.float64)  # float64 slots, whatever x's dtype
        t = cuda.threadIdx.x
        acc = start
        for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
            acc = device_fn(acc, x[i])
        cache[t] = acc
        cuda.syncthreads()
        step = THREADS // 2
        while step > 0:
            if t < step:
                cache[t] = device_fn(cache[t], cache[t + step])
            cuda.syncthreads()
            step //= 2
        if t == 0:
            partial[cuda.blockIdx.x] = cache[0]
    return kernel
''', "the result['float64 instructions'] should be 'none', got str",
        ["compiled: one shared array, read in a tree between barriers",
         "compiled: float32 throughout"]),
    "spmv_kernel": ('''
    for r in range(cuda.grid(1), y.size, cuda.blockDim.x):  # the block's size, not the grid's
        acc = data.dtype.type(0)
        for p in range(indptr[r], indptr[r + 1]):
            acc += data[p] * x[indices[p]]
        y[r] = acc
''', "got str 'no: it never reads %nctaid.x'",
        ["compiled: a stride of the grid's size"]),
    "to_csr": ('''
    rows, cols = np.nonzero(dense > 0)                      # the negative entries are lost
    per_row = np.bincount(rows, minlength=dense.shape[0])
    indptr = np.concatenate([[0], np.cumsum(per_row)])
    return dense[rows, cols], cols, indptr
''', "to_csr on a (", ["a matrix with empty rows",
                       "a single row, and a matrix of zeros with its dtype kept"]),
    "embedding_grad": ('''
    rows, position = np.unique(ids.reshape(-1), return_inverse=True)
    values = np.zeros((rows.size, grad_out.shape[-1]), grad_out.dtype)
    values[position] += grad_out.reshape(-1, grad_out.shape[-1])    # a repeat overwrites
    return rows, values
''', "word 2 occurs twice, so its row gets the SUM", VISIBLE),
    "spmm_kernel": ('''
    first_col, first_row = cuda.grid(2)
    n_cols, n_rows = cuda.gridsize(2)
    for r in range(first_row, Y.shape[0], n_rows):
        for j in range(first_col, Y.shape[1], n_cols):
            acc = 0.0                                   # a Python float: float64
            for p in range(indptr[r], indptr[r + 1]):
                acc += data[p] * X[indices[p], j]
            Y[r, j] = acc
''', "the result['float64 instructions'] should be 'none', got str",
        ["compiled: float32 throughout"]),
    "tiled_traffic": ('''
    steps, blocks = math.ceil(K / T), math.ceil(M / T) * math.ceil(N / T)
    return {"A": blocks * steps * T * T, "B": blocks * steps * T * T}   # the staged zeros too
''', "the 'A' and 'B' counts", ["edge tiles: nothing loaded past the edges"]),
}

SHORTCUTS = {
    "zip_kernel": ('''
    @cuda.jit
    def kernel(x, y, out):
        col, row = cuda.grid(2)
        cols, rows = cuda.gridsize(2)
        for i in range(row, out.shape[0], rows):
            for j in range(col, out.shape[1], cols):
                out[i, j] = device_fn(np.float64(x[i, j]), np.float64(y[i, j]))   # "more precise"
    return kernel
''', "the result['float64 instructions'] should be 'none', got str",
        ["compiled: float32 throughout"]),
    "matmul_tiled": ('''
    row, col = cuda.grid(2)[1], cuda.grid(2)[0]         # no tiles: straight from A and B
    if row < C.shape[0] and col < C.shape[1]:
        acc = A.dtype.type(0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc
''', "the result['shared arrays'] should be",
        ["compiled: shared tiles, one load of A and of B per step, barriers"]),
    "embedding_grad": ('''
    dense = np.zeros((vocab_size, grad_out.shape[-1]), grad_out.dtype)  # the dense gradient
    np.add.at(dense, ids.reshape(-1), grad_out.reshape(-1, grad_out.shape[-1]))
    rows = np.unique(ids)
    return rows, dense[rows]
''', "vocab_size=1000000000000", ["a vocabulary too large for a dense gradient"]),
    "tiled_traffic": ('''
    return {"A": M * N * K, "B": M * N * K}             # the naive kernel's count
''', "the 'A' and 'B' counts",
        ["sides that are multiples of the tile", "edge tiles: nothing loaded past the edges"]),
}

NARROW = {
    "to_csr": ('''
    data, indices, indptr = [], [], [0]
    for row in dense:
        for j, value in enumerate(row):
            if value != 0:
                data.append(value)
                indices.append(j)
        indptr.append(len(data))
    return np.array(data), np.array(indices), np.array(indptr)   # [] makes float64
''', "the result['dtype of data'] should be 'float32', got str 'float64'",
        ["a single row, and a matrix of zeros with its dtype kept"]),
    "embedding_grad": ('''
    batch, length = ids.shape                           # (B, T) ids, as in the visible test
    rows = np.unique(ids)
    values = np.zeros((rows.size, grad_out.shape[-1]), grad_out.dtype)
    for b in range(batch):
        for t in range(length):
            values[np.searchsorted(rows, ids[b, t])] += grad_out[b, t]
    return rows, values
''', "(words repeat, ids of 1 dimension)", ["a batch in which words repeat"]),
    "tiled_traffic": ('''
    return {"A": M * N * K // T, "B": M * N * K // T}   # the naive count over T: no edges
''', "the 'A' and 'B' counts", ["edge tiles: nothing loaded past the edges"]),
}


def _notebook(wrong):
    """The solution notebook with the solution blocks of ``wrong``'s fill-ins replaced."""
    nb = nbformat.read(notebooks.source_notebook(LAB), as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution") and grade_id in wrong:
            head, rest = cell.source.split("    ### BEGIN SOLUTION\n")
            _, tail = rest.split("    ### END SOLUTION")
            cell.source = head + wrong[grade_id][0].strip("\n") + "\n" + tail.lstrip("\n")
    return nb


def _expected(wrong):
    lost = points_lost(LAB, {fill_in: failed for fill_in, (_, _, failed) in wrong.items()})
    return {grade_id: points - lost.get(grade_id, 0) for grade_id, points in notebooks.test_cells(LAB)}


def _graded_on_the_pytest_path(tmp_path, wrong):
    path = tmp_path / f"{LAB}.ipynb"
    nbformat.write(_notebook(wrong), path)
    result = runner.grade_submission(path, LAB, "s", seed=SEED)
    assert {t.name: t.score for t in result.tests} == _expected(wrong), result.tests
    for test in result.tests:
        fill_in = test.name[len("test_"):]
        if fill_in in wrong:
            for text in named_in(wrong[fill_in][2], wrong[fill_in][1]):
                assert text in test.output, (fill_in, test.output)


TABLES = {"CHEATS": CHEATS, "SLIPS": SLIPS, "MORE_SLIPS": MORE_SLIPS, "SHORTCUTS": SHORTCUTS,
          "NARROW": NARROW}


@pytest.mark.parametrize("table", list(TABLES))
def test_wrong_work_loses_its_own_points_on_the_pytest_path(tmp_path, table):
    _graded_on_the_pytest_path(tmp_path, TABLES[table])


@pytest.mark.parametrize("table", ["CHEATS", "MORE_SLIPS"])
def test_wrong_work_loses_its_own_points_on_the_nbgrader_path(tmp_path, monkeypatch, table):
    wrong = TABLES[table]
    monkeypatch.setenv("MINI_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setenv("MINI_RELEASE_DIR", str(tmp_path / "release"))
    assert cli.main(["release", "lab5", "--reveal", "lab1,lab2,lab3,lab4"]) == 0
    inbox = tmp_path / "inbox" / "wrong"
    inbox.mkdir(parents=True)
    nbformat.write(_notebook(wrong), inbox / f"{LAB}.ipynb")
    assert cli.main(["collect", str(tmp_path / "inbox")]) == 0
    monkeypatch.setenv("AUTOGRADER_SEED", str(SEED))     # the pytest path's draws
    assert cli.main(["autograde", "lab5", "--workers", "1"]) == 0
    from nbgrader.api import Gradebook
    grader = course.api()
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        notebook = gb.find_submission(LAB, "wrong").notebooks[0]
        scores = {grade.name: grade.score for grade in notebook.grades}
    assert scores == _expected(wrong), scores
    graded = nbformat.read(tmp_path / "course" / "autograded" / "wrong" / LAB / f"{LAB}.ipynb",
                           as_version=4)
    for cell in graded.cells:
        fill_in = cell.metadata.get("nbgrader", {}).get("grade_id", "")[len("test_"):]
        if fill_in in wrong:
            said = " ".join(str(out.get("evalue", "")) + out.get("text", "") for out in cell.outputs)
            for text in named_in(wrong[fill_in][2], wrong[fill_in][1]):
                assert text in said, (fill_in, said)


def test_a_blocks_threads_get_one_shared_array_even_when_they_ask_at_once():
    """The simulator's own lookup has no lock: threads arriving together could get arrays of their
    own, and a correct reduction or tiled product would then be graded wrong now and then."""
    import sys
    import threading

    import numpy as np

    from mini.kernels import device
    device.choose()
    from numba.cuda.simulator import kernelapi
    shared, interval = kernelapi.FakeCUDAShared(0), sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(20):
            start, got = threading.Barrier(32), []

            def allocate():
                start.wait()
                got.append(shared.array(8, np.float64))

            threads = [threading.Thread(target=allocate) for _ in range(32)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert len({id(array) for array in got}) == 1
            shared._allocations.clear()
    finally:
        sys.setswitchinterval(interval)


def test_a_tree_without_barriers_is_told_by_its_code_and_its_message_names_the_barrier():
    """A race is not always seen in the values the simulator computes; the compiled code shows
    it, and a wrong sum's message names the missing barrier beside the grid-stride loop."""
    namespace = namespace_through(LAB, "reduce_kernel", [(
        "            cuda.syncthreads()          # outside the if: every thread of the block "
        "reaches it\n", "")])
    checks = {check.__name__: check for check in checks_of(LAB)["reduce_kernel"]}
    with pytest.raises(AssertionError, match=r"got str '\d+, with no bar.sync between them'"):
        verdict(LAB, "reduce_kernel", checks["reduce_code_check_layout"], namespace)
    verdict(LAB, "reduce_kernel", checks["reduce_code_check_float32"], namespace)
    try:
        verdict(LAB, "reduce_kernel", checks["reduce_sum_check"], namespace)
    except AssertionError as wrong:
        assert "a cuda.syncthreads() missing between two steps" in str(wrong)


def test_a_to_csr_of_the_positive_entries_loses_both_behaviours_on_every_seed():
    """Every matrix of the to_csr checks holds a negative entry, and the single row is checked
    on every seed (a coin used to choose it or a matrix of zeros): "nonzero" read as "positive"
    loses the same points whatever the seed."""
    import numpy as np

    cell = next(cell for cell in _notebook({"to_csr": MORE_SLIPS["to_csr"]}).cells
                if cell.metadata.get("nbgrader", {}).get("grade_id") == "to_csr")
    namespace = {"np": np}
    exec(cell.source, namespace)
    checks = {check.__name__: check for check in checks_of(LAB)["to_csr"]}
    for seed in range(10):
        for name in ("to_csr_check", "to_csr_single_row_check"):
            with pytest.raises(AssertionError, match=r"the result\['data'\]"):
                verdict(LAB, "to_csr", checks[name], namespace, seed)
