"""The pieces of grading that do not depend on a lab: names, the JSON contract, messages."""
import csv
import zipfile

import numpy as np
import pytest

from autograder.deliveries import collect
from autograder.checks import Case, answer, lab3, verify
from autograder.probes import Student, from_plain, probe, run, to_plain


@probe
def doubled(student, grader, x):
    """A probe of the tests' own: f(x), as the notebook defines f."""
    return student.f(x)


@probe
def through_a_stand_in(student, grader, x):
    """The notebook's f given a stand-in for g, which the grader computes."""
    with student.using(g=lambda value: grader.stand_in("g", value)):
        return student.f(x)


LAB = doubled.__module__.rsplit(".", 1)[-1]          # the probes register under this module


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
    assert type(back["loss"]) is float and back["loss"] == 2.0
    assert back["grads"][0].shape == (2, 3) and back["name"] == "x"
    with pytest.raises(TypeError, match="not plain data"):
        to_plain({"f": Sneaky})
    with pytest.raises(TypeError, match="object values"):
        to_plain(np.array([Sneaky(1.0)], dtype=object))


@pytest.mark.parametrize("value", [
    np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(3, dtype=np.int64), np.float32(2.5),
    (1, 2.5, None), slice(1, None, 2), Ellipsis, {0: "a", (1, 2): [3, 4.5]}, [np.float32(1.5)],
])
def test_plain_data_comes_back_as_it_left_with_its_dtype(value):
    back = from_plain(to_plain(value))
    if isinstance(value, (np.ndarray, np.generic)):
        assert back.dtype == value.dtype and np.array_equal(back, value)
    elif isinstance(value, list):
        assert back[0].dtype == np.float32 and back[0] == value[0]
    else:
        assert back == value and type(back) is type(value)


@pytest.mark.parametrize("data", [
    {"$array": [1, 2], "$shape": [3], "$dtype": "float64"},
    {"$array": [1, 2], "$shape": [2], "$dtype": "object"},
    {"$array": ["1", "2"], "$shape": [2], "$dtype": "float64"},
    {"$array": [300], "$shape": [1], "$dtype": "int8"},
    {"$dict": [[[1], 2]]}, {"$tuple": 5}, {"$slice": [1]}, {"$unknown": 1}, {"a": 1},
])
def test_data_that_is_not_what_to_plain_writes_is_refused(data):
    with pytest.raises(ValueError):
        from_plain(data)


def _case(**overrides):
    return Case(**{"what": "f(x) with x of shape (3,)", "probe": "doubled",
                   "inputs": {"x": np.arange(1.0, 4.0)},
                   "expected": lambda: np.array([2.0, 4.0, 6.0]), "hint": "f doubles its input",
                   **overrides})


def _run(case, namespace):
    return run(LAB, case.task(), namespace, lambda question: answer(case, question))


def test_verify_accepts_the_right_answer_and_explains_a_wrong_one():
    verify(_case(), _run(_case(), {"f": lambda x: 2 * x}))
    with pytest.raises(AssertionError, match=r"f\(x\) with x of shape \(3,\): the result is wrong "
                                             r"at index \(2,\): expected 6, got 7(.|\n)*Hint: f doubles"):
        verify(_case(), _run(_case(), {"f": lambda x: np.array([2.0, 4.0, 7.0])}))
    with pytest.raises(AssertionError, match=r"has shape \(2,\), expected shape \(3,\)"):
        verify(_case(), {"result": to_plain(np.ones(2))})


def test_a_message_writes_numpy_s_numbers_as_python_does():
    expected = {(np.int64(0), np.int64(1)): np.True_}
    case = _case(expected=lambda: expected)
    with pytest.raises(AssertionError) as failed:
        verify(case, {"result": to_plain({(0, 1): np.False_})})
    assert "the result[(0, 1)] should be True, got bool False" in str(failed.value)
    assert "np." not in str(failed.value)


def test_a_lab_3_call_shows_an_index_as_python_writes_it():
    """A repeated entry of an index array shows (np.add.at's whole point), a slice as a slice."""
    calls = "\n".join(lab3.check_getitem_vjp(np.random.default_rng(0)).expected())
    assert "np.s_[[0, 2, 0, 0]]" in calls and "np.s_[:, 1]" in calls and "np.s_[1:]" in calls


def test_a_missing_or_crashing_function_is_a_verdict_not_a_crash():
    with pytest.raises(AssertionError, match="your notebook does not define 'f'"):
        verify(_case(), _run(_case(), {}))
    with pytest.raises(AssertionError, match="raised ZeroDivisionError"):
        verify(_case(), _run(_case(), {"f": lambda x: 1 / 0}))
    with pytest.raises(AssertionError, match="raised TypeError: builtin_function_or_method .* is not plain data"):
        verify(_case(), _run(_case(), {"f": lambda x: print}))


@pytest.mark.parametrize("outcome", [None, [], {"result": 1, "error": "x"}, {"answer": 1},
                                     {"result": {"$array": [1], "$shape": [2], "$dtype": "int8"}}])
def test_an_outcome_that_is_not_a_result_fails_the_check(outcome):
    with pytest.raises(AssertionError, match="not a result|could not be read"):
        verify(_case(), outcome)


def test_a_stand_in_is_computed_by_the_grader_for_its_own_case_only():
    case = _case(probe="through_a_stand_in", stand_ins={"g": lambda value: value * 10.0},
                 expected=lambda: np.array([11.0, 22.0, 33.0]))
    namespace = {"f": lambda x: x + g(x), "g": None}     # noqa: F821 (g is the notebook's)
    namespace["f"] = eval("lambda x: x + g(x)", namespace)
    verify(case, _run(case, namespace))
    assert namespace["g"] is None                       # the notebook's own name is back
    assert answer(case, {"stand_in": "h", "args": []}) == {
        "refused": "not a question of this case (KeyError)"}
    assert answer(case, {"stand_in": "g", "args": {"$tuple": []}}) == {
        "refused": "not a question of this case (ValueError)"}
    assert "refused" in answer(case, {"stand_in": "g", "args": ["text"]})
    assert "refused" in answer(_case(), {"stand_in": "g", "args": [1.0]})


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


def test_grades_csv_keeps_the_rows_of_other_labs_and_students(tmp_path):
    from autograder.pytest_path.plugin import _write_grades
    from autograder.pytest_path.runner import SubmissionResult, TestResult

    def result(student, lab, score):
        return SubmissionResult(student, lab, 1, [TestResult("test_x", score, 100, "")], [])
    path = tmp_path / "grades.csv"
    _write_grades(path, [result("ada", "lab2_graphs", 80), result("bo", "lab2_graphs", 0)], 7)
    _write_grades(path, [result("ada", "lab3_autodiff", 90), result("bo", "lab2_graphs", 50)], 8)
    with open(path) as file:
        rows = [(row["lab"], row["student"], float(row["score"]), row["seed"])
                for row in csv.DictReader(file)]
    assert rows == [("lab2_graphs", "ada", 80.0, "7"), ("lab2_graphs", "bo", 50.0, "8"),
                    ("lab3_autodiff", "ada", 90.0, "8")]
