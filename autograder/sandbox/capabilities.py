"""Drop every capability before student code runs, for good.

In the sandbox's user namespace student code runs as that namespace's root, with every
capability over it: enough to unmount what is laid over what it must not see (the reference
files, the other submissions' copies), to make its root's read-only folders writable, to mount
over its own view, or to trace a process of the sandbox.  Landlock forbids all of that where it
is available; :func:`drop_all` forbids it everywhere, the ``namespaces-only`` case included.
It empties the bounding set first, so that no later ``execve`` (as root, it would otherwise get
every capability back) returns any.
"""
import ctypes
import errno

from autograder.sandbox.syscalls import PR_CAPBSET_DROP, checked, error, libc

_VERSION_3 = 0x20080522


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_all():
    """Empty this process's bounding, effective, permitted and inheritable (so also ambient)
    capability sets.  Raises OSError where that fails."""
    for number in range(64):
        if libc.prctl(PR_CAPBSET_DROP, number, 0, 0, 0) != 0:
            failure = error(f"prctl(PR_CAPBSET_DROP, {number})")
            if failure.errno == errno.EINVAL:   # past the last capability this kernel knows
                break
            raise failure
    checked(libc.capset(ctypes.byref(_Header(_VERSION_3, 0)), (_Data * 2)()), "capset")
