"""The Chinese edition: translations of the notebooks' prose, kept in step with the English.

    python tools/i18n.py status [STEM ...]        what is missing or stale, with English word counts
    python tools/i18n.py show NOTEBOOK [CELL ...] a stale or missing cell's English beside its translation
    python tools/i18n.py check [STEM ...]         every check of tests/test_i18n.py, as a report
    python tools/i18n.py mark NOTEBOOK CELL ...   record that a translation fits the current English
    python tools/i18n.py build [--out DIR]        write the Chinese notebooks (default build/zh/notebooks)
    python tools/i18n.py glossary --lang en|zh    the glossary page (Markdown) on stdout

Only markdown cells are translated; code cells, their outputs and the checks
are the English notebooks' own. A notebook's translation is one file,
``i18n/zh/<notebook stem>.json``::

    {"notebook": "03_backpropagation.ipynb",
     "cells": {"c000": {"en_sha": "<16 hex>", "zh": "<Chinese markdown>"}, ...}}

keyed by the English cell's ``id``. ``en_sha`` is the first 16 hex digits of
the SHA-256 of the English source the translation was made from; a cell whose
English hash differs now is *stale*, one without an entry is *missing*, and an
entry whose cell no longer exists is an *orphan*.

A translation keeps its English cell's *fixed parts* exactly (as multisets):
formulas (``$...$``, ``$$...$$``), code spans and code blocks, link targets,
HTML tags, and the numbers of the prose, and its markdown structure (the
heading levels in order, the number of list items and of table rows). A
deliberate difference is allowed by listing the token in the entry's
``"exempt"`` (e.g. ``"exempt": ["3"]``, with a ``"why"``); an exemption that
no longer matches a difference is itself an error.

After an English edit: ``status`` names the stale cells, ``show`` prints the
English (and, when git still has it, what changed in it) beside the old
translation; update the ``zh`` text (``mark`` records the new hash when the
translation needs no change), then run ``pytest tests/test_i18n.py``.

``build`` writes every notebook: a translated cell's markdown is replaced by
its Chinese, and the notebook's metadata says ``"language": "zh-CN"``. A cell
that is missing or stale keeps its English text (and ``build`` says so), so
the Chinese edition never shows a translation of an older English text; a
notebook without a translation file starts with a note saying so.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import hashlib
import json
import pathlib
import re
import shutil
import subprocess
import sys
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
I18N = ROOT / "i18n" / "zh"
GLOSSARY = I18N / "glossary.json"
OUT = ROOT / "build" / "zh" / "notebooks"
LANGUAGE = "zh-CN"
# The first cell of a Chinese notebook whose notebook has no translation yet.
UNTRANSLATED_ID = "zh-untranslated"
UNTRANSLATED = "> 本章还没有中文译文，下面是英文原文。"


# ----------------------------------------------------------------- reading

def source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def english_notebooks() -> list[pathlib.Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def markdown_cells(nb: dict) -> dict[str, str]:
    """The notebook's markdown cells, id -> source, in notebook order."""
    return {c["id"]: source(c) for c in nb["cells"] if c["cell_type"] == "markdown"}


def translation_path(stem: str) -> pathlib.Path:
    return I18N / f"{stem}.json"


def load_translation(stem: str) -> dict | None:
    """The translation file of a notebook (by stem), or None if there is none."""
    path = translation_path(stem)
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("cells"), dict):
        raise ValueError(f"{path.relative_to(ROOT)}: expected {{'notebook': ..., 'cells': {{...}}}}")
    return data


def save_translation(stem: str, data: dict) -> None:
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    translation_path(stem).write_text(text, encoding="utf-8")


def words(text: str) -> int:
    return len(text.split())


# ---------------------------------------------------- what must be kept

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_CODE = re.compile(r"(`+)(.+?)\1", re.S)
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+?\$", re.S)
_HTML = re.compile(r"</?[A-Za-z][^>\n]*>")
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_AUTOLINK = re.compile(r"https?://[^\s)>\]]+")
# ASCII word characters only: in Chinese a number sits right beside CJK characters.
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])[-−]?\d+(?:[.,]\d+)*(?![A-Za-z0-9_])")
_HEADING = re.compile(r"^(#{1,6})\s", re.M)
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+", re.M)
_ROW = re.compile(r"^\s*\|.*\|\s*$", re.M)


def _take(pattern: re.Pattern, text: str, kind: str, out: Counter, group: int = 0) -> str:
    """Count ``pattern``'s matches in ``out`` under ``kind``; return the text without them."""
    for m in pattern.finditer(text):
        out[(kind, m.group(group).strip())] += 1
    return pattern.sub(" ", text)


def fixed_parts(md: str) -> Counter:
    """The parts of a markdown cell that a translation keeps exactly, as a multiset of
    (kind, text): code blocks, code spans, formulas, HTML tags, link targets and
    numbers, and the structure: heading levels in order, list items, table rows."""
    out: Counter = Counter()
    prose = _take(_FENCE, md, "code block", out)
    prose = _take(_CODE, prose, "code", out)
    prose = _take(_MATH, prose, "formula", out)
    prose = _take(_HTML, prose, "html", out)
    prose = _take(_LINK, prose, "link", out, group=1)
    prose = _take(_AUTOLINK, prose, "link", out)
    for m in _NUMBER.finditer(prose):
        out[("number", m.group(0).replace("−", "-").replace(",", ""))] += 1
    structure = _FENCE.sub(" ", md)
    out[("headings", " ".join(m.group(1) for m in _HEADING.finditer(structure)))] += 1
    out[("list items", str(len(_ITEM.findall(structure))))] += 1
    out[("table rows", str(len(_ROW.findall(structure))))] += 1
    return out


def prose_of(md: str) -> str:
    """The cell's text without code, formulas, HTML and link targets (for the glossary)."""
    text = _FENCE.sub(" ", md)
    text = _CODE.sub(" ", text)
    text = _MATH.sub(" ", text)
    text = _HTML.sub(" ", text)
    text = _LINK.sub(" ", text)
    return _AUTOLINK.sub(" ", text)


def fixed_part_problems(en: str, zh: str, exempt: list[str] = ()) -> list[str]:
    """How a translation's fixed parts differ from its English cell's (empty: they agree)."""
    a, b = fixed_parts(en), fixed_parts(zh)
    problems = []
    used = set()
    for key in sorted(set(a) | set(b)):
        if a[key] == b[key]:
            continue
        kind, text = key
        if text in exempt:
            used.add(text)
            continue
        if kind in ("headings", "list items", "table rows"):
            en_v = next((t for k, t in a if k == kind), "")
            zh_v = next((t for k, t in b if k == kind), "")
            if key in a:  # report each structural difference once
                problems.append(f"{kind}: English {en_v!r}, translation {zh_v!r}")
            continue
        if a[key]:
            problems.append(f"{kind} {text!r} appears {a[key]}x in the English, {b[key]}x in the translation")
        else:
            problems.append(f"{kind} {text!r} is not in the English ({b[key]}x in the translation)")
    for text in exempt:
        if text not in used:
            problems.append(f"exempt {text!r} no longer matches any difference: remove it")
    return problems


# ------------------------------------------------------------- the state

def notebook_state(path: pathlib.Path) -> dict:
    """For one English notebook: its markdown cells and what the translation holds.

    Returns {"cells": {id: en source}, "translation": dict | None, "missing": [ids],
    "stale": [ids], "orphans": [ids], "current": [ids]}.
    """
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = markdown_cells(nb)
    tr = load_translation(path.stem)
    entries = tr["cells"] if tr else {}
    state = {"cells": cells, "translation": tr, "missing": [], "stale": [], "current": [],
             "orphans": [k for k in entries if k not in cells]}
    for cid, en in cells.items():
        e = entries.get(cid)
        if e is None or not str(e.get("zh", "")).strip():
            state["missing"].append(cid)
        elif e.get("en_sha") != sha(en):
            state["stale"].append(cid)
        else:
            state["current"].append(cid)
    return state


def _notebook(name: str) -> pathlib.Path:
    p = pathlib.Path(name)
    if p.is_file():
        return p.resolve()
    hits = [q for q in english_notebooks() if q.stem == name or q.name == name or q.name.startswith(name)]
    if len(hits) != 1:
        raise SystemExit(f"i18n: {name!r} names {len(hits)} notebooks; give a stem, e.g. 03_backpropagation")
    return hits[0]


# -------------------------------------------------------------- commands

def cmd_status(args) -> int:
    paths = [_notebook(n) for n in args.notebooks] or english_notebooks()
    total_todo = total_done = 0
    print(f"{'notebook':<36} {'cells':>5} {'current':>7} {'stale':>5} {'missing':>7} {'orphan':>6}"
          f" {'EN words to do':>14}")
    for p in paths:
        s = notebook_state(p)
        todo = sum(words(s["cells"][c]) for c in s["missing"] + s["stale"])
        total_todo += todo
        total_done += sum(words(s["cells"][c]) for c in s["current"])
        mark = "" if s["translation"] else "   (no translation file)"
        print(f"{p.stem:<36} {len(s['cells']):>5} {len(s['current']):>7} {len(s['stale']):>5}"
              f" {len(s['missing']):>7} {len(s['orphans']):>6} {todo:>14}{mark}")
        if args.verbose:
            for kind in ("stale", "missing", "orphans"):
                if s[kind]:
                    print(f"    {kind}: {', '.join(s[kind])}")
    print(f"English words translated and current: {total_done}; still to translate: {total_todo}")
    return 0


def _old_english(path: pathlib.Path, cid: str, want: str, depth: int = 200) -> str | None:
    """The English source of cell ``cid`` whose hash was ``want``, from git history."""
    try:
        revs = subprocess.run(["git", "log", f"-{depth}", "--format=%H", "--", str(path.relative_to(ROOT))],
                              cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None
    rel = path.relative_to(ROOT).as_posix()
    for rev in revs:
        try:
            text = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=ROOT, capture_output=True,
                                  text=True, check=True).stdout
            old = markdown_cells(json.loads(text)).get(cid)
        except (subprocess.CalledProcessError, ValueError, KeyError):
            continue
        if old is not None and sha(old) == want:
            return old
    return None


def cmd_show(args) -> int:
    path = _notebook(args.notebook)
    s = notebook_state(path)
    entries = s["translation"]["cells"] if s["translation"] else {}
    ids = args.cells or (s["stale"] + s["missing"])
    if not ids:
        print(f"{path.stem}: every markdown cell has a current translation")
    for cid in ids:
        if cid not in s["cells"]:
            print(f"i18n: {path.stem} has no markdown cell {cid!r}", file=sys.stderr)
            return 1
        en, e = s["cells"][cid], entries.get(cid)
        kind = "missing" if cid in s["missing"] else "stale" if cid in s["stale"] else "current"
        print(f"==== {path.stem} {cid} ({kind}; en_sha now {sha(en)})")
        if kind == "stale":
            old = _old_english(path, cid, e.get("en_sha"))
            if old is None:
                print("---- (the English it was translated from is not in the last 200 commits)")
            else:
                print("---- what changed in the English since the translation:")
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), en.splitlines(True), "then", "now", n=1))
                print()
        print("---- English now:")
        print(en)
        if e is not None:
            print("---- translation:")
            print(e.get("zh", ""))
    return 0


def check_notebook(path: pathlib.Path) -> list[str]:
    """Every problem of a notebook's translation (missing, stale, orphan, fixed parts)."""
    s = notebook_state(path)
    if s["translation"] is None:
        return [f"no translation file {translation_path(path.stem).relative_to(ROOT)}"]
    problems = []
    if s["translation"].get("notebook") != path.name:
        problems.append(f"'notebook' is {s['translation'].get('notebook')!r}, not {path.name!r}")
    problems += [f"{c}: missing" for c in s["missing"]]
    problems += [f"{c}: stale (the English changed after the translation: `tools/i18n.py show "
                 f"{path.stem} {c}`)" for c in s["stale"]]
    problems += [f"{c}: orphan (no such markdown cell in {path.name})" for c in s["orphans"]]
    entries = s["translation"]["cells"]
    order = [c for c in s["cells"] if c in entries]
    if [c for c in entries if c in s["cells"]] != order:
        problems.append("cells are not in notebook order")
    for cid in s["current"] + s["stale"]:
        e = entries[cid]
        for p in fixed_part_problems(s["cells"][cid], e["zh"], e.get("exempt", [])):
            problems.append(f"{cid}: {p}")
    return problems


def cmd_check(args) -> int:
    paths = [_notebook(n) for n in args.notebooks] or [
        p for p in english_notebooks() if translation_path(p.stem).is_file()]
    bad = 0
    for p in paths:
        problems = check_notebook(p)
        bad += bool(problems)
        print(f"{'ok  ' if not problems else 'FAIL'} {p.stem}" + ("" if not problems else ":"))
        for line in problems:
            print(f"     {line}")
    return 1 if bad else 0


def cmd_mark(args) -> int:
    path = _notebook(args.notebook)
    s = notebook_state(path)
    if s["translation"] is None:
        print(f"i18n: no translation file for {path.stem}", file=sys.stderr)
        return 1
    for cid in args.cells:  # check all first, then change
        if cid not in s["cells"] or cid in s["missing"]:
            print(f"i18n: {path.stem} {cid}: no such markdown cell, or no translation to mark",
                  file=sys.stderr)
            return 1
    for cid in args.cells:
        s["translation"]["cells"][cid]["en_sha"] = sha(s["cells"][cid])
    save_translation(path.stem, s["translation"])
    print(f"{path.stem}: marked {len(args.cells)} cell(s) as translating the current English")
    return 0


def chinese_notebook(path: pathlib.Path) -> tuple[dict, list[str]]:
    """The Chinese notebook built from an English one, and the ids of the cells left in English."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    s = notebook_state(path)
    entries = s["translation"]["cells"] if s["translation"] else {}
    nb = copy.deepcopy(nb)
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown" and cell["id"] in s["current"]:
            cell["source"] = entries[cell["id"]]["zh"].splitlines(keepends=True)
    if s["translation"] is None:  # say so, above the English
        nb["cells"].insert(0, {"cell_type": "markdown", "id": UNTRANSLATED_ID, "metadata": {},
                               "source": [UNTRANSLATED]})
    nb["metadata"]["language"] = LANGUAGE
    return nb, s["missing"] + s["stale"]


def build(out: pathlib.Path, paths: list[pathlib.Path] | None = None) -> dict[str, list[str]]:
    """Write the Chinese notebooks into ``out``; return, per notebook, the cells left in English."""
    paths = paths or english_notebooks()
    built = [(p, *chinese_notebook(p)) for p in paths]  # everything first, then write
    out.mkdir(parents=True, exist_ok=True)
    left = {}
    for p, nb, english in built:
        text = json.dumps(nb, ensure_ascii=False, indent=1) + "\n"
        target = out / p.name
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")  # unchanged files keep their time stamps
        left[p.stem] = english
    for extra in sorted(NOTEBOOKS.iterdir()):  # data or pictures beside the notebooks
        if extra.suffix == ".ipynb" or extra.name.startswith(".") or extra.name == "__pycache__":
            continue
        if extra.is_dir():
            shutil.copytree(extra, out / extra.name, dirs_exist_ok=True)
        else:
            shutil.copy2(extra, out / extra.name)
    return left


def cmd_build(args) -> int:
    left = build(args.out, [_notebook(n) for n in args.notebooks] or None)
    full = [s for s, e in left.items() if not e]
    print(f"wrote {len(left)} Chinese notebooks to {args.out} ({len(full)} fully translated)")
    for stem, english in left.items():
        if english:
            print(f"  {stem}: {len(english)} markdown cell(s) still in English")
    return 0


# -------------------------------------------------------------- glossary

def load_glossary() -> dict:
    return json.loads(GLOSSARY.read_text(encoding="utf-8"))


def glossary_markdown(lang: str) -> str:
    g = load_glossary()
    page = g["page"][lang]
    lines = [f"# {page['title']}", "", page["intro"], "",
             f"| {' | '.join(page['columns'])} |", "|---|---|---|"]
    for t in sorted(g["terms"], key=lambda t: t["en"].lower()):
        zh = " / ".join([t["zh"], *t.get("zh_also", [])])
        api = ", ".join(f"`{a}`" for a in t.get("pytorch", [])) or "—"
        lines.append(f"| {t['en']} | {zh} | {api} |")
    return "\n".join(lines) + "\n"


def cmd_glossary(args) -> int:
    sys.stdout.write(glossary_markdown(args.lang))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("status", help="what is missing or stale, per notebook")
    p.add_argument("notebooks", nargs="*")
    p.add_argument("-v", "--verbose", action="store_true", help="name the cells")
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("show", help="a cell's English beside its translation (default: stale and missing)")
    p.add_argument("notebook")
    p.add_argument("cells", nargs="*")
    p.set_defaults(func=cmd_show)
    p = sub.add_parser("check", help="the checks of tests/test_i18n.py (default: notebooks with a file)")
    p.add_argument("notebooks", nargs="*")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("mark", help="record that these cells' translations fit the current English")
    p.add_argument("notebook")
    p.add_argument("cells", nargs="+")
    p.set_defaults(func=cmd_mark)
    p = sub.add_parser("build", help="write the Chinese notebooks")
    p.add_argument("notebooks", nargs="*")
    p.add_argument("--out", type=pathlib.Path, default=OUT)
    p.set_defaults(func=cmd_build)
    p = sub.add_parser("glossary", help="the glossary page, as Markdown")
    p.add_argument("--lang", choices=("en", "zh"), required=True)
    p.set_defaults(func=cmd_glossary)
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
