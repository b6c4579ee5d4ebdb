"""The suite's own ordering: a file listed as slowest that is not there stops the run, so the list
cannot silently rot when a file is renamed."""
import pytest

import conftest


def test_a_slowest_first_list_naming_a_missing_file_stops_the_run(monkeypatch):
    monkeypatch.setattr(conftest, "SLOWEST_FIRST", conftest.SLOWEST_FIRST + ["test_gone.py"])
    with pytest.raises(RuntimeError, match="test_gone.py"):
        conftest.pytest_collection_modifyitems([])
    monkeypatch.undo()
    conftest.pytest_collection_modifyitems([])          # the real list names only real files
