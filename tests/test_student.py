"""The student version (`make student`, tools/make_student.py) of whatever notebooks exist.

Static checks: markers are balanced and not nested; the student version holds
no line of any solution, clears every output, and puts `# YOUR CODE HERE`
and, on the next line, `raise NotImplementedError` at the indent of each
BEGIN marker.

Execution check (marked `slow`; it runs every student notebook once, two
kernels at a time): the student notebooks are executed with nbclient,
continuing past errors, and each cell is judged by this rule:

* an exercise cell (one that held a solution) must raise NotImplementedError;
* a cell is *tainted* if it reads a name that an exercise cell binds, or a name
  bound by a tainted cell (found by reading the code with `ast`, functions'
  bodies included). A tainted cell may fail, but only with NameError,
  NotImplementedError or AssertionError: what a missing solution causes;
* every other cell must run without error.

So the blanks break exactly what depends on them, and nothing else.
"""

import ast
import importlib.util
import json
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

_spec = importlib.util.spec_from_file_location("make_student", ROOT / "tools" / "make_student.py")
make_student = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_student)

ALLOWED_IN_TAINTED = {"NameError", "NotImplementedError", "AssertionError"}
ids = [p.name for p in NOTEBOOKS]


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def source(cell):
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    make_student.write_student_version(NOTEBOOKS, out)
    return out


# ------------------------------------------------------------- the tool itself


def test_blanking_keeps_the_indent_and_the_rest():
    src = "def f(x):\n    y = 1\n    # BEGIN SOLUTION\n    y = x * 2\n    # END SOLUTION\n    return y\n"
    assert make_student.blank_solutions(src) == (
        "def f(x):\n    y = 1\n    # YOUR CODE HERE\n    raise NotImplementedError\n    return y\n")


def test_every_region_gets_its_own_stub():
    src = "# BEGIN SOLUTION\na = 1\n# END SOLUTION\nb = 2\nif b:\n        # BEGIN SOLUTION\n        c = 3\n" \
          "        # END SOLUTION"
    assert make_student.blank_solutions(src) == (
        "# YOUR CODE HERE\nraise NotImplementedError\nb = 2\nif b:\n"
        "        # YOUR CODE HERE\n        raise NotImplementedError")


@pytest.mark.parametrize("src, msg", [
    ("# BEGIN SOLUTION\nx = 1\n", r"line 1 is never closed"),
    ("x = 1\n# END SOLUTION\n", r"'# END SOLUTION' on line 2 has no"),
    ("# BEGIN SOLUTION\n# BEGIN SOLUTION\n# END SOLUTION\n# END SOLUTION\n", r"line 2 is nested"),
])
def test_bad_markers_are_refused_with_the_line(src, msg):
    with pytest.raises(make_student.MarkerError, match=msg):
        make_student.blank_solutions(src, "nb.ipynb, code cell 3")


def test_a_bad_notebook_writes_nothing(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": "# BEGIN SOLUTION\n", "outputs": [],
                     "execution_count": 1, "metadata": {}}], "metadata": {}, "nbformat": 4,
          "nbformat_minor": 5}
    bad = tmp_path / "99_bad.ipynb"
    bad.write_text(json.dumps(nb))
    with pytest.raises(make_student.MarkerError, match="99_bad.ipynb, code cell 0"):
        make_student.write_student_version([bad], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_command_line_writes_notebooks_and_readme(tmp_path, capsys):
    assert make_student.main(["--out", str(tmp_path / "s"), str(NOTEBOOKS[0])]) == 0
    assert (tmp_path / "s" / NOTEBOOKS[0].name).exists()
    readme = (tmp_path / "s" / "README.md").read_text()
    assert "raise NotImplementedError" in readme and "Run All" in readme and "make test" in readme
    assert "wrote 1 student notebooks" in capsys.readouterr().out


def _tiny_notebook(code: str) -> dict:
    return {"cells": [{"cell_type": "code", "source": code, "outputs": [], "execution_count": None,
                       "metadata": {}}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_writing_again_keeps_a_learners_work(tmp_path, capsys):
    src = tmp_path / "src" / "00_x.ipynb"
    src.parent.mkdir()
    src.write_text(json.dumps(_tiny_notebook("# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n")))
    out = tmp_path / "out"
    written, kept = make_student.write_student_version([src], out)
    assert written == [out / "00_x.ipynb"] and kept == []
    # Unchanged since written: a new reference version replaces it.
    src.write_text(json.dumps(_tiny_notebook("# BEGIN SOLUTION\nx = 2\n# END SOLUTION\ny = 3\n")))
    written, kept = make_student.write_student_version([src], out)
    assert written and "y = 3" in (out / "00_x.ipynb").read_text()
    # The learner writes their answer: it is kept, and the tool says so.
    mine = _tiny_notebook("x = 2  # my answer\ny = 3\n")
    (out / "00_x.ipynb").write_text(json.dumps(mine))
    src.write_text(json.dumps(_tiny_notebook("# BEGIN SOLUTION\nx = 2\n# END SOLUTION\ny = 4\n")))
    assert make_student.main(["--out", str(out), str(src)]) == 0
    assert "my answer" in (out / "00_x.ipynb").read_text()
    assert "kept 1 notebooks" in capsys.readouterr().out
    # --force overwrites it.
    assert make_student.main(["--force", "--out", str(out), str(src)]) == 0
    text = (out / "00_x.ipynb").read_text()
    assert "my answer" not in text and "y = 4" in text and "# YOUR CODE HERE" in text


def test_a_folder_written_before_the_manifest_is_not_overwritten(tmp_path):
    src = tmp_path / "00_x.ipynb"
    src.write_text(json.dumps(_tiny_notebook("# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n")))
    out = tmp_path / "out"
    out.mkdir()
    (out / "00_x.ipynb").write_text(json.dumps(_tiny_notebook("x = 1  # mine\n")))
    written, kept = make_student.write_student_version([src], out)
    assert written == [] and kept == [out / "00_x.ipynb"]
    assert "mine" in (out / "00_x.ipynb").read_text()


def test_make_student_is_a_documented_target():
    make = (ROOT / "Makefile").read_text()
    assert "\nstudent:" in make and "tools/make_student.py" in make
    assert "#   make student" in make
    assert "make student" in (ROOT / "README.md").read_text()


# ------------------------------------------------------------ every notebook


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_markers_are_balanced_and_not_nested(path):
    for k, cell in enumerate(load(path)["cells"]):
        if cell["cell_type"] == "code":
            make_student.solution_regions(source(cell), f"{path.name}, code cell {k}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_student_version_holds_no_solution_and_no_output(path, student_dir):
    ref = load(path)["cells"]
    stu = load(student_dir / path.name)["cells"]
    assert len(ref) == len(stu)
    for r, s in zip(ref, stu):
        if r["cell_type"] != "code":
            assert source(r) == source(s)
            continue
        assert s["outputs"] == [] and s["execution_count"] is None
        rsrc, ssrc = source(r), source(s)
        assert "SOLUTION" not in ssrc
        regions = make_student.solution_regions(rsrc)
        if not regions:
            assert rsrc == ssrc
            continue
        lines = rsrc.splitlines()
        kept = {ln.strip() for ln in ssrc.splitlines()}
        outside = {x.strip() for i, x in enumerate(lines) if not any(b <= i <= e for b, e in regions)}
        slines = ssrc.splitlines()
        stubs = [i for i, ln in enumerate(slines) if ln.strip() == "raise NotImplementedError"]
        assert len(stubs) >= len(regions)
        for b, e in regions:
            indent = lines[b][: len(lines[b]) - len(lines[b].lstrip())]
            stub = [f"{indent}# YOUR CODE HERE", f"{indent}raise NotImplementedError"]
            assert any(slines[i - 1:i + 1] == stub for i in stubs if i > 0), \
                f"{path.name}: no '# YOUR CODE HERE' stub at indent {len(indent)}"
            for ln in lines[b + 1:e]:
                code = ln.strip()
                if code and not code.startswith("#") and code not in outside:
                    assert code not in kept, f"{path.name}: a solution line leaks: {code!r}"


def test_every_notebook_has_an_exercise():
    assert all(any(make_student.is_exercise(c) for c in load(p)["cells"]) for p in NOTEBOOKS)


# ------------------------------------------------------------------ running it


def _bound_and_read(src: str) -> tuple[set, set]:
    from IPython.core.inputtransformer2 import TransformerManager

    tree = ast.parse(TransformerManager().transform_cell(src))
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound, read


def tainted_cells(cells: list[dict]) -> tuple[list[int], set[int]]:
    """Indices of exercise cells, and of cells that depend on them (see the module doc)."""
    exercises, tainted, names = [], set(), set()
    for k, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        bound, read = _bound_and_read(source(cell))
        if make_student.is_exercise(cell):
            exercises.append(k)
            names |= bound
        elif read & names:
            tainted.add(k)
            names |= bound
    return exercises, tainted


def test_taint_follows_names_through_functions():
    cells = [{"cell_type": "code", "source": s} for s in (
        "import numpy as np\nx = 1",
        "# BEGIN SOLUTION\ny = x + 1\n# END SOLUTION",
        "def f():\n    return y * 2",
        "z = f()",
        "w = x * 3",
    )]
    assert tainted_cells(cells) == ([1], {2, 3})


def _execute_all(paths, workdir, parallel):
    """Run the student notebooks, `parallel` kernels at a time; {name: executed notebook}."""
    import asyncio

    import nbformat
    from nbclient import NotebookClient

    async def run_all():
        gate = asyncio.Semaphore(parallel)

        async def run(path):
            nb = nbformat.read(workdir / path.name, as_version=4)
            async with gate:
                await NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                                     resources={"metadata": {"path": str(workdir)}}).async_execute()
            return path.name, nb

        return dict(await asyncio.gather(*(run(p) for p in paths)))

    return asyncio.run(run_all())


@pytest.fixture(scope="module")
def executed(student_dir):
    # Notebooks run single-threaded (OMP_NUM_THREADS=1 in the Makefile): one kernel per core.
    return _execute_all(NOTEBOOKS, student_dir, parallel=max(1, min(2, os.cpu_count() or 1)))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_student_notebook_fails_only_where_a_solution_is_missing(path, executed):
    reference = load(path)["cells"]
    exercises, tainted = tainted_cells(reference)
    nb = executed[path.name]
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        ename = errors[0].ename if errors else None
        if k in exercises:
            assert ename == "NotImplementedError", \
                f"{path.name}: exercise cell {k} should raise NotImplementedError, got {ename}"
        elif k in tainted:
            assert ename in ALLOWED_IN_TAINTED | {None}, \
                f"{path.name}: cell {k} depends on an exercise but failed with {ename}"
        else:
            assert ename is None, \
                f"{path.name}: cell {k} does not depend on any exercise but failed with {ename}: " \
                f"{errors[0].evalue if errors else ''}"
