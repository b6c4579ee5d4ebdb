"""Scratch folders in the system's temporary folder that outlive no maker, even a killed one.

A grading process writes a student's notebook into a scratch folder (``mini-grade-*`` on a Dask
worker, ``mini-worker-*`` for the sandboxed worker) and removes it when done; a process killed
half-way (``kill -9``, the out-of-memory killer, a Dask nanny restarting its worker) cannot.  So
each folder's name holds its maker's process id and start time, as the sandbox's cgroups do
(:mod:`autograder.sandbox.cgroups`), and each new folder first removes those of the same kind
whose maker has gone: the next grading on that machine sweeps what a killed one left.
"""
import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from autograder.sandbox.cgroups import start_time


def make(prefix, where=None):
    """A new folder ``<prefix><pid>-<start time>-<random>`` in ``where`` (the system's temporary
    folder), after removing the folders of that prefix there whose maker has gone."""
    where = Path(where or tempfile.gettempdir())
    sweep(prefix, where)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-{start_time(os.getpid())}-",
                                 dir=where))


@contextlib.contextmanager
def folder(prefix, where=None):
    """:func:`make`'s folder, removed on leaving (as ``tempfile.TemporaryDirectory``)."""
    made = make(prefix, where)
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def sweep(prefix, where=None):
    """Remove the folders ``<prefix><pid>-<start time>-*`` in ``where`` whose maker, the process
    ``pid`` started at that time, has gone; return them."""
    removed = []
    for path in Path(where or tempfile.gettempdir()).glob(f"{prefix}*-*-*"):
        pid, started, _ = path.name[len(prefix):].split("-", 2)
        if pid.isdigit() and started.isdigit() and start_time(int(pid)) != started:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
