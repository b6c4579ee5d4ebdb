"""The verdict comparison: what a student's returned value must be to match the reference.

``_difference`` decides every check on both grading paths, so each rule is tested on its own: a
near miss of any kind must be a failure with a sentence naming what is wrong, and equal values of
every kind must pass.  Values go through the worker's JSON trip (``to_plain``/``from_plain``) where
that is how they reach the grader.
"""
import numpy as np
import pytest

from autograder.checks import Case, _difference, verify
from autograder.probes import from_plain, to_plain


def difference(got, expected, rtol=1e-6, atol=1e-8):
    return _difference(from_plain(to_plain(got)), expected, rtol, atol)


@pytest.mark.parametrize("got_shape, expected_shape", [
    ((1, 3), (3,)), ((3, 1), (3,)), ((3,), (1, 3)), ((1,), ()), ((), (1,)), ((2, 3), (3, 2)),
    ((1, 1, 4), (4,)),
])
def test_an_answer_of_another_shape_fails_even_when_it_broadcasts(got_shape, expected_shape):
    rng = np.random.default_rng(0)
    expected = rng.normal(size=expected_shape)
    got = np.resize(expected, got_shape)       # the same numbers, only the shape differs
    assert difference(got, expected) == (f"the result has shape {got_shape}, "
                                         f"expected shape {expected_shape}")


def test_a_shorter_or_longer_list_of_gradients_fails():
    rng = np.random.default_rng(1)
    gradients = [rng.normal(size=(2, 3)), rng.normal(size=3), rng.normal(size=(4,))]
    assert difference(gradients, gradients) is None
    assert difference(gradients[:2], gradients) == ("the result should be a sequence of 3 items, "
                                                    "got a sequence of 2 items")
    assert difference(gradients + [np.ones(1)], gradients) == (
        "the result should be a sequence of 3 items, got a sequence of 4 items")
    assert _difference(gradients[:1], gradients[:2], 1e-6, 1e-8) == (
        "the result should be a sequence of 2 items, got a sequence of 1 item")
    # a list stays a list on the trip, however many arrays it holds
    assert difference(gradients[:1], gradients[:2]) == (
        "the result should be a sequence of 2 items, got a sequence of 1 item")
    assert difference([], [np.ones(2), np.ones(3)]) == (
        "the result should be a sequence of 2 items, got a sequence of 0 items")


def test_nested_lists_are_compared_item_by_item_with_the_path_named():
    expected = [np.ones(2), [np.zeros(3), "done"]]
    assert difference([np.ones(2), [np.zeros(3), "done"]], expected) is None
    assert difference([np.ones(2), [np.zeros((1, 3)), "done"]], expected) == (
        "the result[1][0] has shape (1, 3), expected shape (3,)")
    assert difference([np.ones(2), [np.zeros(3), "not done"]], expected) == (
        "the result[1][1] should be 'done', got str 'not done'")
    assert difference([np.ones(2), [np.zeros(3), "done", "done"]], expected) == (
        "the result[1] should be a sequence of 2 items, got a sequence of 3 items")
    # a list of numbers is one array: a ragged answer is not it
    assert difference([[1.0, 2.0], [3.0]], [[1.0, 2.0], [3.0, 4.0]]) == (
        "the result should be a number or an array of shape (2, 2), got a sequence of 2 items")
    assert difference([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]]) is None


def test_a_dict_needs_exactly_the_expected_keys():
    expected = {"loss": 1.5, "grad": np.arange(3.0)}
    assert difference({"grad": np.arange(3.0), "loss": 1.5}, expected) is None
    assert difference({"loss": 1.5}, expected) == (
        "the result should be a dict with keys ['grad', 'loss'], got one without ['grad']")
    assert difference({**expected, "extra": 0.0}, expected) == (
        "the result should be a dict with keys ['grad', 'loss'], got one with unexpected ['extra']")
    assert difference({"loss": 1.5, "grads": np.arange(3.0)}, expected) == (
        "the result should be a dict with keys ['grad', 'loss'], got one without ['grad'] and "
        "with unexpected ['grads']")
    assert difference([1.5, np.arange(3.0)], expected) == (
        "the result should be a dict with keys ['grad', 'loss'], got a sequence of 2 items")
    assert difference({"loss": 1.5, "grad": np.arange(1.0, 4.0)}, expected) == (
        "the result['grad'] is wrong at index (0,): expected 0, got 1 (3 of 3 entries differ)")


@pytest.mark.parametrize("got, expected, message", [
    ("ab", "ab", None),
    ("ab", "abc", "the result should be 'abc', got str 'ab'"),
    (np.array([1.0, 2.0]), "ab", "the result should be 'ab', got an array of shape (2,)"),
    (None, "ab", "the result should be 'ab', got NoneType None"),
    (None, None, None),
    ("None", None, "the result should be None, got str 'None'"),
    (np.zeros(3), None, "the result should be None, got an array of shape (3,)"),
    (0.0, None, "the result should be None, got float 0.0"),
    (np.float32(0.0), None, "the result should be None, got an array of shape ()"),
    (True, True, None),
    (np.True_, True, None),
    (True, np.True_, None),
    (False, True, "the result should be True, got bool False"),
    (1.0, True, "the result should be True, got float 1.0"),
    ("True", True, "the result should be True, got str 'True'"),
    (True, 1.0, "the result should be a number or an array of shape (), got bool True"),
    ("1.0", 1.0, "the result should be a number or an array of shape (), got str '1.0'"),
    (None, np.ones(2), "the result should be a number or an array of shape (2,), got NoneType None"),
])
def test_strings_none_and_booleans_must_be_equal_and_of_their_kind(got, expected, message):
    assert difference(got, expected) == message


def test_nan_matches_nan_only():
    expected = np.array([1.0, np.nan, 3.0])
    assert difference(np.array([1.0, np.nan, 3.0]), expected) is None
    assert difference(np.array([1.0, 2.0, 3.0]), expected) == (
        "the result is wrong at index (1,): expected nan, got 2 (1 of 3 entries differ)")
    assert difference(np.array([1.0, np.nan, np.nan]), np.array([1.0, np.nan, 3.0])) == (
        "the result is wrong at index (2,): expected 3, got nan (1 of 3 entries differ)")
    assert difference(np.inf, np.inf) is None
    assert difference(-np.inf, np.inf) == (
        "the result is wrong: expected inf, got -inf (1 of 1 entries differ)")


def test_numbers_of_any_numeric_dtype_compare_by_value():
    expected = np.array([1.0, 2.0, 3.0])
    for dtype in (np.int64, np.int32, np.float32, np.float64):
        assert _difference(np.array([1, 2, 3], dtype=dtype), expected, 1e-6, 1e-8) is None
        assert difference(np.array([1, 2, 4], dtype=dtype), expected) == (
            "the result is wrong at index (2,): expected 3, got 4 (1 of 3 entries differ)")
    assert _difference(np.array(["1", "2", "3"]), expected, 1e-6, 1e-8) == (
        "the result should be a number or an array of shape (3,), got an array of shape (3,) "
        "of <U1 values")
    assert _difference(np.array([1, 2, 3], dtype=object), expected, 1e-6, 1e-8) == (
        "the result should be a number or an array of shape (3,), got an array of shape (3,) "
        "of object values")
    # float32 rounding is inside the default tolerance; a relative error of 1e-3 is not
    assert difference(np.float32(0.1), 0.1) is None
    assert difference(0.1 * (1 + 1e-3), 0.1) == (
        "the result is wrong: expected 0.1, got 0.1001 (1 of 1 entries differ)")


def test_verify_names_the_call_and_gives_the_hint_for_every_kind_of_mismatch():
    case = Case(what="backward_pass on a chain of 3 nodes", probe="backward", inputs={},
                expected=lambda: [np.ones(3), np.ones(2), np.ones(4)],
                hint="return one gradient per input")
    verify(case, {"result": to_plain([np.ones(3), np.ones(2), np.ones(4)])})
    for wrong, problem in (
            ([np.ones((1, 3)), np.ones(2), np.ones(4)], r"the result\[0\] has shape \(1, 3\)"),
            ([np.ones(3), np.ones(2)], "the result should be a sequence of 3 items, got a "
                                       "sequence of 2")):
        with pytest.raises(AssertionError, match=f"^backward_pass on a chain of 3 nodes: {problem}"
                                                 r"(.|\n)*\nHint: return one gradient per input$"):
            verify(case, {"result": to_plain(wrong)})
