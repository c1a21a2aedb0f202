"""Write the student version of the course: exercises blanked, outputs cleared.

    python tools/make_student.py                      # every notebook -> build/student/
    python tools/make_student.py --out DIR nb.ipynb   # some notebooks, elsewhere

In every code cell, each region from a ``# BEGIN SOLUTION`` line to the next
``# END SOLUTION`` line (both included) becomes two lines at the indent of the
BEGIN line::

    # YOUR CODE HERE
    raise NotImplementedError

The region markers are otter-grader's, and the stub is the one nbgrader writes
(otter-grader writes ``...`` for Python), so a course that wants autograding
can start from the reference notebooks with either tool. Markers must come
in pairs and must not nest; a notebook that breaks this rule is refused with
the cell and line named. Outputs and execution counts are cleared. Other files
beside the notebooks (data, images) are copied, and a README says how to check
the work.

A learner works in the output folder, so writing it again must not destroy
their work. The tool remembers what it wrote (``.make_student.json`` in the
folder); a notebook that has changed since then is kept as it is, and the
tool says so. ``--force`` overwrites those too.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import pathlib
import shutil
import sys

BEGIN = "# BEGIN SOLUTION"
END = "# END SOLUTION"
STUB = "# YOUR CODE HERE"
# The stub in a notebook of another edition (its metadata "language"), e.g. the Chinese one.
STUBS = {"zh-CN": "# 在这里写你的代码"}
MANIFEST = ".make_student.json"
ROOT = pathlib.Path(__file__).resolve().parents[1]

README = """\
# minigrad: student notebooks

These are the course notebooks with the solution of every exercise removed.
Where a solution was, a cell now says

    # YOUR CODE HERE
    raise NotImplementedError

Replace those two lines with your code.

**How to check your work**

1. Run `make lab-student` in the repository root: it serves this folder in
   JupyterLab (and writes it first if needed). Open the link it prints.
2. Write your solution in place of `raise NotImplementedError`.
3. Run the whole notebook (Kernel > Restart Kernel and Run All Cells).
   The cells at the end hold `assert`s; they pass once your exercises are
   right. An `AssertionError` says which check failed; a `NotImplementedError`
   means an exercise is still open.

`make test` in the repository checks the reference solutions (the notebooks in
`notebooks/`), not your copies.

**Your work is kept.** When the course's notebooks change, `make lab-student`
and `make student` write this folder again, but a notebook you have changed
(edited, or just run and saved) is left as it is, and they name it. To get the
new version of such a notebook, rename or delete yours and run `make student`
again. `python tools/make_student.py --force` overwrites everything.
"""


README_ZH = """\
# minigrad：学生版笔记本

这些是去掉了每道练习答案的课程笔记本。原来写着答案的地方，现在是

    # 在这里写你的代码
    raise NotImplementedError

把这两行换成你的代码即可。

**怎样检查你的答案**

1. 在仓库根目录运行 `make lab-student LANG=zh`：它会在 JupyterLab 中打开这个文件夹（需要时先生成它），
   打开它打印出的链接。
2. 把 `raise NotImplementedError` 换成你的解答。
3. 运行整个笔记本（Kernel > Restart Kernel and Run All Cells）。笔记本末尾的单元格里是 `assert`
   检查，练习做对了它们就会通过。`AssertionError` 会用中文说明哪项检查没有通过；
   `NotImplementedError` 表示还有练习没有完成。

仓库中的 `make test` 检查的是参考答案（`notebooks/` 中的笔记本），而不是你的副本。

**你的作业会被保留。** 课程的笔记本更新之后，`make lab-student LANG=zh` 和 `make student LANG=zh`
会重新生成这个文件夹，但你改动过（编辑过，或者只是运行并保存过）的笔记本会保持原样，并且会列出它们的名字。
想要这样一个笔记本的新版本，把你的那份改名或删除，再运行一次 `make student LANG=zh`。
`python tools/make_student.py --force` 会覆盖所有笔记本。
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


def blank_solutions(source: str, where: str = "cell", stub: str = STUB) -> str:
    """The source with every solution region replaced by the stub.

    The stub is ``# YOUR CODE HERE`` (or ``stub``) and, on the next line, ``raise
    NotImplementedError``, both at the indent of the region's BEGIN line.
    """
    lines = source.splitlines()
    regions = solution_regions(source, where)
    out: list[str] = []
    pos = 0
    for begin, end in regions:
        out.extend(lines[pos:begin])
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        out.append(f"{indent}{stub}")
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
    stub = STUBS.get(nb.get("metadata", {}).get("language"), STUB)
    for k, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        src = _source(cell)
        if BEGIN in src or END in src:
            src = blank_solutions(src, f"{name}, code cell {k}", stub)
        cell["source"] = src
        cell["outputs"] = []
        cell["execution_count"] = None
        cell.get("metadata", {}).pop("execution", None)
    return nb


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read_manifest(out: pathlib.Path) -> dict[str, str]:
    try:
        data = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_student_version(notebooks: list[pathlib.Path], out: pathlib.Path,
                          force: bool = False) -> tuple[list[pathlib.Path], list[pathlib.Path]]:
    """Write each notebook's student version into ``out``.

    Returns (written, kept): the notebooks written, and those left as they were
    because they changed since this tool last wrote them (a learner's work).
    With ``force``, every notebook is written.
    """
    notebooks = [pathlib.Path(p) for p in notebooks]
    converted = []  # convert everything first: a bad notebook leaves ``out`` untouched
    for path in notebooks:
        nb = json.loads(path.read_text(encoding="utf-8"))
        converted.append((path, student_notebook(nb, path.name)))
    out.mkdir(parents=True, exist_ok=True)
    manifest = _read_manifest(out)
    written, kept = [], []
    for path, nb in converted:
        target = out / path.name
        text = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        if target.exists() and not force:
            current = _digest(target.read_text(encoding="utf-8"))
            if current != _digest(text) and current != manifest.get(path.name):
                kept.append(target)
                continue
        target.write_text(text, encoding="utf-8")
        manifest[path.name] = _digest(text)
        written.append(target)
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for folder in sorted({p.parent for p in notebooks}):
        for extra in sorted(folder.iterdir()):
            if extra.suffix == ".ipynb" or extra.name.startswith(".") or extra.name == "__pycache__":
                continue
            dest = out / extra.name
            if extra.is_dir():
                shutil.copytree(extra, dest, dirs_exist_ok=True)
            else:
                shutil.copy2(extra, dest)
    chinese = converted and all(nb.get("metadata", {}).get("language") == "zh-CN" for _, nb in converted)
    (out / "README.md").write_text(README_ZH if chinese else README, encoding="utf-8")
    return written, kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=pathlib.Path,
                        help="notebooks to convert (default: notebooks/[0-9][0-9]_*.ipynb)")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "build" / "student",
                        help="output folder (default: build/student)")
    parser.add_argument("--force", action="store_true",
                        help="also overwrite notebooks changed since they were written")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        print("make_student: no notebooks found", file=sys.stderr)
        return 1
    try:
        written, kept = write_student_version(notebooks, args.out, force=args.force)
    except MarkerError as e:
        print(f"make_student: {e}", file=sys.stderr)
        return 1
    n_ex = sum(is_exercise(c) for p in notebooks
               for c in json.loads(pathlib.Path(p).read_text(encoding="utf-8"))["cells"])
    print(f"wrote {len(written)} student notebooks ({n_ex} exercise cells in all) and README.md "
          f"to {args.out}")
    if kept:
        print(f"kept {len(kept)} notebooks that were changed after they were written (your work): "
              + ", ".join(p.name for p in kept))
        print("  to get a new copy of one, rename or delete it and run this again; "
              "--force overwrites them all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
