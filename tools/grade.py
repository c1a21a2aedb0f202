"""Autograding with otter-grader, locally and without Docker: `make assign`, `make grade`.

    python tools/grade.py assign [--out build/assign]
    python tools/grade.py grade SUBMISSIONS [--autograder build/assign/autograder] [--out build/grades]

**assign** writes, for every notebook that has tests in ``grading/<notebook>/``:

- ``student/<notebook>.ipynb``: the student version (``tools/make_student.py``:
  solutions blanked, outputs cleared). It keeps the notebook's own checks, the
  visible ones; the hidden tests are not in it;
- ``autograder/<notebook>.zip``: an otter-grader autograder (``otter generate``)
  holding the tests of ``grading/<notebook>/``, hidden ones included.

A file in ``grading/<notebook>/`` is one question, in otter's exception-based
format: ``name``, ``points``, and test functions decorated with
``@test_case(hidden=...)`` whose arguments are looked up by name among the
notebook's globals once it has run (``env`` gives all of them). The tests call
the notebook's check module, ``minigrad.checks.nbNN`` (a fresh copy of it, so
a submission cannot swap its functions): the visible test as the notebook
does, the hidden one on inputs of its own (``seed=``, ``cases=``). A question
is all-or-nothing, so a wrong exercise loses exactly its points. To grade
another exercise, add a file.

**grade** grades ``SUBMISSIONS/<student>/<notebook>.ipynb`` (one folder per
student; a notebook is matched to its autograder by its two-digit number, so a
renamed download such as ``15_self_check (1).ipynb`` is still found). Each
submission runs with ``otter run`` (no container) in its own process, under
two limits: ``--cell-timeout`` seconds per cell (a cell that runs longer raises
``TimeoutError`` there, and the notebook goes on) and ``--timeout`` seconds in
all (then the process is stopped and the submission gets 0 with that reason);
``--jobs`` grades that many submissions at once (of any notebooks).
A submission that raises, loops, deletes its checks or is not a notebook at all
is graded like any other: its failure is written down, never hidden, and the
grader goes on. Written to ``--out``:

- ``<notebook>.csv``: one row per student, the points of each question, the
  total, the points possible and a note (timed out, not a notebook, ...);
- ``feedback/<student>/<notebook>.md``: per question the points, each visible
  test's message, and for hidden tests only whether they passed; then the
  errors the notebook's cells raised.

The submission's code runs with the grader's rights, as in any autograder
without a container: grade in a throw-away account or machine when that
matters.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
GRADING = ROOT / "grading"
sys.path.insert(0, str(ROOT / "tools"))
import make_student  # noqa: E402

GUARD_ID = "grading-guard"
GUARD = """\
# Inserted by the grader: a cell that runs longer than {limit} s raises TimeoutError.
def _grading_guard(limit={limit}):
    import signal

    def expire(signum, frame):
        signal.alarm(limit)  # armed again: a later endless call in the same cell is stopped too
        raise TimeoutError(f"this cell ran longer than {{limit}} s, the grader's limit for one cell")

    shell = get_ipython()
    signal.signal(signal.SIGALRM, expire)
    shell.events.register("pre_run_cell", lambda *info: signal.alarm(limit))
    shell.events.register("post_run_cell", lambda *result: signal.alarm(0))


_grading_guard()
del _grading_guard
"""


class GradingError(RuntimeError):
    """A problem with the grader's own set-up (not with a submission)."""


def _otter() -> list[str]:
    exe = pathlib.Path(sys.executable).with_name("otter")
    if not exe.exists():
        raise GradingError("otter-grader is not installed: pip install '.[grading]' (make assign does it)")
    return [str(exe)]


def assignments(grading: pathlib.Path = GRADING) -> list[pathlib.Path]:
    """The folders of grading/ that hold at least one question."""
    return sorted(d for d in grading.iterdir() if d.is_dir() and list(d.glob("*.py")))


def questions(tests: pathlib.Path) -> list[tuple[str, float]]:
    """(name, points) of each question file in ``tests``, in file order."""
    from otter.test_files import create_test_file  # noqa: PLC0415

    out = []
    for path in sorted(tests.glob("*.py")):
        if path.name == "__init__.py":
            continue
        test = create_test_file(str(path), None)
        out.append((test.name, test.possible))
    return out


def assign(out: pathlib.Path, notebooks: pathlib.Path = ROOT / "notebooks",
           grading: pathlib.Path = GRADING) -> list[pathlib.Path]:
    """Write out/student/*.ipynb and out/autograder/*.zip; returns the autograders."""
    folders = assignments(grading)
    if not folders:
        raise GradingError(f"no questions in {grading}")
    plan = []
    for folder in folders:  # check everything first
        nb_path = notebooks / f"{folder.name}.ipynb"
        if not nb_path.exists():
            raise GradingError(f"{folder} grades {nb_path.name}, which does not exist")
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        plan.append((folder, nb_path, make_student.student_notebook(nb, nb_path.name), questions(folder)))
    (out / "student").mkdir(parents=True, exist_ok=True)
    (out / "autograder").mkdir(parents=True, exist_ok=True)
    zips = []
    for folder, nb_path, student, qs in plan:
        (out / "student" / nb_path.name).write_text(json.dumps(student, indent=1, ensure_ascii=False) + "\n",
                                                    encoding="utf-8")
        target = (out / "autograder" / f"{folder.name}.zip").resolve()
        target.unlink(missing_ok=True)
        with tempfile.TemporaryDirectory() as tmp:  # otter generate looks for config files in its cwd
            run = subprocess.run([*_otter(), "generate", "-t", str(folder.resolve()), "-o", str(target),
                                  "--no-config", "--no-requirements", "--no-environment"],
                                 cwd=tmp, capture_output=True, text=True)
        if run.returncode != 0 or not target.exists():
            raise GradingError(f"otter generate failed for {folder.name}:\n{run.stdout}\n{run.stderr}")
        zips.append(target)
        total = sum(p for _, p in qs)
        print(f"assign: {nb_path.name}: {len(qs)} questions, {total:g} points; autograder {target}")
    return zips


# ---------------------------------------------------------------------- grading

def _guarded(path: pathlib.Path, dest: pathlib.Path, cell_timeout: int) -> str | None:
    """Copy the submission to ``dest`` with the guard cell first; a reason if it is not a notebook."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb["cells"]
        if not isinstance(cells, list):
            raise TypeError("cells is not a list")
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        return f"not a readable notebook ({type(e).__name__}: {e})"
    guard = {"cell_type": "code", "id": GUARD_ID, "metadata": {}, "outputs": [], "execution_count": None,
             "source": GUARD.format(limit=int(cell_timeout))}
    nb["cells"] = [guard] + [c for c in cells if isinstance(c, dict) and c.get("id") != GUARD_ID]
    nb.setdefault("metadata", {})["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                                   "language": "python"}
    dest.write_text(json.dumps(nb), encoding="utf-8")
    return None


def _cell_errors(notebook) -> list[str]:
    """'cell N (id): Name: message' for each cell of the executed notebook that raised."""
    errors = []
    if notebook is None:
        return errors
    k = 0
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        src = "".join(cell.get("source", ""))
        if cell.get("id") == GUARD_ID or "init_grading_mode" in src or "GradingResults" in src:
            continue  # the grader's own cells
        k += 1
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                errors.append(f"code cell {k} ({cell.get('id', '?')}): {out.get('ename')}: "
                              f"{str(out.get('evalue', ''))[:300]}")
    return errors


def grade_one(submission: pathlib.Path, autograder: pathlib.Path, qs: list[tuple[str, float]],
              timeout: int, cell_timeout: int) -> dict:
    """Grade one notebook; never raises for a bad submission. Returns scores and feedback lines."""
    result = {"scores": {name: 0.0 for name, _ in qs}, "note": "", "feedback": {}, "errors": []}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        sub = tmp / "submission.ipynb"
        reason = _guarded(submission, sub, cell_timeout)
        if reason:
            result["note"] = reason
            return result
        (tmp / "out").mkdir()
        # Its own process group, so that a timeout stops the kernel too, not only otter.
        proc = subprocess.Popen([*_otter(), "run", "-a", str(autograder), "-o", str(tmp / "out"), "-p",
                                 "--no-logo", str(sub)], cwd=tmp, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            result["note"] = f"timed out: grading took longer than {timeout} s in all, so it was stopped"
            return result
        run = subprocess.CompletedProcess(proc.args, proc.returncode, "", stderr)
        pkl = tmp / "results.pkl"  # otter run -p writes it in its working folder
        if run.returncode != 0 or not pkl.exists():
            result["note"] = f"the autograder failed (exit {run.returncode}): {run.stderr.strip()[-500:]}"
            return result
        import dill  # otter's own pickler (it comes with otter-grader)  # noqa: PLC0415

        with open(pkl, "rb") as f:
            graded = dill.load(f)
        result["errors"] = _cell_errors(getattr(graded, "notebook", None))
        if graded.has_catastrophic_failure():
            result["note"] = f"the notebook could not be graded: {graded.catastrophic_error}"
            return result
        for name, _ in qs:
            if name not in graded.results:
                result["feedback"][name] = ["not graded: the tests did not run"]
                continue
            tf = graded.results[name]
            result["scores"][name] = float(tf.score)
            lines = []
            for tcr in tf.test_case_results:
                tc = tcr.test_case
                if tc.hidden:
                    lines.append(f"hidden test {tc.name}: {'passed' if tcr.passed else 'failed'}")
                else:
                    lines.append(f"visible test {tc.name}: "
                                 + ("passed" if tcr.passed else "failed\n" + str(tcr.message).strip()))
            result["feedback"][name] = lines
    return result


def _number(path: pathlib.Path) -> str | None:
    m = re.match(r"(\d\d)_", path.name)
    return m.group(1) if m else None


def grade(submissions: pathlib.Path, autograders: pathlib.Path, out: pathlib.Path,
          timeout: int = 1800, cell_timeout: int = 300, jobs: int = 1) -> dict[str, list[dict]]:
    """Grade every SUBMISSIONS/<student>/<NN_...>.ipynb; write the CSVs and the feedback."""
    zips = {_number(z): z for z in sorted(autograders.glob("[0-9][0-9]_*.zip"))}
    if not zips:
        raise GradingError(f"no autograders in {autograders}: run make assign first")
    if not submissions.is_dir():
        raise GradingError(f"{submissions} is not a folder of submissions")
    students = sorted(d for d in submissions.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not students:
        raise GradingError(f"{submissions} holds no student folders (SUBMISSIONS/<student>/<notebook>.ipynb)")
    handed_in = {_number(p) for d in students for p in d.iterdir() if p.suffix == ".ipynb"}
    zips = {n: z for n, z in zips.items() if n in handed_in}  # notebooks nobody handed in: no table
    plan = {}
    for number, zpath in zips.items():
        with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(zpath) as zf:
            zf.extractall(tmp)
            plan[number] = (zpath, questions(pathlib.Path(tmp) / "tests"))

    def one(task):
        number, student = task
        zpath, qs = plan[number]
        found = sorted(p for p in student.iterdir() if p.suffix == ".ipynb" and _number(p) == number)
        if not found:
            return {"scores": dict.fromkeys((n for n, _ in qs), 0.0), "note": "no submission",
                    "feedback": {}, "errors": []}
        res = grade_one(found[0], zpath, qs, timeout, cell_timeout)
        if len(found) > 1:
            res["note"] = (res["note"] + "; " if res["note"] else "") + \
                f"{len(found)} notebooks numbered {number}: graded {found[0].name}"
        return res

    # Every (notebook, student) pair is one job: --jobs of them run at once, across notebooks too.
    tasks = [(number, student) for number in plan for student in students]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = dict(zip(tasks, pool.map(one, tasks)))
    rows: dict[str, list[dict]] = {}
    for number, (zpath, qs) in plan.items():
        possible = sum(p for _, p in qs)
        rows[zpath.stem] = []
        for student in students:
            res = results[(number, student)]
            total = sum(res["scores"].values())
            rows[zpath.stem].append({"student": student.name, **res, "total": total, "possible": possible})
            _write_feedback(out / "feedback" / student.name / f"{zpath.stem}.md", zpath.stem, qs, res,
                            total, possible)
            print(f"grade: {student.name} {zpath.stem}: {total:g}/{possible:g}"
                  + (f" ({res['note']})" if res["note"] else ""), flush=True)
        out.mkdir(parents=True, exist_ok=True)
        with open(out / f"{zpath.stem}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["student", *(n for n, _ in qs), "total", "possible", "note"])
            for r in rows[zpath.stem]:
                w.writerow([r["student"], *(f"{r['scores'][n]:g}" for n, _ in qs), f"{r['total']:g}",
                            f"{r['possible']:g}", r["note"]])
    return rows


def _write_feedback(path: pathlib.Path, notebook: str, qs, res, total, possible) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"# {notebook}: {total:g} of {possible:g} points", ""]
    if res["note"]:
        lines += [f"**{res['note']}**", ""]
    for name, points in qs:
        lines.append(f"## {name}: {res['scores'][name]:g} of {points:g}")
        lines += [f"- {line}" for line in res["feedback"].get(name, ["not graded"])]
        lines.append("")
    if res["errors"]:
        lines += ["## Cells that raised an error", ""] + [f"- {e}" for e in res["errors"]] + [""]
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("assign", help="write the student notebooks and the autograders")
    a.add_argument("--out", type=pathlib.Path, default=ROOT / "build" / "assign")
    g = sub.add_parser("grade", help="grade a folder of submissions")
    g.add_argument("submissions", type=pathlib.Path)
    g.add_argument("--autograder", type=pathlib.Path, default=ROOT / "build" / "assign" / "autograder")
    g.add_argument("--out", type=pathlib.Path, default=ROOT / "build" / "grades")
    g.add_argument("--timeout", type=int, default=1800, help="seconds for one submission in all")
    g.add_argument("--cell-timeout", type=int, default=300, help="seconds for one cell")
    g.add_argument("--jobs", type=int, default=1, help="submissions graded at once (one process each)")
    args = parser.parse_args(argv)
    try:
        if args.command == "assign":
            assign(args.out)
        else:
            grade(args.submissions, args.autograder, args.out, args.timeout, args.cell_timeout, args.jobs)
            print(f"grade: tables and feedback in {args.out}")
    except GradingError as e:
        print(f"grade: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
