"""Where mini's CUDA kernels run: on a real GPU, or on Numba's CUDA simulator.

The same ``@cuda.jit`` kernels run in both places.  The simulator runs every CUDA thread as a
Python thread, so it is slow (keep arrays at 32-64 per side) but it needs no GPU, and ``print`` and
``pdb`` work inside a kernel.  Numba reads the switch (``NUMBA_ENABLE_CUDASIM``) when ``numba.cuda``
is first imported, so the choice must be made before that: :func:`choose` does it once, the first
time ``mini.kernels.cuda`` is imported or ``mini.kernels.describe()`` is called, and prints one
line on stderr saying which was chosen and why.  The CPU kernels never trigger it.

The environment variable ``MINI_CUDA`` decides:

* unset or ``auto``: the GPU if the NVIDIA driver (``libcuda.so.1``) loads and reports at least one
  device, otherwise the simulator (also the simulator when ``NUMBA_ENABLE_CUDASIM=1`` is set);
* ``gpu``: the GPU, and an error naming ``MINI_CUDA`` if there is no driver or no device (never a
  silent fallback to the simulator);
* ``simulator``: the simulator, even on a machine with a GPU.

Any other value is an error.  The driver is probed with ``ctypes``, without importing numba.  If
numba (or ``numba.cuda``) was imported before the choice, numba is told to re-read its settings
and a ``numba.cuda`` loaded under the other setting is dropped from ``sys.modules``, so that mini's
``from numba import cuda`` gets the chosen one (a ``cuda`` name the user imported earlier keeps
pointing at the old module).  In simulator mode ``sys.setswitchinterval`` is lowered to 1e-4 s:
kernels that call ``cuda.syncthreads()`` often run 3-8 times faster with quicker thread switches.
"""
import ctypes
import dataclasses
import os
import sys

ENV_VAR = "MINI_CUDA"
SIMULATOR_SWITCH_INTERVAL = 1e-4   # seconds; Python's default is 5e-3
_DRIVER_LIBRARY = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"


@dataclasses.dataclass(frozen=True)
class Choice:
    """What runs mini's CUDA kernels (``target``: "gpu" or "simulator") and why."""

    target: str
    reason: str
    forced: bool   # True when MINI_CUDA (or NUMBA_ENABLE_CUDASIM) decided, False when probed

    @property
    def simulator(self):
        return self.target == "simulator"

    def message(self):
        """The one line printed when the choice is made."""
        where = "Numba's CUDA simulator (slow: one Python thread per CUDA thread)" \
            if self.simulator else "the GPU"
        return (f"mini: CUDA kernels run on {where}, because {self.reason}. Force either with "
                f"{ENV_VAR}=gpu or {ENV_VAR}=simulator; unset, mini chooses by itself.")


_choice = None


def choose():
    """Decide GPU or simulator (once per process), configure numba accordingly, say so on stderr."""
    global _choice
    if _choice is None:
        choice = _decide(os.environ.get(ENV_VAR, "auto").strip().lower())
        _configure_numba(choice)
        print(choice.message(), file=sys.stderr)
        _choice = choice
    return _choice


def _decide(setting):
    if setting == "simulator":
        return Choice("simulator", f"{ENV_VAR}=simulator", forced=True)
    if setting not in ("auto", "", "gpu"):
        raise ValueError(f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not understood: use "
                         f"{ENV_VAR}=gpu, {ENV_VAR}=simulator, or leave it unset (auto)")
    found, why = probe_gpu()
    if setting == "gpu":
        if not found:
            raise RuntimeError(f"{ENV_VAR}=gpu asks for a GPU, but {why}. Install the NVIDIA "
                               f"driver, or unset {ENV_VAR} to run on Numba's CUDA simulator")
        return Choice("gpu", f"{ENV_VAR}=gpu and {why}", forced=True)
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0").strip() == "1":
        return Choice("simulator", "NUMBA_ENABLE_CUDASIM=1 is set", forced=True)
    return Choice("gpu" if found else "simulator", why, forced=False)


def probe_gpu():
    """(found, why): load the CUDA driver with ctypes and count its devices; numba is not used."""
    try:
        driver = ctypes.CDLL(_DRIVER_LIBRARY)
    except OSError as error:
        return False, f"no CUDA driver was found ({error})"
    status = driver.cuInit(0)
    if status != 0:
        return False, f"the CUDA driver did not start (cuInit returned error {status})"
    count = ctypes.c_int(0)
    status = driver.cuDeviceGetCount(ctypes.byref(count))
    if status != 0 or count.value == 0:
        return False, "the CUDA driver reports no GPU"
    return True, f"the CUDA driver reports {count.value} GPU(s)"


def _configure_numba(choice):
    """Set NUMBA_ENABLE_CUDASIM, and make an already imported numba obey it."""
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if choice.simulator else "0"
    numba = sys.modules.get("numba")
    if numba is not None:
        numba.config.reload_config()
        # a loaded numba.cuda was built by simulator_init (simulator) or device_init (GPU)
        loaded_simulated = "numba.cuda.simulator_init" in sys.modules
        if "numba.cuda" in sys.modules and loaded_simulated != choice.simulator:
            stale = [n for n in sys.modules if n == "numba.cuda" or n.startswith("numba.cuda.")]
            for name in stale:
                del sys.modules[name]
            numba.__dict__.pop("cuda", None)   # else `from numba import cuda` returns the old one
    if choice.simulator:
        sys.setswitchinterval(SIMULATOR_SWITCH_INTERVAL)
        _lock_shared_arrays()


def _lock_shared_arrays():
    """Make the simulator's ``cuda.shared.array`` safe when a block's threads reach it together.

    The simulator keeps one array per line of kernel code, but looks it up and stores it without
    a lock, so two threads arriving at once can each get an array of their own and the block
    computes garbage (about one launch in a hundred with the short switch interval above).  This
    is the same lookup under a lock; dynamic shared memory (shape 0) is left to Numba.
    """
    import threading

    from numba.cuda.simulator import kernelapi
    original, lock = kernelapi.FakeCUDAShared.array, threading.Lock()
    if getattr(original, "locked", False):
        return

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:
            return original(self, shape, dtype, alignment)
        caller = sys._getframe(1)
        where = (caller.f_code.co_filename, caller.f_lineno)
        with lock:
            if where not in self._allocations:
                if isinstance(dtype, kernelapi.types.Type):
                    dtype = kernelapi.numpy_support.as_dtype(dtype)
                self._allocations[where] = kernelapi.np.empty(shape, dtype)
            return self._allocations[where]

    array.locked = True
    kernelapi.FakeCUDAShared.array = array
