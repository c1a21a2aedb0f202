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
