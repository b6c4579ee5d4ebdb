"""JupyterHub for a course of mini on one shared server:
``jupyterhub -f autograder/config/jupyterhub_config.py``.

Everyone logs in with their system account (JupyterHub's default PAM login and local spawner, the
hub running as root); nbgrader then knows each student by their login name.  Two environments:

* the students' environment, ``STUDENT_ENV``: the student kit installed with JupyterHub
  (``mini``, JupyterLab, nbgrader, no solutions and no hidden checks), readable by everyone; every
  user's server runs from it, with nbgrader's Assignments panel and the student configuration
  (``autograder/student_nbgrader_config.py`` as ``<STUDENT_ENV>/etc/jupyter/nbgrader_config.py``);
* this repository's ``.venv``, for the instructors only: the formgrader runs from it as a hub
  service under the ``GRADER`` account, which owns the course folder and this checkout.

Instructors reach the formgrader (and a terminal for ``python -m autograder``) at
``/services/mini/``; students cannot.  Files move through nbgrader's exchange folder ``EXCHANGE``,
which every server is told about as ``MINI_EXCHANGE_DIR``.
"""
from pathlib import Path

# --- what an administrator edits ------------------------------------------------------------
INSTRUCTORS = {"instructor1"}
STUDENTS = {"student1", "student2"}
GRADER = "grader-mini"                      # system account: runs the formgrader, owns COURSE
STUDENT_ENV = Path("/opt/mini/env")         # the kit's environment, with jupyterhub installed
COURSE = Path("/srv/nbgrader/mini")         # the course folder (gradebook, submissions)
EXCHANGE = Path("/srv/nbgrader/exchange")   # mode 1777, made by `python -m autograder release`
FORMGRADER_PORT = 9999
# ----------------------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
GRADER_ENV = REPO / ".venv"
COURSE_ID = "mini"                          # nbgrader_config.py's CourseDirectory.course_id

c = get_config()  # noqa: F821 (provided by JupyterHub when it loads this file)

c.Authenticator.allowed_users = INSTRUCTORS | STUDENTS
# "instructors" and "students" say who is who; nbgrader's course list looks for its own group
# names: formgrade-<course> (who grades) and nbgrader-<course> (who takes the course).
c.JupyterHub.load_groups = {
    "instructors": sorted(INSTRUCTORS),
    "students": sorted(STUDENTS),
    f"formgrade-{COURSE_ID}": sorted(INSTRUCTORS | {GRADER}),
    f"nbgrader-{COURSE_ID}": sorted(STUDENTS),
}
c.JupyterHub.load_roles = [
    {"name": "instructor", "groups": ["instructors"],
     "scopes": [f"access:services!service={COURSE_ID}", "list:services",
                f"read:services!service={COURSE_ID}"]},
    # a user's server may do what its user may (the course list asks the hub for services)
    {"name": "server", "scopes": ["inherit"]},
]

c.Spawner.cmd = [str(STUDENT_ENV / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.environment = {"MINI_EXCHANGE_DIR": str(EXCHANGE)}

# The formgrader: JupyterLab started in autograder/ (nbgrader reads nbgrader_config.py from there)
# with its root at the course folder, as GRADER, in the instructors' environment.
c.JupyterHub.services = [{
    "name": COURSE_ID,
    "url": f"http://127.0.0.1:{FORMGRADER_PORT}",
    "command": [str(GRADER_ENV / "bin" / "jupyterhub-singleuser"),
                f"--ServerApp.root_dir={COURSE}"],
    "user": GRADER,
    "cwd": str(REPO / "autograder" / "config"),
    "environment": {"MINI_COURSE_DIR": str(COURSE), "MINI_EXCHANGE_DIR": str(EXCHANGE),
                    "JUPYTERHUB_DEFAULT_URL": "/lab"},
    "oauth_no_confirm": True,
}]
