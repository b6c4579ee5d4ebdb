"""The formgrader's Autograde button, switched off: it would grade outside the sandbox.

nbgrader's formgrader autogrades inside the Jupyter server that serves it: in a kernel with the
server's rights, home folder and environment, where the course folder, the gradebook and
``solutions/`` are all in reach of the submission's code.  :class:`RefuseInServer`, the first of
the course's sanitize preprocessors (``nbgrader_config.py``), stops such a run before any cell
executes and says what to run instead; everything else the formgrader does (the assignment
list, manual grading, feedback) is unchanged, and the scores of ``python -m autograder
autograde`` appear in it.
"""
import sys

from nbgrader.preprocessors import NbGraderPreprocessor

MESSAGE = ("Autograding from the formgrader would run the submission outside the grading "
           "sandbox, with this server's rights. Run it from a terminal instead: "
           "python -m autograder autograde {lab} (the formgrader then shows the scores).")


class RefuseInServer(NbGraderPreprocessor):
    """Raise, naming the command to run, when nbgrader autogrades inside a Jupyter server."""

    def preprocess(self, nb, resources):
        if _inside_jupyter_server():
            raise RuntimeError(MESSAGE.format(lab=resources["nbgrader"]["assignment"]))
        return nb, resources


def _inside_jupyter_server():
    serverapp = sys.modules.get("jupyter_server.serverapp")
    return serverapp is not None and serverapp.ServerApp.initialized()
