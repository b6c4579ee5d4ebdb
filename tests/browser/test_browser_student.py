"""A student's whole lab 2 in JupyterLab, in a real browser, through nbgrader's exchange.

The instructor releases lab 2 to an exchange folder (nbgrader's release_assignment).  In the
student's own JupyterLab (their HOME, the student configuration as ``~/.jupyter/nbgrader_config.py``,
as ``support.exchange`` sets them up) the student fetches it from the Assignments panel, runs it,
answers the quiz's second question by typing into the editor, sees its test cell pass, validates
(nbgrader's Validate button lists the test cells of the fill-ins still unanswered), and submits.
The instructor collects, autogrades with ``python -m autograder autograde`` and releases the
feedback; the student fetches it in the panel and opens it: the score it shows is the gradebook's.
"""
import re
import subprocess
import sys

import nbformat
import pytest
from nbgrader.utils import get_username
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from autograder.nbgrader_path import course
from support.browser import Page, chromium, jupyter_lab, open_lab
from support.course import course_in
from support.exchange import person, student

pytestmark = pytest.mark.filterwarnings("ignore:Passing unrecognized arguments:DeprecationWarning")
LAB = "lab2_graphs"
ANSWER = "quiz_value_e = 30.0\nquiz_grad_a = 21.0"     # c = 6, d = 5, e = 30; df/da = 5*3 + 6*1
REPO = course.REPO
QUIZ_POINTS = 10
# The test cells whose fill-ins are left unanswered: Validate must name each.
UNANSWERED = ["test_build_running_example", "test_running_example_adjoints", "test_toposort",
              "test_evaluate", "test_quiz_graph"]


CELLS = "document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-Cell')"


def cells_state(driver):
    """For every cell of the open notebook, in order: its input prompt ("[3]:", "[*]:", "[ ]:",
    empty for markdown), its text, and the text of its error outputs (empty when it has none)."""
    return driver.execute_script(f"""return [...{CELLS}].map(cell => [
        (cell.querySelector('.jp-InputPrompt') || {{}}).textContent || '',
        (cell.querySelector('.jp-OutputArea') || {{}}).textContent || '',
        [...cell.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
            .map(output => output.textContent).join('\\n')]);""")


def cell(driver, index):
    return driver.execute_script(f"return {CELLS}[arguments[0]]", index)


def settled(driver, cells, ready):
    """The state of the notebook's ``cells`` once they are all in the page, none is waiting to
    run and ``ready(state)`` holds, else False."""
    state = cells_state(driver)
    return state if len(state) == cells and not any("*" in prompt for prompt, _, _ in state) \
        and ready(state) else False


def first_line(cell):
    return next(line for line in cell.source.splitlines() if line.strip())


def grade_ids(nb):
    return [cell.metadata.get("nbgrader", {}).get("grade_id") for cell in nb.cells]


@pytest.fixture(scope="module")
def exchange_with_lab2(tmp_path_factory):
    """A course whose instructor has released lab 2 to the exchange (the course folder's)."""
    root = tmp_path_factory.mktemp("student-course")
    with course_in(root, MINI_EXCHANGE_DIR=None):     # the default: the course folder's
        course.release("lab2")
        assert course.api().release_assignment(LAB)["success"]
        yield root


def test_student_fetches_works_validates_submits_and_reads_feedback(exchange_with_lab2, monkeypatch):
    root = exchange_with_lab2
    exchange = root / "course" / "exchange"
    home, env = student(root, "learner", exchange)
    released = nbformat.read(root / "release" / LAB / f"{LAB}.ipynb", 4)
    ids = grade_ids(released)

    with jupyter_lab(env, cwd=home, root=home, log=root / "student-server.log") as url, \
            chromium() as driver:
        page = Page(driver, "student")
        open_lab(page, url)
        page.shot("lab-open")

        # The Assignments panel lists lab 2 as released; Fetch it.
        page.menu("Nbgrader", "Assignment List")
        page.find(f"//div[@id='released_assignments_list']//span[text()='{LAB}']",
                  "lab 2 among the released assignments")
        page.shot("assignments-released")
        page.click("//div[@id='released_assignments_list']//button")
        page.click(f"//div[@id='fetched_assignments_list']//a[contains(., '{LAB}')]",
                   "lab 2 among the downloaded assignments")
        page.shot("assignments-fetched")
        assert (home / LAB / f"{LAB}.ipynb").is_file()

        # Open it, wait for its kernel, Run All: the cells run until the first unanswered fill-in's
        # test, which fails with the fill-in's NotImplementedError (and nothing before it fails).
        page.click(f"//div[contains(@class, 'assignment-notebooks')]//a[text()='{LAB}']",
                   "the fetched notebook's link")
        page.find("//div[contains(@class, 'jp-NotebookPanel')]//*[contains(@class, 'validate-button')]",
                  "the notebook with nbgrader's Validate button")
        page.until(lambda d: "Idle" in d.find_element("id", "jp-main-statusbar").text,
                   "the kernel to be idle")
        page.menu("Run", "Run All Cells")
        first_test = ids.index("test_build_running_example")
        state = page.until(lambda d: settled(d, len(released.cells), lambda s: s[first_test][2]),
                           "Run All to stop at the first unanswered fill-in's test")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", cell(driver, first_test))
        page.shot("run-all")
        ran = [prompt for prompt, _, _ in state[:first_test + 1] if prompt]
        assert ran and all(re.fullmatch(r"\[\d+\]:", prompt) for prompt in ran), ran
        assert not [error for _, _, error in state[:first_test] if error], state[:first_test]
        assert "NotImplementedError" in state[first_test][2], state[first_test]

        # Answer the quiz's values by typing into the fill-in's editor; run it and its test cell.
        quiz, quiz_test = ids.index("quiz_values"), ids.index("test_quiz_values")
        editor = cell(driver, quiz).find_element("css selector", ".cm-content")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", editor)
        editor.click()
        (ActionChains(driver).key_down(Keys.CONTROL).send_keys(Keys.END).key_up(Keys.CONTROL)
         .key_down(Keys.SHIFT).send_keys(Keys.HOME).key_up(Keys.SHIFT).send_keys(ANSWER)
         .key_down(Keys.SHIFT).send_keys(Keys.ENTER).send_keys(Keys.ENTER).key_up(Keys.SHIFT)
         .perform())
        state = page.until(lambda d: settled(d, len(released.cells), lambda s: "right form" in s[quiz_test][1]),
                           "the quiz values test cell to pass")
        page.shot("quiz-answered")
        assert not state[quiz][2] and not state[quiz_test][2], (state[quiz], state[quiz_test])

        # Validate: nbgrader's dialog lists the test cells of the fill-ins still unanswered, each
        # with the fill-in's error, and not the one just answered.
        page.click("//div[contains(@class, 'jp-NotebookPanel')]//*[contains(@class, 'validate-button')]")
        message = page.find("//div[@id='validation-message']", "the validation dialog").text
        page.shot("validated")
        assert "validation-failed" in driver.find_element("id", "validation-message").get_attribute("class")
        assert message.count("The following cell failed:") == len(UNANSWERED), message
        for grade_id in UNANSWERED:
            assert first_line(released.cells[ids.index(grade_id)]) in message, (grade_id, message)
        assert first_line(released.cells[quiz_test]) not in message, message
        assert "NotImplementedError" in message
        page.click("//div[contains(@class, 'jp-Dialog')]//button[contains(@class, 'jp-mod-accept')]")

        # Submit from the panel: the submission lands in the exchange's inbound folder.
        page.menu("Nbgrader", "Assignment List")
        page.click("//div[@id='fetched_assignments_list']//span[contains(@class, 'item_status')]/button")
        page.find(f"//div[@id='submitted_assignments_list']//span[text()='{LAB}']",
                  "lab 2 among the submitted assignments")
        page.shot("submitted")
        user = get_username()       # nbgrader's student id: the account the server runs as
        inbound, = (exchange / "mini" / "inbound").glob(f"{user}+{LAB}+*")
        submitted = nbformat.read(inbound / f"{LAB}.ipynb", 4)
        assert ANSWER in submitted.cells[quiz].source

        # The instructor collects, autogrades (the sandboxed command line), makes and releases
        # the feedback.
        monkeypatch.setenv("MINI_COURSE_DIR", str(root / "course"))
        monkeypatch.setenv("MINI_RELEASE_DIR", str(root / "release"))
        monkeypatch.delenv("MINI_EXCHANGE_DIR", raising=False)
        grader = course.api()
        assert grader.collect(LAB)["success"]
        teacher = person(root / "teacher", "teacher", MINI_COURSE_DIR=str(root / "course"),
                         MINI_RELEASE_DIR=str(root / "release"))
        graded = subprocess.run([sys.executable, "-m", "autograder", "autograde", "lab2",
                                 "--workers", "1"], env=teacher, cwd=REPO, capture_output=True,
                                text=True, timeout=300)
        assert graded.returncode == 0 and "graded 1 submission(s)" in graded.stdout, graded
        from autograder.nbgrader_path import batch
        assert batch.feedback(LAB) == {}
        assert grader.release_feedback(LAB)["success"]
        from nbgrader.api import Gradebook
        with Gradebook(grader.coursedir.db_url, "mini") as gb:
            submission = gb.find_submission(LAB, user)
            score, max_score = submission.score, submission.max_score
        assert score == QUIZ_POINTS      # the answered fill-in's points, and only those

        # The student fetches the feedback in the panel and opens it: the gradebook's score.
        page.click("//button[@id='refresh_assignments_list']")
        page.find("//div[@id='submitted_assignments_list']//span[contains(., 'feedback available to fetch')]",
                  "feedback to be available")
        page.shot("feedback-available")
        page.click("//div[@id='submitted_assignments_list']//span[contains(@class, 'item_status')]/button")
        page.click("//div[@id='submitted_assignments_list']//a[contains(., 'view feedback')]",
                   "the link to the fetched feedback")
        page.click(f"//li[contains(@class, 'jp-DirListing-item')][.//span[text()='{LAB}.html']]",
                   "the feedback page in the file browser")
        ActionChains(driver).double_click(page.find(
            f"//li[contains(@class, 'jp-DirListing-item')][.//span[text()='{LAB}.html']]")).perform()
        frame = page.find("//div[contains(@class, 'jp-HTMLViewer')]//iframe", "the feedback page")
        driver.switch_to.frame(frame)
        shown = page.find("//*[contains(text(), 'Score:')]", "the score on the feedback page").text
        driver.switch_to.default_content()
        page.shot("feedback")
        assert f"{LAB} (Score: {score:.1f} / {max_score:.1f})" in shown, shown

        page.assert_no_console_errors()
