"""Every notebook as saved: run top to bottom, no errors, a picture, checks at the end.

nbval (in `make test`) re-runs them and compares outputs; this checks the shape
of what is committed, so a notebook saved half-run is caught at once.
"""

import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def test_there_are_notebooks_numbered_from_00():
    assert NOTEBOOKS and NOTEBOOKS[0].name.startswith("00_")
    numbers = [int(p.name[:2]) for p in NOTEBOOKS]
    assert numbers == list(range(len(numbers))), f"numbers should run 00, 01, ... without gaps: {numbers}"


def test_readme_lists_exactly_the_notebooks_there_are():
    # The README's table is the course's list: a listed notebook that is missing is a gap.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = sorted(set(re.findall(r"\(notebooks/([0-9][0-9]_[^)]+\.ipynb)\)", readme)))
    assert listed == [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_as_restart_and_run_all(path):
    cells = code_cells(load(path))
    counts = [c["execution_count"] for c in cells]
    assert counts == list(range(1, len(cells) + 1)), "run `make execute` and commit"
    errors = [o for c in cells for o in c["outputs"] if o["output_type"] == "error"]
    assert not errors


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_has_a_picture_and_ends_with_checks(path):
    nb = load(path)
    cells = code_cells(nb)
    mimes = {k for c in cells for o in c["outputs"] for k in o.get("data", {})}
    assert mimes & {"image/png", "image/svg+xml"}, "no picture"
    tail = "".join("".join(c["source"]) for c in cells[-3:])
    assert re.search(r"^\s*assert ", tail, re.M), "the last cells should check results"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_machine_specific_text_in_outputs(path):
    text = json.dumps([c["outputs"] for c in code_cells(load(path))])
    assert str(ROOT) not in text and "/home/" not in text and "/tmp/" not in text
    assert not re.search(r"at 0x[0-9a-f]{8,}", text), "a memory address leaks into an output"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_solution_markers_are_balanced(path):
    src = ["".join(c["source"]) for c in code_cells(load(path))]
    for s in src:
        assert s.count("# BEGIN SOLUTION") == s.count("# END SOLUTION")


# ------------------------------------------------------- friendly to git


def _tool(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


strip_notebooks = _tool("strip_notebooks")
shrink_pngs = _tool("shrink_pngs")
MAX_NOTEBOOK_BYTES = 500 * 1024


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_is_valid_nbformat(path):
    import nbformat

    nb = nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    ids = [c.get("id") for c in nb.cells]
    assert None not in ids and len(set(ids)) == len(ids), "cell ids must be present and unique"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_records_no_run_timestamps(path):
    timed = [k for k, c in enumerate(load(path)["cells"])
             if set(c.get("metadata", {})) & set(strip_notebooks.TIMING_KEYS)]
    assert not timed, f"cells {timed} carry timestamps: run tools/strip_notebooks.py"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_keeps_each_stream_in_one_output(path):
    split = [k for k, c in enumerate(load(path)["cells"]) if strip_notebooks.coalesce_streams(c)]
    assert not split, f"cells {split} print into several outputs of one stream: run tools/strip_notebooks.py"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_is_small_enough_for_git(path):
    size = path.stat().st_size
    assert size <= MAX_NOTEBOOK_BYTES, \
        f"{size // 1024} KB > {MAX_NOTEBOOK_BYTES // 1024} KB: run tools/shrink_pngs.py, or draw less"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_figures_are_saved_as_palette_pngs(path):
    changed, saved = shrink_pngs.shrink(load(path))
    assert changed == 0, f"{changed} PNGs could be {saved // 1024} KB smaller: run tools/shrink_pngs.py"


def test_make_execute_keeps_notebooks_clean():
    make = (ROOT / "Makefile").read_text()
    recipe = make.split("\nexecute:", 1)[1].split("\n\n", 1)[0]
    assert "--ExecutePreprocessor.record_timing=False" in recipe
    assert "tools/strip_notebooks.py" in recipe and "tools/shrink_pngs.py" in recipe


# ------------------------------------------------------- the two tools


def _notebook(cells):
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _figure_png(transparent=False):
    import io

    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    x = np.linspace(0, 6, 200)
    for k in range(3):
        ax.plot(x, np.sin(x + k), label=f"k = {k}")
    ax.legend()
    ax.set_title("a figure")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", transparent=transparent)
    plt.close(fig)
    return buf.getvalue()


def test_strip_removes_timings_only_and_is_idempotent(tmp_path):
    cell = {"cell_type": "code", "id": "a", "source": "1", "outputs": [], "execution_count": 1,
            "metadata": {"tags": ["x"], "execution": {"iopub.status.busy": "2026-01-01T00:00:00Z"},
                         "ExecuteTime": {"end_time": "2026-01-01"}}}
    path = tmp_path / "nb.ipynb"
    path.write_text(strip_notebooks.dumps(_notebook([cell])))
    assert strip_notebooks.main(["--check", str(path)]) == 1
    assert strip_notebooks.main([str(path)]) == 0
    once = path.read_text()
    assert json.loads(once)["cells"][0]["metadata"] == {"tags": ["x"]}
    assert strip_notebooks.main(["--check", str(path)]) == 0
    strip_notebooks.main([str(path)])
    assert path.read_text() == once


def test_strip_joins_a_stream_split_across_outputs_and_nothing_else(tmp_path):
    def stream(name, text):
        return {"output_type": "stream", "name": name, "text": text}

    outputs = [stream("stdout", ["a\n", "b"]), stream("stdout", ["c\n"]), stream("stderr", ["w\n"]),
               stream("stderr", "x\n"), {"output_type": "execute_result", "data": {"text/plain": ["1"]},
                                          "metadata": {}, "execution_count": 1}, stream("stdout", ["d\n"])]
    cell = {"cell_type": "code", "id": "a", "source": "1", "outputs": outputs, "execution_count": 1,
            "metadata": {}}
    path = tmp_path / "nb.ipynb"
    path.write_text(strip_notebooks.dumps(_notebook([cell])))
    assert strip_notebooks.main(["--check", str(path)]) == 1
    strip_notebooks.main([str(path)])
    got = json.loads(path.read_text())["cells"][0]["outputs"]
    assert [(o["output_type"], o.get("name")) for o in got] == [
        ("stream", "stdout"), ("stream", "stderr"), ("execute_result", None), ("stream", "stdout")]
    assert got[0]["text"] == ["a\n", "bc\n"] and got[1]["text"] == ["w\n", "x\n"]
    assert strip_notebooks.main(["--check", str(path)]) == 0


def test_strip_leaves_a_clean_notebook_byte_for_byte(tmp_path):
    path = tmp_path / NOTEBOOKS[0].name
    path.write_bytes(NOTEBOOKS[0].read_bytes())
    assert strip_notebooks.dumps(load(path)) == path.read_text(encoding="utf-8"), \
        "the tools must write notebooks in nbformat's own layout"


@pytest.mark.parametrize("transparent", [False, True])
def test_shrink_makes_a_palette_png_deterministically(transparent):
    import base64
    import io

    import numpy as np
    from PIL import Image

    png = _figure_png(transparent)
    nb = _notebook([{"cell_type": "code", "id": "a", "source": "", "execution_count": 1, "metadata": {},
                     "outputs": [{"output_type": "display_data", "metadata": {},
                                  "data": {"image/png": base64.b64encode(png).decode() + "\n",
                                           "text/plain": "<Figure>"}}]}])
    twin = json.loads(json.dumps(nb))
    assert shrink_pngs.shrink(nb)[0] == 1 and shrink_pngs.shrink(twin)[0] == 1
    assert nb == twin, "the same figure must give the same bytes"
    encoded = nb["cells"][0]["outputs"][0]["data"]["image/png"]
    assert encoded.endswith("\n")
    small = base64.b64decode(encoded)
    assert len(small) < len(png) / 2
    before, after = Image.open(io.BytesIO(png)), Image.open(io.BytesIO(small))
    assert before.mode == "RGBA" and after.mode == "P" and after.size == before.size
    assert "Software" in before.info and "Software" not in after.info
    a = np.asarray(before.convert("RGBA"), dtype=int)
    b = np.asarray(after.convert("RGBA"), dtype=int)
    if transparent:
        assert (b[..., 3] == 0).any() and (b[..., 3] == 255).any(), "transparency must survive"
    else:
        assert (b[..., 3] == 255).all()
        assert np.abs(a - b).mean() < 0.5, "the palette must look the same"
        assert (b[0, 0] == 255).all(), "the white background must stay white"
    assert shrink_pngs.shrink(nb) == (0, 0), "a second run must change nothing"
