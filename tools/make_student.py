"""Write the student version of the course: exercises blanked, outputs cleared.

    python tools/make_student.py                      # every notebook -> build/student/
    python tools/make_student.py --out DIR nb.ipynb   # some notebooks, elsewhere

In every code cell, each region from a ``# BEGIN SOLUTION`` line to the next
``# END SOLUTION`` line (both included) becomes one ``raise NotImplementedError``
at the indent of the BEGIN line. Markers must come in pairs and must not nest;
a notebook that breaks this rule is refused with the cell and line named.
Outputs and execution counts are cleared. Other files beside the notebooks
(data, images) are copied, and a README says how to check the work.
"""

from __future__ import annotations

import argparse
import copy
import json
import pathlib
import shutil
import sys

BEGIN = "# BEGIN SOLUTION"
END = "# END SOLUTION"
ROOT = pathlib.Path(__file__).resolve().parents[1]

README = """\
# minigrad: student notebooks

These are the course notebooks with the solution of every exercise removed.
Where a solution was, a cell now says `raise NotImplementedError`: replace that
line with your code.

**How to check your work**

1. Open a notebook in JupyterLab (`make lab` from the repository root serves
   the reference notebooks; to work on these, run
   `.venv/bin/jupyter lab --ServerApp.ip=127.0.0.1 build/student` there).
2. Write your solution in place of `raise NotImplementedError`.
3. Run the whole notebook (Kernel > Restart Kernel and Run All Cells).
   The cells at the end hold `assert`s; they pass once your exercises are
   right. An `AssertionError` says which check failed; a `NotImplementedError`
   means an exercise is still open.

`make test` in the repository checks the reference solutions (the notebooks in
`notebooks/`), not your copies. `make student` writes this folder again and
overwrites it, so keep your work somewhere else or under another name.
"""


class MarkerError(ValueError):
    """Solution markers that are unbalanced or nested."""


def _is_marker(line: str, marker: str) -> bool:
    return line.strip().startswith(marker)


def solution_regions(source: str, where: str = "cell") -> list[tuple[int, int]]:
    """(begin, end) line indices of each solution region, both marker lines included."""
    regions: list[tuple[int, int]] = []
    start: int | None = None
    for i, line in enumerate(source.splitlines()):
        if _is_marker(line, BEGIN):
            if start is not None:
                raise MarkerError(f"{where}: '{BEGIN}' on line {i + 1} is nested inside the "
                                  f"region opened on line {start + 1}")
            start = i
        elif _is_marker(line, END):
            if start is None:
                raise MarkerError(f"{where}: '{END}' on line {i + 1} has no '{BEGIN}' before it")
            regions.append((start, i))
            start = None
    if start is not None:
        raise MarkerError(f"{where}: '{BEGIN}' on line {start + 1} is never closed by '{END}'")
    return regions


def blank_solutions(source: str, where: str = "cell") -> str:
    """The source with every solution region replaced by ``raise NotImplementedError``."""
    lines = source.splitlines()
    regions = solution_regions(source, where)
    out: list[str] = []
    pos = 0
    for begin, end in regions:
        out.extend(lines[pos:begin])
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        out.append(f"{indent}raise NotImplementedError")
        pos = end + 1
    out.extend(lines[pos:])
    text = "\n".join(out)
    return text + "\n" if source.endswith("\n") else text


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def is_exercise(cell: dict) -> bool:
    return cell.get("cell_type") == "code" and BEGIN in _source(cell)


def student_notebook(nb: dict, name: str = "notebook") -> dict:
    """A copy of the notebook (as JSON) with solutions blanked and outputs cleared."""
    nb = copy.deepcopy(nb)
    for k, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        src = _source(cell)
        if BEGIN in src or END in src:
            src = blank_solutions(src, f"{name}, code cell {k}")
        cell["source"] = src
        cell["outputs"] = []
        cell["execution_count"] = None
        cell.get("metadata", {}).pop("execution", None)
    return nb


def write_student_version(notebooks: list[pathlib.Path], out: pathlib.Path) -> list[pathlib.Path]:
    """Write each notebook's student version into ``out``; return the paths written."""
    notebooks = [pathlib.Path(p) for p in notebooks]
    converted = []  # convert everything first: a bad notebook leaves ``out`` untouched
    for path in notebooks:
        nb = json.loads(path.read_text(encoding="utf-8"))
        converted.append((path, student_notebook(nb, path.name)))
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path, nb in converted:
        target = out / path.name
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(target)
    for folder in sorted({p.parent for p in notebooks}):
        for extra in sorted(folder.iterdir()):
            if extra.suffix == ".ipynb" or extra.name.startswith(".") or extra.name == "__pycache__":
                continue
            dest = out / extra.name
            if extra.is_dir():
                shutil.copytree(extra, dest, dirs_exist_ok=True)
            else:
                shutil.copy2(extra, dest)
    (out / "README.md").write_text(README, encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=pathlib.Path,
                        help="notebooks to convert (default: notebooks/[0-9][0-9]_*.ipynb)")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "build" / "student",
                        help="output folder (default: build/student)")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        print("make_student: no notebooks found", file=sys.stderr)
        return 1
    try:
        written = write_student_version(notebooks, args.out)
    except MarkerError as e:
        print(f"make_student: {e}", file=sys.stderr)
        return 1
    n_ex = sum(is_exercise(c) for p in notebooks
               for c in json.loads(pathlib.Path(p).read_text(encoding="utf-8"))["cells"])
    print(f"wrote {len(written)} student notebooks ({n_ex} exercise cells) and README.md to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
