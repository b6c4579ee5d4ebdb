"""No module of mini or of the grader longer than 600 lines: one that grows past it holds more
than one concern, and is split into a package whose modules say which (``autograder/checks/lab3/``
by fill-in group, say)."""
import pytest

from support import ROOT

MOST_LINES = 600


@pytest.mark.parametrize("package", ["mini", "autograder"])
def test_no_module_is_longer_than_600_lines(package):
    long = {str(path.relative_to(ROOT)): lines for path in sorted((ROOT / package).rglob("*.py"))
            if (lines := len(path.read_text().splitlines())) > MOST_LINES}
    assert not long, f"modules over {MOST_LINES} lines: {long}"
