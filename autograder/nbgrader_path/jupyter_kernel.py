"""Start the kernel that runs a submission on the nbgrader path: limits first, then ipykernel.

The ``mini-grader`` kernelspec (:func:`install_grading_kernel`) runs this inside
the sandbox.  Before ipykernel starts, it caps the process's memory, CPU time, file size and
processes (as the pytest path's worker is capped), points file descriptors 1 and 2 at /dev/null
(what the notebook prints still reaches the notebook through ipykernel; bytes written straight to
the descriptors no longer reach the instructor's terminal), and replaces the environment with a
short list, so no variable of the instructor's reaches student code, not even through
``/proc/self/environ``.  With namespaces it first takes a PID namespace of its own
(:mod:`autograder.sandbox.pid_namespace`), so that whatever the kernel starts ends with it, and last
drops every capability.  Where the sandbox has Landlock (``CONFINEMENT`` is not ``null``), the
kernel confines itself to it: it may read its connection file and the student edition of mini, and
write only its folder (the autograded copy it starts in), its temporary home (beside its connection
file) and the folder of its IPC sockets.  That step, with importing the student half of the lab's
checks, hiding the grader's source, and dropping the capabilities, is taken after ``execve``, in
the kernel's own interpreter (:func:`seal`).  A batch's worker starts most kernels faster, by
forking them from :mod:`autograder.nbgrader_path.forkserver`, which takes the same steps
(:func:`enter`) in each child.

    python -c "...; main()" RLIMITS CONFINEMENT NAMESPACES -f CONNECTION_FILE
"""
import functools
import json
import os
import sys
from pathlib import Path
import tempfile

from autograder import probes, sandbox, settings
from autograder.labs import LABS
from autograder.sandbox import (REPO, capabilities, confine, guard, pid_namespace, set_limits,
                                student_environment, user_tasks)

# beyond what the pytest path's worker keeps: the parent's pid (ipykernel exits when it does; not
# kept in a PID namespace of its own, where the namespace ends with the parent instead) and the
# thread settings the instructor chose (not the checks' inputs: the grader writes them into each
# test cell as the cell runs)
KERNEL_NAME = "mini-grader"
KEEP = ("JPY_PARENT_PID", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")


def main():
    rlimits, confinement, namespaces = map(json.loads, sys.argv[1:4])
    kernel_arguments = sys.argv[4:]
    edition = settings.EDITION.get()        # the batch's (autograder.edition.for_grading)
    if confinement:
        confinement["readable"].append(edition)
    environment = enter(rlimits, confinement, kernel_arguments, namespaces, sealed=False)
    sealing = json.dumps({"confinement": confinement, "namespaces": namespaces,
                          "edition": edition})
    start = (f"import sys; sys.path.insert(0, {str(REPO)!r}); "
             "from autograder.nbgrader_path.jupyter_kernel import seal, run_ipykernel; "
             "seal(sys.argv.pop(1)); run_ipykernel()")
    os.execve(sys.executable, [sys.executable, "-I", "-c", start, sealing, *kernel_arguments],
              environment)


def seal(sealing):
    """The kernel's last steps before ipykernel, in its own interpreter (after ``execve``): put the
    student edition of mini first on the path and import the student half of the lab's checks
    (what its test cells call while graded), then lay an empty folder over the grader (with
    namespaces), confine the process (Landlock), refuse ``import autograder`` but the probes to
    student code, and drop every capability (with namespaces).  Mounting comes first, since
    Landlock forbids it.  The lab is the name of the folder the kernel starts in
    (``autograded/<student>/<lab>``)."""
    sealing = json.loads(sealing)
    sys.path.insert(0, sealing["edition"])
    lab = os.path.basename(os.getcwd())
    kept = [probes.lab_probes(lab)] if lab in LABS else []
    sandbox.seal_off(sealing["confinement"], sealing["namespaces"])
    guard.hide_autograder(keep=["autograder.probes", *kept])


def run_ipykernel(argv=None):
    """Run ipykernel in this process, forgetting each failed cell's error once the cell ends
    (:func:`_forget_failure`)."""
    from ipykernel import kernelapp
    app = kernelapp.IPKernelApp.instance()
    app.initialize(argv)
    app.shell.events.register("post_run_cell", functools.partial(_forget_failure, app.shell))
    app.start()


def _forget_failure(shell, result):
    """After a cell, drop what IPython keeps of its error: the traceback in ``sys.last_*``, in the
    cell's result and in the traceback printer.  Its frames would keep the cell's objects (a
    runaway allocation's memory, say) alive until the next error, where the pytest path's worker
    lets them go as the cell ends: the same notebook could score differently on the two paths."""
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)
    if result.error_in_exec is not None:
        result.error_in_exec.__traceback__ = None
    shell.InteractiveTB.tb = None


def enter(rlimits, confinement, kernel_arguments, namespaces, sealed=True):
    """Take this process into the kernel's sandbox; return the environment the kernel runs with.

    With ``namespaces`` it continues in a PID namespace of its own and, once the steps below are
    taken, drops every capability (:mod:`autograder.sandbox.capabilities`).  It sets ``rlimits``
    (:meth:`autograder.sandbox.Limits.rlimits`), makes the kernel's home beside its connection
    file, confines the process (``confinement`` from :func:`autograder.sandbox.confinement`, or
    None), and points descriptors 1 and 2 at /dev/null.  Reads the grader's variables from
    ``os.environ``.  With ``sealed`` false it neither confines the process nor drops its
    capabilities: :func:`seal` does both after ``execve``, once it has hidden the reference files.
    """
    tasks = user_tasks()            # the user's processes, counted before they are out of sight
    if namespaces:
        pid_namespace.enter()
    set_limits(rlimits, tasks)
    connection_file = kernel_arguments[kernel_arguments.index("-f") + 1]
    # beside the connection file, in the worker's runtime folder: removed with it
    home = tempfile.mkdtemp(prefix="home-", dir=os.path.dirname(os.path.abspath(connection_file)))
    environment = {**student_environment(home, keep=KEEP),
                   "IPYTHONDIR": os.path.join(home, "ipython")}
    if namespaces:          # ipykernel would take process 1 for a parent that has gone
        environment.pop("JPY_PARENT_PID", None)
    if confinement:
        with open(connection_file) as file:
            sockets = json.load(file)["ip"]      # IPC transport: the sockets' path prefix
        confinement["readable"].append(connection_file)
        confinement["writable"] += [os.getcwd(), home, os.path.dirname(sockets)]
        if sealed:
            confine(confinement)
    if namespaces and sealed:
        capabilities.drop_all()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    return environment


if __name__ == "__main__":
    main()


def install_grading_kernel(data_dir, runtime_dir, limits, through=()):
    """A kernelspec ``mini-grader`` under ``data_dir``: python3 inside the sandbox, started by
    this module's :func:`main` with ``limits`` (:class:`autograder.sandbox.Limits`), in the folder
    named by ``$MINI_KERNEL_HOME`` (the submission's autograded copy), with the student edition of
    mini in the folder named by ``$MINI_EDITION`` (``autograder.edition.for_grading`` of the lab).
    Under Landlock the kernel may also write its own folders; it reads the grader only until it is
    sealed (:func:`seal`).

    Of the host's folders the kernel's root shows only those two writable: the autograded copy
    and ``runtime_dir`` (its connection file and IPC sockets); never ``data_dir``, since a kernel
    that could rewrite this launch file would start the next submission's kernel as it pleased,
    outside the sandbox.  ``through``: a command that the launcher above is handed to as its last
    arguments (:func:`autograder.nbgrader_path.forkserver.client_command`: fork the kernel from a
    server, start it as above only where the server does not answer).
    """
    folder = Path(data_dir) / "kernels" / KERNEL_NAME
    folder.mkdir(parents=True, exist_ok=True)
    launcher = [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); "
                "from autograder.nbgrader_path.jupyter_kernel import main; main()",
                json.dumps(limits.rlimits()), json.dumps(sandbox.confinement([])),
                json.dumps(sandbox.isolation() == "namespaces"), "-f", "{connection_file}"]
    argv = [*through, *sandbox.sandboxed(launcher, keep=["$MINI_KERNEL_HOME", str(runtime_dir)],
                                         editions=["$MINI_EDITION"])]
    (folder / "kernel.json").write_text(json.dumps(
        {"argv": argv, "display_name": "Python 3 (grading)", "language": "python"}))
    return KERNEL_NAME
