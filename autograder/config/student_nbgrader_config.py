"""nbgrader on a student's side of the mini course: the Assignments panel (Fetch, Submit, Fetch
Feedback), the Validate button, and ``nbgrader fetch_assignment``, ``submit`` and
``fetch_feedback``.

Read from any Jupyter config folder: the kit ships it in ``jupyter/``, which its ``make lab``
reads (``JUPYTER_CONFIG_PATH``); an administrator installs it once for everyone as
``<environment>/etc/jupyter/nbgrader_config.py``, a single student as
``~/.jupyter/nbgrader_config.py``.  It names the course and the exchange folder the instructor's
nbgrader uses, nothing else: ``MINI_EXCHANGE_DIR`` when set (a hub passes it to every server),
else ``/srv/nbgrader/exchange`` (a course on one shared server).  The student id is the student's
account (nbgrader asks the system for the login name; in a container whose account is
``jovyan``, it takes ``JUPYTERHUB_USER``).  The Assignments panel lists the course's assignments
once the exchange folder exists; ask your instructor for it.
"""
import os

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
c.CourseDirectory.course_id = "mini"
c.Exchange.root = os.environ.get("MINI_EXCHANGE_DIR") or "/srv/nbgrader/exchange"
