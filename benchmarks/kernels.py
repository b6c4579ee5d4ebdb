"""mini's Numba CPU kernels against numpy, and the CUDA simulator's cost per launch.

    python benchmarks/kernels.py [--repeats 9]

Every row is measured side by side in this one process: numpy and mini run in alternation, round
after round, so that both see the same machine (on a shared machine the load changes from second
to second), and the table gives the median of the rounds, after one warm-up call each (which
also compiles the kernels).  ratio = mini / numpy: below 1 mini is faster.  "map exp" is mini's
own exp (``cpu.map(cpu.exp, x)``, what the cpu backend runs) against ``np.exp``.

numpy's matmul is OpenBLAS, which picks its kernels for the CPU at start-up; OPENBLAS_CORETYPE
(e.g. Haswell, SkylakeX, Zen) overrides that choice, and the header prints the core in use, since
the matmul figures depend on it.  Both sides use every core: OpenBLAS its own threads, Numba
``prange`` its OpenMP thread pool.  By default both pools keep their threads spinning for a while
after each call, and when the two alternate, each one's spinning threads steal the cores from the
other (on 2 cores numpy's 512 x 512 matmul went from 1.4 ms to 3.5 ms, mini's from 1.9 to 3.4).
So unless you set them, this script tells both to let idle threads sleep at once:
OMP_WAIT_POLICY=PASSIVE and OPENBLAS_THREAD_TIMEOUT=4 (2^4 cycles), before either library loads.
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import argparse  # noqa: E402
import ctypes  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402

from mini.kernels import cpu  # noqa: E402

N_ELEMENTS = 10_000_000


def rounds(functions, repeats):
    """Median seconds of each function, called in alternation, after one warm-up call each."""
    for f in functions:
        f()
    times = [[] for _ in functions]
    for _ in range(repeats):
        for f, samples in zip(functions, times):
            start = time.perf_counter()
            f()
            samples.append(time.perf_counter() - start)
    return [statistics.median(samples) for samples in times]


def openblas_core():
    """The CPU kernels OpenBLAS chose (or was told by OPENBLAS_CORETYPE to use), if findable."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return "unknown"
    for path in paths:
        library = ctypes.CDLL(path)
        for symbol in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                       "openblas_get_corename64_", "openblas_get_corename"):
            if hasattr(library, symbol):
                getter = getattr(library, symbol)
                getter.restype = ctypes.c_char_p
                return getter().decode()
    return "unknown"


def cpu_rows(repeats):
    rng = np.random.default_rng(0)
    rows = []
    for n in (512, 1024):
        a, b = rng.random((n, n), np.float32), rng.random((n, n), np.float32)
        rows.append((f"matmul {n}x{n} float32", *rounds([lambda: a @ b,
                                                         lambda: cpu.matmul(a, b)], repeats)))
    x, y = rng.random(N_ELEMENTS, np.float32), rng.random(N_ELEMENTS, np.float32)
    cases = [("map exp", lambda: np.exp(x), lambda: cpu.map(cpu.exp, x)),
             ("map negative", lambda: np.negative(x), lambda: cpu.map(np.negative, x)),
             ("zip add", lambda: np.add(x, y), lambda: cpu.zip(np.add, x, y)),
             ("reduce sum", lambda: np.sum(x), lambda: cpu.reduce(np.add, x)),
             ("reduce max", lambda: np.max(x), lambda: cpu.reduce(np.maximum, x, None, -np.inf))]
    for name, numpy_version, mini_version in cases:
        rows.append((f"{name} 1e7 float32", *rounds([numpy_version, mini_version], repeats)))
    return rows


def simulator_rows():
    """Seconds per launch of the naive and the tiled 32x32 matmul on Numba's CUDA simulator."""
    os.environ["MINI_CUDA"] = "simulator"
    from mini.kernels import cuda as kc
    rng = np.random.default_rng(1)
    a, b = (kc.to_device(rng.random((32, 32), np.float32)) for _ in range(2))
    naive, tiled = rounds([lambda: kc.matmul_device(a, b, tiled=False),
                           lambda: kc.matmul_device(a, b, tiled=True)], 3)
    return [("simulator: 32x32 matmul, naive vs tiled", naive, tiled)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9, help="rounds per row (median taken)")
    args = parser.parse_args()
    settings = ", ".join(f"{name}={os.environ.get(name, 'unset')}" for name in
                         ("OPENBLAS_CORETYPE", "OPENBLAS_THREAD_TIMEOUT", "OMP_WAIT_POLICY"))
    print(f"numpy {np.__version__} (OpenBLAS core {openblas_core()}), numba {numba.__version__} "
          f"({numba.config.NUMBA_NUM_THREADS} threads), {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}; {settings}")
    rows = cpu_rows(args.repeats) + simulator_rows()
    print(f"{'operation':<42}{'numpy ms':>11}{'mini ms':>11}{'ratio':>8}")
    for name, reference, mine in rows:
        print(f"{name:<42}{reference * 1e3:>11.2f}{mine * 1e3:>11.2f}{mine / reference:>8.2f}")
    print("(last row: the 'numpy' column is the naive kernel and 'mini' the tiled one; "
          f"load average now {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
