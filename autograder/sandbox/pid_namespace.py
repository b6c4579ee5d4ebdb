"""Give student code a PID namespace of its own, so that nothing it starts outlives its grading.

A process group or a session is easy to leave (``setsid``); a PID namespace is not.  When the
first process of a PID namespace (its *init*) ends, Linux kills every process left in it, and no
process inside can see or signal one outside.  :func:`enter` turns the calling process into
three (with namespaces only: it needs the capabilities a user namespace gives):

* the caller stays outside as the *stand-in*: its process id is the one the grader or the
  kernel manager knows, so it passes on the signals they send, and ends as the student process
  ends (the same exit status, or killed by the same signal), or ends the namespace if whoever
  started it is killed first;
* an *init*, process 1 of the new namespace, mounts a /proc that lists only the namespace's
  processes, passes the signals on again, reaps what the student process leaves behind, and
  exits when the student process ends, taking the whole namespace with it;
* the *student process*, process 2, returns from :func:`enter` and goes on.

The init cannot simply be the student process: process 1 of a namespace ignores every signal it
has no handler for, even a ``SIGKILL`` it sends itself, so student code would behave otherwise
than it does outside.  The init dies with the stand-in (``PR_SET_PDEATHSIG``); the stand-in
watches the process that started it.
"""
import os
import select
import signal
import struct

from autograder.sandbox.syscalls import (CLONE_NEWPID, MS_NODEV, MS_NOEXEC, MS_NOSUID,
                                         PR_SET_PDEATHSIG, libc, unshare)

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
             signal.SIGUSR2)

STARTER_POLL_SECONDS = 0.5


def enter():
    """Continue in a new PID namespace, as its process 2; in the stand-in and the init, never
    return.  Raises OSError (nothing changed) where the namespace cannot be made.

    The forwarded signals stay blocked until each process knows where its signals go: one sent
    to the stand-in before it has its handlers would end it (Python's SIGINT handler raises),
    and one sent to the init before it has them would be dropped (process 1 ignores signals it
    has no handler for).  Blocked, they wait.
    """
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    starter = os.getppid()
    try:
        unshare(CLONE_NEWPID, "CLONE_NEWPID")
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise
    status_read, status_write = os.pipe()     # the init tells the stand-in how the student ended
    alive_read, alive_write = os.pipe()       # closed when the stand-in ends
    init = os.fork()
    if init:
        os.close(status_write)
        os.close(alive_read)
        _forward_to(init, mask)
        _stand_in(init, status_read, starter)
    os.close(status_read)
    os.close(alive_write)
    _die_with_parent(alive_read)
    _mount_proc()
    student = os.fork()
    if student:
        _forward_to(student, mask)
        _init(student, status_write)
    os.close(status_write)
    os.close(alive_read)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)     # its handlers are the caller's


def _stand_in(init, status_read, starter):
    """Outside the namespace: pass signals to the init, then end as the student process did.

    If ``starter``, the process that started this one (a grader's worker, a fork server), ends
    first, killed before it could stop its kernels (``kill -9``), the whole namespace is ended:
    ipykernel inside does not notice, and nothing else would ever stop it."""
    while not select.select([status_read], [], [], STARTER_POLL_SECONDS)[0]:
        if os.getppid() != starter:
            os.kill(init, signal.SIGKILL)
            break
    os.waitpid(init, 0)
    report = os.read(status_read, 4)
    status = struct.unpack("i", report)[0] if len(report) == 4 else 1 << 8
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number in FORWARDED:
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _init(student, status_write):
    """Process 1: reap every child (signals are passed to the student process), and report the
    student's wait status once it has ended; exiting then ends the namespace."""
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(1)
        if pid == student:
            os.write(status_write, struct.pack("i", status))
            os._exit(0)


def _forward_to(pid, mask):
    """Pass every signal of :data:`FORWARDED` on to ``pid``, from now on, then restore the
    signal ``mask`` (what arrived while they were blocked is passed on then)."""
    def forward(number, frame):
        try:
            os.kill(pid, number)
        except OSError:
            pass
    for number in FORWARDED:
        signal.signal(number, forward)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _die_with_parent(alive_read):
    """Be killed when the stand-in ends, even if it ended before this was asked for."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if select.select([alive_read], [], [], 0)[0]:     # end of file: the stand-in has gone
        os._exit(1)


def _mount_proc():
    """A /proc of this namespace's processes only, where the mount namespace allows it (else
    /proc keeps listing the host's: their numbers still name nothing inside)."""
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    libc.mount(b"proc", b"/proc", b"proc", flags, None)
