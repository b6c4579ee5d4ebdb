"""mini's CUDA kernels on a real GPU: naive vs tiled matmul vs cuBLAS, and reduce bandwidth.

    python benchmarks/gpu.py                     # needs an NVIDIA GPU; says so and exits 0 without
    python benchmarks/gpu.py --simulator-check   # the same code on tiny sizes, on the simulator

matmul: float32 n x n for n = 1024 ... 8192, data already on the GPU, GFLOP/s = 2 n^3 / seconds,
for the naive kernel (one thread per output), the tiled kernel with 16 x 16 and 32 x 32 tiles, and
cuBLAS through CuPy when CuPy is installed (otherwise the ratio column compares to nothing).
reduce: the sum of 2^28 float32 (1 GiB); GB/s = bytes read / seconds, against the peak that the
device reports: 2 (double data rate) x memory clock x bus width.  Times are medians of a few runs
after a warm-up run (which also compiles the kernels).
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np


def median_seconds(function, synchronize, repeats):
    function()
    synchronize()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        synchronize()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cublas_matmul():
    """CuPy's matmul (cuBLAS) on numba device arrays, or None without CuPy."""
    try:
        import cupy
    except ImportError:
        return None
    return lambda a, b: cupy.matmul(cupy.asarray(a), cupy.asarray(b))


def matmul_table(kc, cuda, sizes, repeats):
    cublas = cublas_matmul()
    print("matmul float32 (GFLOP/s; ratio = tiled 32 / cuBLAS)" if cublas else
          "matmul float32 (GFLOP/s): CuPy is not installed, so there is no cuBLAS to compare to")
    print(f"{'n':>6}{'naive':>10}{'tiled 16':>10}{'tiled 32':>10}{'cuBLAS':>10}{'ratio':>8}")
    rng = np.random.default_rng(0)
    for n in sizes:
        a, b = (kc.to_device(rng.random((n, n), np.float32)) for _ in range(2))
        runs = {"naive": lambda: kc.matmul_device(a, b, tiled=False),
                "tiled 16": lambda: kc.matmul_device(a, b, tile=16),
                "tiled 32": lambda: kc.matmul_device(a, b, tile=32)}
        if cublas:
            runs["cuBLAS"] = lambda: cublas(a, b)
        rate = {name: 2 * n ** 3 / median_seconds(run, cuda.synchronize, repeats) / 1e9
                for name, run in runs.items()}
        ratio = f"{rate['tiled 32'] / rate['cuBLAS']:>8.2f}" if cublas else f"{'-':>8}"
        print(f"{n:>6}" + "".join(f"{rate.get(name, float('nan')):>10.0f}"
                                  for name in ("naive", "tiled 16", "tiled 32", "cuBLAS")) + ratio)


def reduce_table(kc, cuda, elements, repeats):
    x = kc.to_device(np.ones((1, elements), np.float32))
    seconds = median_seconds(lambda: kc.reduce_device(kc.add, x), cuda.synchronize, repeats)
    achieved = x.nbytes / seconds / 1e9
    device = cuda.get_current_device()
    try:   # kHz and bits; double data rate
        peak = 2 * device.MEMORY_CLOCK_RATE * 1e3 * device.GLOBAL_MEMORY_BUS_WIDTH / 8 / 1e9
        versus = f"{peak:.0f} GB/s peak from the device attributes: {achieved / peak:.0%} of it"
    except AttributeError:
        versus = "the device reports no memory clock, so no peak to compare to"
    print(f"reduce sum of {elements} float32: {seconds * 1e3:.2f} ms, {achieved:.0f} GB/s; "
          + versus)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulator-check", action="store_true",
                        help="run every step on Numba's CUDA simulator with tiny sizes")
    args = parser.parse_args()
    if args.simulator_check:
        os.environ["MINI_CUDA"] = "simulator"
        sizes, elements, repeats = [32], 4096, 1
    else:
        from mini.kernels import device
        found, why = device.probe_gpu()
        if not found or os.environ.get("MINI_CUDA", "").lower() == "simulator":
            print(f"benchmarks/gpu.py measures a real GPU, and there is none here ({why}; "
                  f"MINI_CUDA={os.environ.get('MINI_CUDA', 'unset')}). Nothing to measure. "
                  "To exercise the script anyway: python benchmarks/gpu.py --simulator-check")
            return 0
        os.environ["MINI_CUDA"] = "gpu"
        sizes, elements, repeats = [1024, 2048, 4096, 8192], 2 ** 28, 3
    from mini.kernels import cuda as kc
    from numba import cuda
    if not kc.SIMULATOR:
        print(f"device: {cuda.get_current_device().name}")
    matmul_table(kc, cuda, sizes, repeats)
    reduce_table(kc, cuda, elements, repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
