"""The course as a learner sees it: JupyterLab driven by headless Chromium.

nbval proves that the notebooks' code runs; this checks what a learner sees.
It starts `jupyter lab` from the project's .venv on a free localhost port with
a fresh token, then, in a real browser and through the JupyterLab UI:

1. opens every notebook and checks that its saved outputs render: Graphviz
   graphs as SVG pictures with nodes (not DOT text), matplotlib figures as
   decoded images, no error output and no "cannot render" placeholder, and a
   graph for every cell whose last line draws one;
2. runs the notebooks named by --run with "Restart Kernel and Run All Cells",
   waits for the kernel to go idle, and checks the fresh outputs the same way;
3. saves a screenshot of each notebook's first picture under build/e2e/;
4. checks that the server refuses API requests without the token;
5. stops the server and the browser, whatever happened.

It prints one line per notebook and `N passed, M failed`, and exits non-zero
if anything failed. Usage: python tools/e2e.py [--run 00 --run 03] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import pathlib
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "build" / "e2e"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
# Calls whose value, as a cell's last line, is a Graphviz drawing.
GRAPH_CALLS = {"draw_graph", "draw", "draw_backward", "backward_steps", "Graph"}
PLACEHOLDERS = ("Cannot display an untrusted", "No renderer could be found", "Javascript Error")
ERROR_MARK = "Traceback (most recent call last)"  # how an error output reads (on stderr)


class Failure(Exception):
    pass


# ------------------------------------------------------------------ server

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """`jupyter lab` on localhost with a generated token, in its own process group."""

    def __init__(self, log: pathlib.Path):
        self.port, self.token = free_port(), secrets.token_urlsafe(32)
        self.base = f"http://127.0.0.1:{self.port}"
        self.settings = tempfile.mkdtemp(prefix="minigrad-e2e-settings-")
        # Render every cell (JupyterLab 4 otherwise only renders what is on screen).
        tracker = pathlib.Path(self.settings, "@jupyterlab", "notebook-extension")
        tracker.mkdir(parents=True)
        (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
        jupyter = ROOT / ".venv" / "bin" / "jupyter"
        cmd = [str(jupyter), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={NOTEBOOKS}"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=self.settings)
        self.log = open(log, "w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True, cwd=ROOT)

    def wait_ready(self, timeout: float = 120) -> None:
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise Failure(f"jupyter lab exited with code {self.proc.returncode}; see {self.log.name}")
            try:
                self.get("/api/status", token=True)
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        raise Failure(f"jupyter lab did not answer within {timeout:.0f} s; see {self.log.name}")

    def get(self, path: str, token: bool) -> int:
        headers = {"Authorization": f"token {self.token}"} if token else {}
        req = urllib.request.Request(self.base + path, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    def shutdown_kernels(self) -> None:
        req = urllib.request.Request(self.base + "/api/sessions",
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            sessions = json.load(r)
        for s in sessions:
            urllib.request.urlopen(urllib.request.Request(
                f"{self.base}/api/sessions/{s['id']}", method="DELETE",
                headers={"Authorization": f"token {self.token}"}), timeout=10).close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self.log.close()
        shutil.rmtree(self.settings, ignore_errors=True)


# ------------------------------------------------------- what to expect

def expected(nb_path: pathlib.Path) -> dict:
    """What the saved notebook promises: pictures, and cells that must draw a graph."""
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    svg = sum("image/svg+xml" in o.get("data", {}) for c in code for o in c["outputs"])
    png = sum("image/png" in o.get("data", {}) for c in code for o in c["outputs"])
    must_draw = []
    for i, c in enumerate(code):
        if draws_a_graph("".join(c["source"])):
            must_draw.append(i)
            if not any("image/svg+xml" in o.get("data", {}) for o in c["outputs"]):
                raise Failure(f"code cell {i + 1} ends by drawing a graph, but its saved output "
                              f"has no picture (run `make execute`)")
    return {"svg": svg, "png": png, "must_draw": must_draw}


def draws_a_graph(source: str) -> bool:
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    if not body or not isinstance(body[-1], ast.Expr) or not isinstance(body[-1].value, ast.Call):
        return False
    f = body[-1].value.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    return name in GRAPH_CALLS


# ------------------------------------------------------------- browser

def find_browser() -> str:
    for name in (os.environ.get("CHROMIUM", ""), *BROWSERS):
        path = shutil.which(name) if name else None
        if path:
            return path
    raise Failure("no Chrome or Chromium found. Install one (Debian/Ubuntu: sudo apt-get install -y "
                  "chromium; macOS: install Google Chrome) or set CHROMIUM=/path/to/chrome")


def open_notebook(page, lab: Lab, name: str) -> None:
    page.goto(f"{lab.base}/lab/tree/{urllib.parse.quote(name)}?reset")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=90_000)
    page.wait_for_function(  # every output area has been filled in
        "() => document.querySelectorAll('.jp-NotebookPanel .jp-Cell').length > 0", timeout=30_000)
    page.wait_for_timeout(1500)


def picture_state(page) -> dict:
    """Read the notebook's outputs from the DOM."""
    return page.evaluate(r"""() => {
      const cells = [...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-CodeCell')];
      const out = {cells: [], svgOk: 0, svgBad: 0, png: 0, pngBad: 0, dotText: 0, bad: []};
      cells.forEach((cell, i) => {
        const c = {svg: 0};
        for (const o of cell.querySelectorAll('.jp-OutputArea-output')) {
          const mime = o.getAttribute('data-mime-type') || '';
          const text = o.innerText || '';
          if (mime === 'image/svg+xml') {
            const img = o.querySelector('img');
            const src = img ? decodeURIComponent(img.getAttribute('src') || '') : '';
            if (img && src.includes('class="node"') && img.naturalWidth > 0) { out.svgOk++; c.svg++; }
            else out.svgBad++;
          } else if (mime === 'image/png') {
            const img = o.querySelector('img');
            if (img && img.complete && img.naturalWidth > 0) out.png++; else out.pngBad++;
          } else if (mime === 'text/plain' && /^\s*(strict\s+)?digraph\b/.test(text)) {
            out.dotText++;
          }
          out.bad.push([i, mime, text.slice(0, 4000)]);
        }
        out.cells.push(c);
      });
      return out;
    }""")


def check_outputs(page, exp: dict, when: str) -> None:
    s = picture_state(page)
    problems = []
    for i, mime, text in s["bad"]:
        last = text.strip().splitlines()[-1][:160] if text.strip() else ""
        if any(p in text for p in PLACEHOLDERS):
            problems.append(f"code cell {i + 1} shows a placeholder instead of its output ({last!r})")
        elif mime == "application/vnd.jupyter.stderr" and ERROR_MARK in text:
            problems.append(f"code cell {i + 1} shows an error ({last!r})")
    if s["dotText"]:
        problems.append(f"{s['dotText']} graph(s) shown as DOT text instead of a picture "
                        f"(is the notebook trusted? is Graphviz's dot installed?)")
    if s["svgBad"]:
        problems.append(f"{s['svgBad']} SVG output(s) without a rendered graph")
    if s["pngBad"]:
        problems.append(f"{s['pngBad']} figure(s) that did not decode as images")
    if s["svgOk"] < exp["svg"]:
        problems.append(f"{s['svgOk']} of {exp['svg']} graphs rendered")
    if s["png"] < exp["png"]:
        problems.append(f"{s['png']} of {exp['png']} figures rendered")
    for i in exp["must_draw"]:
        if i >= len(s["cells"]) or not s["cells"][i]["svg"]:
            problems.append(f"code cell {i + 1} draws a graph, but no graph is shown")
    if s["svgOk"] + s["png"] == 0:
        problems.append("no picture at all")
    if problems:
        raise Failure(f"{when}: " + "; ".join(dict.fromkeys(problems)))


def screenshot_first_picture(page, stem: str) -> str:
    pic = page.query_selector(".jp-OutputArea-output[data-mime-type='image/svg+xml'] img, "
                              ".jp-OutputArea-output[data-mime-type='image/png'] img")
    if pic is None:
        raise Failure("no picture to screenshot")
    pic.scroll_into_view_if_needed()
    path = OUT / f"{stem}.png"
    pic.screenshot(path=str(path))
    return str(path.relative_to(ROOT))


def restart_and_run_all(page, n_code_cells: int, timeout_s: float) -> None:
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
    page.click(".lm-MenuBar-itemLabel:text-is('Kernel')")
    page.click(".lm-Menu-itemLabel:text-matches('^Restart Kernel and Run All Cells')")
    page.click(".jp-Dialog-button.jp-mod-accept")
    # Busy first; done when the kernel is idle and no cell is queued or running
    # (an error stops the run early: the cells after it stay unnumbered).
    page.wait_for_timeout(1500)
    page.wait_for_function(
        """() => {
          const ind = document.querySelector('.jp-Notebook-ExecutionIndicator');
          const prompts = [...document.querySelectorAll(
              '.jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt')].map(p => p.innerText);
          return ind && ind.getAttribute('data-status') === 'idle'
                 && !prompts.some(t => t.includes('*'));
        }""", timeout=timeout_s * 1000, polling=500)
    page.wait_for_timeout(1500)
    prompts = page.eval_on_selector_all(
        ".jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt", "ps => ps.map(p => p.innerText.trim())")
    unrun = [i for i, t in enumerate(prompts) if not t.strip("[]: ").isdigit()]
    if unrun:
        s = picture_state(page)
        errors = [i for i, mime, text in s["bad"]
                  if mime == "application/vnd.jupyter.stderr" and ERROR_MARK in text]
        where = f"; code cell {errors[0] + 1} raised" if errors else ""
        raise Failure(f"Restart Kernel and Run All Cells stopped early: {len(unrun)} of "
                      f"{n_code_cells} code cells did not run (first: code cell {unrun[0] + 1}){where}")


# ----------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="*", help="notebook files (default: all under notebooks/)")
    ap.add_argument("--run", action="append", default=None,
                    help="number prefix of a notebook to Restart & Run All in the browser "
                         "(repeatable; default: 00 and 03)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds allowed for one Run All")
    args = ap.parse_args(argv)
    run = set(args.run or ["00", "03"])
    paths = [pathlib.Path(p).resolve() for p in args.notebooks] or sorted(
        NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    OUT.mkdir(parents=True, exist_ok=True)

    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("e2e: Python Playwright is missing; `make e2e` installs it into .venv", file=sys.stderr)
        return 2
    try:
        browser_path = find_browser()
    except Failure as e:
        print(f"e2e: {e}", file=sys.stderr)
        return 2

    start = time.time()
    results: list[tuple[str, bool, str]] = []
    lab = Lab(OUT / "jupyter-lab.log")
    browser = None
    try:
        lab.wait_ready()
        # Security: no token, no access; with the token, access.
        for path in ("/api/contents", "/api/kernels", "/api/sessions"):
            code = lab.get(path, token=False)
            ok = code in (401, 403)
            results.append((f"security {path}", ok,
                            f"refused without token ({code})" if ok else f"answered {code} without token"))
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=browser_path, headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                      "--disable-background-networking", "--disable-component-update",
                      "--disable-sync", "--no-first-run", "--disable-quic"])
            context = browser.new_context(viewport={"width": 1920, "height": 1080})
            page = context.new_page()
            page.goto(f"{lab.base}/lab?token={lab.token}")  # log in once: sets the cookie
            page.wait_for_selector(".jp-LabShell", timeout=90_000)
            for path in paths:
                t0, note = time.time(), []
                try:
                    exp = expected(path)
                    open_notebook(page, lab, path.name)
                    check_outputs(page, exp, "saved outputs")
                    note.append(f"{exp['svg']} graphs, {exp['png']} figures render")
                    note.append("screenshot " + screenshot_first_picture(page, path.stem))
                    if path.name[:2] in run:
                        n_code = len([c for c in json.loads(path.read_text())["cells"]
                                      if c["cell_type"] == "code"])
                        restart_and_run_all(page, n_code, args.timeout)
                        check_outputs(page, exp, "after Restart Kernel and Run All Cells")
                        note.append("re-ran cleanly in the browser")
                    results.append((path.name, True, "; ".join(note) + f" ({time.time() - t0:.0f} s)"))
                except (Failure, PlaywrightError) as e:
                    msg = str(e).splitlines()[0][:400]
                    results.append((path.name, False, msg))
                finally:
                    try:
                        lab.shutdown_kernels()
                    except OSError:
                        pass
            browser.close()
            browser = None
    except Failure as e:
        results.append(("jupyter lab", False, str(e)))
    finally:
        lab.stop()

    width = max(len(name) for name, _, _ in results) if results else 10
    for name, ok, msg in results:
        print(f"{'PASS' if ok else 'FAIL'}  {name:<{width}}  {msg}")
    passed = sum(ok for _, ok, _ in results)
    failed = len(results) - passed
    print(f"e2e took {time.time() - start:.0f} s; screenshots in {OUT.relative_to(ROOT)}/")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
