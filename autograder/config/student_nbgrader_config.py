"""nbgrader's configuration on a student's side of the mini course.

The student's JupyterLab (its Assignments panel) and the ``nbgrader fetch_assignment``,
``submit`` and ``fetch_feedback`` commands read it from any Jupyter config folder: an
administrator installs it once for everyone as ``/etc/jupyter/nbgrader_config.py`` (or
``<environment>/etc/jupyter/nbgrader_config.py``), a single student as
``~/.jupyter/nbgrader_config.py``.  It names the course and the exchange folder, nothing else: the
student id is the student's account (nbgrader asks the system for the login name; in a container
whose account is ``jovyan``, it takes ``JUPYTERHUB_USER``).
"""
import os

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
c.CourseDirectory.course_id = "mini"
# The folder the instructor's autograder/config/nbgrader_config.py names: JupyterHub passes it to
# every server as MINI_EXCHANGE_DIR; /srv/nbgrader/exchange is what
# autograder/config/jupyterhub_config.py uses.
c.Exchange.root = os.environ.get("MINI_EXCHANGE_DIR") or "/srv/nbgrader/exchange"
