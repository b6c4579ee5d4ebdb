"""nbgrader's exchange round trip, the way a course on one shared machine runs it.

One exchange folder, one instructor's course folder and two students, each person with a HOME and
USER of their own: the instructor generates and releases lab 2, each student fetches it, fills it
in and submits (alice twice: the later submission must be the one graded), the instructor collects,
autogrades with ``python -m autograder autograde`` (the sandboxed path), makes the feedback and
releases it, and each student fetches their own.

The students' steps are nbgrader's own commands, run the way a student runs them: in their home
folder, with the student configuration installed as ``~/.jupyter/nbgrader_config.py`` and the
exchange named by ``MINI_EXCHANGE_DIR`` (what the hub passes to every server).  nbgrader takes
the student id from the account (``pwd``, not ``$USER``); this test runs as one account, so each
student names theirs with ``--student``.
"""
import re
import stat
import sys
from pathlib import Path

import nbformat
import pytest
from traitlets.config.loader import PyFileConfigLoader

from autograder.nbgrader_path import course
from autograder.demo import samples

from support.exchange import BIN, LAB, REPO, nbgrader, person, run, student, submitting
from support.wrong_work import VISIBLE, points_lost

# nbgrader 0.9's release_feedback passes "authentictor=" (sic) to its exchange: its warning, not ours
pytestmark = pytest.mark.filterwarnings("ignore:Passing unrecognized arguments:DeprecationWarning")
# The slips in bob's notebook: one in the topological sort (samples.BUGS, which its visible tests
# catch: the whole cell), and the quiz's gradient with one of the two paths from a to e forgotten
# (21 is right, 15 misses the fan-out: that answer's share of the cell).
BOB_LOST = points_lost(LAB, {"toposort": VISIBLE, "quiz_values": ["quiz_grad_a"]})
FORGOT_A_PATH = ("quiz_grad_a = 1.0 * (5.0 * 3.0 + 6.0 * 1.0)", "quiz_grad_a = 1.0 * (5.0 * 3.0)")


def panel_lists(home, env):
    """``{assignment: status}`` in the student's Assignments panel (nbgrader's server extension,
    reading the configuration from the student's Jupyter folders)."""
    from nbgrader.server_extensions.assignment_list.handlers import AssignmentList
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_CONFIG_DIR", str(home / ".jupyter"))
        patch.setenv("MINI_EXCHANGE_DIR", env["MINI_EXCHANGE_DIR"])
        panel = AssignmentList()
        panel.root_dir = str(home)
        listed = panel.list_released_assignments()
    assert listed["success"], listed["value"]
    return {entry["assignment_id"]: entry["status"] for entry in listed["value"]}


def feedback_of(home):
    """``{submission timestamp: feedback HTML}`` fetched into the student's assignment folder."""
    return {folder.name: (folder / f"{LAB}.html").read_text()
            for folder in sorted((home / LAB / "feedback").iterdir())}


def scores_in(html):
    """The total and ``{test cell: score}`` that a feedback page shows its student."""
    total = re.search(rf"{LAB} \(Score: ([\d.]+) / ([\d.]+)\)", html)
    cells = re.findall(r'<a href="#(\w+)">Test cell</a> \(Score: ([\d.]+) / [\d.]+\)', html)
    return float(total[1]), float(total[2]), {cell: float(score) for cell, score in cells}


def test_release_fetch_submit_collect_grade_and_feedback_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("MINI_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setenv("MINI_RELEASE_DIR", str(tmp_path / "release"))
    monkeypatch.delenv("MINI_EXCHANGE_DIR", raising=False)     # the default: <course>/exchange
    points = {cell.metadata.nbgrader["grade_id"]: cell.metadata.nbgrader["points"]
              for cell in nbformat.read(REPO / "solutions" / LAB / f"{LAB}.ipynb", 4).cells
              if cell.metadata.get("nbgrader", {}).get("grade")}

    # The instructor: generate (which makes the exchange), then nbgrader's own release_assignment,
    # run from autograder/config/ as docs/instructors.md says, so that it reads the course's nbgrader_config.py.
    course.release("lab2")
    exchange = tmp_path / "course" / "exchange"
    assert stat.S_IMODE(exchange.stat().st_mode) == 0o1777
    instructor = person(tmp_path / "teacher", "teacher", MINI_COURSE_DIR=str(tmp_path / "course"),
                        MINI_RELEASE_DIR=str(tmp_path / "release"))
    run(([BIN / "nbgrader", "release_assignment", LAB], instructor, course.CONFIG_FOLDER))
    assert (exchange / "mini" / "outbound" / LAB / f"{LAB}.ipynb").is_file()

    (alice, alice_env), (bob, bob_env) = (student(tmp_path, name, exchange)
                                          for name in ("alice", "bob"))
    assert panel_lists(bob, bob_env) == {LAB: "released"}
    run(nbgrader(alice, alice_env, "fetch_assignment", LAB),
        nbgrader(bob, bob_env, "fetch_assignment", LAB))
    release = tmp_path / "release"
    for home in (alice, bob):
        assert (home / LAB / f"{LAB}.ipynb").read_bytes() == (release / LAB / f"{LAB}.ipynb"
                                                              ).read_bytes()

    bob_nb = samples.make("bug", LAB, release)
    quiz = next(c for c in bob_nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")
                == "quiz_values")
    assert FORGOT_A_PATH[0] in quiz.source
    quiz.source = quiz.source.replace(*FORGOT_A_PATH)
    run(submitting(alice, alice_env, samples.make("untouched", LAB, release)),  # no answers yet
        submitting(bob, bob_env, bob_nb))
    run(submitting(alice, alice_env, samples.make("full", LAB, release)))      # the final one
    alice_final = (alice / LAB / f"{LAB}.ipynb").read_bytes()

    # The instructor collects (the latest submission of each student), grades and sends feedback.
    assert len(list((exchange / "mini" / "inbound").glob(f"alice+{LAB}+*"))) == 2
    grader = course.api()
    assert grader.collect(LAB)["success"]
    collected = tmp_path / "course" / "submitted"
    assert (collected / "alice" / LAB / f"{LAB}.ipynb").read_bytes() == alice_final
    # carol's came by e-mail: the instructor brings it in with collect, beside the exchange's
    samples.write("full", LAB, release, tmp_path / "e-mailed" / "carol" / f"{LAB}.ipynb")
    run(([sys.executable, "-m", "autograder", "collect", tmp_path / "e-mailed"], instructor, REPO))
    out, = run(([sys.executable, "-m", "autograder", "autograde", "lab2", "--workers", "1"],
                instructor, REPO))
    assert "graded 3 submission(s)" in out, out
    from autograder.nbgrader_path import batch
    assert batch.feedback(LAB) == {}
    released = grader.release_feedback(LAB)      # everyone's, the collected one's too
    assert released["success"], released["log"]
    assert len(list((exchange / "mini" / "feedback").glob("*.html"))) == 3

    from nbgrader.api import Gradebook
    with Gradebook(grader.coursedir.db_url, "mini") as gb:
        scores = {name: gb.find_submission(LAB, name).score for name in ("alice", "bob", "carol")}
    total = sum(points.values())
    assert scores == {"alice": total, "bob": total - sum(BOB_LOST.values()),
                      "carol": total}

    # Each student fetches feedback: one page, for their last submission, with their own scores.
    run(*(nbgrader(home, env, "fetch_feedback", LAB, "--student", env["USER"])
          for home, env in ((alice, alice_env), (bob, bob_env))))
    for home, name in ((alice, "alice"), (bob, "bob")):
        cache = home / ".local" / "share" / "jupyter" / "nbgrader_cache" / "mini"
        last = max((folder / "timestamp.txt").read_text() for folder in cache.iterdir())
        pages = feedback_of(home)
        assert list(pages) == [last], f"{name} should get feedback on their last submission only"
        score, out_of, cells = scores_in(pages[last])
        assert (score, out_of) == (scores[name], total)
        lost = BOB_LOST if name == "bob" else {}
        assert cells == {cell: float(p) - lost.get(cell, 0) for cell, p in points.items()}
        assert len(list(cache.iterdir())) == (2 if name == "alice" else 1)   # every submission
        # the feedback page and nothing else: the submission's secret, which names each page in
        # the exchange, stays in the instructor's feedback folder, where release_feedback reads it
        assert {path.name for path in (home / LAB / "feedback").rglob("*") if path.is_file()} \
            == {f"{LAB}.html"}


def load(path):
    return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()


def test_jupyterhub_config_wires_groups_formgrader_and_exchange(monkeypatch):
    hub = load(REPO / "autograder" / "config" / "jupyterhub_config.py")
    groups = {name: set(members) for name, members in hub.JupyterHub.load_groups.items()}
    instructors, students = groups["instructors"], groups["students"]
    assert instructors and students and not instructors & students
    assert set(hub.Authenticator.allowed_users) == instructors | students
    service, = hub.JupyterHub.services
    assert instructors <= groups[f"formgrade-{service['name']}"]
    assert not students & groups[f"formgrade-{service['name']}"]
    opens = f"access:services!service={service['name']}"
    assert {group for role in hub.JupyterHub.load_roles if opens in role["scopes"]
            for group in role.get("groups", [])} == {"instructors"}
    assert not any(opens in role["scopes"] for role in hub.JupyterHub.load_roles
                   if role.get("users"))

    # The formgrader runs in an environment with nbgrader and JupyterLab, from the folder of the
    # course's nbgrader_config.py, which (with the service's variables) names the hub's folders.
    command = Path(service["command"][0])
    assert command.name == "jupyterhub-singleuser"
    assert (command.parent / "nbgrader").is_file() and (command.parent / "jupyter-lab").is_file()
    config = Path(service["cwd"]) / "nbgrader_config.py"
    assert config.is_file()
    for name, value in service["environment"].items():
        monkeypatch.setenv(name, value)
    instructor = load(config)
    assert instructor.CourseDirectory.course_id == service["name"]
    assert instructor.CourseDirectory.root == service["environment"]["MINI_COURSE_DIR"]
    assert f"--ServerApp.root_dir={instructor.CourseDirectory.root}" in service["command"]
    exchange = hub.Spawner.environment["MINI_EXCHANGE_DIR"]
    assert instructor.Exchange.root == exchange

    # Students' servers run outside this checkout (no solutions, no hidden checks), and their
    # configuration names the same course and exchange, even without the hub's variable.
    assert Path(hub.Spawner.cmd[0]).name == "jupyterhub-singleuser"
    assert not Path(hub.Spawner.cmd[0]).is_relative_to(REPO)
    monkeypatch.delenv("MINI_EXCHANGE_DIR")
    learner = load(REPO / "autograder" / "config" / "student_nbgrader_config.py")
    assert (learner.CourseDirectory.course_id, learner.Exchange.root) == (service["name"], exchange)


def test_the_exchange_gets_mode_1777_and_a_clear_error_when_it_cannot(tmp_path, monkeypatch):
    exchange = tmp_path / "exchange"
    monkeypatch.setenv("MINI_EXCHANGE_DIR", str(exchange))
    exchange.mkdir(mode=0o755)
    assert course.ensure_exchange() == exchange
    assert stat.S_IMODE(exchange.stat().st_mode) == 0o1777

    exchange.chmod(0o777)                  # as nbgrader release_assignment leaves a folder it made
    def refused(self, mode):
        raise PermissionError(13, "Operation not permitted", str(self))
    monkeypatch.setattr(Path, "chmod", refused)
    with pytest.raises(PermissionError, match=rf"{exchange}.*sudo install -d -m 1777 {exchange}"):
        course.ensure_exchange()
