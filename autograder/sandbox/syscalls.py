"""The Linux system calls the sandbox makes that Python's ``os`` does not offer.

One handle on the C library for every part of the sandbox, the flags they pass, and one way to
turn a failed call into an ``OSError`` that names the call and errno's reason.  Only the standard
library: :mod:`autograder.sandbox.minimal_root` imports it before its new root exists.
"""
import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

CLONE_NEWNS, CLONE_NEWPID = 0x20000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC = 32, 4096, 16384
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 1, 38, 24


def error(what):
    """The ``OSError`` of the call that just failed, named ``what``."""
    number = ctypes.get_errno()
    return OSError(number, f"{what}: {os.strerror(number)}")


def checked(result, what):
    """``result`` of a call that returns a negative number where it fails; else its OSError."""
    if result < 0:
        raise error(what)
    return result


def unshare(flags, what):
    """unshare(2): this process into the new namespaces of ``flags`` (``what`` names them)."""
    checked(libc.unshare(flags), f"unshare({what})")


def mount(source, target, kind, flags, options):
    """mount(2); an OSError naming ``target`` where it fails."""
    encode = (lambda text: None if text is None else os.fsencode(text))
    checked(libc.mount(encode(source), encode(target), encode(kind), flags, encode(options)),
            f"mount {target}")
