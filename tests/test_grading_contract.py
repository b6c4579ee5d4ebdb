"""The pieces of grading that do not depend on a lab: names, the JSON contract, messages."""
import zipfile

import numpy as np
import pytest

from autograder import collect
from autograder.checks import Case, Student, from_plain, run_case, to_plain, verify


@pytest.mark.parametrize("name, student, lab", [
    ("ada/lab3_autodiff.ipynb", "ada", "lab3_autodiff"),
    ("j_doe/lab3_autodiff.ipynb", "j_doe", "lab3_autodiff"),
    ("ada/lab3_autodiff/lab3_autodiff.ipynb", "ada", "lab3_autodiff"),
    ("ada/lab3.ipynb", "ada", "lab3_autodiff"),
    ("jdoe_12345_67890_lab2_graphs.ipynb", "jdoe", "lab2_graphs"),
    ("jdoe_LATE_12345_67890_lab2_graphs-1.ipynb", "jdoe", "lab2_graphs"),
    ("Jane Doe_4711_assignsubmission_file_lab5_kernels.ipynb", "4711", "lab5_kernels"),
    ("lab1_learning.ipynb", None, "lab1_learning"),
    ("ada/homework.ipynb", "ada", None),
    ("ada/lab31.ipynb", "ada", None),
])
def test_submission_names_are_understood(name, student, lab):
    assert collect.parse(name) == (student, lab)


def test_collect_from_a_zip_reports_bad_names_and_keeps_going(tmp_path, monkeypatch):
    monkeypatch.setenv("MINI_COURSE_DIR", str(tmp_path / "course"))
    archive = tmp_path / "download.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("jdoe_1_2_lab2_graphs.ipynb", "{}")
        zf.writestr("notes.ipynb", "{}")
        zf.writestr("bo/lab1.ipynb", "{}")
    collected, problems = collect.collect(archive)
    assert sorted(collected) == [("bo", "lab1_learning"), ("jdoe", "lab2_graphs")]
    assert problems and problems[0][0] == "notes.ipynb" and "names none of the labs" in problems[0][1]
    assert (tmp_path / "course/submitted/jdoe/lab2_graphs/lab2_graphs.ipynb").is_file()
    assert (tmp_path / "course/submitted/jdoe/lab2_graphs/timestamp.txt").is_file()


def test_only_numbers_survive_the_trip_from_the_worker():
    class Sneaky(float):
        def __eq__(self, other):
            return True
    plain = to_plain({"loss": Sneaky(2.0), "grads": [np.ones((2, 3)), 1.5], "name": "x"})
    back = from_plain(plain)
    assert type(back["loss"]) is np.ndarray and back["loss"] == 2.0
    assert back["grads"][0].shape == (2, 3) and back["name"] == "x"


def _case(call):
    return Case(what="f(x) with x of shape (3,)", call=call,
                expected=lambda: np.array([1.0, 2.0, 3.0]), hint="f doubles its input")


def test_verify_accepts_the_right_answer_and_explains_a_wrong_one():
    verify(_case(None), run_case(_case(lambda s: s.f(np.arange(1.0, 4.0))),
                                 {"f": lambda x: x}))
    with pytest.raises(AssertionError, match=r"f\(x\) with x of shape \(3,\): the result is wrong "
                                             r"at index \(2,\): expected 3, got 4(.|\n)*Hint: f doubles"):
        verify(_case(None), run_case(_case(lambda s: s.f(None)),
                                     {"f": lambda x: np.array([1.0, 2.0, 4.0])}))
    with pytest.raises(AssertionError, match=r"has shape \(2,\), expected shape \(3,\)"):
        verify(_case(None), {"result": to_plain(np.ones(2))})


def test_a_missing_or_crashing_function_is_a_verdict_not_a_crash():
    outcome = run_case(_case(lambda s: s.f(1)), {})
    with pytest.raises(AssertionError, match="your notebook does not define 'f'"):
        verify(_case(None), outcome)
    outcome = run_case(_case(lambda s: s.f(1)), {"f": lambda x: 1 / 0})
    with pytest.raises(AssertionError, match="raised ZeroDivisionError"):
        verify(_case(None), outcome)


def test_student_using_swaps_names_back():
    namespace = {"a": 1}
    student = Student(namespace)
    with student.using(a=2, b=3):
        assert (student.a, student.b) == (2, 3)
    assert namespace == {"a": 1}


def test_student_code_starts_with_a_copy_of_the_graders_font_list(tmp_path, monkeypatch):
    from autograder import sandbox
    grader = tmp_path / "grader-matplotlib"
    grader.mkdir()
    (grader / "fontlist-v390.json").write_text('{"fonts": "the grader\'s"}')
    monkeypatch.setenv("MPLCONFIGDIR", str(grader))
    environment = sandbox.student_environment(tmp_path / "home")
    copy = tmp_path / "home" / "matplotlib" / "fontlist-v390.json"
    assert environment["MPLCONFIGDIR"] == str(copy.parent)
    assert copy.read_text() == '{"fonts": "the grader\'s"}'
    copy.write_text("changed by a student")          # their own copy: the grader's is untouched
    assert (grader / "fontlist-v390.json").read_text() == '{"fonts": "the grader\'s"}'
