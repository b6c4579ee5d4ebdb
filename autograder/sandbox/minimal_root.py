"""Build the sandbox's minimal root, then run a command in it.

:func:`autograder.sandbox.sandboxed` runs this first, as the root of new user, mount and network
namespaces, before any student code, in a Python that imports only the standard library
and this package (``-I -S``): ``main(LAYOUT, COMMAND...)``.  The new
root is a tmpfs that holds nothing of the host but what the command needs, each at its own path:

* the system folders of ``LAYOUT["system"]`` (/usr, /etc, ...: a symlink among them, as where /usr
  is merged, stays a symlink), /sys, and the folders of ``LAYOUT["readonly"]`` (Python with its
  packages, the grader), all read-only, with an empty folder over each of ``LAYOUT["covered"]``
  (packages student code must not import);
* the student editions of mini of ``LAYOUT["editions"]``, read-only, each at
  ``/editions/<its folder's name>`` (:data:`EDITIONS`) rather than where the host keeps it (in a
  cache folder of the grader's home): an item may be an environment variable,
  ``$MINI_EDITION``, which the command then finds set to that path;
* /proc (a PID namespace's first process mounts its own over it,
  :mod:`autograder.sandbox.pid_namespace`);
* a /dev of its own: null, zero, full, random, urandom, tty, a private pts instance and an empty
  /dev/shm;
* an empty /tmp;
* the folders of ``LAYOUT["writable"]``, read-write where they were (an item may be an environment
  variable, ``$MINI_KERNEL_HOME``); the command starts in the first.  With
  ``LAYOUT["private_bytes"]``, that first one is instead an empty tmpfs of that many bytes at the
  same path: what the command writes there is bounded, and gone with it.

So no home folder, no other folder of /tmp, no other checkout and no other part of this repository
(its history, the solutions, the tests, the course) is there.  The root is read-only once built and
the host's detached from this mount namespace.  Each source is opened before the tmpfs that becomes
the root is mounted (over /tmp, which it would hide) and bound through its descriptor.  Any step
that fails raises, and the command never runs.
"""
import json
import os
import sys

from autograder.sandbox.syscalls import (MNT_DETACH, MS_BIND, MS_NODEV, MS_NOEXEC, MS_NOSUID,
                                         MS_RDONLY, MS_REC, MS_REMOUNT, checked, libc, mount)

DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
BUILD = "/tmp"          # where the new root is mounted while it is built
EDITIONS = "/editions"  # where the student editions of mini are
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41}     # its system call's number


def main():
    layout, command = json.loads(sys.argv[1]), sys.argv[2:]
    writable = [_expanded(folder) for folder in layout["writable"]]
    readonly = [_expanded(folder) for folder in layout["readonly"]]
    editions = {_expanded(item): inside(_expanded(item)) for item in layout["editions"]}
    if len(set(editions.values())) < len(editions):
        raise ValueError(f"two editions of one name: {layout['editions']}")
    _build(layout["system"], readonly, writable, layout["covered"], editions,
           layout.get("private_bytes"))
    _switch_root()
    for item in layout["editions"]:
        if item.startswith("$"):
            os.environ[item.strip("${}")] = inside(_expanded(item))
    os.chdir(writable[0] if writable else "/")
    os.execvp(command[0], command)


def inside(edition):
    """Where the root shows the student edition of mini the host keeps in ``edition``."""
    return f"{EDITIONS}/{os.path.basename(os.path.normpath(edition))}"


def _build(system, readonly, writable, covered, editions, private_bytes=None):
    """The new root, at ``BUILD``: each of the host's folders in it is bound through a descriptor
    opened before the tmpfs there hides what /tmp held; ``editions``: ``{host path: path in the
    root}``; ``private_bytes``: the size of the tmpfs that stands for ``writable[0]``."""
    system = [folder for folder in system if os.path.lexists(folder)]
    held = _opened(["/proc", "/sys", *(f"/dev/{name}" for name in DEVICES), *readonly, *writable,
                    *editions, *(folder for folder in system if not os.path.islink(folder))])
    mount("none", BUILD, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=1m")
    for folder in system:
        if os.path.islink(folder):
            os.symlink(os.readlink(folder), BUILD + folder)
        else:
            _bind_readonly(held[folder], folder)
    _bind(held["/proc"], "/proc")
    _bind_readonly(held["/sys"], "/sys")
    _make_dev(held)
    _tmpfs("/tmp", "mode=1777,size=64m")
    for folder in readonly:
        _bind_readonly(held[folder], folder)
    for folder, path in editions.items():
        _bind_readonly(held[folder], path)
    for folder in covered:
        if os.path.isdir(BUILD + folder):
            mount("none", BUILD + folder, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k")
    for folder in sorted(writable):     # one inside another after it
        if private_bytes and folder == writable[0]:
            _tmpfs(folder, f"mode=755,size={int(private_bytes)}")
        else:
            _bind(held[folder], folder)
    for fd in held.values():
        os.close(fd)


def _expanded(folder):
    """``folder`` with its environment variables replaced; it must then be an absolute path."""
    path = os.path.expandvars(folder)
    if not os.path.isabs(path):
        raise ValueError(f"not an absolute path: {folder!r} ({path!r})")
    return os.path.normpath(path)


def _opened(paths):
    """``{path: descriptor}`` of each of ``paths`` (O_PATH), opened while the host's root is
    still whole; the caller binds through them."""
    return {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path in dict.fromkeys(paths)}


def _bind(fd, path, recursive=True):
    """Bind what ``fd`` names at ``path`` of the new root (made if missing), read-write."""
    target = BUILD + path
    if recursive:
        os.makedirs(target, exist_ok=True)
    else:
        open(target, "x").close()
    mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | (MS_REC if recursive else 0), None)


def _bind_readonly(fd, path):
    """:func:`_bind`, then make read-only every mount at or below ``path`` (a bind makes only
    its top one so)."""
    _bind(fd, path)
    for point, options in _mounts_below(BUILD + path):
        _remount_readonly(point, options)


def _remount_readonly(point, options):
    """Make the mount at ``point`` read-only, nosuid and nodev; it keeps noexec and its time
    stamps' mode, which a mount from the host may not lose in a user namespace."""
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
    mount(None, point, None, flags | (MS_NOEXEC if "noexec" in options else 0), None)


def _mounts_below(path):
    """``[(mount point, its options)]`` of the mounts at or below ``path``."""
    with open("/proc/self/mountinfo") as file:
        entries = [line.split()[4:6] for line in file]
    decoded = [(_unescaped(point), options.split(",")) for point, options in entries]
    return [(point, options) for point, options in decoded
            if point == path or point.startswith(path + "/")]


def _unescaped(field):
    """A mountinfo field as a path (it writes space, tab, newline and backslash in octal)."""
    for code in ("040", "011", "012", "134"):
        field = field.replace("\\" + code, chr(int(code, 8)))
    return field


def _tmpfs(path, options):
    """An empty tmpfs at ``path`` of the new root."""
    os.makedirs(BUILD + path, exist_ok=True)
    mount("none", BUILD + path, "tmpfs", MS_NOSUID | MS_NODEV, options)


def _make_dev(held):
    """/dev: the harmless devices of the host (none that reaches a disk or a GPU), a pts
    instance of its own and a private /dev/shm; read-only but for those."""
    _tmpfs("/dev", "mode=755,size=64k")
    for name in DEVICES:
        _bind(held[f"/dev/{name}"], f"/dev/{name}", recursive=False)
    os.mkdir(BUILD + "/dev/pts")
    mount("devpts", BUILD + "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
           "newinstance,ptmxmode=0666,mode=0620")
    _tmpfs("/dev/shm", "mode=1777,size=64m")
    for name, target in (("ptmx", "pts/ptmx"), ("fd", "/proc/self/fd"),
                         ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{BUILD}/dev/{name}")
    _remount_readonly(BUILD + "/dev", ())


def _switch_root():
    """Make the new root this mount namespace's root, detach the host's, and make the root
    read-only (``pivot_root(".", ".")``: the old root lands on top of the new one, and is
    unmounted from there)."""
    os.chdir(BUILD)
    checked(libc.syscall(PIVOT_ROOT[os.uname().machine], b".", b"."), "pivot_root")
    checked(libc.umount2(b".", MNT_DETACH), "umount the host's root")
    os.chdir("/")
    _remount_readonly("/", ())


if __name__ == "__main__":
    main()
