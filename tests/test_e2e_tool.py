"""The browser check's own logic: which cells must show a graph."""

import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("e2e", ROOT / "tools" / "e2e.py")
e2e = importlib.util.module_from_spec(spec)
spec.loader.exec_module(e2e)


@pytest.mark.parametrize("src, draws", [
    ("draw_graph(loss)", True),
    ("g = trace(f, x)\ng.draw()", True),
    ("minigrad.viz.draw_graph(loss, show_grads=True)", True),
    ("g = draw_graph(loss)", False),
    ("print(draw_graph(loss).source)", False),
    ("x = 1 +", False),
])
def test_which_cells_draw_a_graph(src, draws):
    assert e2e.draws_a_graph(src) is draws


def test_a_graph_cell_without_its_picture_is_reported(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": ["draw_graph(loss)"], "outputs": [
        {"output_type": "execute_result", "data": {"text/plain": "digraph {}"}}]}]}
    path = tmp_path / "01_x.ipynb"
    path.write_text(json.dumps(nb))
    with pytest.raises(e2e.Failure, match="code cell 1 ends by drawing a graph"):
        e2e.expected(path)


def test_every_saved_notebook_meets_its_own_expectations():
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        exp = e2e.expected(path)
        assert exp["svg"] + exp["png"] > 0, path.name
