"""The course's JupyterHub, live: a student logs in, fetches and submits, and cannot read the
instructor's checkout; and the hub's refusal to start where it would not be safe.

``autograder/config/jupyterhub_config.py`` refuses to start a hub when another account can read
the checkout's ``solutions/`` or ``autograder/``, or change the hub's own code (its Python
environment, its configuration file); the fast test calls those checks on temp folders.

The live test runs the configuration as an administrator would (a root-owned copy, its paths
pointed at temp folders) on loopback, with configurable-http-proxy from ``.hub/`` (``make hub``)
and PAM accounts the test makes (``useradd``, as root, as CI runs) and deletes afterwards.  The
checkout is a temp copy of ``solutions/`` and ``autograder/`` owned by a grader account: the hub
first refuses it while it is readable, then starts once it is ``chmod 700``.  The student logs in
through the hub's page in chromium, fetches and submits lab 2 from JupyterLab's Assignments
panel, through the exchange; in their server's terminal (through the page's own session) reading
the checkout fails with "Permission denied".  The students' environment is the student edition of mini over this
environment's packages, made from a Python interpreter every account may run.  The formgrader
service is left out (it needs the grader's own environment); its command is checked by the fast
test.
"""
import json
import os
import pwd
import re
import runpy
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from autograder import REPO, edition
from autograder.labs import LABS
from support.browser import BIN, WAIT, Page, _stop, chromium, free_port

CONFIG = REPO / "autograder" / "config" / "jupyterhub_config.py"
CHP = REPO / ".hub" / "node_modules" / ".bin" / "configurable-http-proxy"
LAB = "lab2_graphs"
CSP = "--ServerApp.tornado_settings="


@pytest.fixture
def open_folder():
    """A temp folder every account can search (pytest's tmp_path is closed to them)."""
    folder = Path(tempfile.mkdtemp(prefix="mini-hub-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for point in _mounts_below(folder):           # never remove through a bind mount
            subprocess.run(["umount", "--lazy", point], check=True)
        shutil.rmtree(folder, ignore_errors=True)


def _mounts_below(folder):
    """The mount points inside ``folder``, deepest first."""
    points = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    return sorted((point for point in points if point.startswith(f"{folder}/")), reverse=True)


def _bind_readonly(source, target):
    """``source`` seen, read-only, at ``target``: this checkout may lie below a folder other
    accounts cannot search (a ``mktemp -d`` clone), which a bind mount does not pass through."""
    target.mkdir()
    subprocess.run(["mount", "--bind", source, target], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", target], check=True)


def checks():
    """The configuration's functions, loaded without JupyterHub (no ``get_config``)."""
    return runpy.run_path(str(CONFIG))


def fake_checkout(root):
    checkout = root / "checkout"
    for name, text in (("autograder/config/nbgrader_config.py", "c = get_config()\n"),
                       ("autograder/checks/lab2.py", "EXPECTED = 21.0\n"),
                       (f"solutions/{LAB}/{LAB}.ipynb", "### BEGIN SOLUTION\n")):
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text(text)
    for path in [checkout, *checkout.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return checkout


def test_the_hub_refuses_a_readable_checkout_and_code_others_can_change(open_folder):
    hub = checks()
    checkout = fake_checkout(open_folder)
    env = open_folder / "hub-env"
    (env / "bin").mkdir(parents=True, mode=0o755)
    (env / "bin" / "jupyterhub").write_text("#!/bin/sh\n")
    config = open_folder / "jupyterhub_config.py"
    config.write_text("c = get_config()\n")
    config.chmod(0o644)

    refused = hub["refusals"](checkout, [], None)
    assert len(refused) == 2, refused
    for name, problem in zip(("solutions", "autograder"), refused):
        assert f"{checkout / name} can be read by other accounts" in problem
        assert f"chmod 700 {checkout}" in problem
    with pytest.raises(SystemExit, match=rf"refuses to start.*\n- {checkout / 'solutions'}"):
        hub["refuse_unsafe"](checkout, [], None)

    checkout.chmod(0o700)                    # what the recipe does
    assert hub["refusals"](checkout, [], None) == []
    for folder in [checkout, *(p for p in checkout.rglob("*") if p.is_dir())]:
        folder.chmod(0o711)                  # searchable, not listable: the files count then
    assert f"{checkout / 'solutions' / LAB / LAB}.ipynb: mode 0644" in \
        hub["refusals"](checkout, [], None)[0]
    subprocess.run(["chmod", "-R", "go-rwx", checkout / "solutions", checkout / "autograder"],
                   check=True)
    assert hub["refusals"](checkout, [], None) == []

    not_a_checkout = hub["refusals"](open_folder / "hub-env", [], None)
    assert "is not a checkout of mini" in not_a_checkout[0] and "set CHECKOUT" in not_a_checkout[0]
    inside = hub["refusals"](checkout, [], checkout / ".venv")
    assert inside and "STUDENT_ENV" in inside[0]

    if os.geteuid() != 0:
        assert "not root" in hub["refusals"](checkout, [env], None)[0]
        return
    assert hub["refusals"](checkout, [env, config], None) == []      # root's, closed to others
    (env / "bin" / "jupyterhub").chmod(0o664)
    problem, = hub["refusals"](checkout, [env, config], None)
    assert f"the hub runs as root from {env}" in problem
    assert "bin/jupyterhub is writable by its group or others (mode 0664)" in problem
    assert "/opt/mini-hub" in problem and "docs/instructors.md" in problem
    (env / "bin" / "jupyterhub").chmod(0o755)
    os.chown(env / "bin", 4242, 4242)        # the grader's environment, say
    assert f"{env / 'bin'} is owned by uid 4242, not root" in \
        hub["refusals"](checkout, [env, config], None)[0]
    os.chown(env / "bin", 0, 0)
    os.chown(config, 4242, 4242)
    assert f"{config} is owned by uid 4242" in hub["refusals"](checkout, [env, config], None)[0]
    os.chown(config, 0, 0)
    link = env / "bin" / "python"             # a link out of the environment counts as its code
    os.symlink(checkout / "autograder" / "checks" / "lab2.py", link)
    os.chown(checkout / "autograder" / "checks" / "lab2.py", 4242, 4242)
    assert "owned by uid 4242" in hub["refusals"](checkout, [env], None)[0]


# traitlets 5 warns that a dict on the command line is deprecated; it still reads it
@pytest.mark.filterwarnings("ignore:--tornado_settings=:DeprecationWarning")
def test_the_formgrader_service_may_be_framed_by_the_hub_and_runs_from_the_checkout():
    from jupyter_server.serverapp import ServerApp
    from traitlets.config.loader import PyFileConfigLoader
    hub = PyFileConfigLoader(CONFIG.name, path=str(CONFIG.parent)).load_config()
    service, = hub.JupyterHub.services
    assert Path(service["command"][0]).is_relative_to(REPO)
    assert not Path(hub.Spawner.cmd[0]).is_relative_to(REPO)
    argument, = [a for a in service["command"] if a.startswith(CSP)]
    app = ServerApp()
    app.parse_command_line([argument])
    assert app.config.ServerApp.tornado_settings == {
        "headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}


# --- the live hub ------------------------------------------------------------------------------

def shared_python():
    """A Python of this version that every account may run (this one may sit in /root)."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [Path(sys._base_executable).resolve(), Path(f"/usr/bin/python{version}"),
                  Path(f"/usr/local/bin/python{version}")]
    for python in candidates:
        if python.is_file() and all(os.stat(p).st_mode & stat.S_IXOTH
                                    for p in [python, *python.parents]):
            return python
    pytest.skip(f"no Python {version} that other accounts may run (tried "
                f"{', '.join(map(str, candidates))}): the hub's users could not start a server")


@contextmanager
def accounts(homes, *names):
    """System accounts ``names`` (their homes in ``homes``), each with a random password; deleted
    on leaving, after any process still running as them (a server the hub started) is ended."""
    made = {}
    try:
        for name in names:
            subprocess.run(["useradd", "-m", "-d", str(homes / name), "-s", "/bin/bash", name],
                           check=True, capture_output=True)
            made[name] = secrets.token_hex(12)
        subprocess.run(["chpasswd"], input="".join(f"{n}:{p}\n" for n, p in made.items()),
                       text=True, check=True, capture_output=True)
        yield made
    finally:
        for name in made:
            uid = pwd.getpwnam(name).pw_uid
            for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
                try:
                    if os.stat(f"/proc/{pid}").st_uid == uid:
                        os.kill(int(pid), signal.SIGKILL)
                except (FileNotFoundError, ProcessLookupError):
                    pass
            subprocess.run(["userdel", "-r", name], capture_output=True)
            assert subprocess.run(["id", name], capture_output=True).returncode != 0, \
                f"could not delete the test account {name}"


def student_environment(folder, python):
    """The students' environment: this environment's packages, the student edition of mini (no
    answers), the student nbgrader configuration, and no formgrader; root's, readable by all."""
    subprocess.run([python, "-m", "venv", "--without-pip", folder], check=True)
    site = folder / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
        "site-packages"
    packages, shared = folder / "packages", folder / "share-jupyter"
    (site / "mini_packages.pth").write_text(f"{packages}\n")  # a path: not its .pth files (mini)
    edition.write(site, LABS)
    (folder / "bin" / "jupyterhub-singleuser").write_text(
        f"#!{folder}/bin/python\nimport sys\nfrom jupyterhub.singleuser import main\n"
        "sys.exit(main())\n")
    (folder / "bin" / "jupyterhub-singleuser").chmod(0o755)
    shutil.copytree(BIN.parent / "etc" / "jupyter", folder / "etc" / "jupyter")
    extensions = folder / "etc" / "jupyter" / "jupyter_server_config.d" / "nbgrader.json"
    settings = json.loads(extensions.read_text())
    settings["ServerApp"]["jpserver_extensions"]["nbgrader.server_extensions.formgrader"] = False
    extensions.write_text(json.dumps(settings))
    shutil.copy(REPO / "autograder" / "config" / "student_nbgrader_config.py",
                folder / "etc" / "jupyter" / "nbgrader_config.py")
    (folder / "share").mkdir(exist_ok=True)
    (folder / "share" / "jupyter").symlink_to(shared)
    subprocess.run(["chmod", "-R", "go+rX,go-w", folder], check=True)
    _bind_readonly(Path(BIN.parent, site.relative_to(folder)), packages)
    _bind_readonly(BIN.parent / "share" / "jupyter", shared)


def exchange_with_lab(folder):
    """The exchange as nbgrader's release_assignment leaves it, lab 2 released."""
    folder.mkdir()
    folder.chmod(0o1777)
    shutil.copytree(REPO / "labs" / LAB, folder / "mini" / "outbound" / LAB,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    subprocess.run(["chmod", "-R", "u=rwX,go=rX", folder / "mini"], check=True)
    (folder / "mini" / "inbound").mkdir(mode=0o700)
    (folder / "mini" / "inbound").chmod(0o2733)


def hub_config(template, values, extra):
    """``template`` with each administrator's setting in ``values`` replaced, and ``extra`` after."""
    text = template.read_text()
    for name, value in values.items():
        text, found = re.subn(rf"^{name} = .*$", f"{name} = {value}", text, flags=re.M)
        assert found == 1, f"{template} has no line '{name} = ...' to set"
    return text + "\n# --- the test's hub ---\n" + extra


@contextmanager
def running(command, cwd, env, log):
    with open(log, "w") as output:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield process
    finally:
        _stop(process)
        pid_file = Path(cwd) / "jupyterhub-proxy.pid"         # the proxy, should the hub not
        if pid_file.is_file():
            try:
                pid = int(pid_file.read_text())
                if "configurable-http-proxy" in Path(f"/proc/{pid}/cmdline").read_text():
                    os.kill(pid, signal.SIGKILL)
            except (ValueError, OSError):
                pass


def wait_for(url, process, log):
    deadline = time.monotonic() + WAIT
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"JupyterHub did not start:\n{Path(log).read_text()}")
            time.sleep(0.2)


TERMINAL = """
const [base, command, marker, done] = arguments;
const xsrf = (document.cookie.match(/(?:^|; )_xsrf=([^;]+)/) || [])[1] || '';
fetch(base + 'api/terminals', {method: 'POST', headers: {'X-XSRFToken': decodeURIComponent(xsrf)}})
  .then(response => response.ok ? response.json() : Promise.reject('POST api/terminals: ' + response.status))
  .then(terminal => {
    const socket = new WebSocket(location.origin.replace(/^http/, 'ws') + base
                                 + 'terminals/websocket/' + terminal.name);
    let output = '';
    socket.onmessage = event => {
      const [kind, text] = JSON.parse(event.data);
      if (kind === 'stdout') {
        output += text;
        if (output.includes(marker)) { socket.close(); done(output); }
      }
    };
    socket.onopen = () => socket.send(JSON.stringify(['stdin', command + '\\r']));
    socket.onerror = () => done('websocket error: ' + output);
  })
  .catch(error => done('error: ' + error));
"""


def in_terminal(driver, base, command):
    """Run ``command`` in a new terminal of the student's server, from the page (the student's
    session); its output."""
    driver.set_script_timeout(WAIT)
    output = driver.execute_async_script(TERMINAL, base, f"{command}; echo MINI-$((40+2))-END",
                                         "MINI-42-END")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b\([A-Z]|\r", "", output)


@pytest.mark.skipif(os.geteuid() != 0, reason="makes system accounts (useradd): run as root, "
                    "as CI does")
def test_a_student_on_the_hub_fetches_and_submits_but_cannot_read_the_checkout(open_folder):
    if not CHP.exists():
        pytest.fail(f"the hub test needs configurable-http-proxy in {CHP.parent}: run `make hub`",
                    pytrace=False)
    python = shared_python()
    tag = secrets.token_hex(3)
    student, grader = f"mini{tag}s", f"mini{tag}g"
    homes, hub_dir = open_folder / "home", open_folder / "hub"
    homes.mkdir(mode=0o755)
    hub_dir.mkdir(mode=0o755)
    student_environment(open_folder / "student-env", python)
    exchange_with_lab(open_folder / "exchange")
    port, hub_port, api_port = free_port(), free_port(), free_port()
    config = hub_dir / "jupyterhub_config.py"
    config.write_text(hub_config(CONFIG, {
        "INSTRUCTORS": "set()", "STUDENTS": f"{{{student!r}}}", "GRADER": repr(grader),
        "CHECKOUT": f"Path({str(open_folder / 'checkout')!r})",
        "STUDENT_ENV": f"Path({str(open_folder / 'student-env')!r})",
        "COURSE": f"Path({str(open_folder / 'course')!r})",
        "EXCHANGE": f"Path({str(open_folder / 'exchange')!r})",
        "FORMGRADER_PORT": str(free_port())}, f"""
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.command = [{str(CHP)!r}]
c.JupyterHub.db_url = "sqlite:///{hub_dir}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{hub_dir}/cookie_secret"
c.JupyterHub.services = []           # the formgrader needs the grader's own environment
c.Spawner.start_timeout = c.Spawner.http_timeout = {WAIT}
"""))
    config.chmod(0o644)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
           "LANG": "C.UTF-8", "HOME": str(hub_dir)}
    hub = [BIN / "jupyterhub", "-f", config]
    started = time.monotonic()

    with accounts(homes, student, grader) as passwords:
        checkout = open_folder / "checkout"
        checkout.mkdir()
        for name in ("solutions", "autograder"):
            shutil.copytree(REPO / name, checkout / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        subprocess.run(["chown", "-R", f"{grader}:{grader}", checkout], check=True)
        subprocess.run(["chmod", "-R", "u=rwX,go=rX", checkout], check=True)   # as cloned

        # Readable by all, as cloned: the hub refuses, naming the folder and the fix.
        refused = subprocess.run(hub, cwd=hub_dir, env=env, capture_output=True, text=True,
                                 timeout=WAIT)
        assert refused.returncode != 0, refused.stdout + refused.stderr
        assert f"{checkout / 'solutions'} can be read by other accounts" in refused.stderr, \
            refused.stderr
        assert f"chmod 700 {checkout}" in refused.stderr
        checkout.chmod(0o700)

        log = open_folder / "hub.log"
        settings = homes / student / ".jupyter" / "lab" / "user-settings" / "@jupyterlab"
        (settings / "apputils-extension").mkdir(parents=True)
        (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
            '{"fetchNews": "false"}')
        subprocess.run(["chown", "-R", f"{student}:{student}", homes / student / ".jupyter"],
                       check=True)
        with running(hub, hub_dir, env, log) as process, chromium() as driver:
            url = f"http://127.0.0.1:{port}"
            wait_for(f"{url}/hub/api", process, log)
            page = Page(driver, "hub")
            driver.get(f"{url}/hub/login")
            page.find("//input[@id='username_input']").send_keys(student)
            page.find("//input[@id='password_input']").send_keys(passwords[student])
            page.shot("login")
            page.click("//*[@id='login_submit']")
            base = f"/user/{student}/"
            page.until(lambda d: base + "lab" in d.current_url, "the student's JupyterLab")
            page.find("//div[@id='jp-main-dock-panel']", "JupyterLab's main area")
            page.shot("student-lab")

            # Fetch and submit from the Assignments panel, as the student would.
            page.menu("Nbgrader", "Assignment List")
            page.click("//div[@id='released_assignments_list']//button",
                       "lab 2's Fetch button among the released assignments")
            page.find(f"//div[@id='fetched_assignments_list']//a[contains(., '{LAB}')]",
                      "lab 2 among the downloaded assignments")
            page.shot("fetched")
            page.click("//div[@id='fetched_assignments_list']"
                       "//span[contains(@class, 'item_status')]/button", "lab 2's Submit button")
            page.find(f"//div[@id='submitted_assignments_list']//span[text()='{LAB}']",
                      "lab 2 among the submitted assignments")
            page.shot("submitted")

            py = open_folder / "student-env" / "bin" / "python"
            secret = checkout / "solutions" / LAB / f"{LAB}.ipynb"
            output = in_terminal(driver, base, "; ".join([
                "cd && id -un",
                f"head -c 300 {secret}",
                f"ls {checkout / 'autograder' / 'checks'}",
                f"{py} -c \"print(open('{secret}').read()[:300])\"",
                f"{py} -c 'import mini.autodiff, autograder' 2>&1 | tail -1"]))
            print(output)
            assert re.search(rf"^{student}$", output, re.M), output      # the student's account
            assert f"head: cannot open '{secret}' for reading: Permission denied" in output
            assert f"ls: cannot access '{checkout / 'autograder' / 'checks'}': Permission denied" \
                in output
            assert "PermissionError: [Errno 13] Permission denied" in output
            assert "No module named 'autograder'" in output
            assert "BEGIN SOLUTION" not in output
            page.shot("terminal-done")

            fetched = homes / student / LAB / f"{LAB}.ipynb"
            assert fetched.owner() == student
            inbound = list((open_folder / "exchange" / "mini" / "inbound").glob(
                f"{student}+{LAB}+*"))
            assert len(inbound) == 1 and (inbound[0] / f"{LAB}.ipynb").owner() == student
            assert (inbound[0] / f"{LAB}.ipynb").read_bytes() == fetched.read_bytes()
            page.assert_no_console_errors()
    print(f"hub test: {time.monotonic() - started:.1f} s")
