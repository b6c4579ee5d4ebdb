"""The labs that test_autograder's nbgrader course does not hold, graded through the pytest path
alone: every sample student scores what it should."""
import pytest

from autograder import sandbox
from autograder.pytest_path import runner
from autograder.demo import samples
from autograder.checks import LABS
from autograder.demo import STUDENTS

from support import ROOT
from support.course import NBGRADER_LABS

LABS_FOLDER = ROOT / "labs"
CELL_SECONDS = {"lab5_kernels": 30}     # its simulator cells; 10 s is plenty for the others, and
#                                         the "loops" student waits one cell timeout out


@pytest.mark.parametrize("lab", [lab for lab in LABS if lab not in NBGRADER_LABS])
def test_pytest_path_grades_every_sample_student(lab, tmp_path):
    limits = sandbox.Limits(cell_seconds=CELL_SECONDS.get(lab, 10), check_seconds=15)
    for kind in STUDENTS:
        path = samples.write(kind, lab, LABS_FOLDER, tmp_path / kind / f"{lab}.ipynb")
        result = runner.grade_submission(path, lab, kind, seed=3, limits=limits)
        assert result.score == samples.expected_score(kind, lab), (lab, kind, result.notes[-3:])
