"""`make lab` serves the course on 127.0.0.1 behind a token, whatever the user's Jupyter config says.

These tests run the Makefile's own lab recipe (`make lab`, its set-up
prerequisites skipped with `make -o`, the interpreter's folder as BIN) with a
user config, in a temporary JUPYTER_CONFIG_DIR, that turns the token off and
binds to every interface. They check that this config really would open the
server to anyone (a plain `jupyter lab` started with it answers without a
token), and that the course's lab does not: the API refuses a request without
the token (403) and serves one with it (200), the server listens on 127.0.0.1
only, the token is not in the process list, and the news feed and update
check are off. They also check that an empty, unsafe or short (under 16
characters) TOKEN is refused, that a given TOKEN is used, and that a server
which answers without its token is stopped.

Each server is started on a free localhost port and stopped at the end of its
test; the whole file takes about 15 seconds.
"""

import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(sys.executable).parent
START_TIMEOUT = 40

pytestmark = pytest.mark.skipif(
    shutil.which("make") is None or not (BIN / "jupyter").exists(),
    reason="needs GNU make and JupyterLab in this interpreter's environment")

# A user config that would leave the server open: no token, every interface.
OPEN_CONFIG = """\
c.IdentityProvider.token = ''
c.ServerApp.token = ''
c.ServerApp.ip = '0.0.0.0'
c.ServerApp.open_browser = False
"""
URL = re.compile(r"The course is at\s+(http://127\.0\.0\.1:(\d+)/lab\?token=(\S+))")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(port: int, path: str = "/api/contents", token: str | None = None) -> tuple[int, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token is not None:
        request.add_header("Authorization", f"token {token}")
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


@pytest.fixture
def user_env(tmp_path):
    """The environment of a user whose Jupyter config turns the token off."""
    config = tmp_path / "jupyter-config"
    config.mkdir()
    for name in ("jupyter_config.py", "jupyter_server_config.py", "jupyter_lab_config.py"):
        (config / name).write_text(OPEN_CONFIG)
    env = {k: v for k, v in os.environ.items()
           if k not in ("JUPYTER_TOKEN", "JUPYTER_CONFIG_PATH", "TOKEN", "MAKEFLAGS", "MFLAGS")}
    env.update(JUPYTER_CONFIG_DIR=str(config), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), BROWSER="true",
               no_proxy="127.0.0.1,localhost", NO_PROXY="127.0.0.1,localhost")
    return env


class Server:
    """A process group started in the background; its output is collected as it comes."""

    def __init__(self, cmd, env, cwd=ROOT):
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, predicate, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = predicate()
            if found:
                return found
            if self.proc.poll() is not None:
                self._reader.join(2)
                return predicate()
            time.sleep(0.2)
        return None

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self._reader.join(2)


@pytest.fixture
def servers():
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


def make_lab(env, tmp_path, port, *args) -> list[str]:
    return ["make", "--no-print-directory", "-o", ".venv/.installed", "-o", ".venv/.trusted",
            "-o", "dot-optional", "-o", "torch-optional", "lab", f"BIN={BIN}", f"PORT={port}",
            f"LABCONF={tmp_path / 'course-lab'}", "LAB_ARGS=--no-browser", *args]


def listening_addresses(port: int) -> set[str]:
    psutil = pytest.importorskip("psutil")
    return {c.laddr.ip for c in psutil.net_connections("tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == port}


def test_the_open_user_config_really_opens_a_plain_server(user_env, tmp_path, servers):
    # Without this, the next test would prove nothing. (It listens on 127.0.0.1
    # only, all the same: an open server must not be reachable from elsewhere.)
    port = free_port()
    server = Server([str(BIN / "jupyter"), "lab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
                     f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
                     f"--ServerApp.root_dir={tmp_path}"], user_env)
    servers.append(server)
    assert server.wait_for(lambda: "is running at" in server.output), server.output
    assert status(port)[0] == 200, "the user config should have turned the token off"


def test_make_lab_keeps_its_token_whatever_the_user_config_says(user_env, tmp_path, servers):
    server = Server(make_lab(user_env, tmp_path, free_port()), user_env)
    servers.append(server)
    found = server.wait_for(lambda: URL.search(server.output))
    assert found, f"make lab printed no URL:\n{server.output}"
    url, port, token = found.group(1), int(found.group(2)), found.group(3)
    assert re.fullmatch(r"[0-9a-f]{48}", token), "a fresh token of 24 random bytes"
    before = server.output.split(url, 1)[0]
    # the access line of a refused request ("] 403 GET ..."), or the API's "wrote error: 'Forbidden'"
    assert not re.search(r"\] 403 |Forbidden", before) and "course-self-check" not in server.output, \
        f"the self-check's refused request shows in the terminal:\n{before}"

    assert status(port)[0] == 403, "the API must refuse a request without the token"
    assert status(port, token="0" * 48)[0] == 403
    code, body = status(port, token=token)
    assert code == 200 and isinstance(json.loads(body), dict)
    assert listening_addresses(port) == {"127.0.0.1"}

    psutil = pytest.importorskip("psutil")
    group = [psutil.Process(server.proc.pid)] + psutil.Process(server.proc.pid).children(recursive=True)

    def cmdline(p) -> str:  # a short-lived helper may have exited (or be a zombie) meanwhile
        try:
            return " ".join(p.cmdline())
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            return ""

    lines = [cmdline(p) for p in group]
    assert any("jupyter" in line for line in lines)
    assert not any(token in line for line in lines), "the token shows in the process list"

    # No news feed and no update check (the course's defaults for these settings),
    # and the news handler fetches nothing.
    code, body = status(port, "/lab/api/settings/@jupyterlab/apputils-extension:notification", token)
    assert code == 200
    defaults = json.loads(body)["schema"]["properties"]
    assert defaults["fetchNews"]["default"] == "false" and defaults["checkForUpdates"]["default"] is False
    code, body = status(port, "/lab/api/news", token)
    assert code == 200 and json.loads(body)["news"] == []

    # A second make lab gets another token (and another port).
    other = Server(make_lab(user_env, tmp_path, port), user_env)
    servers.append(other)
    second = other.wait_for(lambda: URL.search(other.output))
    assert second, other.output
    assert second.group(3) != token and int(second.group(2)) != port
    assert url not in other.output


def test_make_lab_uses_the_token_it_is_given(user_env, tmp_path, servers):
    token = "given-token_1.2~x"
    server = Server(make_lab(user_env, tmp_path, free_port(), f"TOKEN={token}"), user_env)
    servers.append(server)
    found = server.wait_for(lambda: URL.search(server.output))
    assert found, server.output
    port = int(found.group(2))
    assert found.group(3) == token
    assert status(port)[0] == 403 and status(port, token=token)[0] == 200


@pytest.mark.parametrize("token, message", [
    ("", "TOKEN is empty"), ("a b'c", "TOKEN may hold only"),
    ("a", "TOKEN is too short to keep the lab private (1 of at least 16 characters)"),
    ("abcdefghij12345", "TOKEN is too short to keep the lab private (15 of at least 16"),
])
def test_make_lab_refuses_an_empty_unsafe_or_short_token(user_env, tmp_path, token, message):
    port = free_port()
    done = subprocess.run(make_lab(user_env, tmp_path, port, f"TOKEN={token}"), cwd=ROOT, env=user_env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert message in done.stderr
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0, "no server may have started"


def test_a_server_that_answers_without_the_token_is_stopped(user_env, tmp_path, servers):
    # A command-line option outranks every config file: here it empties the token.
    port = free_port()
    cmd = make_lab(user_env, tmp_path, port)
    cmd[cmd.index("LAB_ARGS=--no-browser")] = "LAB_ARGS=--no-browser --IdentityProvider.token="
    server = Server(cmd, user_env)
    servers.append(server)
    assert server.wait_for(lambda: server.proc.poll() is not None), "the server should have been stopped"
    assert server.proc.returncode != 0
    assert "answered a request without the token" in server.output
    assert "The course is at" not in server.output
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_lab_and_lab_student_share_one_recipe():
    make = (ROOT / "Makefile").read_text()
    lab = make.split("\nlab:", 1)[1].split("\n\n", 1)[0]
    student = make.split("\nlab-student:", 1)[1].split("\n\n", 1)[0]
    assert "$(call serve_lab,notebooks)" in lab
    assert "$(call serve_lab,build/student)" in student
    assert "$(STUDENT_STAMP)" in student
    stamp_rule = make.split("\n$(STUDENT_STAMP):", 1)[1].split("\n\n", 1)[0]
    assert "$(NOTEBOOKS)" in stamp_rule.splitlines()[0] and "tools/make_student.py" in stamp_rule
    serve = make.split("define serve_lab", 1)[1].split("endef", 1)[0]
    assert "--ServerApp.ip=127.0.0.1" in serve and "--LabApp.news_url=None" in serve


def test_readme_sends_learners_to_lab_student_and_says_what_lab_is_for():
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert re.search(r"Learners: `make lab-student`", readme)
    assert re.search(r"Instructors: `make lab`\.\*\* It serves the reference notebooks", readme)
    assert "make lab TOKEN=" in readme and "127.0.0.1" in readme


def test_the_labs_install_pytorch_unless_torch_0():
    """Both labs run `make torch` (PyTorch's CPU build) first; TORCH=0 leaves it out and says so."""
    for target in ("lab", "lab-student"):
        base = ["make", "-n", "--no-print-directory", "-o", ".venv/.installed", "-o", ".venv/.trusted",
                "-o", "dot-optional", target]
        with_torch = subprocess.run(base, cwd=ROOT, capture_output=True, text=True).stdout
        without = subprocess.run(base + ["TORCH=0"], cwd=ROOT, capture_output=True, text=True).stdout
        assert "make --no-print-directory torch" in with_torch, with_torch
        assert "TORCH=0: PyTorch is left out" in without and "pip install" not in without
        assert "make --no-print-directory torch" not in without, without
    torch_rule = (ROOT / "Makefile").read_text().split("\ntorch: ", 1)[1].split("\n\n", 1)[0]
    assert "--extra-index-url $(TORCH_INDEX)" in torch_rule and "$(TORCH_SPEC)" in torch_rule
