"""A permission error names its file by its full path and says what to do."""
import os

from autograder import cli
from autograder.nbgrader_path import course


def test_a_permission_error_names_the_full_path(monkeypatch, tmp_path, capsys):
    def refused(lab):
        raise PermissionError(13, "Permission denied", "SOURCES.txt")

    monkeypatch.setattr(course, "release", refused)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["release", "lab1"]) == 1
    error = capsys.readouterr().err
    assert str(tmp_path / "SOURCES.txt") in error and "writable" in error, error
    assert os.path.isabs(error.split("permission denied: ", 1)[1].split(" ", 1)[0])
