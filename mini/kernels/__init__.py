"""Fast kernels for mini's heavy primitives, on the CPU with Numba and on the GPU with numba.cuda.

The pieces (lab 5 builds them in this order):

* ``mini.kernels.cpu``: ``@njit`` kernels split over the cores with ``prange``: ``map`` (a function
  of one element), ``zip`` (a function of two, with numpy broadcasting), ``reduce`` (sum or max
  along an axis, in blocks then across blocks) and ``matmul`` (blocked for the caches, with B
  packed into panels and a register tile of 6 rows by 2 SIMD vectors);
* ``mini.kernels.cuda``: the same four as CUDA kernels: map and zip with one thread per element
  and a grid-stride loop, reduce with a shared-memory tree and one result per block, and matmul
  twice, naive (one thread per output) and tiled (shared-memory tiles, coalesced loads);
* ``mini.kernels.device``: whether CUDA kernels run on a GPU or on Numba's CUDA simulator (the
  ``MINI_CUDA`` environment variable: ``gpu``, ``simulator``, or unset to probe for a driver);
* ``mini.kernels.backends``: ``CpuBackend`` and ``CudaBackend``, which plug the kernels into mini:
  ``mini.set_backend("cpu")`` or ``with mini.use_backend("cuda"): ...``;
* ``mini.kernels.ptx``: what a CUDA kernel compiles to for a real GPU (NVIDIA's compiler from its
  wheels, no GPU needed), summarised: shared tiles, global and shared loads, barriers, float32
  against float64;
* ``mini.kernels.traffic``: what a CUDA kernel moves from global memory, counted access by access
  on the simulator: loads per array, the 128-byte transactions of each warp (coalesced or not),
  and which thread stored each element;
* ``mini.kernels.sparse``: CSR matrices, SpMV and SpMM (the embedding lookup as a product).

Submodules load on first use (``mini.kernels.cuda.matmul(a, b)`` works after
``import mini.kernels``), so that importing mini.kernels neither loads numba nor decides anything
about CUDA.
"""
import importlib

from mini.kernels import device
from mini.kernels.device import Choice


def describe():
    """Where CUDA kernels run and why: a :class:`Choice` (``target``, ``reason``, ``forced``).

    The first call makes the choice (see ``mini.kernels.device``) and prints it on stderr.
    """
    return device.choose()


def __getattr__(name):
    if name in ("cpu", "cuda", "backends"):
        return importlib.import_module(f"mini.kernels.{name}")
    raise AttributeError(f"module 'mini.kernels' has no attribute {name!r}")


__all__ = ["Choice", "describe"]
