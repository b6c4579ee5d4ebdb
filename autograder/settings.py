"""Every environment variable the grader reads: its name, its default and what it changes.

The grader's modules read a variable through its :class:`Setting` here, never ``os.environ``
directly, so that each has one name, one default and one line of documentation;
``python -m autograder settings`` prints the table with the values in force.  A setting is read
when it is used, not at import: the command line and the demo set some of them (``--course``
sets ``MINI_COURSE_DIR``) for nbgrader and the processes they start.

The files an administrator copies (``autograder/config/``) read the few they need themselves:
a student's configuration cannot import the grader.
"""
import dataclasses
import os

from autograder import REPO


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    default: str | None     # None: unset unless given; the reader decides what that means
    meaning: str

    def get(self):
        """The value in force: the variable where it is set and not empty, else the default."""
        return os.environ.get(self.name) or self.default

    def set(self, value):
        """Set it for this process and every process it starts from now on."""
        os.environ[self.name] = str(value)


COURSE_DIR = Setting(
    "MINI_COURSE_DIR", str(REPO / "course"),
    "the course folder: submissions, autograded copies, feedback, the gradebook")
RELEASE_DIR = Setting(
    "MINI_RELEASE_DIR", str(REPO / "labs"),
    "where `release` writes the student notebooks (nbgrader's release folder)")
EXCHANGE_DIR = Setting(
    "MINI_EXCHANGE_DIR", None,
    "nbgrader's exchange folder, shared with the students; unset: <course folder>/exchange")
CELL_TIMEOUT = Setting(
    "MINI_CELL_TIMEOUT", None,
    "seconds a cell may run on the nbgrader path; unset: the sandbox's limit (60)")
SANDBOX = Setting(
    "MINI_SANDBOX", None,
    "grade as a machine with less would: landlock, namespaces-only or none; unset: the most "
    "isolation this machine allows")
CACHE_DIR = Setting(
    "MINI_CACHE_DIR", None,
    "the grader's cache (student editions of mini, compiled PTX), which no student process "
    "reads; unset: $XDG_CACHE_HOME/mini, else ~/.cache/mini")
SEED = Setting(
    "AUTOGRADER_SEED", None,
    "the seed of the hidden checks a self-learner's notebook runs, to repeat a failure; unset: "
    "a new seed each run")
CUDA = Setting(
    "MINI_CUDA", None,
    "read by mini (mini.kernels.device) and passed on to student code: gpu, simulator or auto; "
    "unset or auto: the GPU where the driver reports one, else Numba's simulator")
EDITION = Setting(
    "MINI_EDITION", None,
    "set by the grader for each grading kernel: the student edition of mini it imports")
KERNEL_HOME = Setting(
    "MINI_KERNEL_HOME", None,
    "set by the grader for each grading kernel: the submission's folder it runs in")

GRADESCOPE_ROOT = Setting(
    "MINI_GRADESCOPE_ROOT", "/autograder",
    "read by the Gradescope zip's run_autograder script: the folder that stands for "
    "Gradescope's /autograder, to try the zip elsewhere")

TABLE = (COURSE_DIR, RELEASE_DIR, EXCHANGE_DIR, CELL_TIMEOUT, SANDBOX, CACHE_DIR, SEED, CUDA,
         EDITION, KERNEL_HOME, GRADESCOPE_ROOT)


def table():
    """The settings as text: one line each, with the value in force."""
    width = max(len(setting.name) for setting in TABLE)
    return "\n".join(f"{setting.name:<{width}}  {setting.get() or '(unset)'}\n"
                     f"{'':<{width}}  {setting.meaning}" for setting in TABLE)
