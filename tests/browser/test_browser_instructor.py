"""The instructor's formgrader on lab 2, in a real browser.

JupyterLab is started the way docs/instructors.md says: from ``autograder/config/`` (nbgrader reads
the course's ``nbgrader_config.py`` there) with its root at the course folder's parent.  The course
has lab 2 released and two sample submissions (``autograder.demo.samples``) collected: bob's (one
slip in his topological sort) submitted through the exchange, alice's (the full solution) from an
LMS download with ``python -m autograder collect``.  In the formgrader the instructor sees lab 2 in
Manage Assignments and generates it again, presses Autograde on bob's submission (graded in the
server, in the command line's sandbox: ``autograder.nbgrader_path.formgrader``) and sees his score,
generates and releases his feedback (which lands in the exchange), and opens his grading view: each
test cell's score in the box the instructor would type a manual grade into.
"""
import contextlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from autograder.nbgrader_path import course
from autograder.demo import samples
from support.browser import Page, chromium, jupyter_lab, open_lab
from support.exchange import person, run, student, submitting

pytestmark = pytest.mark.filterwarnings("ignore:Passing unrecognized arguments:DeprecationWarning")
LAB = "lab2_graphs"
REPO = course.REPO


def autograder_command(env, *arguments):
    done = subprocess.run([sys.executable, "-m", "autograder", *arguments], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"autograder {' '.join(arguments)} failed:\n{done.stdout}{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def lab2_course(tmp_path_factory):
    """The course folder's parent, with lab 2 released to the exchange, bob's submission collected
    from it and alice's from an LMS download (``python -m autograder collect``), neither autograded;
    and the instructor's environment.  (Only exchange submissions can get feedback through it:
    nbgrader's release_feedback needs the secret a student's ``nbgrader submit`` leaves.)"""
    root = tmp_path_factory.mktemp("instructor-course")
    # A home as short as a real one (/home/teacher): a kernel's IPC socket lives in the server's
    # runtime folder under it, and a socket's path may not pass 107 bytes.
    home = Path(tempfile.mkdtemp(prefix="mini-teacher-"))
    teacher = person(home, "teacher", MINI_COURSE_DIR=str(root / "course"),
                     MINI_RELEASE_DIR=str(root / "release"))
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MINI_COURSE_DIR", str(root / "course"))
            patch.setenv("MINI_RELEASE_DIR", str(root / "release"))
            patch.delenv("MINI_EXCHANGE_DIR", raising=False)
            course.release("lab2")
            grader = course.api()
            assert grader.release_assignment(LAB)["success"]
            bob, bob_env = student(root, "bob", root / "course" / "exchange")
            (bob / LAB).mkdir()
            run(submitting(bob, bob_env, samples.make("bug", LAB, root / "release")))
            assert grader.collect(LAB)["success"]
            samples.write("full", LAB, root / "release", root / "download" / "alice" / f"{LAB}.ipynb")
            assert "collected 1" in autograder_command(teacher, "collect", str(root / "download"))
            yield root, teacher
    finally:
        shutil.rmtree(home, ignore_errors=True)


def row(cell_class, text):
    """The formgrader table's row whose ``cell_class`` cell reads ``text``."""
    return f"//*[@id='main-table']//tr[td[contains(@class, '{cell_class}')][normalize-space(.)='{text}']]"


def modal(page):
    """The text of the formgrader's dialog, once it says how the work went.  Its whole text, as
    the page holds it: while the dialog fades in, Selenium's visible text can hold the log alone,
    without the line above it that gives the verdict."""
    dialog = page.find("//div[contains(@class, 'modal') and @role='dialog']"
                       "//div[contains(@class, 'modal-content')]", "the formgrader's dialog")
    verdict = ("Successfully", "There was an error")
    return page.until(lambda driver: next((text for text in [dialog.get_attribute("textContent")]
                                           if any(word in text for word in verdict)), False),
                      "the formgrader's dialog to say how the work went")


def close(page):
    """Press the dialog's OK and wait for it to go; press again if it stays (a press while the
    dialog still fades in, on a loaded machine, can be lost)."""
    def gone(driver):
        if not driver.find_elements("css selector", ".modal"):
            return True
        for button in driver.find_elements(
                "xpath", "//div[contains(@class, 'modal-footer')]//button[text()='OK']"):
            with contextlib.suppress(Exception):        # gone or covered since it was found
                button.click()
        return False
    page.until(gone, "the dialog to close")


def test_instructor_generates_autogrades_grades_and_releases_feedback(lab2_course):
    root, teacher = lab2_course
    points = {c.metadata.nbgrader["grade_id"]: c.metadata.nbgrader["points"]
              for c in nbformat.read(REPO / "solutions" / LAB / f"{LAB}.ipynb", 4).cells
              if c.metadata.get("nbgrader", {}).get("grade")}
    bug = "test_" + samples.BUGS[LAB][0]

    with jupyter_lab(teacher, cwd=course.CONFIG_FOLDER, root=root,
                     log=root / "instructor-server.log") as url, chromium() as driver:
        page = Page(driver, "instructor")
        open_lab(page, url)
        page.menu("Nbgrader", "Formgrader")
        driver.switch_to.frame(page.find("//div[@id='formgrader']//iframe", "the formgrader"))

        # Manage Assignments lists lab 2; Generate makes its student version again.
        page.find(row("name", LAB), "lab 2 in Manage Assignments")
        page.shot("manage-assignments")
        page.click(row("name", LAB) + "/td[contains(@class, 'assign')]/a")
        text = modal(page)
        page.shot("generated")
        assert f"Successfully created the student version of '{LAB}'" in text, text
        close(page)

        # The submissions, both waiting; Autograde on bob's grades it in the server (in the
        # command line's sandbox, autograder.nbgrader_path.formgrader) and the formgrader shows his
        # score.
        page.click(row("name", LAB) + "/td[contains(@class, 'num-submissions')]/a")
        for name in ("alice", "bob"):
            assert "needs autograding" in page.find(row("student-id", name), f"{name}'s submission").text
        page.shot("submissions")
        page.click(row("student-id", "bob") + "/td[contains(@class, 'autograde')]/a")
        text = modal(page)
        page.shot("autograded-in-server")
        assert f"Successfully autograded '{LAB}' for student 'bob'." in text, text
        close(page)
        total = sum(points.values())
        bob_score = total - points[bug]
        bob = page.find(row("student-id", "bob") + "[td[contains(@class, 'score')][text()!='']]",
                        "bob's score in the submissions view").text
        assert f"{bob_score:g} / {total:g}" in bob and "graded" in bob, bob
        assert "needs autograding" in page.find(row("student-id", "alice")).text

        # Generate and release bob's feedback from his row: his page lands in the exchange.
        page.click(row("student-id", "bob") + "/td[contains(@class, 'generate-feedback')]/a")
        text = modal(page)
        page.shot("feedback-generated")
        assert f"Successfully generated feedback for '{LAB}' for student 'bob'." in text, text
        close(page)
        page.click(row("student-id", "bob") + "/td[contains(@class, 'release-feedback')]/a")
        text = modal(page)
        page.shot("feedback-released")
        assert f"Successfully released feedback for '{LAB}' for student 'bob'." in text, text
        close(page)
        released, = (root / "course" / "exchange" / "mini" / "feedback").glob("*.html")
        shown = re.search(rf"{LAB} \(Score: ([\d.]+) / ([\d.]+)\)", released.read_text())
        assert (float(shown[1]), float(shown[2])) == (bob_score, total)

        # Bob's grading view: his notebook, each test cell with its autograded score in a box
        # (shown as the box's placeholder) that the instructor types a manual score into.
        page.click(row("student-id", "bob") + "/td[contains(@class, 'student-name')]/a")
        page.click(f"//*[@id='main-table']//td//a[text()='{LAB}']", "bob's notebook")
        page.find("//input[contains(@class, 'score')]", "the grading view's score boxes")
        page.until(lambda d: all(box.get_attribute("placeholder") for box in
                                 d.find_elements("css selector", "input.score")),
                   "the score boxes to show the autograded scores")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})",
                              driver.find_element("id", bug))
        page.shot("grading-view")
        boxes = {box.get_attribute("id"): (float(box.get_attribute("placeholder")),
                                           box.get_attribute("value"))
                 for box in driver.find_elements("css selector", "input.score")}
        assert boxes == {cell: (0.0 if cell == bug else float(p), "") for cell, p in points.items()}
        # ... its formulas typeset by the MathJax the Jupyter server serves, not a CDN's
        source, = [script.get_attribute("src") for script in
                   driver.find_elements("css selector", "script[src*='MathJax.js']")]
        assert source.startswith(url.split("/lab")[0] + "/static/jupyter_server_mathjax/"), source
        page.until(lambda d: d.find_elements("css selector", ".MathJax_CHTML, .MathJax"),
                   "MathJax to typeset the notebook's formulas")

        driver.switch_to.default_content()
        page.assert_no_console_errors()
