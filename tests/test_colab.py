"""The set-up cell (tools/colab.py), the published student notebooks and the Colab links.

The set-up cell is tested the way Colab runs it: a fresh virtual environment
that holds only the wheel's dependencies (NumPy, Matplotlib, graphviz) and a
kernel, no checkout on ``sys.path``, the notebook alone in an empty folder. The
cell then installs the wheel built from this checkout (``MINIGRAD_INSTALL``
points it there, so no network is needed for the package itself).
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import colab  # noqa: E402
import make_student  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
STUDENT = ROOT / "student"
needs_notebooks = pytest.mark.skipif(not NOTEBOOKS, reason="the notebooks are not here (an sdist?)")


def _nb(cells):
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _md(text, id_):
    return {"cell_type": "markdown", "id": id_, "metadata": {}, "source": text}


def _code(text, id_):
    return {"cell_type": "code", "id": id_, "metadata": {}, "source": text, "outputs": [],
            "execution_count": None}


def test_the_cell_goes_after_the_title_once_and_is_updated_in_place():
    nb = _nb([_md("# 00 · Title\n\ntext", "c000"), _code("x = 1", "c001")])
    once = colab.with_setup_cell(nb)
    assert [c["id"] for c in once["cells"]] == ["c000", "setup", "c001"]
    assert colab.has_current_cell(once) and not colab.has_current_cell(nb)
    assert colab.with_setup_cell(once) == once, "a second run must change nothing"
    stale = json.loads(json.dumps(once))
    stale["cells"][1]["source"] = "# an older set-up cell\n"
    stale["cells"] = [stale["cells"][0], stale["cells"][2], stale["cells"][1]]  # moved, too
    assert not colab.has_current_cell(stale)
    assert colab.with_setup_cell(stale) == once
    untitled = colab.with_setup_cell(_nb([_code("x = 1", "c001")]))
    assert [c["id"] for c in untitled["cells"]] == ["setup", "c001"]


def test_apply_rewrites_a_file_only_when_it_changes(tmp_path):
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(_nb([_md("# T", "a")])))
    assert colab.apply(path) is True
    assert colab.apply(path) is False
    assert colab.main(["--check", str(path)]) == 0
    other = tmp_path / "m.ipynb"
    other.write_text(json.dumps(_nb([_md("# T", "a")])))
    assert colab.main(["--check", str(other)]) == 1


def test_the_cell_does_nothing_where_the_course_is_installed():
    # The course's lab: minigrad and graphviz import, dot is on PATH. Nothing is printed.
    assert shutil.which("dot"), "the tests need Graphviz's dot"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MINIGRAD_INSTALL": "/nonexistent.whl"}
    run = subprocess.run([sys.executable, "-c", colab.SOURCE], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "" and run.stderr == "", (run.stdout, run.stderr)


def test_the_cell_leaves_no_names_behind():
    space: dict = {}
    exec(compile(colab.SOURCE, "setup", "exec"), space)
    assert set(space) == {"__builtins__"}, sorted(space)


@needs_notebooks
def test_every_notebook_carries_the_current_set_up_cell():
    stale = [p.name for p in NOTEBOOKS if not colab.has_current_cell(json.loads(p.read_text()))]
    assert not stale, f"run: python tools/colab.py notebooks/*.ipynb (stale: {stale})"


@needs_notebooks
def test_the_published_student_notebooks_are_in_step_with_the_reference():
    # Colab opens student/NN_*.ipynb from GitHub; `make publish-student` writes them.
    names = sorted(p.name for p in STUDENT.glob("*.ipynb"))
    assert names == [p.name for p in NOTEBOOKS], "run: make publish-student"
    for path in NOTEBOOKS:
        want = make_student.student_notebook(json.loads(path.read_text()), path.name)
        got = json.loads((STUDENT / path.name).read_text())
        assert got == want, f"student/{path.name} is out of date: run make publish-student"
        text = (STUDENT / path.name).read_text()
        assert make_student.BEGIN not in text and make_student.END not in text


@needs_notebooks
def test_readme_and_site_link_every_notebook_and_its_student_version_to_colab():
    readme = (ROOT / "README.md").read_text()
    front = (ROOT / "docs" / "index.md").read_text()
    for path in NOTEBOOKS:
        for url in (colab.colab_url(f"notebooks/{path.name}"), colab.colab_url(f"student/{path.name}")):
            assert url in readme, f"README.md lacks the Colab link {url}"
            assert url in front, f"docs/index.md lacks the Colab link {url}"


# ------------------------------------------------------------ a fresh runtime, as on Colab

@pytest.fixture(scope="session")
def colab_runtime(tmp_path_factory):
    """(python, wheel): a fresh venv with only the wheel's dependencies and a kernel; the wheel."""
    base = tmp_path_factory.mktemp("colab")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "LICENSE-CONTENT", "docs/pypi.md"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "minigrad", src / "minigrad", ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index",
                            "--no-build-isolation", "-w", str(base / "dist"), str(src)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    (wheel,) = (base / "dist").glob("minigrad_course-*.whl")
    venv = base / "venv"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # no checkout on the path
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300, env=env)
    python = venv / "bin" / "python"
    constraints = ["-c", str(ROOT / "constraints.txt")] if (ROOT / "constraints.txt").exists() else []
    deps = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *constraints,
                           "numpy", "matplotlib", "graphviz", "ipykernel"],
                          capture_output=True, text=True, timeout=600, env=env)
    if deps.returncode != 0:
        pytest.skip(f"could not install NumPy, Matplotlib, graphviz and ipykernel into a fresh venv "
                    f"(no package index?): {deps.stderr[-500:]}")
    check = subprocess.run([str(python), "-c", "import minigrad"], capture_output=True, cwd=base, env=env)
    assert check.returncode != 0, "the fresh venv must not see minigrad before the set-up cell runs"
    return python, wheel


def _run_to_first_exercise(nb_path, python, wheel, folder, monkeypatch):
    """Run the notebook, alone in ``folder``, with the set-up cell, up to its first exercise."""
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    folder.mkdir()
    nb = colab.with_setup_cell(json.loads(nb_path.read_text()))
    first = next(k for k, c in enumerate(nb["cells"]) if make_student.is_exercise(c)
                 or "raise NotImplementedError" in colab._source(c))
    nb["cells"] = nb["cells"][:first + 1] + [_code("import minigrad\nprint(minigrad.__file__)", "where")]
    (folder / nb_path.name).write_text(json.dumps(nb))
    kernels = folder.parent / f"{folder.name}-jupyter" / "kernels" / "fresh"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "fresh runtime", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(kernels.parent.parent))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setenv("MINIGRAD_INSTALL", str(wheel))
    book = nbformat.read(str(folder / nb_path.name), as_version=4)
    client = nbclient.NotebookClient(book, kernel_name="fresh", timeout=600, allow_errors=True,
                                     resources={"metadata": {"path": str(folder)}})
    client.execute()
    assert sorted(os.listdir(folder)) == [nb_path.name], "the notebook ran alone in its folder"
    return book.cells, first


def _errors(cell):
    return [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]


@pytest.mark.slow
@needs_notebooks
def test_a_reference_and_a_student_notebook_run_on_a_fresh_runtime(colab_runtime, tmp_path, monkeypatch):
    python, wheel = colab_runtime
    reference = ROOT / "notebooks" / "01_computation_graphs.ipynb"
    cells, first = _run_to_first_exercise(reference, python, wheel, tmp_path / "ref", monkeypatch)
    setup = cells[1]
    assert setup["id"] == "setup"
    printed = "".join(o.get("text", "") for o in setup["outputs"])
    assert "Installing" in printed, f"the set-up cell should have installed the wheel: {printed!r}"
    for k, cell in enumerate(cells):
        assert not _errors(cell), f"reference cell {k} failed: {_errors(cell)}"
    where = "".join(o.get("text", "") for o in cells[-1]["outputs"])
    assert str(python.parent.parent) in where and str(ROOT) not in where, where

    student = make_student.student_notebook(json.loads((ROOT / "notebooks" / "00_the_training_loop.ipynb")
                                                       .read_text()))
    spath = tmp_path / "00_the_training_loop.ipynb"
    spath.write_text(json.dumps(student))
    cells, first = _run_to_first_exercise(spath, python, wheel, tmp_path / "stu", monkeypatch)
    for k, cell in enumerate(cells[:first]):
        assert not _errors(cell), f"student cell {k} failed before the first exercise: {_errors(cell)}"
    assert [e["ename"] for e in _errors(cells[first])] == ["NotImplementedError"], \
        "the first exercise of the student version should stop at raise NotImplementedError"
