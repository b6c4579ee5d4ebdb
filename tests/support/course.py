"""The instructor's course of the end-to-end tests (tests/grading/test_autograder.py): the labs it
grades on the nbgrader path, and its formgrader served over HTTP."""
import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from autograder.nbgrader_path import course

# The labs the course grades on the nbgrader path; the other labs' sample students are graded on
# the pytest path alone (tests/grading/test_pytest_path_samples.py).
NBGRADER_LABS = ["lab2_graphs", "lab3_autodiff"]


@contextlib.contextmanager
def course_in(root, **variables):
    """Commands run inside use a course folder and a release folder in ``root``
    (``MINI_COURSE_DIR``, ``MINI_RELEASE_DIR``), and each of ``variables`` (a setting's name and
    its value; None unsets it).  Yields pytest's MonkeyPatch, which puts everything back."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MINI_COURSE_DIR", str(root / "course"))
        env.setenv("MINI_RELEASE_DIR", str(root / "release"))
        for name, value in variables.items():
            if value is None:
                env.delenv(name, raising=False)
            else:
                env.setenv(name, str(value))
        yield env


@contextlib.contextmanager
def formgrader(root_dir, env=None, arguments=()):
    """A Jupyter server on loopback, started where nbgrader finds the course's config (with
    ``arguments`` added to its command line); yields a function that sends a request to the
    formgrader's API and returns the decoded JSON answer.  Its ``page(path)`` returns the text of
    the server's page at ``path`` (``formgrader/submissions/<id>/``, the grading view)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "server", "--allow-root", "--no-browser",
         f"--port={port}", "--ip=127.0.0.1", "--IdentityProvider.token=t0ken",
         f"--ServerApp.root_dir={root_dir}", *arguments],  # the course folder must be inside it
        cwd=course.CONFIG_FILE.parent, env=env,   # where nbgrader looks for nbgrader_config.py
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def api(path, post=False):
        request = urllib.request.Request(f"http://127.0.0.1:{port}/formgrader/api/{path}",
                                         data=b"" if post else None,
                                         headers={"Authorization": "token t0ken"})
        return json.loads(urllib.request.urlopen(request, timeout=120).read())

    def page(path):
        request = urllib.request.Request(f"http://127.0.0.1:{port}/{path}",
                                         headers={"Authorization": "token t0ken"})
        return urllib.request.urlopen(request, timeout=120).read().decode()

    api.page = page
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                api("assignments")
                break
            except urllib.error.HTTPError:       # it answered, with an error: that is the failure
                raise
            except OSError:
                assert time.monotonic() < deadline, "the Jupyter server did not answer"
                time.sleep(0.5)
        yield api
    finally:
        server.terminate()
        server.wait(timeout=20)
