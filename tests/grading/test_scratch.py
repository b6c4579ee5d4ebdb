"""Scratch folders holding a student's notebook or kernels (``mini-grade-*`` on a Dask worker,
``mini-worker-*`` for the sandboxed worker, ``mini-autograde-*`` for a batch, ``mini-ptx-*`` for
lab 5's compiler) are removed even when their maker is killed: the next one made sweeps them
(``autograder.sandbox.scratch``)."""
import inspect
import signal
import subprocess
import sys

from autograder.checks import ptx
from autograder.nbgrader_path import batch
from autograder.pytest_path import cluster, runner
from autograder.sandbox import scratch

MAKER = """
import sys, time
from autograder.sandbox import scratch
folder = scratch.make(sys.argv[1], sys.argv[2])
(folder / "lab2_graphs.ipynb").write_text("a student's notebook")
print(folder, flush=True)
time.sleep(60)
"""


def test_a_killed_makers_folder_is_removed_by_the_next_one_made(tmp_path):
    for prefix in ("mini-grade-", "mini-worker-", "mini-autograde-", "mini-ptx-"):
        maker = subprocess.Popen([sys.executable, "-c", MAKER, prefix, str(tmp_path)],
                                 stdout=subprocess.PIPE, text=True)
        left = tmp_path / maker.stdout.readline().strip()
        living = scratch.make(prefix, tmp_path)          # its maker is alive: kept
        assert left.name.startswith(prefix) and (left / "lab2_graphs.ipynb").is_file()
        maker.send_signal(signal.SIGKILL)
        maker.wait()
        maker.stdout.close()
        assert left.is_dir()
        with scratch.folder(prefix, tmp_path) as made:
            assert not left.exists(), f"{left} outlived its killed maker"
            assert living.is_dir() and made.is_dir()
        assert not made.exists()


def test_the_graders_scratch_folders_are_made_so():
    assert 'scratch.folder("mini-grade-")' in inspect.getsource(cluster.grade_sent)
    assert 'folders.make("mini-worker-")' in inspect.getsource(runner._run_worker)
    assert 'folders.make("mini-autograde-")' in inspect.getsource(batch._autograde_in_pool)
    assert 'folders.make("mini-ptx-")' in inspect.getsource(ptx._Compiler)
