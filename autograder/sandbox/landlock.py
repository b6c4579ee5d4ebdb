"""Landlock: how student code is confined where Linux gives no unprivileged user namespaces.

Landlock (Linux 5.13+) lets any process give up rights for itself and every process it starts,
for good (``landlock_restrict_self``; no privilege needed).  :func:`restrict` keeps an allow-list:
folders that may be read, folders that may also be written, and nothing else of the file system;
no TCP connection or listening port (ABI 4+); no signal to, nor abstract Unix socket of, a process
outside the confined ones (ABI 6+).  A file's metadata (``stat``) stays visible: Landlock guards
opening, listing and changing, which is what reading answers or planting files needs.

The kernel interface is three system calls; this module calls them through ``ctypes`` (x86-64 and
arm64 share their numbers).
"""
import ctypes
import os

from autograder.sandbox.syscalls import PR_SET_NO_NEW_PRIVS, checked, libc

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_RULE_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_CHANGE_TREE = sum(1 << bit for bit in range(4, 13))   # remove and make files, folders, sockets...
REFER, TRUNCATE = 1 << 13, 1 << 14                     # ABI 2, ABI 3
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE   # what a rule on a single file may hold
READ = EXECUTE | READ_FILE | READ_DIR
_NET_TCP = 0b11                                        # bind, connect (ABI 4)
_SCOPES = 0b11                                         # abstract Unix sockets, signals (ABI 6)


class _Ruleset(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def version():
    """The Landlock ABI this kernel offers (0: none)."""
    return max(0, libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1)))


def restrict(readable, writable, listable=()):
    """Confine this process and its children to reading ``readable`` and reading and writing
    ``writable`` (folders or single files; missing ones are skipped), and to listing the
    folders ``listable`` (a folder there gives no file in it).  OSError if Landlock is
    unavailable or refuses: the caller must not run student code then."""
    abi = version()
    if abi < 1:
        raise OSError("Landlock is not available in this kernel")
    handled = READ | WRITE_FILE | _CHANGE_TREE | (REFER if abi >= 2 else 0) | (
        TRUNCATE if abi >= 3 else 0)
    ruleset = _Ruleset(handled, _NET_TCP if abi >= 4 else 0, _SCOPES if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    fd = checked(libc.syscall(_CREATE_RULESET, ctypes.byref(ruleset), ctypes.c_size_t(size),
                                ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        for paths, rights in ((readable, READ), (writable, handled), (listable, READ_DIR)):
            for path in paths:
                _allow(fd, path, rights)
        checked(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
        checked(libc.syscall(_RESTRICT_SELF, fd, ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(fd)


def _allow(ruleset_fd, path, rights):
    try:
        target = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        rule = _PathBeneath(rights, target)
        checked(libc.syscall(_ADD_RULE, ruleset_fd, ctypes.c_int(_RULE_PATH_BENEATH),
                               ctypes.byref(rule), ctypes.c_uint32(0)), f"landlock_add_rule {path}")
    finally:
        os.close(target)
