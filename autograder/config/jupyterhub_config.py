"""JupyterHub for a course of mini on one shared server.

Everyone logs in with their system account (JupyterHub's default PAM login and local spawner, the
hub running as root); nbgrader then knows each student by their login name.  Three environments,
and who may write each matters, since the hub runs as root:

* the hub's own, ``HUB_ENV`` (``/opt/mini-hub``): JupyterHub only, owned by root, with a root-owned
  copy of this file as ``<HUB_ENV>/etc/jupyterhub_config.py``; nothing of the grader's checkout;
* the students' environment, ``STUDENT_ENV``: the student kit (``pip install <kit>``, not
  editable) installed with JupyterHub (``mini``, JupyterLab, nbgrader, no solutions and no hidden
  checks), readable by everyone; every user's server runs from it, with nbgrader's Assignments
  panel and the student configuration (``autograder/config/student_nbgrader_config.py`` as
  ``<STUDENT_ENV>/etc/jupyter/nbgrader_config.py``);
* the grader's checkout of this repository, ``CHECKOUT``, with its ``.venv``, owned by the ``GRADER``
  account and readable by nobody else (``chmod 700``): only the formgrader service runs from it, as
  ``GRADER``.

Instructors reach the formgrader (and a terminal for ``python -m autograder``) at
``/services/mini/``; students cannot.  Files move through nbgrader's exchange folder ``EXCHANGE``,
which every server is told about as ``MINI_EXCHANGE_DIR``.

Run as root: ``/opt/mini-hub/bin/jupyterhub -f /opt/mini-hub/etc/jupyterhub_config.py``
(docs/instructors.md, "JupyterHub").  Loaded by a starting hub, this file first checks
(:func:`refusals`) that students cannot read the checkout's ``solutions/`` and ``autograder/``,
and that nobody but root can write the hub's code (its Python environment, this file); it refuses
to start otherwise, naming the path and the fix.  It imports nothing from the checkout.
"""
import grp
import os
import pwd
import stat
import sys
from pathlib import Path

# --- what an administrator edits ------------------------------------------------------------
INSTRUCTORS = {"instructor1"}
STUDENTS = {"student1", "student2"}
GRADER = "grader-mini"                      # system account: runs the formgrader, owns COURSE
CHECKOUT = None                             # the grader's checkout, e.g. Path("/home/grader-mini/mini");
#                                             None: the checkout this file is in (not for a copy)
STUDENT_ENV = Path("/opt/mini/env")         # the kit's environment, with jupyterhub installed
COURSE = Path("/srv/nbgrader/mini")         # the course folder (gradebook, submissions)
EXCHANGE = Path("/srv/nbgrader/exchange")   # mode 1777, made by `python -m autograder release`
FORMGRADER_PORT = 9999
# ----------------------------------------------------------------------------------------------

HERE = Path(__file__).resolve()
REPO = Path(CHECKOUT) if CHECKOUT is not None else HERE.parents[2]
GRADER_ENV = REPO / ".venv"
COURSE_ID = "mini"                          # nbgrader_config.py's CourseDirectory.course_id
SECRETS = ("solutions", "autograder")       # what students' code must not read
DOCS = "docs/instructors.md, section JupyterHub"


# --- the refusal: what a starting hub checks --------------------------------------------------

def refusals(checkout, hub_code, student_env=None):
    """Why a hub must not start, as messages (empty when it may): ``checkout``'s ``solutions/`` or
    ``autograder/`` readable by accounts other than their owner's (through every folder above
    them), any of ``hub_code`` (the hub's Python environment and configuration file: each path, the
    folders above it, and everything inside a folder) writable by any account but root, or
    ``student_env`` inside the checkout.  Group permissions count unless the group holds nobody but
    the owner.  ACLs are not read."""
    checkout = Path(checkout)
    problems = []
    if not (checkout / "autograder" / "config" / "nbgrader_config.py").is_file():
        problems.append(f"{checkout} is not a checkout of mini (no autograder/config/"
                        f"nbgrader_config.py): set CHECKOUT at the top of {HERE} to the grader's "
                        "checkout")
    for name in SECRETS:
        offender = _readable_by_others(checkout / name)
        if offender:
            problems.append(
                f"{checkout / name} can be read by other accounts ({offender}), so students' "
                f"servers could read it: lock the checkout with `chmod 700 {checkout}` (as its "
                f"owner or root), or `chmod -R go-rwx {checkout / name}`")
    for path in hub_code:
        offender = _writable_by_others(Path(path))
        if offender:
            problems.append(
                f"the hub runs as root from {path}, which an account other than root can change "
                f"({offender}): run the hub from a root-owned environment and a root-owned copy "
                f"of this file, as in {DOCS}: python3 -m venv /opt/mini-hub && "
                "/opt/mini-hub/bin/pip install jupyterhub && install -D -m 644 "
                "autograder/config/jupyterhub_config.py /opt/mini-hub/etc/jupyterhub_config.py")
    if student_env is not None and Path(student_env).resolve().is_relative_to(checkout.resolve()):
        problems.append(f"STUDENT_ENV {student_env} is inside the checkout {checkout}: students' "
                        "servers must run from the kit's environment, outside it")
    return problems


def refuse_unsafe(checkout, hub_code, student_env=None):
    """SystemExit (which JupyterHub does not catch) with every message of :func:`refusals`."""
    problems = refusals(checkout, hub_code, student_env)
    if problems:
        raise SystemExit("JupyterHub refuses to start (" + str(HERE) + "):\n"
                         + "\n".join(f"- {problem}" for problem in problems))


def _shared_group(st, _cache={}):
    """Whether the file's group holds an account other than the file's owner."""
    key = (st.st_uid, st.st_gid)
    if key not in _cache:
        try:
            owner = pwd.getpwuid(st.st_uid).pw_name
        except KeyError:
            owner = None
        try:
            members = set(grp.getgrgid(st.st_gid).gr_mem)
        except KeyError:
            members = set()
        members |= {user.pw_name for user in pwd.getpwall() if user.pw_gid == st.st_gid}
        _cache[key] = bool(members - {owner})
    return _cache[key]


def _others(st, other_bit, group_bit):
    return bool(st.st_mode & other_bit) or (bool(st.st_mode & group_bit) and _shared_group(st))


def _readable_by_others(secret):
    """The first path under ``secret`` that another account can read, or None.  A folder is out of
    their reach when they cannot search it or a folder above it."""
    if not secret.exists():
        return None
    secret = secret.resolve()
    for folder in reversed(secret.parents):
        if not _others(folder.stat(), stat.S_IXOTH, stat.S_IXGRP):
            return None
    for top, folders, files in os.walk(secret):
        here = os.stat(top)
        if not _others(here, stat.S_IXOTH, stat.S_IXGRP):
            folders[:] = []
            continue
        if _others(here, stat.S_IROTH, stat.S_IRGRP):
            return f"{top}: mode {stat.S_IMODE(here.st_mode):04o}"
        for name in files:
            st = os.lstat(os.path.join(top, name))
            if stat.S_ISREG(st.st_mode) and _others(st, stat.S_IROTH, stat.S_IRGRP):
                return f"{os.path.join(top, name)}: mode {stat.S_IMODE(st.st_mode):04o}"
    return None


def _changeable(path, st, inside):
    """How an account but root could change ``path`` (or replace what is in it), or None.  A
    sticky folder above (/tmp) lets others add names, not replace root's."""
    if st.st_uid != 0:
        try:
            owner = pwd.getpwuid(st.st_uid).pw_name
        except KeyError:
            owner = f"uid {st.st_uid}"
        return f"{path} is owned by {owner}, not root"
    sticky_above = not inside and stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky_above:
        return f"{path} is writable by its group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _writable_by_others(path, _checked=None):
    """The first way an account but root can change ``path``: it, a folder above it, anything in
    it (when a folder), or what a link in it points to.  None when there is none."""
    checked = set() if _checked is None else _checked
    if not os.path.lexists(path):
        return f"{path} does not exist"
    real = path.resolve()
    for above in reversed(real.parents):
        if above not in checked:
            checked.add(above)
            problem = _changeable(above, above.stat(), inside=False)
            if problem:
                return problem
    problem = _changeable(real, real.stat(), inside=True)
    if problem or not real.is_dir():
        return problem
    for top, folders, files in os.walk(real):
        for name in folders + files:
            entry = os.path.join(top, name)
            st = os.lstat(entry)
            if stat.S_ISLNK(st.st_mode):
                target = Path(entry).resolve()
                if not target.is_relative_to(real) and target not in checked:
                    checked.add(target)
                    problem = _writable_by_others(target, checked) if target.exists() else None
            else:
                problem = _changeable(entry, st, inside=True)
            if problem:
                return problem
    return None


def hub_code():
    """What the running hub executes as root: its environment (``sys.prefix``), every other folder
    it imports from, and this file."""
    paths = [Path(sys.prefix)]
    for entry in sys.path:
        entry = Path(entry or os.getcwd())
        if entry.exists() and not entry.is_relative_to(sys.prefix) and entry not in paths:
            paths.append(entry)
    return [*paths, HERE]


def _loaded_by_a_starting_hub():
    app = sys.modules.get("jupyterhub.app")
    return app is not None and app.JupyterHub.initialized()


# --- the hub ----------------------------------------------------------------------------------

if "get_config" in globals():               # JupyterHub (or a test) loading this file
    c = get_config()  # noqa: F821 (provided by JupyterHub when it loads this file)
    if _loaded_by_a_starting_hub():
        refuse_unsafe(REPO, hub_code(), STUDENT_ENV)

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

    # The formgrader: JupyterLab started in autograder/ (nbgrader reads nbgrader_config.py from
    # there) with its root at the course folder, as GRADER, in the grader's environment: the one
    # command that runs from the checkout, never as root.  jupyterhub-singleuser forbids framing
    # (frame-ancestors 'none'), which blanks the Formgrader tab ("127.0.0.1 refused to connect"):
    # its own pages may frame it.
    c.JupyterHub.services = [{
        "name": COURSE_ID,
        "url": f"http://127.0.0.1:{FORMGRADER_PORT}",
        "command": [str(GRADER_ENV / "bin" / "jupyterhub-singleuser"),
                    f"--ServerApp.root_dir={COURSE}",
                    '--ServerApp.tornado_settings={"headers": {"Content-Security-Policy": '
                    '"frame-ancestors \'self\'"}}'],
        "user": GRADER,
        "cwd": str(REPO / "autograder" / "config"),
        "environment": {"MINI_COURSE_DIR": str(COURSE), "MINI_EXCHANGE_DIR": str(EXCHANGE),
                        "JUPYTERHUB_DEFAULT_URL": "/lab"},
        "oauth_no_confirm": True,
    }]
