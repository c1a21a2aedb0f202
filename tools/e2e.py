"""The course as a learner sees it: JupyterLab and the website, in headless Chromium.

nbval proves that the notebooks' code runs; this checks what a learner sees.
It starts `jupyter lab` from the project's .venv on a free localhost port with
a fresh token (and the app object exposed to the page), then, in a real
browser:

1. opens every notebook and checks that its saved outputs render: Graphviz
   graphs as SVG pictures with nodes (not DOT text), matplotlib figures as
   decoded images, no error output and no "cannot render" placeholder, and a
   graph for every cell whose last line draws one;
2. runs the notebooks named by --run with JupyterLab's own "Restart Kernel and
   Run All Cells" command (notebook:restart-run-all, called through
   window.jupyterapp), waits for it to finish, and checks the fresh outputs
   the same way;
3. opens an untrusted copy of notebook 00 (copied under build/e2e/ with its
   metadata changed, so no trust signature matches it) and checks that every
   saved graph still shows as a picture, the PNG beside its SVG, since
   JupyterLab shows no saved SVG in an untrusted notebook;
4. checks that the server refuses API requests without the token;
5. serves build/site/ (`make site`) from a local HTTP server and opens every
   page with no network: any request not to that server is blocked and
   fails the page. Each page must show its graphs and figures (loaded, with
   alt text), typeset its maths (MathJax), link only to pages and anchors
   that exist, and link each notebook to the one before and after it;
6. the Chinese edition (tools/i18n.py build, `make zh`; `make site` builds its
   website in build/site/zh/): opens one Chinese notebook in JupyterLab and
   checks its outputs as in 1, and that its Chinese text is drawn with a font
   that has the glyphs (see CJK_STATE); on the website, the Chinese pages get
   the checks of 5 too, and every page of either edition must link to the same
   page of the other;
7. saves screenshots under build/e2e/ (each notebook's first picture,
   untrusted_graph.png, site_page.png, zh_lab.png, zh_site_page.png), and stops
   the server and the browser, whatever happened.

It prints one line per check and `N passed, M failed`, and exits non-zero if
anything failed. Usage: python tools/e2e.py [--run 00 --run 03] [--only lab|site]
[--untrusted NOTEBOOK] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import ast
import functools
import html.parser
import http.server
import json
import os
import pathlib
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "build" / "e2e"
SITE = ROOT / "build" / "site"
UNTRUSTED_DEFAULT = NOTEBOOKS / "00_the_training_loop.ipynb"
SCREENSHOT_PAGE = "notebooks/03_backpropagation.html"  # graphs, a figure and maths
ZH_NOTEBOOKS = ROOT / "build" / "zh" / "notebooks"      # the Chinese notebooks (`make zh`)
ZH_LAB_NOTEBOOK = "00_the_training_loop.ipynb"         # the one opened in JupyterLab
ZH_SCREENSHOT_PAGE = "zh/" + SCREENSHOT_PAGE
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
# Calls whose value, as a cell's last line, is a Graphviz drawing.
GRAPH_CALLS = {"draw_graph", "draw_static", "draw_fields", "draw_backward", "backward_steps", "Graph"}
PLACEHOLDERS = ("Cannot display an untrusted", "No renderer could be found", "Javascript Error")
ERROR_MARK = "Traceback (most recent call last)"  # how an error output reads (on stderr)
# JupyterLab 4's command behind Kernel > "Restart Kernel and Run All Cells..."
# (the Run menu's runmenu:restart-and-run-all delegates to it).
RESTART_RUN_ALL = "notebook:restart-run-all"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync",
                 # No name resolves but the loopback address: nothing leaves the machine.
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]


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
        # Restart & Run All is called as a command: no confirmation dialog to click.
        dialogs = pathlib.Path(self.settings, "@jupyterlab", "apputils-extension")
        dialogs.mkdir(parents=True)
        (dialogs / "sessionDialogs.jupyterlab-settings").write_text(
            json.dumps({"skipKernelRestartDialog": True}))
        # No "news?" prompt over the outputs, and no request to a website for news.
        (dialogs / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        jupyter = ROOT / ".venv" / "bin" / "jupyter"
        cmd = [str(jupyter), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={ROOT}",
               # window.jupyterapp, to call JupyterLab's commands from the page
               "--LabApp.expose_app_in_browser=True"]
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

def _outputs(nb: dict) -> list[tuple[int, dict]]:
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    return [(i, o.get("data", {})) for i, c in enumerate(code) for o in c["outputs"]]


def expected(nb_path: pathlib.Path) -> dict:
    """What the saved notebook promises: pictures, and cells that must draw a graph.

    A graph's output holds an SVG (shown in trusted notebooks) and, when saved by
    the current minigrad, a PNG beside it (shown in untrusted ones); a figure's
    output is a PNG alone.
    """
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    outs = _outputs(nb)
    svg = sum("image/svg+xml" in d for _, d in outs)
    png = sum("image/png" in d and "image/svg+xml" not in d for _, d in outs)
    graph_png = sum("image/png" in d and "image/svg+xml" in d for _, d in outs)
    must_draw = []
    for i, c in enumerate(code):
        if draws_a_graph("".join(c["source"])):
            must_draw.append(i)
            if not any("image/svg+xml" in o.get("data", {}) for o in c["outputs"]):
                raise Failure(f"code cell {i + 1} ends by drawing a graph, but its saved output "
                              f"has no picture (run `make execute`)")
    graph_cells = sorted({i for i, d in outs if "image/svg+xml" in d})
    return {"svg": svg, "png": png, "graph_png": graph_png, "must_draw": must_draw,
            "graph_cells": graph_cells,
            "maths": has_maths(nb), "links": notebook_links(nb)}


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


MATHS = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$(?=\S)[^$\n]+?(?<=\S)\$(?!\d)", re.S)
NOTEBOOK_LINK = re.compile(r"\]\((?:\./)?([0-9][0-9]_[^)#\s]+)\.ipynb(?:#[^)\s]*)?\)")


def has_maths(nb: dict) -> bool:
    """Whether a markdown cell holds TeX between dollars ($x$ or $$x$$)."""
    return any(MATHS.search("".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "markdown")


def notebook_links(nb: dict) -> set[str]:
    """The notebooks (stems) that a notebook's markdown links to."""
    return {m for c in nb["cells"] if c["cell_type"] == "markdown"
            for m in NOTEBOOK_LINK.findall("".join(c["source"]))}


def untrusted_copy(src: pathlib.Path, dest_dir: pathlib.Path) -> pathlib.Path:
    """A copy of a notebook that no trust signature matches.

    Jupyter trusts a notebook by a signature of its content, wherever it lies,
    so an exact copy of a trusted notebook is trusted too. The copy's metadata
    says what it is, which changes its content and so its signature.
    """
    nb = json.loads(src.read_text(encoding="utf-8"))
    nb.setdefault("metadata", {})["minigrad_e2e"] = "untrusted copy for the browser check"
    nb["metadata"].pop("signature", None)
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / src.name
    dest.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return dest


# ------------------------------------------------------------- browser

def find_browser() -> str:
    for name in (os.environ.get("CHROMIUM", ""), *BROWSERS):
        path = shutil.which(name) if name else None
        if path:
            return path
    raise Failure("no Chrome or Chromium found. Install one (Debian/Ubuntu: sudo apt-get install -y "
                  "chromium; macOS: install Google Chrome) or set CHROMIUM=/path/to/chrome")


def lab_path(path: pathlib.Path) -> str:
    """A notebook's path as the server (rooted at the repository) names it."""
    return path.resolve().relative_to(ROOT).as_posix()


def open_notebook(page, lab: Lab, rel: str) -> None:
    page.goto(f"{lab.base}/lab/tree/{urllib.parse.quote(rel)}?reset")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=90_000)
    page.wait_for_function(  # every output area has been filled in
        "() => document.querySelectorAll('.jp-NotebookPanel .jp-Cell').length > 0", timeout=30_000)
    page.wait_for_timeout(1500)


def picture_state(page) -> dict:
    """Read the notebook's outputs from the DOM."""
    return page.evaluate(r"""() => {
      const cells = [...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-CodeCell')];
      const out = {cells: [], svgOk: 0, svgBad: 0, png: 0, pngBad: 0, pngData: 0, dotText: 0, bad: []};
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
            if (img && img.complete && img.naturalWidth > 0) {
              out.png++;
              if ((img.getAttribute('src') || '').startsWith('data:image/png;base64,')) out.pngData++;
            } else out.pngBad++;
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


def check_untrusted(page, exp: dict) -> str:
    """An untrusted notebook: no cell trusted, and every graph shown as its PNG."""
    trust = page.evaluate("""() => {
      const panel = window.jupyterapp.shell.currentWidget;
      const cells = panel.content.model.cells;
      const flags = [];
      for (let i = 0; i < cells.length; i++) {
        const c = cells.get(i);
        if (c.type === 'code') flags.push(!!c.trusted);
      }
      return flags;
    }""")
    if any(trust):
        raise Failure(f"the copy is trusted ({sum(trust)} of {len(trust)} code cells): the check "
                      f"would prove nothing")
    s = picture_state(page)
    graphs = exp["svg"]
    problems = []
    if graphs and not exp["graph_png"]:
        problems.append(f"its {graphs} saved graph(s) carry no image/png, only SVG, which JupyterLab "
                        f"hides in untrusted notebooks (re-run the notebook with the current minigrad: "
                        f"`make execute`)")
    elif exp["graph_png"] < graphs:
        problems.append(f"only {exp['graph_png']} of its {graphs} saved graphs carry an image/png")
    if s["svgOk"]:
        problems.append(f"{s['svgOk']} SVG output(s) shown although the notebook is untrusted")
    if s["dotText"]:
        problems.append(f"{s['dotText']} graph(s) shown as DOT text instead of a picture")
    if s["pngBad"]:
        problems.append(f"{s['pngBad']} PNG output(s) that did not decode")
    want = graphs + exp["png"]
    if s["pngData"] < want:
        problems.append(f"{s['pngData']} of {want} pictures ({graphs} graphs, {exp['png']} figures) "
                        f"shown as PNG images")
    if problems:
        raise Failure("untrusted copy: " + "; ".join(problems))
    return f"untrusted: all {len(trust)} code cells untrusted, {graphs} graphs shown as PNG images"


def screenshot_first_picture(page, stem: str) -> str:
    pic = page.query_selector(".jp-OutputArea-output[data-mime-type='image/svg+xml'] img, "
                              ".jp-OutputArea-output[data-mime-type='image/png'] img")
    if pic is None:
        raise Failure("no picture to screenshot")
    pic.scroll_into_view_if_needed()
    path = OUT / f"{stem}.png"
    pic.screenshot(path=str(path))
    return str(path.relative_to(ROOT))


def screenshot_untrusted_graph(page, exp: dict) -> str:
    """The window, scrolled to the first graph that fits in it, as the untrusted
    notebook shows it (the status bar's shield says it is not trusted)."""
    box = page.evaluate("""(cells) => {
      const all = [...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-CodeCell')];
      const imgs = cells.map(i => all[i]).filter(Boolean)
        .map(c => c.querySelector(".jp-OutputArea-output[data-mime-type='image/png'] img")).filter(Boolean);
      const fits = imgs.find(img => img.getBoundingClientRect().height < window.innerHeight - 250) || imgs[0];
      if (!fits) return false;
      fits.scrollIntoView({block: 'center'});
      return true;
    }""", exp["graph_cells"])
    if not box:
        raise Failure("no graph shown as PNG to screenshot")
    page.wait_for_timeout(500)
    path = OUT / "untrusted_graph.png"
    page.screenshot(path=str(path))
    return str(path.relative_to(ROOT))


def restart_and_run_all(page, n_code_cells: int, timeout_s: float) -> None:
    """JupyterLab's Restart Kernel and Run All Cells, called as its command."""
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
    if not page.evaluate("(id) => !!window.jupyterapp && window.jupyterapp.commands.hasCommand(id)",
                         RESTART_RUN_ALL):
        raise Failure(f"JupyterLab has no command {RESTART_RUN_ALL!r} (or does not expose "
                      f"window.jupyterapp: is --LabApp.expose_app_in_browser set?)")
    page.evaluate("""(id) => {
      window.__e2eRun = {done: false};
      window.jupyterapp.commands.execute(id).then(
        (r) => { window.__e2eRun = {done: true, ok: r === true}; },
        (e) => { window.__e2eRun = {done: true, ok: false, error: String(e)}; });
    }""", RESTART_RUN_ALL)
    # Done when the command's promise settles (after the last cell, or at an
    # error), the kernel is idle and no cell is queued or running.
    page.wait_for_function(
        """() => {
          const ind = document.querySelector('.jp-Notebook-ExecutionIndicator');
          const prompts = [...document.querySelectorAll(
              '.jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt')].map(p => p.innerText);
          return window.__e2eRun && window.__e2eRun.done
                 && ind && ind.getAttribute('data-status') === 'idle'
                 && !prompts.some(t => t.includes('*'));
        }""", timeout=timeout_s * 1000, polling=500)
    page.wait_for_timeout(1500)
    run = page.evaluate("() => window.__e2eRun")
    prompts = page.eval_on_selector_all(
        ".jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt", "ps => ps.map(p => p.innerText.trim())")
    unrun = [i for i, t in enumerate(prompts) if not t.strip("[]: ").isdigit()]
    if unrun or not run.get("ok"):
        s = picture_state(page)
        errors = [i for i, mime, text in s["bad"]
                  if mime == "application/vnd.jupyter.stderr" and ERROR_MARK in text]
        where = f"; code cell {errors[0] + 1} raised" if errors else ""
        if run.get("error"):
            where += f"; the command failed: {run['error'][:200]}"
        first = f" (first: code cell {unrun[0] + 1})" if unrun else ""
        raise Failure(f"Restart Kernel and Run All Cells stopped early: {len(unrun)} of "
                      f"{n_code_cells} code cells did not run{first}{where}")


# ---------------------------------------------------- the Chinese edition

# Whether the text of the first element matching a selector holds Chinese, and
# is drawn with a font that has its glyphs. Without such a font Chromium draws
# every Chinese character as the same empty box, so two different characters,
# drawn on a canvas in the element's font, must give different pixels, and
# neither may look like a character no font has (U+0378 is unassigned).
CJK_STATE = r"""(selector) => {
  const el = document.querySelector(selector);
  if (!el) return {found: false};
  const family = getComputedStyle(el).fontFamily;
  const draw = (ch) => {
    const c = document.createElement('canvas');
    c.width = 48; c.height = 48;
    const g = c.getContext('2d');
    g.font = '40px ' + family;
    g.textBaseline = 'top';
    g.fillText(ch, 4, 4);
    return Array.from(g.getImageData(0, 0, 48, 48).data).join(',');
  };
  const a = draw('\u4e2d'), b = draw('\u6587'), none = draw('\u0378');
  const text = el.innerText || '';
  return {found: true, family, chinese: (text.match(/[\u4e00-\u9fff]/g) || []).length,
          distinct: a !== b, notBox: a !== none && b !== none, lang: document.documentElement.lang};
}"""


def cjk_problems(state: dict, where: str) -> list[str]:
    """What is wrong with how a page shows Chinese (CJK_STATE's result)."""
    if not state.get("found"):
        return [f"{where}: nothing to look at"]
    problems = []
    if not state["chinese"]:
        problems.append(f"{where} shows {state['chinese']} Chinese characters")
    if not (state["distinct"] and state["notBox"]):
        problems.append(f"{where}: Chinese characters are drawn as empty boxes in {state['family']!r} "
                        "(no font covers them: `make e2e` installs Debian's fonts-noto-cjk)")
    return problems


def lang_switch_problems(rel: str, href: str | None, base: str) -> list[str]:
    """The language switch of page ``rel``: it must lead to the same page in the other edition
    (a page the other edition lacks leads to its first page)."""
    if not href:
        return ["no language switch (English <-> 中文)"]
    other = rel[len("zh/"):] if rel.startswith("zh/") else "zh/" + rel
    target = link_target(href, base, SITE)
    got = target[0].relative_to(SITE).as_posix() if target else href
    home = "index.html" if rel.startswith("zh/") else "zh/index.html"
    if got != other and not (got == home and not (SITE / other).is_file()):
        return [f"the language switch leads to {got}, not {other}"]
    return []


def check_zh_lab(page, lab, results: list) -> None:
    """One Chinese notebook in JupyterLab: its outputs, and its Chinese text drawn with a real font."""
    path = ZH_NOTEBOOKS / ZH_LAB_NOTEBOOK
    name = f"zh {ZH_LAB_NOTEBOOK}"
    t0 = time.time()
    try:
        if not path.is_file():
            raise Failure(f"{path.relative_to(ROOT)} is missing: run `make zh`")
        exp = expected(path)
        open_notebook(page, lab, lab_path(path))
        check_outputs(page, exp, "saved outputs")
        problems = cjk_problems(page.evaluate(CJK_STATE, ".jp-RenderedMarkdown"), "the first markdown cell")
        if problems:
            raise Failure("; ".join(problems))
        cell = page.query_selector(".jp-MarkdownCell")
        shot = OUT / "zh_lab.png"
        (cell or page).screenshot(path=str(shot))
        results.append((name, True, f"{exp['svg']} graphs, {exp['png']} figures render; Chinese text "
                        f"drawn with a font that has it; screenshot {shot.relative_to(ROOT)} "
                        f"({time.time() - t0:.0f} s)"))
    except Exception as e:  # Failure or the browser's own errors
        results.append((name, False, str(e).splitlines()[0][:400]))
    finally:
        try:
            lab.shutdown_kernels()
        except OSError:
            pass


# ------------------------------------------------------------- the website

class SiteServer:
    """build/site/ over HTTP on a free localhost port, in a background thread."""

    def __init__(self, root: pathlib.Path):
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def is_local(url: str, base: str) -> bool:
    """Whether a request goes to the site's own server (and so may go out at all).

    The same scheme, host and port as ``base``; data: and blob: URLs never leave
    the page. Anything else (another host, another port, another scheme) is not.
    """
    u, b = urllib.parse.urlsplit(url), urllib.parse.urlsplit(base)
    if u.scheme in ("data", "blob", "about"):
        return True
    return (u.scheme, u.hostname, u.port) == (b.scheme, b.hostname, b.port)


def site_pages(site: pathlib.Path) -> list[str]:
    """Every HTML page of the built site, as paths relative to its root."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                  if "_static" not in p.relative_to(site).parts)


def link_target(href: str, base: str, site: pathlib.Path) -> tuple[pathlib.Path, str] | None:
    """The file (and the anchor) that an absolute link on the site points to, or
    None for a link that leaves the site (another host, mailto:, javascript:...)."""
    if not is_local(href, base) or urllib.parse.urlsplit(href).scheme in ("data", "blob", "about"):
        return None
    u = urllib.parse.urlsplit(href)
    path = urllib.parse.unquote(u.path).lstrip("/")
    target = site / path
    if not path or path.endswith("/"):
        target = target / "index.html"
    return target, urllib.parse.unquote(u.fragment)


class _Ids(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("id", "name") and v:
                self.ids.add(v)


@functools.cache
def anchors_of(path: pathlib.Path) -> frozenset[str]:
    parser = _Ids()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return frozenset(parser.ids)


def link_problems(hrefs: list[str], base: str, site: pathlib.Path) -> list[str]:
    """Links on a page whose target file, or anchor within it, does not exist."""
    problems = []
    for href in dict.fromkeys(hrefs):
        target = link_target(href, base, site)
        if target is None:
            continue
        path, anchor = target
        rel = href[len(base):] if href.startswith(base) else href
        if not path.is_file():
            problems.append(f"{rel} (no such file)")
        elif anchor and path.suffix == ".html" and anchor not in anchors_of(path):
            problems.append(f"{rel} (no such anchor)")
    return problems


def neighbour_problems(order: list[str], prev_next: dict[str, tuple[str | None, str | None]]) -> list[str]:
    """Whether each notebook page's previous/next links follow the notebooks' order.

    ``order``: the notebook pages in course order; ``prev_next``: for each page,
    the pages its previous and next links point to (None: no such link).
    """
    problems = []
    for i, page in enumerate(order):
        prev, nxt = prev_next.get(page, (None, None))
        if i > 0 and prev != order[i - 1]:
            problems.append(f"{page}: 'previous' goes to {prev}, not {order[i - 1]}")
        if i + 1 < len(order) and nxt != order[i + 1]:
            problems.append(f"{page}: 'next' goes to {nxt}, not {order[i + 1]}")
    return problems


def page_state(page) -> dict:
    """Pictures, maths and links of a site page, from its DOM."""
    return page.evaluate(r"""() => {
      const imgs = [...document.images];
      const out = [...document.querySelectorAll('.cell_output img')];
      const prev = document.querySelector('.prev-next-area a.left-prev');
      const next = document.querySelector('.prev-next-area a.right-next');
      return {
        images: imgs.length,
        broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src')),
        noAlt: imgs.filter(i => !(i.getAttribute('alt') || '').trim()).map(i => i.getAttribute('src')),
        graphs: out.filter(i => /\.svg$/.test(i.getAttribute('src') || '')
                                || /^Computation graph|^Diagram/.test(i.alt)).length,
        figures: out.filter(i => /\.png$/.test(i.getAttribute('src') || '')
                                 && !/^Computation graph|^Diagram/.test(i.alt)).length,
        alts: out.map(i => i.alt),
        maths: document.querySelectorAll('.math').length,
        typeset: document.querySelectorAll('mjx-container').length,
        mathErrors: [...document.querySelectorAll('mjx-merror')].map(e => e.textContent).slice(0, 3),
        links: [...document.querySelectorAll('a[href]')].map(a => a.href),
        langSwitch: (document.querySelector('p.lang-switch a') || {}).href || null,
        prev: prev ? prev.href : null,
        next: next ? next.href : null,
      };
    }""")


def alt_problems(alts: list[str]) -> list[str]:
    """What is wrong with the alt texts of a page's pictures: TeX left in, the generic fallback, or two
    pictures that share one text (docs/alt_text.py gives each what it shows)."""
    problems = []
    tex = [a for a in alts if "$" in a or re.search(r"\\[A-Za-z]", a)]
    if tex:
        problems.append(f"{len(tex)} alt text(s) with raw TeX: {tex[0][:80]!r}")
    generic = [a for a in alts if "a figure in the section" in a or a.strip() == "Figure: a figure."]
    if generic:
        problems.append(f"{len(generic)} alt text(s) that say only where the figure is: {generic[0][:80]!r}")
    shared = sorted({a for a in alts if a and alts.count(a) > 1})
    if shared:
        problems.append(f"{len(shared)} alt text(s) shared by several pictures: {shared[0][:80]!r}")
    return problems


def check_site_page(page, base: str, rel: str, exp: dict | None, blocked: list[str],
                    failed: list[str], errors: list[str]) -> tuple[list[str], str, dict]:
    """Open one page of the site; return its problems, a summary, and what it shows."""
    blocked.clear()
    failed.clear()
    errors.clear()
    page.goto(f"{base}/{rel}", wait_until="load")
    if page.evaluate("() => document.querySelectorAll('.math').length") > 0:
        try:
            page.wait_for_function(
                "() => document.querySelectorAll('mjx-container').length"
                " >= document.querySelectorAll('.math').length", timeout=30_000, polling=250)
        except Exception:  # reported below with the counts
            pass
    page.wait_for_load_state("networkidle")
    s = page_state(page)
    problems = []
    if blocked:
        problems.append(f"asked for {len(blocked)} resource(s) outside the site: {blocked[:3]}")
    if failed:
        problems.append(f"{len(failed)} request(s) failed: {failed[:3]}")
    if errors:
        problems.append(f"script error: {errors[0][:200]}")
    if s["broken"]:
        problems.append(f"{len(s['broken'])} image(s) did not load: {s['broken'][:3]}")
    if s["noAlt"]:
        problems.append(f"{len(s['noAlt'])} image(s) without alt text: {s['noAlt'][:3]}")
    problems += alt_problems(s["alts"])
    if s["maths"] and s["typeset"] < s["maths"]:
        problems.append(f"{s['typeset']} of {s['maths']} formulas typeset by MathJax")
    if s["mathErrors"]:
        problems.append(f"MathJax errors: {s['mathErrors']}")
    problems += [f"broken link {p}" for p in link_problems(s["links"], base, SITE)[:5]]
    if exp is not None:
        if s["graphs"] != exp["svg"]:
            problems.append(f"{s['graphs']} of {exp['svg']} graphs shown")
        if s["figures"] != exp["png"]:
            problems.append(f"{s['figures']} of {exp['png']} figures shown")
        if exp["maths"] and not s["typeset"]:
            problems.append("the notebook has maths, but the page shows no typeset formula")
        pages = {link_target(h, base, SITE)[0].name for h in s["links"] if link_target(h, base, SITE)}
        missing = sorted(f"{stem}.html" for stem in exp["links"] if f"{stem}.html" not in pages)
        if missing:
            problems.append(f"links to other notebooks missing: {missing}")
    note = [f"{s['images']} images loaded"]
    if exp is not None:
        note.append(f"{exp['svg']} graphs, {exp['png']} figures")
    if s["maths"]:
        note.append(f"{s['typeset']} formulas typeset")
    note.append(f"{len(set(s['links']))} links resolve")
    return problems, ", ".join(note), s


def check_site(browser, results: list, notebooks: list[pathlib.Path]) -> None:
    if not (SITE / "index.html").is_file():
        results.append(("site", False, f"{SITE.relative_to(ROOT)}/index.html is missing: run `make site`"))
        return
    server = SiteServer(SITE)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    blocked: list[str] = []
    failed: list[str] = []
    errors: list[str] = []

    def route(r):
        if is_local(r.request.url, server.base):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort("blockedbyclient")

    try:
        context.route("**/*", route)
        page = context.new_page()
        page.on("response", lambda resp: failed.append(f"{resp.status} {resp.url[len(server.base):]}")
                if resp.status >= 400 else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        by_page = {f"notebooks/{p.stem}.html": p for p in notebooks}
        order = [f"notebooks/{p.stem}.html" for p in sorted(notebooks)]
        # The Chinese pages show the Chinese notebooks, whose outputs are the English ones.
        by_page.update({f"zh/notebooks/{p.stem}.html": ZH_NOTEBOOKS / p.name for p in notebooks
                        if (ZH_NOTEBOOKS / p.name).is_file()})
        order_zh = [f"zh/notebooks/{p.stem}.html" for p in sorted(notebooks)]
        prev_next = {}

        def page_of(href):
            t = link_target(href, server.base, SITE) if href else None
            return t[0].relative_to(SITE).as_posix() if t else None

        for rel in site_pages(SITE):
            t0 = time.time()
            try:
                exp = expected(by_page[rel]) if rel in by_page else None
                problems, note, s = check_site_page(page, server.base, rel, exp, blocked, failed, errors)
                prev_next[rel] = (page_of(s["prev"]), page_of(s["next"]))
                if rel not in ("genindex.html", "search.html", "zh/genindex.html", "zh/search.html"):
                    problems += lang_switch_problems(rel, s["langSwitch"], server.base)
                if rel.startswith("zh/") and rel not in ("zh/genindex.html", "zh/search.html"):
                    problems += cjk_problems(page.evaluate(CJK_STATE, "article"), "the page")
                    note += ", Chinese text drawn with a font that has it"
                if problems:
                    raise Failure("; ".join(problems))
                if rel == ZH_SCREENSHOT_PAGE:
                    page.evaluate("() => window.scrollTo(0, 0)")
                    page.screenshot(path=str(OUT / "zh_site_page.png"))
                    note += "; screenshot build/e2e/zh_site_page.png"
                if rel == SCREENSHOT_PAGE:
                    pic = page.query_selector(".cell_output img")
                    if pic is not None:
                        pic.scroll_into_view_if_needed()
                        page.evaluate("() => window.scrollBy(0, -250)")
                    page.screenshot(path=str(OUT / "site_page.png"))
                    note += "; screenshot build/e2e/site_page.png"
                results.append((f"site {rel}", True, note + f" ({time.time() - t0:.1f} s)"))
            except Exception as e:  # one page's failure is that page's line
                results.append((f"site {rel}", False, str(e).splitlines()[0][:400]))
        for label, pages in (("site previous/next", order), ("site zh previous/next", order_zh)):
            problems = neighbour_problems([p for p in pages if p in prev_next], prev_next)
            missing = [p for p in pages if p not in prev_next]
            if missing:
                problems.insert(0, f"no page for {missing}")
            results.append((label, not problems,
                            "; ".join(problems[:4]) if problems else
                            f"the {len(pages)} notebook pages link to each other in order"))
    finally:
        context.close()
        server.stop()


# ------------------------------------------------- the site for learners
PHONE = {"width": 390, "height": 844}

# At phone width: how far the page scrolls sideways, and the pictures wider than their cell.
PHONE_JS = """() => {
  const over = [];
  for (const img of document.querySelectorAll('div.cell_output img')) {
    const box = img.closest('div.cell_output').getBoundingClientRect(), r = img.getBoundingClientRect();
    if (r.width > box.width + 1) over.push((img.getAttribute('src') || '').split('/').pop());
  }
  return {scroll: document.documentElement.scrollWidth - window.innerWidth, over};
}"""


def student_problems(text: str, reference: dict) -> list[str]:
    """What is wrong with a downloaded student notebook, given its reference notebook."""
    try:
        nb = json.loads(text)
    except ValueError:
        return ["the student download is not a notebook"]
    problems = []
    if "# BEGIN SOLUTION" in text or "# END SOLUTION" in text:
        problems.append("the student download holds solution markers")
    if any(c.get("outputs") for c in nb.get("cells", [])):
        problems.append("the student download keeps outputs")
    if [c.get("id") for c in nb.get("cells", [])] != [c.get("id") for c in reference["cells"]]:
        problems.append("the student download's cells are not the reference's")
    if any("# BEGIN SOLUTION" in "".join(c.get("source", "")) for c in reference["cells"]) and \
            "raise NotImplementedError" not in text:
        problems.append("the student download has no blanked exercise")
    return problems


def check_site_for_learners(browser, results: list, notebooks: list[pathlib.Path]) -> None:
    """Every page at phone width (no sideways scrolling, pictures fit their cell); every
    notebook page's student download (a notebook without solutions or outputs)."""
    if not (SITE / "index.html").is_file():
        return  # check_site says so
    server = SiteServer(SITE)
    context = browser.new_context(viewport=PHONE, is_mobile=True)
    context.route("**/*", lambda r: r.continue_() if is_local(r.request.url, server.base)
                  else r.abort("blockedbyclient"))
    try:
        page = context.new_page()
        wide = []
        pages = site_pages(SITE)
        for rel in pages:
            page.goto(f"{server.base}/{rel}", wait_until="load")
            s = page.evaluate(PHONE_JS)
            if s["scroll"] > 0 or s["over"]:
                wide.append(f"{rel} ({s['scroll']} px sideways; wider than the column: {s['over'][:3]})")
        results.append((f"site at {PHONE['width']} px", not wide,
                        "; ".join(wide[:4]) if wide else
                        f"none of the {len(pages)} pages scrolls sideways, every picture fits its column"))
        for path in notebooks:
            rel = f"notebooks/{path.stem}.html"
            page.goto(f"{server.base}/{rel}", wait_until="load")
            link = page.query_selector("p.student-version a[download]")
            if link is None:
                results.append((f"student download {path.stem}", False, "the page offers no student version"))
                continue
            url = urllib.parse.urljoin(f"{server.base}/{rel}", link.get_attribute("href"))
            response = page.request.get(url)
            problems = ([f"HTTP {response.status}"] if response.status != 200 else
                        student_problems(response.text(), json.loads(path.read_text(encoding="utf-8"))))
            results.append((f"student download {path.stem}", not problems,
                            "; ".join(problems) or
                            f"{url[len(server.base):]}: exercises blanked, no outputs"))
    finally:
        context.close()
        server.stop()



AXE = ROOT / "build" / "e2e-tools" / "axe.min.js"
AXE_VER = "4.10.3"  # the Makefile's AXE_VER
AXE_WIDTHS = (1280, 390)
# Every rule axe-core runs by default, and one more: label-content-name-mismatch (experimental in 4.10),
# a control's accessible name must hold its visible label (the theme's Search buttons did not).
AXE_OPTIONS = {"rules": {"label-content-name-mismatch": {"enabled": True}}}


def axe_summary(violations: list[dict]) -> tuple[int, str]:
    """(violations of any impact, a line that names them) from axe.run's violations.

    Serious and critical ones are named first; moderate and minor ones fail the page too
    (a region without a landmark, two regions with one name, an empty table header...).
    """
    order = {"critical": 0, "serious": 1, "moderate": 2, "minor": 3}
    bad = sorted(violations, key=lambda v: order.get(v.get("impact") or "minor", 3))
    named = "; ".join(f"{v.get('impact')} {v['id']} x{len(v.get('nodes', []))}" for v in bad[:5])
    return len(bad), named or "no violations"


def check_site_accessibility(browser, results: list) -> None:
    """axe-core on every page at desktop and phone width: no violation, whatever its impact."""
    if not (SITE / "index.html").is_file():
        return
    if not AXE.is_file():
        results.append(("site accessibility", False, f"{AXE.relative_to(ROOT)} is missing: run `make e2e`"))
        return
    server = SiteServer(SITE)
    try:
        for width in AXE_WIDTHS:
            context = browser.new_context(viewport={"width": width, "height": 900}, is_mobile=width < 600)
            context.route("**/*", lambda r: r.continue_() if is_local(r.request.url, server.base)
                          else r.abort("blockedbyclient"))
            page = context.new_page()
            failing, total = [], 0
            for rel in site_pages(SITE):
                page.goto(f"{server.base}/{rel}", wait_until="load")
                page.evaluate("async () => { if (window.MathJax && MathJax.startup) "
                              "await MathJax.startup.promise; }")
                page.wait_for_timeout(300)  # formulas typeset; the page's scripts settle
                page.add_script_tag(path=str(AXE))
                violations = page.evaluate("async options => (await axe.run(document, options)).violations",
                                           AXE_OPTIONS)
                n, line = axe_summary(violations)
                total += n
                if n:
                    failing.append(f"{rel}: {line}")
            context.close()
            results.append((f"site accessibility at {width} px", not failing,
                            "; ".join(failing[:3]) if failing else
                            f"axe-core {AXE_VER}: no violations (critical to minor) on "
                            f"{len(site_pages(SITE))} pages"))
    finally:
        server.stop()



# ----------------------------------------------------------------- main

def check_lab(browser, results: list, paths: list[pathlib.Path], run: set[str],
              untrusted_src: pathlib.Path, timeout: float) -> None:
    lab = Lab(OUT / "jupyter-lab.log")
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="untrusted-", dir=OUT))
    try:
        lab.wait_ready()
        # Security: no token, no access; with the token, access.
        for path in ("/api/contents", "/api/kernels", "/api/sessions"):
            code = lab.get(path, token=False)
            ok = code in (401, 403)
            results.append((f"security {path}", ok,
                            f"refused without token ({code})" if ok else f"answered {code} without token"))
        context = browser.new_context(viewport={"width": 1920, "height": 1080})
        page = context.new_page()
        page.goto(f"{lab.base}/lab?token={lab.token}")  # log in once: sets the cookie
        page.wait_for_selector(".jp-LabShell", timeout=90_000)
        jobs = [(p, "trusted") for p in paths] + [(untrusted_src, "untrusted")]
        for path, kind in jobs:
            t0, note = time.time(), []
            name = path.name if kind == "trusted" else f"{path.name} (untrusted copy)"
            try:
                exp = expected(path)
                if kind == "trusted":
                    open_notebook(page, lab, lab_path(path))
                    check_outputs(page, exp, "saved outputs")
                    note.append(f"{exp['svg']} graphs, {exp['png']} figures render")
                    note.append("screenshot " + screenshot_first_picture(page, path.stem))
                    if path.name[:2] in run:
                        n_code = len([c for c in json.loads(path.read_text())["cells"]
                                      if c["cell_type"] == "code"])
                        restart_and_run_all(page, n_code, timeout)
                        check_outputs(page, exp, f"after {RESTART_RUN_ALL}")
                        note.append(f"re-ran cleanly in the browser ({RESTART_RUN_ALL})")
                else:
                    copy = untrusted_copy(path, scratch)
                    open_notebook(page, lab, lab_path(copy))
                    page.wait_for_function("() => !!window.jupyterapp", timeout=30_000)
                    note.append(check_untrusted(page, exp))
                    note.append("screenshot " + screenshot_untrusted_graph(page, exp))
                results.append((name, True, "; ".join(note) + f" ({time.time() - t0:.0f} s)"))
            except Exception as e:  # Failure or the browser's own errors
                results.append((name, False, str(e).splitlines()[0][:400]))
            finally:
                try:
                    lab.shutdown_kernels()
                except OSError:
                    pass
        check_zh_lab(page, lab, results)
        context.close()
    except Failure as e:
        results.append(("jupyter lab", False, str(e)))
    finally:
        lab.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="*", help="notebook files (default: all under notebooks/)")
    ap.add_argument("--run", action="append", default=None,
                    help="number prefix of a notebook to Restart & Run All in the browser "
                         "(repeatable; default: 00 and 03)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds allowed for one Run All")
    ap.add_argument("--only", choices=("lab", "site"), help="check only JupyterLab or only the website")
    ap.add_argument("--untrusted", type=pathlib.Path, default=UNTRUSTED_DEFAULT,
                    help="notebook to open as an untrusted copy (default: notebooks/00_...); it must "
                         "lie inside the repository, where the server can reach it")
    args = ap.parse_args(argv)
    run = set(args.run or ["00", "03"])
    paths = [pathlib.Path(p).resolve() for p in args.notebooks] or sorted(
        NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    OUT.mkdir(parents=True, exist_ok=True)

    try:
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
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_path, headless=True, args=CHROMIUM_ARGS)
        try:
            if args.only != "site":
                check_lab(browser, results, paths, run, args.untrusted.resolve(), args.timeout)
            if args.only != "lab":
                check_site(browser, results, sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")))
                check_site_for_learners(browser, results, sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")))
                check_site_accessibility(browser, results)
        finally:
            browser.close()

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
