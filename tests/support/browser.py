"""The course in a real browser: what the student and instructor browser tests share.

Each browser test starts real Jupyter servers on loopback (a free port, a token, one person's HOME
and USER, as ``support.exchange`` gives each person) and drives them with Selenium in headless
Debian chromium.  Every important step leaves a screenshot in ``test-artifacts/browser/``, and a
test fails on any JavaScript error the page logged.
"""
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from autograder import REPO

BIN = Path(sys.executable).parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
INSTALL = "apt-get install -y chromium chromium-driver"
ARTIFACTS = REPO / "test-artifacts" / "browser"
WAIT = 60               # seconds any one condition may take (a notebook's Run All takes ~4 s)

# Console entries at level SEVERE that are not errors of the course's pages, each with its reason.
HARMLESS = [
    # A feedback page opened in JupyterLab's HTML viewer (untrusted, the default) is shown in a
    # sandboxed frame without scripts: chromium logs each script it therefore does not run.
    re.compile(r"Blocked script execution in '(blob:|about:srcdoc).*the document's frame is "
               r"sandboxed"),
    # A feedback page, a file the student keeps and opens anywhere, asks cdnjs for MathJax, which
    # a test machine without internet access cannot reach (the page shows its formulas as typed);
    # a student online gets it.  (The grading view loads MathJax from the Jupyter server.)
    # MathJax 2.7's HTML-CSS output (the grading view's, from the Jupyter server) declares a font
    # "MathJax_Blank" at about:blank to measure text with; chromium refuses to fetch it and says so.
    re.compile(r"Access to font at 'about:blank' from origin 'http://127\.0\.0\.1:\d+' has been "
               r"blocked by CORS policy"),
    re.compile(r"^about:blank - Failed to load resource: net::ERR_FAILED$"),
    re.compile(r"^https://cdnjs\.cloudflare\.com/ajax/libs/mathjax/\S+ - Failed to load resource: "
               r"net::ERR_"),
]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def jupyter_lab(env, cwd, root, log):
    """A JupyterLab server for one person: ``env`` (their HOME and USER), started in ``cwd`` with
    ``root`` as its root folder, its output in ``log``.  Yields its URL with the token; the server
    and every kernel it started are stopped on leaving, whatever happened."""
    port, token = free_port(), secrets.token_hex(16)
    command = [BIN / "jupyter-lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    # The person's JupyterLab settings: No to its news (a toast over the page, and a request to
    # the internet), and every cell of a notebook in the page, not only those near the viewport.
    settings = Path(env["HOME"], ".jupyter", "lab", "user-settings", "@jupyterlab")
    for name, value in (("apputils-extension/notification", '{"fetchNews": "false"}'),
                        ("notebook-extension/tracker", '{"windowingMode": "none"}')):
        (settings / f"{name}.jupyterlab-settings").parent.mkdir(parents=True, exist_ok=True)
        (settings / f"{name}.jupyterlab-settings").write_text(value)
    with open(log, "w") as output:
        server = subprocess.Popen(command, cwd=cwd, env=env, stdout=output,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        status = f"{url}/api/status?token={token}"
        deadline = time.monotonic() + WAIT
        while True:
            try:
                with urllib.request.urlopen(status, timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"JupyterLab did not start:\n{Path(log).read_text()}")
                time.sleep(0.1)        # polling the server until it answers
        yield f"{url}/lab?token={token}"
    finally:
        _stop(server)


def _stop(server):
    """SIGTERM to the server's process group (the server shuts its kernels down), then SIGKILL
    to whatever is left of it."""
    for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        try:
            server.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(server.pid, signal.SIGKILL)      # kernels outliving a server that exited
    except ProcessLookupError:
        pass


def require_browser(chromium=CHROMIUM, chromedriver=CHROMEDRIVER):
    """Fail, naming the command that installs them, when chromium or its driver is missing."""
    missing = [str(path) for path in (chromium, chromedriver) if not path.exists()]
    if missing:
        pytest.fail(f"the browser tests need Debian's chromium and chromedriver ({', '.join(missing)} "
                    f"missing); install them with: {INSTALL} (as root; `make test` does it)",
                    pytrace=False)


@contextmanager
def chromium():
    """Headless chromium under Selenium, 1400x1000, with a fresh profile and the console log on."""
    require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tempfile.mkdtemp(prefix="mini-chromium-")
    for flag in ("--headless=new", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--window-size=1400,1000", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


class Page:
    """One test's view of the browser: waits on conditions, screenshots named by step."""

    def __init__(self, driver, test):
        from selenium.webdriver.support.ui import WebDriverWait
        self.driver, self.test, self.step = driver, test, 0
        self.started = time.monotonic()
        self.wait = WebDriverWait(driver, WAIT, poll_frequency=0.1)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for old in ARTIFACTS.glob(f"{test}-*.png"):
            old.unlink()

    def shot(self, name):
        self.step += 1
        print(f"{self.test} {time.monotonic() - self.started:6.1f} s  {name}")
        self.driver.save_screenshot(str(ARTIFACTS / f"{self.test}-{self.step:02d}-{name}.png"))

    def until(self, condition, message):
        """Wait until ``condition(driver)`` is truthy and return it; ``message`` says what was
        awaited when it never came (with a screenshot of how the page was then)."""
        from selenium.common.exceptions import TimeoutException
        try:
            return self.wait.until(condition)
        except TimeoutException:
            self.shot("timed-out")
            raise AssertionError(f"{self.test}: waited {WAIT} s for {message}") from None

    def find(self, xpath, message=None):
        """The first visible element at ``xpath``, once there is one."""
        from selenium.webdriver.common.by import By

        def visible(driver):
            shown = [e for e in driver.find_elements(By.XPATH, xpath) if e.is_displayed()]
            return shown[0] if shown else False
        return self.until(visible, message or xpath)

    def click(self, xpath, message=None):
        element = self.find(xpath, message)
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        element.click()
        return element

    def menu(self, top, item):
        """Choose ``item`` from the menu bar's ``top`` menu."""
        self.click(f"//div[contains(@class, 'lm-MenuBar-itemLabel')][text()='{top}']")
        self.click(f"//li[contains(@class, 'lm-Menu-item')]"
                   f"[.//div[contains(@class, 'lm-Menu-itemLabel')][text()='{item}']]")

    def console_errors(self):
        """The SEVERE entries of the browser console since the last call, less :data:`HARMLESS`."""
        return [entry["message"] for entry in self.driver.get_log("browser")
                if entry["level"] == "SEVERE"
                and not any(allowed.search(entry["message"]) for allowed in HARMLESS)]

    def assert_no_console_errors(self):
        errors = self.console_errors()
        assert not errors, f"{self.test}: JavaScript errors in the browser console:\n" + \
            "\n".join(errors)


def open_lab(page, url):
    """Load JupyterLab at ``url`` and wait until its shell is up."""
    page.driver.get(url)
    page.find("//div[@id='jp-main-dock-panel']", "JupyterLab's main area")
    page.until(lambda d: not d.find_elements("id", "jupyterlab-splash"), "the splash screen to go")
