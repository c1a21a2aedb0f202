"""The notebooks' set-up cell, which makes each of them run on a fresh Colab runtime.

    python tools/colab.py notebooks/*.ipynb      # insert or update the cell in place
    python tools/colab.py --check notebooks/*.ipynb   # exit 1 if a notebook lacks it
    python tools/colab.py --publish-student student notebooks/*.ipynb   # make publish-student

Colab (like any runtime that has NumPy and Matplotlib but not this course)
opens a notebook from its GitHub URL alone, without the rest of the
repository. The set-up cell installs what is missing there: the package
``minigrad-course`` (which brings the Python ``graphviz`` package), and says
how to get Graphviz's ``dot`` program if it is absent (Colab has it). Where
everything is importable, as in the course's own lab, it does nothing and
prints nothing, so the saved notebooks and nbval see an empty output.

The cell has the fixed id ``setup`` and sits right after the title cell.
Running this tool again replaces the cell's source with the current one, so
it is idempotent; ``--check`` is what the tests use. ``MINIGRAD_INSTALL`` (an
environment variable) overrides what the cell installs, e.g. a wheel built
from a checkout; the tests use it to run the cell without a network.

The student notebooks keep the cell (it has no solution in it), so a student
version opened in Colab sets itself up too. ``colab_url`` gives the address
at which Colab opens a notebook of the repository.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

CELL_ID = "setup"
REPOSITORY = "minigrad-course/minigrad-course"
BRANCH = "main"
INSTALL = f"minigrad-course @ git+https://github.com/{REPOSITORY}"

SOURCE = f'''\
# Set-up (minigrad set-up cell, version 1): on Colab or any fresh runtime this installs
# the course's package when it is missing; in the course's own lab it does nothing.
def _set_up():
    import importlib
    import importlib.util
    import os
    import shutil
    import subprocess
    import sys

    wanted = {{"minigrad": os.environ.get("MINIGRAD_INSTALL", "{INSTALL}"),
              "graphviz": "graphviz>=0.20"}}
    missing = [spec for module, spec in wanted.items() if importlib.util.find_spec(module) is None]
    if missing:
        print("Installing", ", ".join(missing), "...")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *missing], check=True)
        importlib.invalidate_caches()
    if shutil.which("dot") is None:
        print("Graphviz's dot program is missing, so cells that draw a graph will fail. "
              "Install it with: apt-get install graphviz (Colab: !apt-get install -y graphviz)")


_set_up()
del _set_up
'''


def setup_cell() -> dict:
    """The set-up cell as nbformat 4 JSON (no outputs, not executed)."""
    return {"cell_type": "code", "execution_count": None, "id": CELL_ID,
            "metadata": {"tags": ["setup"]}, "outputs": [],
            "source": SOURCE.splitlines(keepends=True)}


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _position(cells: list[dict]) -> int:
    """Right after the title (a first markdown cell starting with '# '), else first."""
    if cells and cells[0].get("cell_type") == "markdown" and _source(cells[0]).lstrip().startswith("# "):
        return 1
    return 0


def has_current_cell(nb: dict) -> bool:
    """Whether the notebook holds exactly one set-up cell, current, in its place."""
    cells = nb.get("cells", [])
    ids = [k for k, c in enumerate(cells) if c.get("id") == CELL_ID]
    if len(ids) != 1:
        return False
    others = cells[:ids[0]] + cells[ids[0] + 1:]
    return ids[0] == _position(others) and _source(cells[ids[0]]) == SOURCE and \
        cells[ids[0]].get("cell_type") == "code"


def with_setup_cell(nb: dict) -> dict:
    """The notebook with the current set-up cell in its place (outputs of it kept if current)."""
    cells = [c for c in nb.get("cells", []) if c.get("id") != CELL_ID]
    old = [c for c in nb.get("cells", []) if c.get("id") == CELL_ID]
    cell = setup_cell()
    if len(old) == 1 and _source(old[0]) == SOURCE:
        cell = old[0]  # already current: keep its execution count and (empty) output
    cells.insert(_position(cells), cell)
    return {**nb, "cells": cells}


def apply(path: pathlib.Path) -> bool:
    """Insert or update the cell in the notebook file; True if the file changed."""
    text = path.read_text(encoding="utf-8")
    nb = json.loads(text)
    new = json.dumps(with_setup_cell(nb), indent=1, ensure_ascii=False) + "\n"
    if new == text:
        return False
    path.write_text(new, encoding="utf-8")
    return True


def colab_url(path: str, branch: str = BRANCH) -> str:
    """Where Colab opens the repository's notebook at ``path`` (e.g. 'notebooks/00_x.ipynb')."""
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{branch}/{path}"


PUBLISHED_README = """\
# Student notebooks, to open in Colab

These are the course's notebooks with every exercise's solution replaced by
`raise NotImplementedError` and every output cleared, as `make student` writes
them; they are here so that a link can open them in Colab. Do not edit them:
`make publish-student` writes this folder from `notebooks/`, and a test checks
that it is in step. To work on your own machine, run `make lab-student`
instead (it keeps your work in `build/student/`).

| Notebook | Open in Colab |
| --- | --- |
"""


def publish_student(notebooks: list[pathlib.Path], out: pathlib.Path) -> None:
    """Write the output-free student version of each notebook to ``out``, with a README."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import make_student

    converted = [(p, make_student.student_notebook(json.loads(p.read_text(encoding="utf-8")), p.name))
                 for p in notebooks]  # all first: a bad notebook leaves ``out`` as it was
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.ipynb"):
        if old.name not in {p.name for p in notebooks}:
            old.unlink()
    rows = []
    for path, nb in converted:
        (out / path.name).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        rows.append(f"| {path.stem} | [student version]({colab_url(f'{out.name}/{path.name}')}) |\n")
    (out / "README.md").write_text(PUBLISHED_README + "".join(rows), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=pathlib.Path)
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a notebook lacks the current cell")
    parser.add_argument("--publish-student", type=pathlib.Path, metavar="DIR",
                        help="instead, write the student versions (outputs cleared) to DIR")
    args = parser.parse_args(argv)
    if args.publish_student:
        publish_student(args.notebooks, args.publish_student)
        print(f"colab: wrote {len(args.notebooks)} student notebooks to {args.publish_student}")
        return 0
    if args.check:
        stale = [p for p in args.notebooks
                 if not has_current_cell(json.loads(p.read_text(encoding="utf-8")))]
        for p in stale:
            print(f"colab: {p} lacks the current set-up cell (run: python tools/colab.py {p})")
        return 1 if stale else 0
    changed = [p for p in args.notebooks if apply(p)]
    print(f"colab: set-up cell current in {len(args.notebooks)} notebooks ({len(changed)} changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
