"""The grader's environment variables have one owner: ``autograder.settings``."""
import re
import subprocess
import sys

from autograder import settings
from support import ROOT

VARIABLE = re.compile(r"\b(?:MINI|AUTOGRADER)_[A-Z_]+\b")


def test_every_variable_the_grader_names_is_in_the_table():
    named = {name for path in (ROOT / "autograder").rglob("*.py")
             for name in VARIABLE.findall(path.read_text())}
    assert {setting.name for setting in settings.TABLE} == named, named


def test_only_the_table_reads_the_environment_for_them():
    """Outside settings.py and the files an administrator copies, no module reads a MINI_ or
    AUTOGRADER_ variable from os.environ itself."""
    reads = re.compile(r"(?:environ(?:\.get)?|getenv)\(?\[?\s*[\"'](?:MINI|AUTOGRADER)_")
    readers = [path.relative_to(ROOT).as_posix() for path in (ROOT / "autograder").rglob("*.py")
               if reads.search(path.read_text()) and path.parent.name != "config"]
    assert readers == [], readers


def test_a_setting_is_read_when_used(monkeypatch):
    monkeypatch.delenv("MINI_COURSE_DIR", raising=False)
    assert settings.COURSE_DIR.get() == str(ROOT / "course")
    monkeypatch.setenv("MINI_COURSE_DIR", "/somewhere/else")
    assert settings.COURSE_DIR.get() == "/somewhere/else"
    monkeypatch.setenv("MINI_COURSE_DIR", "")                  # empty counts as unset
    assert settings.COURSE_DIR.get() == str(ROOT / "course")


def test_the_command_line_prints_each_setting_with_its_value(tmp_path):
    done = subprocess.run([sys.executable, "-m", "autograder", "--course", str(tmp_path),
                           "settings"], capture_output=True, text=True, cwd=ROOT, check=True)
    for setting in settings.TABLE:
        assert setting.name in done.stdout and setting.meaning in done.stdout
    assert re.search(rf"MINI_COURSE_DIR\s+{re.escape(str(tmp_path))}\n", done.stdout)
