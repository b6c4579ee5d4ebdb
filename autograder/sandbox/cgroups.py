"""Control groups for the processes of student code: a bound on their number and their memory,
and a fair share of the CPU, whatever they do.

rlimits bind one process at a time (and ``RLIMIT_NPROC`` not root at all).  A *group* binds all
the processes of one submission together: at most ``tasks`` processes and threads, at most
``memory`` bytes of memory between them, and the same share of the CPU as each of its siblings,
so that a submission running 24 busy processes gets no more of the machine than one that runs
one, and cannot push a neighbour past its time limit.  When a group is emptied, every process
still in it is killed, including those that left their session.

A group is a list of folders, one per cgroup hierarchy that has one of :data:`CONTROLLERS`: on
cgroup v1 a folder of the same name in the pids, cpu and memory hierarchies, each below the
grader's own cgroup there (inside a container, the container's); on cgroup v2 one folder of the
unified tree.  It travels as JSON (a fork server makes its kernels' groups inside the batch's).
Only root can make them (a grader in a container, CI); elsewhere :func:`make` returns None and
student code is held by its rlimits alone, as :func:`note` says.
"""
import contextlib
import itertools
import os
import signal
import time
from pathlib import Path

CONTROLLERS = ("pids", "cpu", "memory")
PREFIX = "mini-grading"
_made = itertools.count()


@contextlib.contextmanager
def scope(tasks, memory=None):
    """A top-level group (:func:`make`) for the duration of the block, emptied and removed at
    its end; None inside where none can be made."""
    group = make(tasks, memory)
    try:
        yield group
    finally:
        if group is not None:
            empty(group)


def make(tasks, memory=None):
    """A new top-level group allowing ``tasks`` processes and threads (``"max"``: no bound) and
    ``memory`` bytes (None: no bound), or None where no pids cgroup can be made (not root, no
    pids controller).  The caller empties it (:func:`empty`).  Groups left by a grader that was
    killed half-way are emptied and removed first."""
    bases = _bases()
    if not any("pids" in names for names in bases.values()):
        return None
    for base in bases:
        _sweep(base)
    return _made_in(bases, f"{PREFIX}-{os.getpid()}-{start_time(os.getpid())}-{next(_made)}",
                    tasks, memory)


def nested(group, name, tasks, memory=None):
    """A group ``name`` inside ``group`` (from :func:`make`), or None where the hierarchy refuses
    one (on cgroup v2, once ``group`` holds a process itself).  :func:`empty` removes it."""
    places = {}
    for folder in map(Path, group):
        places[folder] = _controllers_of(folder)
        _enable(folder, places[folder])
    return _made_in(places, name, tasks, memory)


def _made_in(places, name, tasks, memory):
    """The group ``name`` made in each of ``places`` (``{folder: its controllers}``), or None
    where its pids cgroup cannot be made (what was made then removed)."""
    group = []
    for parent, controllers in places.items():
        folder = _child(parent, name, controllers, tasks, memory)
        if folder is None and "pids" in controllers:
            empty(group)
            return None
        if folder is not None:
            group.append(str(folder))
    return group


def join(group, pid=None):
    """Move process ``pid`` (default: the calling one) into ``group`` (nothing for None)."""
    for folder in group or ():
        (Path(folder) / "cgroup.procs").write_text(str(pid or os.getpid()))


def empty(group):
    """Kill every process in ``group`` and in the groups inside it, then remove them all."""
    for folder in map(Path, group or ()):
        _empty_folder(folder)


def controllers(group):
    """The controllers in force for ``group``: a sublist of :data:`CONTROLLERS`."""
    found = set()
    for folder in map(Path, group or ()):
        found |= _controllers_of(folder)
    return [name for name in CONTROLLERS if name in found]


def note():
    """A clause for every result: whether a submission's processes were bounded together here."""
    here = set().union(*_bases().values())
    if "pids" not in here:
        return ("no cgroups (the grader is not root, or has no pids controller): each process "
                "of a submission had its own limits, but they were not bounded together")
    missing = [name for name in CONTROLLERS if name not in here]
    return ("a submission's processes bounded together in cgroups (" +
            ", ".join(name for name in CONTROLLERS if name in here) + ")" +
            (f"; no {' or '.join(missing)} controller here, so not the "
             f"{' or '.join(missing)}" if missing else ""))


# --- the hierarchies ---------------------------------------------------------------------------

def _bases():
    """``{folder to make groups in: the controllers of its hierarchy}``: the grader's own cgroup
    in each mounted hierarchy that has one of :data:`CONTROLLERS`."""
    if os.geteuid() != 0:
        return {}
    own = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            own[names] = path.lstrip("/")
    bases = {}
    if "" in own and (Path("/sys/fs/cgroup") / "cgroup.controllers").is_file():     # v2
        base = Path("/sys/fs/cgroup") / own[""]
        if not (base / "cgroup.controllers").is_file():
            base = Path("/sys/fs/cgroup")
        available = set((base / "cgroup.controllers").read_text().split())
        _enable(base, available & set(CONTROLLERS))
        bases[base] = available & set(CONTROLLERS)
        return bases
    for names, path in own.items():                                                  # v1
        present = set(names.split(",")) & set(CONTROLLERS)
        for name in present:
            base = Path("/sys/fs/cgroup") / name / path
            if (base / "cgroup.procs").is_file():
                bases[base] = present
                break
    return bases


_CONTROL_FILES = {"pids": ("pids.max",), "cpu": ("cpu.shares", "cpu.weight"),
                  "memory": ("memory.limit_in_bytes", "memory.max")}    # cgroup v1, v2


def _controllers_of(folder):
    """The controllers of :data:`CONTROLLERS` that group folder ``folder`` has."""
    return {name for name, files in _CONTROL_FILES.items()
            if any((folder / file).is_file() for file in files)}


def _enable(folder, controllers):
    """On cgroup v2, let the children of ``folder`` have ``controllers``."""
    if (folder / "cgroup.subtree_control").is_file():
        for name in controllers:
            with contextlib.suppress(OSError):
                (folder / "cgroup.subtree_control").write_text(f"+{name}")


def _child(parent, name, controllers, tasks, memory):
    folder = parent / name
    try:
        folder.mkdir()
        if "pids" in controllers:
            (folder / "pids.max").write_text(str(tasks))
        if "memory" in controllers and memory is not None:
            limit = "memory.max" if (folder / "memory.max").is_file() else "memory.limit_in_bytes"
            (folder / limit).write_text(str(memory))
        return folder
    except OSError:
        with contextlib.suppress(OSError):
            folder.rmdir()
        return None


def _empty_folder(folder):
    for inner in [path for path in folder.iterdir() if path.is_dir()] if folder.is_dir() else ():
        _empty_folder(inner)
    for _ in range(100):
        try:
            pids = (folder / "cgroup.procs").read_text().split()
        except OSError:
            return
        if not pids:
            break
        for pid in map(int, pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    with contextlib.suppress(OSError):
        folder.rmdir()


def _sweep(base):
    """Empty and remove the groups in ``base`` whose maker has gone: a grader killed half-way
    (``kill -9``) could not, and what its student code left running is stopped here.  A group's
    name holds its maker's process id and start time, so that a reused id is no maker."""
    for folder in base.glob(f"{PREFIX}-*-*-*"):
        _, _, pid, started, _ = folder.name.rsplit("-", 4)
        if not (pid.isdigit() and start_time(int(pid)) == started):
            _empty_folder(folder)


def start_time(pid):
    """Process ``pid``'s start time, in clock ticks since boot, as text ("" if it has gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""
