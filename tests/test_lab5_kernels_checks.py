"""Lab 5's work checks grade what a kernel does, not its values alone or the names in its code.

One submission holds three kernels that pass every visible test with the right numbers but do
not do the lab's work: ``map_kernel`` hands the array to numpy in one thread, ``reduce_kernel``
lets thread 0 of each block loop over its elements beside a shared array it never reads (and one
barrier), and ``matmul_tiled`` is the naive product with an unused tile and a barrier. Each must
get 0 for its own fill-in and full points elsewhere, on the pytest path and on the nbgrader path.
"""
import nbformat
import numpy as np

from autograder import cli, course, runner
from autograder.checks import instrument

LAB = "lab5_kernels"

ATTACKS = {
    "map_kernel": '''
    @cuda.jit
    def kernel(x, out):
        if cuda.grid(1) == 0:                           # numpy does the work, in one thread
            out[:] = np.vectorize(fn)(np.asarray(x))
    return kernel
''',
    "reduce_kernel": '''
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
''',
    "matmul_tiled": '''
    a_tile = cuda.shared.array((TILE, TILE), A.dtype)   # a tile nobody uses
    col, row = cuda.grid(2)
    cuda.syncthreads()
    if row < C.shape[0] and col < C.shape[1]:
        acc = A.dtype.type(0)
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc
''',
}


def _attacked():
    """The solution notebook with the three attacks in place of their solutions."""
    nb = nbformat.read(runner.source_notebook(LAB), as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution") and grade_id in ATTACKS:
            head, rest = cell.source.split("    ### BEGIN SOLUTION\n")
            _, tail = rest.split("    ### END SOLUTION")
            cell.source = head + ATTACKS[grade_id].strip("\n") + "\n" + tail.lstrip("\n")
    return nb


def _expected(points):
    return {grade_id: 0.0 if grade_id[len("test_"):] in ATTACKS else max_points
            for grade_id, max_points in points}


def test_each_attack_costs_exactly_its_own_fill_in_on_the_pytest_path(tmp_path):
    path = tmp_path / f"{LAB}.ipynb"
    nbformat.write(_attacked(), path)
    result = runner.grade_submission(path, LAB, "attacker", seed=11)
    scores = {t.name: t.score for t in result.tests}
    assert scores == _expected(runner.test_cells(LAB)), scores
    failed = {t.name: t.output for t in result.tests if t.score < t.max_score}
    for name, output in failed.items():   # the values were right: only the counted launch failed
        assert output.count("every thread's") == 1 and output.count("counted") == 1, output


def test_each_attack_costs_exactly_its_own_fill_in_on_the_nbgrader_path(tmp_path, monkeypatch):
    monkeypatch.setenv("MINI_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setenv("MINI_RELEASE_DIR", str(tmp_path / "release"))
    assert cli.main(["release", "lab5"]) == 0
    inbox = tmp_path / "inbox" / "attacker"
    inbox.mkdir(parents=True)
    nbformat.write(_attacked(), inbox / f"{LAB}.ipynb")
    assert cli.main(["collect", str(tmp_path / "inbox")]) == 0
    assert cli.main(["autograde", "lab5", "--workers", "1"]) == 0
    from nbgrader.api import Gradebook
    grader = course.api()
    with Gradebook(grader.coursedir.db_url, grader.coursedir.course_id) as gb:
        notebook = gb.find_submission(LAB, "attacker").notebooks[0]
        scores = {grade.name: grade.score for grade in notebook.grades}
    assert scores == _expected(runner.test_cells(LAB)), scores


def test_counted_arrays_tell_elements_from_bulk_accesses():
    tally = instrument.Tally(threads=1)
    a = instrument.Counted(np.arange(6.0).reshape(2, 3), "a", tally)
    a[1, 2], a[np.int64(0), 1]
    a[0]                                     # a whole row: bulk
    np.asarray(a)                            # handed to numpy: bulk
    a[0, 0] = 5.0
    counts = tally.counts[instrument.HOST]
    assert counts["a", "reads"] == 2 and counts["a", "bulk"] == 2 and counts["a", "writes"] == 1


def test_a_blocks_threads_get_one_shared_array_even_when_they_ask_at_once():
    """The simulator's own lookup has no lock: threads arriving together could get arrays of their
    own, and a correct reduction or tiled product would then be graded wrong now and then."""
    import sys
    import threading

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
