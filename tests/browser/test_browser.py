"""A machine without the browser is told how to install it instead of skipping the browser tests
(what they share: ``support.browser``)."""
import re

import pytest

from support.browser import INSTALL, require_browser


def test_a_missing_browser_fails_with_the_command_that_installs_it(tmp_path):
    with pytest.raises(pytest.fail.Exception, match=re.escape(INSTALL)) as failed:
        require_browser(chromium=tmp_path / "chromium")
    assert str(tmp_path / "chromium") in str(failed.value)
    require_browser()       # and this machine has both (else every browser test fails, as here)
