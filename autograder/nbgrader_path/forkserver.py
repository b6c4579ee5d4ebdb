"""Start a batch worker's grading kernels by forking one process that has imported them already.

A kernel started from nothing spends well over a second of CPU before a submission's first cell
runs: Python, ipykernel with IPython, numpy, matplotlib.  A worker grades one submission after
another, so it starts one *fork server* inside the sandbox (:func:`start`) that imports all of that
once, then forks a child for every kernel nbgrader asks for.  The ``mini-grader`` kernelspec runs a
small client (``CLIENT``) in the kernel's place; the server's child takes the steps a kernel
started by :mod:`autograder.nbgrader_path.jupyter_kernel` takes (limits, its own home and
environment, Landlock; with namespaces its own view of the batch's autograded copies) and runs
ipykernel.  No student code runs in the server, and none can reach it:

* the server answers only a client whose parent is the worker, never a kernel or a process a
  kernel starts (``SO_PEERCRED``);
* the server's folder (its socket and home) is an empty read-only folder in every child's view;
  with namespaces a child sees only its own submission's autograded copy of the batch's;
* the server was started with the student's environment, not the grader's, so a child inherits
  none of the instructor's variables; under Landlock a child cannot trace or signal the server.

The client stands for the kernel before the kernel manager: it forwards interrupts and
terminations, and exits with the kernel's status; when the client is killed, the server kills the
kernel's whole session.  With namespaces a kernel also has a PID namespace of its own, and under
a grader running as root cgroups of its own: what it starts ends with it, however it left the
session, and shares the CPU and memory bounds it was given.  Where the server cannot be reached,
the client starts the kernel the slow way, through :mod:`autograder.nbgrader_path.jupyter_kernel`.
"""
import json
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder import edition, probes, sandbox
from autograder.nbgrader_path import jupyter_kernel
from autograder.sandbox import cgroups, guard, syscalls

# What the server imports once, for every kernel: most labs' first cell imports matplotlib's two.
# Not mini: each lab's kernels import their own student edition of it, with their lab's probes.
PRELOAD = ("ipykernel.kernelapp", "numpy", "matplotlib.pyplot", "matplotlib_inline.backend_inline")

CLIENT = r"""
import json, os, signal, socket, sys
path, names, rest = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]
arguments, fallback = rest[:rest.index("--")], rest[rest.index("--") + 1:]
try:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.connect(path)
    server.send(json.dumps({"cwd": os.getcwd(), "arguments": arguments, "environment": {
        name: os.environ[name] for name in names if name in os.environ}}).encode())
    reply = server.recv(64).split()
    if reply[:1] != [b"pid"]:
        raise OSError(reply)
    pid = int(reply[1])
except (OSError, ValueError):
    os.execvp(fallback[0], fallback)

def forward(number, frame):
    try:
        os.kill(pid, number)
    except OSError:
        pass

for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
    signal.signal(number, forward)
status = server.recv(64).split()
os._exit(int(status[1]) if status[:1] == [b"exit"] else 1)
"""



def start(folder, runtime_dir, cover, limits, confinement, labs, cgroup=None):
    """Start a fork server in ``folder``; return ``(process, socket path)``, or ``(None, None)``
    when it did not come up (the kernels then start the slow way).

    ``cover``: the folder of the batch's autograded copies (each kernel starts in one of them);
    with namespaces a child sees its own only.  Of the host's folders, the server's sandbox holds
    ``folder``, ``runtime_dir``, ``cover`` and ``cgroup`` writable, and Python, mini and the
    grader read-only (:func:`autograder.sandbox.sandboxed`).  Kernels get ``limits``
    (:class:`autograder.sandbox.Limits`), and each imports the student edition of mini of its
    own lab (one of ``labs``, ``autograder.edition.for_grading``) and sees no other.  Given
    ``cgroup`` (:mod:`autograder.sandbox.cgroups`), the server runs in a group inside it, and each
    kernel in one of its own there, allowed ``limits.processes`` processes and threads and
    ``limits.memory_bytes`` of memory, with a CPU share equal to each other kernel's, and emptied
    when the kernel ends.
    """
    folder = Path(folder)
    home = folder / "home"
    home.mkdir(parents=True)
    Path(cover).mkdir(parents=True, exist_ok=True)
    editions = {lab: edition.for_grading(lab) for lab in sorted(labs)}
    config = {"socket": str(folder / "socket"), "worker": os.getpid(), "cover": str(cover),
              "namespaces": sandbox.isolation() == "namespaces", "rlimits": limits.rlimits(),
              "confinement": confinement, "cgroup": cgroup, "memory": limits.memory_bytes,
              "folder_bytes": limits.folder_bytes,
              "editions": {lab: sandbox.seen_at(path) for lab, path in editions.items()}}
    command = [sys.executable, "-I", "-c",
               f"import sys; sys.path.insert(0, {str(sandbox.REPO)!r}); "
               "from autograder.nbgrader_path.forkserver import serve; serve()", json.dumps(config)]
    writable = [folder, runtime_dir, cover] + (cgroup or [])   # the kernels' cgroups go there
    command = sandbox.sandboxed(command, keep=writable, editions=editions.values())
    environment = {**sandbox.student_environment(home, keep=jupyter_kernel.KEEP),
                   "IPYTHONDIR": str(home / "ipython")}
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env=environment, start_new_session=True)
    if cgroup is not None:          # before it forks a kernel: it forks none before "ready"
        own = cgroups.nested(cgroup, f"server-{process.pid}", "max")  # one per worker
        cgroups.join(own or cgroup, process.pid)
    if process.stdout.readline() != b"ready\n":
        process.kill()
        process.wait()
        return None, None
    process.stdout.close()
    return process, config["socket"]


def client_command(server_socket):
    """The start of the kernelspec's argv: ask the server at ``server_socket`` for a kernel, or
    run what follows it (the full launcher, ``-f {connection_file}`` at its end)."""
    names = [*sandbox.STUDENT_VARIABLES, *jupyter_kernel.KEEP]
    return [sys.executable, "-I", "-S", "-c", CLIENT, str(server_socket), json.dumps(names),
            "-f", "{connection_file}", "--"]


# --- inside the sandbox: the server --------------------------------------------------------------

def serve():
    """Import what kernels need, listen, then fork a kernel per accepted request until the worker
    is gone (the server's stdin closes)."""
    config = json.loads(sys.argv[1])
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for module in PRELOAD:
        __import__(module)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(config["socket"])
    listener.listen(16)
    if config["namespaces"]:        # the socket and this home, out of every child's sight
        syscalls.mount("none", os.path.dirname(config["socket"]), "tmpfs", syscalls.MS_RDONLY,
                      "size=4k")
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda number, frame: None)
    events = selectors.DefaultSelector()
    events.register(listener, selectors.EVENT_READ, "request")
    events.register(sys.stdin, selectors.EVENT_READ, "worker")
    events.register(wake_read, selectors.EVENT_READ, "child")
    kernels = {}                    # pid -> the client's connection (None once it has gone)
    os.write(1, b"ready\n")
    while True:
        for key, _ in events.select():
            if key.data == "worker" and not os.read(0, 4096):
                for pid in kernels:
                    _kill(pid)
                os._exit(0)
            elif key.data == "child":
                os.read(wake_read, 4096)
                _report_exits(kernels, events, config["cgroup"])
            elif key.data == "request":
                _answer(listener, config, kernels, events)
            elif isinstance(key.data, int):     # a client's connection: it has gone
                events.unregister(key.fileobj)
                key.fileobj.close()
                kernels[key.data] = None
                _kill(key.data)


def _answer(listener, config, kernels, events):
    """Accept one request; fork its kernel if it comes from the worker and is well formed."""
    connection, _ = listener.accept()
    try:
        peer, _, _ = struct.unpack("3i", connection.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        if _parent(peer) != config["worker"]:
            raise PermissionError(f"process {peer} is not the worker's")
        connection.settimeout(5)
        request = json.loads(connection.recv(1 << 16))
        connection.settimeout(None)
        cwd, arguments = Path(request["cwd"]), request["arguments"]
        if not cwd.is_relative_to(config["cover"]) or arguments[:1] != ["-f"] or len(arguments) != 2:
            raise ValueError(f"not a grading kernel's request: {request!r:.200}")
    except (OSError, ValueError, KeyError, TypeError):
        connection.close()
        return
    pid = os.fork()
    if pid == 0:
        _become_kernel(config, request, keep=connection.fileno())
    connection.send(b"pid %d" % pid)
    kernels[pid] = connection
    events.register(connection, selectors.EVENT_READ, pid)


def _parent(pid):
    """The parent of process ``pid`` (its /proc stat's fourth field), or None."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            return int(file.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _kill(pid):
    """Kill a kernel's session (the kernel and whatever it started); it is reaped later."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _report_exits(kernels, events, cgroup):
    """Reap every kernel that ended, with what it left in its session and its cgroup, and tell
    its client how."""
    while True:
        try:
            ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if ended is None:
            return
        _kill(ended.si_pid)     # not reaped yet, so its number still names only its session
        _, status = os.waitpid(ended.si_pid, 0)
        if cgroup:
            cgroups.empty([os.path.join(folder, f"kernel-{ended.si_pid}") for folder in cgroup])
        connection = kernels.pop(ended.si_pid, None)
        if connection is not None:
            events.unregister(connection)
            try:
                connection.send(b"exit %d" % os.waitstatus_to_exitcode(status))
            except OSError:
                pass
            connection.close()


# --- inside the sandbox: a kernel, just forked ----------------------------------------------------

def _become_kernel(config, request, keep):
    """In the forked child: close the server's descriptors, take the kernel's sandbox, run
    ipykernel; never returns."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.closerange(3, keep)
        os.closerange(keep + 1, 1 << 16)
        os.close(keep)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.setsid()
        own = config["cgroup"] and cgroups.nested(
            config["cgroup"], f"kernel-{os.getpid()}", config["rlimits"]["NPROC"], config["memory"])
        cgroups.join(own)
        lab = Path(request["cwd"]).name                          # autograded/<student>/<lab>
        own_edition = config["editions"][lab]
        sys.path.insert(0, own_edition)
        kept = probes.lab_probes(lab)
        if config["namespaces"]:
            _own_copy_only(request["cwd"], config["cover"], config["folder_bytes"],
                           hide_cgroups=bool(own))
            others = [path for path in config["editions"].values() if path != own_edition]
            sandbox.cover([*others, sandbox.GRADER])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["environment"])
        confinement = config["confinement"] and {
            **config["confinement"], "readable": [*config["confinement"]["readable"], own_edition]}
        environment = jupyter_kernel.enter(config["rlimits"], confinement, request["arguments"],
                                   namespaces=config["namespaces"])
        os.environ.clear()
        os.environ.update(environment)
        tempfile.tempdir = None
        sys.dont_write_bytecode = True
        guard.hide_autograder(keep=["autograder.probes", kept])
        jupyter_kernel.run_ipykernel(request["arguments"])
    except SystemExit as leaving:
        os._exit(leaving.code if isinstance(leaving.code, int) else 1)
    except BaseException:       # the sandbox could not be entered: the kernel never ran
        os._exit(1)
    os._exit(0)


def _own_copy_only(cwd, cover, folder_bytes, hide_cgroups):
    """A mount namespace of this process's own, where ``cover`` holds nothing but ``cwd``, and
    the /tmp of the server's root, every kernel's, is read-only (as under Landlock: no kernel
    leaves a file there for the next); with ``hide_cgroups``, /sys/fs/cgroup empty and
    read-only too (the server's cgroup is writable in its root, and student code runs as the
    user namespace's root: without Landlock it could move itself out of its cgroup).

    ``cwd`` is a tmpfs of ``folder_bytes`` holding a copy of the submission's autograded folder:
    what the kernel writes there is bounded, takes no room in the course folder, and is gone
    when the kernel ends (the grader writes the executed notebook itself)."""
    syscalls.unshare(syscalls.CLONE_NEWNS, "CLONE_NEWNS")
    own = os.open(cwd, os.O_RDONLY | os.O_DIRECTORY)    # read below, once covered
    syscalls.mount(None, "/tmp", None, syscalls.MS_REMOUNT | syscalls.MS_BIND | syscalls.MS_RDONLY,
                  None)
    syscalls.mount("none", cover, "tmpfs", 0, "size=64k")
    os.makedirs(cwd)
    syscalls.mount("none", cwd, "tmpfs", 0, f"size={int(folder_bytes)}")
    _copy_into(own, cwd)
    syscalls.mount(None, cover, None, syscalls.MS_REMOUNT | syscalls.MS_RDONLY, None)
    os.close(own)
    if hide_cgroups:
        syscalls.mount("none", "/sys/fs/cgroup", "tmpfs", syscalls.MS_RDONLY, "size=4k")


def _copy_into(source, folder):
    """Copy the files below the folder open as descriptor ``source`` into ``folder``, as many as
    fit; links are not followed."""
    for parent, _, files, parent_fd in os.fwalk(".", dir_fd=source):
        target = os.path.join(folder, parent)
        os.makedirs(target, exist_ok=True)
        for name in files:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=parent_fd)
                with open(fd, "rb") as original, open(os.path.join(target, name), "xb") as copy:
                    shutil.copyfileobj(original, copy)
            except OSError:
                continue
