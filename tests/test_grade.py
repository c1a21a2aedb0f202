"""The autograder (tools/grade.py on otter-grader): make assign, make grade.

One grading run over a folder of submissions to notebook 15 (eight exercises,
seven of them graded), each a way a real submission goes: the reference, one
wrong exercise, the student version as handed out (every exercise raises), an
exercise that loops forever, the checks deleted with a wrong exercise, a file
that is not a notebook, and a student who handed nothing in.

Every notebook with exercises has its questions in grading/: each calls the
notebook's check module (minigrad.checks.nbNN), the visible test as the
notebook does, the hidden ones on inputs of their own; none repeats a check's
logic. The slowest test (make slow, in make e2e) grades the reference of every notebook: full marks.
"""

import csv
import importlib.util
import inspect
import json
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NB = ROOT / "notebooks" / "15_self_check.ipynb"
pytestmark = [
    pytest.mark.skipif(not NB.exists() or not (ROOT / "grading").is_dir(),
                       reason="the notebooks and grading/ are not here (an sdist?)"),
]
# Not installed: skip (pip install '.[grading]'). Installed but broken: fail, with the error.
if importlib.util.find_spec("otter") is None:
    pytest.skip("otter-grader is not installed: pip install '.[grading]'", allow_module_level=True)
import otter  # noqa: E402,F401

sys.path.insert(0, str(ROOT / "tools"))
import grade  # noqa: E402
import make_student  # noqa: E402

POINTS = {"q1": 2, "q2": 2, "q3": 1, "q4": 4, "q5": 2, "q6": 2, "q7": 2, "q8": 2}
CELL_TIMEOUT = 15


def _cells(nb):
    return nb["cells"]


def _src(cell):
    s = cell["source"]
    return "".join(s) if isinstance(s, list) else s


def _edit(nb, cell_id, old, new):
    nb = json.loads(json.dumps(nb))
    (cell,) = [c for c in _cells(nb) if c.get("id") == cell_id]
    assert old in _src(cell), (cell_id, old)
    cell["source"] = _src(cell).replace(old, new, 1)
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("grading")
    zips = grade.assign(base / "assign")
    assert {z.name for z in zips} >= {"15_self_check.zip"}
    ref = json.loads(NB.read_text())
    subs = base / "submissions"

    def put(student, nb, name=NB.name):
        (subs / student).mkdir(parents=True)
        path = subs / student / name
        if isinstance(nb, str):
            path.write_text(nb)
        else:
            path.write_text(json.dumps(nb))

    put("reference", ref, name="15_self_check (1).ipynb")   # a renamed download is still found
    put("one_wrong", _edit(ref, "nb15-10", "paths = [0.7, 0.7, 3.0, np.exp(0.7)]",
                           "paths = [0.7, 0.7, 3.0, 2.0]"))
    put("as_handed_out", make_student.student_notebook(ref))
    put("loops", _edit(ref, "nb15-10", "# BEGIN SOLUTION\n", "# BEGIN SOLUTION\nwhile True:\n    pass\n"))
    no_checks = _edit(ref, "nb15-04", "    return sorted(ops)",
                      "    return sorted(ops) + ['accumulate_grad']")
    no_checks["cells"] = [c for c in no_checks["cells"]
                          if not _src(c).startswith(("# Checks for", "# The demonstrations"))]
    assert len(no_checks["cells"]) < len(ref["cells"]) - 8
    put("no_checks", no_checks)
    put("not_a_notebook", "this is not JSON {")
    (subs / "nothing").mkdir()
    out = base / "grades"
    rows = grade.grade(subs, base / "assign" / "autograder", out, timeout=900, cell_timeout=CELL_TIMEOUT,
                       jobs=2)
    table = {r["student"]: r for r in csv.DictReader(open(out / "15_self_check.csv"))}
    return {"rows": {r["student"]: r for r in rows["15_self_check"]}, "csv": table, "out": out,
            "assign": base / "assign"}


def _scores(row):
    return {q: float(row[q]) for q in POINTS}


def test_the_reference_gets_full_marks(graded):
    row = graded["csv"]["reference"]
    assert _scores(row) == POINTS, row
    assert float(row["total"]) == float(row["possible"]) == sum(POINTS.values()), row
    assert graded["rows"]["reference"]["errors"] == [], graded["rows"]["reference"]["errors"]


def test_one_wrong_exercise_loses_exactly_its_points(graded):
    assert _scores(graded["csv"]["one_wrong"]) == {**POINTS, "q3": 0}
    feedback = (graded["out"] / "feedback" / "one_wrong" / "15_self_check.md").read_text()
    assert "## q3: 0 of 1" in feedback and "visible test the_notebooks_check: failed" in feedback
    # The check's message says what is off, and the notebook's own check of Q3 failed too.
    assert "your paths add up to 6.400000" in feedback and "AssertionError" in feedback


def test_the_handed_out_version_scores_zero_and_says_why(graded):
    row = graded["csv"]["as_handed_out"]
    assert _scores(row) == dict.fromkeys(POINTS, 0), row
    errors = graded["rows"]["as_handed_out"]["errors"]
    assert sum("NotImplementedError" in e for e in errors) >= len(POINTS), errors


def test_an_endless_loop_costs_its_exercise_only(graded):
    assert _scores(graded["csv"]["loops"]) == {**POINTS, "q3": 0}
    errors = graded["rows"]["loops"]["errors"]
    assert any("TimeoutError" in e and f"{CELL_TIMEOUT} s" in e for e in errors), errors


def test_deleting_the_checks_hides_nothing(graded):
    assert _scores(graded["csv"]["no_checks"]) == {**POINTS, "q1": 0}
    feedback = (graded["out"] / "feedback" / "no_checks" / "15_self_check.md").read_text()
    assert "## q1: 0 of 2" in feedback and "visible test" in feedback


def test_broken_and_missing_submissions_are_graded_zero_with_a_reason(graded):
    broken, missing = graded["csv"]["not_a_notebook"], graded["csv"]["nothing"]
    assert float(broken["total"]) == 0 and "not a readable notebook" in broken["note"]
    assert float(missing["total"]) == 0 and missing["note"] == "no submission"
    assert (graded["out"] / "feedback" / "not_a_notebook" / "15_self_check.md").exists()


def test_feedback_withholds_what_hidden_tests_check(graded):
    feedback = (graded["out"] / "feedback" / "as_handed_out" / "15_self_check.md").read_text()
    lines = feedback.splitlines()
    hidden = [k for k, line in enumerate(lines) if line.startswith("- hidden test")]
    assert hidden and all(lines[k].endswith(": failed") for k in hidden), feedback
    # A failed hidden test says only that: no message, no input of its own.
    after = [lines[k + 1] if k + 1 < len(lines) else "" for k in hidden]
    assert all(not line or line.startswith(("- ", "## ")) for line in after), feedback
    assert "seed=" not in feedback and "2315" not in feedback
    assert "hidden test other_arrays: failed" in feedback
    right = (graded["out"] / "feedback" / "reference" / "15_self_check.md").read_text()
    assert "hidden test other_arrays: passed" in right and "visible test the_notebooks_check: passed" in right


def _hidden_test_lines():
    from otter.test_files import create_test_file

    lines = set()
    for path in (ROOT / "grading").glob("*/*.py"):
        for tc in create_test_file(str(path), None).test_cases:
            if tc.hidden:
                body = inspect.getsource(tc.body.test_func).splitlines()[1:]
                lines.update(line.strip() for line in body if len(line.strip()) > 30)
    return lines


def test_a_student_notebook_holds_no_hidden_test(graded):
    # What the hidden tests add (their lines that the reference notebook does not hold, such as their
    # own inputs and seeds) appears in no notebook a student gets: not in make assign's, not in student/.
    reference = "".join(p.read_text() for p in (ROOT / "notebooks").glob("*.ipynb"))
    own = {line for line in _hidden_test_lines() if line not in reference}
    assert len(own) > 10 and any("2315" in line for line in own)
    handed_out = [graded["assign"] / "student" / f"{p.name}.ipynb"
                  for p in ROOT.joinpath("grading").iterdir() if p.is_dir()]
    handed_out += sorted((ROOT / "student").glob("*.ipynb"))
    for path in handed_out:
        text = path.read_text()
        leaked = [line for line in own if line in text]
        assert not leaked, f"{path.name} shows hidden test code: {leaked[:3]}"
        assert "otter" not in text and "test_case" not in text, f"{path.name} carries grading material"


def test_a_notebook_that_outlives_the_total_limit_is_stopped(graded, tmp_path):
    # A loop that swallows the per-cell TimeoutError: only the limit on the whole run stops it.
    nb = {"cells": [{"cell_type": "code", "id": "a", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": "import time\nwhile True:\n    try:\n        time.sleep(60)\n"
                               "    except BaseException:\n        pass\n"}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "01_computation_graphs.ipynb"
    path.write_text(json.dumps(nb))
    z = graded["assign"] / "autograder" / "01_computation_graphs.zip"
    res = grade.grade_one(path, z, [("predicted_ops", 2)], timeout=20, cell_timeout=5)
    assert res["scores"] == {"predicted_ops": 0.0} and res["note"].startswith("timed out"), res


def test_grade_refuses_a_folder_without_autograders(tmp_path):
    (tmp_path / "subs" / "a").mkdir(parents=True)
    assert grade.main(["grade", str(tmp_path / "subs"), "--autograder", str(tmp_path)]) == 1


# ------------------------------------------------- every notebook's questions
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _check_calls(nb_path):
    """The names of the check functions (nbNN.check_...) a notebook's code cells call."""
    import re

    nb = json.loads(nb_path.read_text())
    return {m.group(1) for c in nb["cells"] if c["cell_type"] == "code"
            for m in re.finditer(r"\bnb\d\d\.(check_\w+)\(", _src(c))}


def _tests_of(folder):
    from otter.test_files import create_test_file

    return {path.name: create_test_file(str(path), None) for path in sorted(folder.glob("*.py"))}


def test_every_notebooks_exercises_are_graded_by_its_check_module():
    import ast

    graded_notebooks = 0
    for nb_path in NOTEBOOKS:
        checks = _check_calls(nb_path)
        folder = ROOT / "grading" / nb_path.stem
        if not checks:
            assert not folder.exists(), f"{folder.name} grades a notebook without exercise checks"
            continue
        graded_notebooks += 1
        assert folder.is_dir(), f"{nb_path.name} has exercise checks ({sorted(checks)}), no grading/ folder"
        module = f"minigrad.checks.nb{nb_path.name[:2]}"
        called, hidden = set(), 0
        for name, test in _tests_of(folder).items():
            source = (folder / name).read_text()
            tree = ast.parse(source)
            assert not any(isinstance(n, ast.Assert) for n in ast.walk(tree)), \
                f"{folder.name}/{name} asserts by itself: call the check module instead"
            assert f'"{module}"' in source, f"{folder.name}/{name} does not use {module}"
            for tc in test.test_cases:
                body = inspect.getsource(tc.body.test_func)
                used = {n.attr for n in ast.walk(ast.parse(body.strip()))
                        if isinstance(n, ast.Attribute) and n.attr.startswith("check_")}
                assert used, f"{folder.name}/{name}: {tc.name} calls no check of {module}"
                called |= used
                hidden += tc.hidden
        assert called == checks, (folder.name, sorted(checks - called), sorted(called - checks))
        assert hidden, f"{folder.name}: no hidden test"
    assert graded_notebooks == 16


def test_a_hidden_test_calls_its_check_on_inputs_the_notebook_does_not_use():
    # Where a check draws its inputs (seed=) or is given its cases, the hidden test passes others.
    import ast

    for folder in sorted((ROOT / "grading").iterdir()):
        for name, test in _tests_of(folder).items():
            for tc in (t for t in test.test_cases if t.hidden):
                calls = [n for n in ast.walk(ast.parse(inspect.getsource(tc.body.test_func).strip()))
                         if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                         and n.func.attr.startswith("check_")]
                visible = [t for t in test.test_cases if not t.hidden]
                vis_calls = [n for t in visible
                             for n in ast.walk(ast.parse(inspect.getsource(t.body.test_func).strip()))
                             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                             and n.func.attr.startswith("check_")]
                assert calls and all(ast.dump(c) not in {ast.dump(v) for v in vis_calls} for c in calls), \
                    f"{folder.name}/{name}: hidden test {tc.name} repeats the visible check"


@pytest.mark.whole_course
def test_the_reference_of_every_notebook_gets_full_marks(tmp_path):
    graded_dirs = [d for d in (ROOT / "grading").iterdir() if d.is_dir()]
    zips = grade.assign(tmp_path / "assign")
    assert len(zips) == len(graded_dirs)
    subs = tmp_path / "submissions" / "reference"
    subs.mkdir(parents=True)
    for d in graded_dirs:
        (subs / f"{d.name}.ipynb").write_text((ROOT / "notebooks" / f"{d.name}.ipynb").read_text())
    rows = grade.grade(tmp_path / "submissions", tmp_path / "assign" / "autograder", tmp_path / "grades",
                       timeout=900, cell_timeout=300, jobs=2)
    assert set(rows) == {d.name for d in graded_dirs}
    for notebook, (row,) in rows.items():
        assert row["note"] == "" and row["total"] == row["possible"] > 0, (notebook, row)
        assert row["errors"] == [], (notebook, row["errors"])
        feedback = (tmp_path / "grades" / "feedback" / "reference" / f"{notebook}.md").read_text()
        assert "failed" not in feedback, feedback
