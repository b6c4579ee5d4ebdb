"""The formgrader's Autograde button, graded in the sandbox of ``python -m autograder autograde``.

nbgrader's formgrader autogrades inside the Jupyter server that serves it, and would start the
submission's kernel as the server starts its own: with the server's rights, environment and
Jupyter folders (its runtime folder holds the server's token and its kernels' connection files,
its data folder the kernelspecs it launches), the course folder, the gradebook and ``solutions/``
in reach.  Inside a server, ``nbgrader_config.py`` has the course's Execute preprocessor start
every kernel with :class:`SandboxedKernelManager` instead: the CLI's ``mini-grader`` kernel
(:func:`autograder.nbgrader_path.jupyter_kernel.install_grading_kernel`,
:mod:`autograder.nbgrader_path.jupyter_kernel`), whatever kernel the notebook names.  The
preprocessors are the CLI's, so the hidden checks' verdicts are decided in the server's process,
outside the kernel, as in a CLI worker; the server writes the scores straight into the course
gradebook, which the kernel cannot see.
"""
import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir

from autograder import edition, sandbox, settings
from autograder.nbgrader_path import jupyter_kernel
from autograder.sandbox import cgroups

MAX_SOCKET_PATH = 107       # a Unix socket's path (sun_path less its final NUL)


def inside_jupyter_server():
    """Whether this process is a Jupyter server (nbgrader runs in it for the formgrader)."""
    serverapp = sys.modules.get("jupyter_server.serverapp")
    return serverapp is not None and serverapp.ServerApp.initialized()


def serve_mathjax():
    """Have the grading view load MathJax from this server (jupyter-server-mathjax's copy), not
    from a CDN that an offline server cannot reach: put ``jupyter_data/`` first among the server's
    Jupyter data folders, where nbconvert finds its template for the page's MathJax
    (``jupyter_data/nbconvert/templates/formgrade/mathjax.html.j2`` says how)."""
    ours = str(Path(__file__).resolve().parent / "jupyter_data")
    folders = os.environ.get("JUPYTER_PATH", "").split(os.pathsep)
    if ours not in folders:
        os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [ours, *folders]))


class SandboxedKernelManager(AsyncKernelManager):
    """Start the sandboxed ``mini-grader`` kernel, in the submission's autograded folder.

    Each manager (one per kernel: a kernel that dies is replaced by a new manager) installs the
    kernelspec in a private folder of its own in the server's runtime folder, and keeps there the
    kernel's connection file, IPC sockets and temporary home (``run/``).  The kernel sees none of
    the server's Jupyter folders (so no other kernel's folder either) but its own ``run/``, nor
    the course folder but its own autograded copy (its only other writable folder), nor the
    solutions or the exchange; so no kernel can rewrite the launch file of another, or reach the
    server.  The folder is removed with the kernel.  Under a server running as root, where the
    process limit does not bind, the kernel runs in cgroups of its own
    (:mod:`autograder.sandbox.cgroups`: its limit on processes and threads, on memory, its share of
    the CPU), emptied when the kernel ends: nothing it started outlives it.
    """

    def __init__(self, **kwargs):
        super().__init__(**{**kwargs, "kernel_name": jupyter_kernel.KERNEL_NAME})
        self.folder = Path(tempfile.mkdtemp(prefix="mini-grading-", dir=jupyter_runtime_dir()))
        runtime = self.folder / "run"
        runtime.mkdir()
        limits = sandbox.Limits()
        jupyter_kernel.install_grading_kernel(self.folder / "jupyter", runtime, limits)
        self.kernel_spec_manager = KernelSpecManager(
            kernel_dirs=[str(self.folder / "jupyter" / "kernels")])
        self.transport, self.ip = "ipc", str(runtime / "kernel-ipc")
        if len(self.ip) + len("-65535") > MAX_SOCKET_PATH:
            shutil.rmtree(self.folder)
            raise ValueError(f"the grading kernel's sockets would lie in {runtime}, a path too "
                             f"long for a Unix socket (at most {MAX_SOCKET_PATH} characters): "
                             "start the server with a shorter JUPYTER_RUNTIME_DIR")
        self.connection_file = str(runtime / f"kernel-{uuid.uuid4()}.json")
        self.cgroup = cgroups.make(limits.processes, limits.memory_bytes)

    async def _async_pre_start_kernel(self, **kw):
        folder = kw.get("cwd")      # nbclient starts the kernel in the notebook's folder
        if not folder:
            raise ValueError("the grading kernel starts in the submission's autograded folder, "
                             "and none was given (no cwd)")
        kw["env"] = {**kw.get("env", os.environ), settings.KERNEL_HOME.name: str(folder),
                     "MINI_EDITION": str(edition.for_grading(Path(folder).name))}
        return await super()._async_pre_start_kernel(**kw)

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        await super()._async_launch_kernel(kernel_cmd, **kw)
        # the launcher has not started Python yet, let alone student code: all it starts is inside
        cgroups.join(self.cgroup, self.provisioner.pid)

    async def _async_cleanup_resources(self, restart=False):
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            if self.cgroup is not None:
                cgroups.empty(self.cgroup)
                self.cgroup = None
            shutil.rmtree(self.folder, ignore_errors=True)

    cleanup_resources = _async_cleanup_resources    # AsyncKernelManager binds the base's
