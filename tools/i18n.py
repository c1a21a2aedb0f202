"""The Chinese edition: translations of the notebooks' prose, kept in step with the English.

    python tools/i18n.py status [STEM ...]        what is missing or stale, with English word counts
    python tools/i18n.py show NOTEBOOK [CELL ...] a stale or missing cell's English beside its translation
    python tools/i18n.py check [STEM ...]         every check of tests/test_i18n.py, as a report
    python tools/i18n.py mark NOTEBOOK CELL ...   record that a translation fits the current English
    python tools/i18n.py mark NOTEBOOK --comments-fit   the same, for code cells whose comments are unchanged
    python tools/i18n.py build [--out DIR]        write the Chinese notebooks (default build/zh/notebooks)
    python tools/i18n.py publish [--out DIR]      write zh/ for Colab: the notebooks and student versions
    python tools/i18n.py messages [MODULE ...]    the checks' messages without a current translation
    python tools/i18n.py glossary --lang en|zh    the glossary page (Markdown) on stdout

The prose is translated: the markdown cells, the comments of the code cells and
the checks' messages. Code, outputs and the checks themselves are the English
notebooks' own. A notebook's translation is one file,
``i18n/zh/<notebook stem>.json``::

    {"notebook": "03_backpropagation.ipynb",
     "cells": {"c000": {"en_sha": "<16 hex>", "zh": "<Chinese markdown>"}, ...},
     "code": {"c011": {"en_sha": "<16 hex>", "comments": {"# English comment": "# 中文注释"}}}}

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

*Code cells.* A code cell's entry in ``"code"`` maps each of its comments to
its Chinese, keyed like a markdown cell by the cell's ``id`` and the hash of
its whole source. A comment is a run of comment lines one under the other (a
block, which may become more or fewer lines) or a comment after code on its
line (which stays one line); a comment on a line that the cell's saved outputs
print (a traceback's line) stays English, like those outputs. ``build`` replaces comment text only: with the
comments stripped, a Chinese code cell is the English one token for token,
and the comments that tools read (``# BEGIN SOLUTION``, ``# END SOLUTION``,
``# NBVAL_...``, ``# noqa``) are never touched. A cell whose source changed is
stale and keeps its English comments; ``show`` says whether its comments
changed at all (if not, ``mark`` it; ``mark NOTEBOOK --comments-fit`` marks every
stale code cell whose comments all still have their translation). The set-up cell of tools/colab.py is the
same in every notebook, so its comments are translated once, in
``i18n/zh/setup.json``, and the Chinese set-up cell ends with
``LANGUAGE_LINES``, which show the checks' messages in Chinese.

*Check messages.* ``minigrad/checks/zh.json`` (package data: the Colab set-up
cell installs the package) maps every message template of the checks, as its
module writes it, to its Chinese (see ``minigrad/checks/_language.py``).
``messages`` lists the templates without a translation and the translations
whose English is no longer in the checks (stale), with the current template
most like each; ``messages --json`` prints the missing ones as entries to fill in.

*Published.* ``publish`` writes ``zh/notebooks`` (the Chinese notebooks) and
``zh/student`` (their student versions, with a README of Colab links), which
are committed so that Colab can open them; ``make publish-student`` runs it.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import hashlib
import importlib.util
import io
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tokenize
from collections import Counter

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import colab  # noqa: E402  (the set-up cell)


def _load_module(name: str, path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# How the checks parse their message templates (without importing the package).
_lang = _load_module("minigrad_checks_language", ROOT / "minigrad" / "checks" / "_language.py")
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


# ------------------------------------------------- code cells: their comments

# Comments that tools read (the solution markers of tools/make_student.py, nbval's and the
# linters' directives) are never translated.
_TOOL_COMMENT = re.compile(r"#\s*(BEGIN SOLUTION|END SOLUTION|YOUR CODE HERE|NBVAL_|noqa|type:|fmt:|pragma"
                           r"|otter)")


def shown_lines(cell: dict) -> str:
    """The text of a code cell's saved outputs. A cell that prints one of its own source lines (a
    traceback, a frame's ``line``) shows that line's comment as it is: the comment stays English, so
    that the Chinese notebook's outputs are still the English notebook's."""
    text = []
    for out in cell.get("outputs", []):
        parts = (out.get("text", ""), out.get("data", {}).get("text/plain", ""), out.get("traceback", []))
        text += ["".join(part) if isinstance(part, list) else part for part in parts]
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(text))


def comment_blocks(src: str, shown: str = "") -> list[dict]:
    """The translatable comments of a code cell's source, as blocks (not those on a line that
    ``shown``, the text of its outputs, prints: see shown_lines).

    A block is a run of comment lines alone on their lines, one under the other at the
    same column, or one comment after code on its line. Each block is a dict: ``rows``
    (0-based line numbers), ``col``, ``own`` (alone on its lines) and ``text`` (its
    comments joined by newlines, each from its ``#``), which is the block's key in a
    translation.
    """
    lines = src.splitlines()
    blocks: list[dict] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(src).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = []
    for tok in tokens:
        if tok.type != tokenize.COMMENT or _TOOL_COMMENT.match(tok.string):
            continue
        row, col = tok.start[0] - 1, tok.start[1]
        if shown and lines[row].strip() in shown:
            continue
        own = not lines[row][:col].strip()
        last = blocks[-1] if blocks else None
        if own and last and last["own"] and last["col"] == col and last["rows"][-1] == row - 1:
            last["rows"].append(row)
            last["text"] += "\n" + tok.string.rstrip()
        else:
            blocks.append({"rows": [row], "col": col, "own": own, "text": tok.string.rstrip()})
    return blocks


def code_tokens(src: str) -> list[tuple[int, str]]:
    """The source's tokens without its comments and blank lines: what must not change."""
    skip = (tokenize.COMMENT, tokenize.NL)
    return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(src).readline)
            if t.type not in skip]


def apply_comments(src: str, comments: dict[str, str], shown: str = "") -> str:
    """The source with each comment block that ``comments`` translates replaced by its translation.

    A block alone on its lines may become more or fewer lines (each at the block's column);
    a comment after code stays one line. Nothing but comment text changes.
    """
    lines = src.splitlines(keepends=True)
    for b in reversed(comment_blocks(src, shown)):
        zh = comments.get(b["text"])
        if zh is None:
            continue
        first, last = b["rows"][0], b["rows"][-1]
        end = lines[last][len(lines[last].rstrip("\r\n")):]
        if b["own"]:
            indent = lines[first][:b["col"]]
            lines[first:last + 1] = ["\n".join(indent + z for z in zh.split("\n")) + end]
        else:
            line = lines[first].rstrip("\r\n")
            lines[first] = line[:b["col"]] + zh + end
    return "".join(lines)


def code_cells(nb: dict) -> dict[str, str]:
    """The notebook's code cells that have comments to translate, id -> source (not the set-up cell)."""
    return {c["id"]: source(c) for c in nb["cells"] if c["cell_type"] == "code" and c["id"] != colab.CELL_ID
            and comment_blocks(source(c), shown_lines(c))}


def _comment_fixed(text: str) -> Counter:
    """Numbers and code spans of comment text (what a translation keeps)."""
    plain = re.sub(r"^\s*#+", " ", text, flags=re.M)
    return Counter({k: v for k, v in fixed_parts(plain).items()
                    if k[0] in ("number", "code", "formula")})


def comment_problems(src: str, comments: dict[str, str], shown: str = "") -> list[str]:
    """What is wrong with a code cell's comment translations (empty: nothing)."""
    problems = []
    keys = [b["text"] for b in comment_blocks(src, shown)]
    trailing = {b["text"] for b in comment_blocks(src, shown) if not b["own"]}
    for en, zh in comments.items():
        if en not in keys:
            problems.append(f"translates a comment the cell does not have: {en[:60]!r}")
            continue
        zh_lines = zh.split("\n")
        if not all(z.lstrip().startswith("#") for z in zh_lines):
            problems.append(f"every line of a comment's translation must start with '#': {zh[:60]!r}")
        elif en in trailing and len(zh_lines) != 1:
            problems.append(f"a comment after code must stay on its line: {zh[:60]!r}")
        elif _TOOL_COMMENT.search(zh):
            problems.append(f"a translation must not hold a marker the tools read: {zh[:60]!r}")
        a, b = _comment_fixed(en), _comment_fixed(zh)
        for key in sorted(set(a) | set(b)):
            if a[key] != b[key]:
                problems.append(f"{key[0]} {key[1]!r} appears {a[key]}x in the comment {en[:40]!r}, "
                                f"{b[key]}x in its translation")
    untranslated = [k for k in dict.fromkeys(keys) if k not in comments]
    if untranslated:
        problems.append(f"{len(untranslated)} comment(s) without a translation, "
                        f"e.g. {untranslated[0][:60]!r}")
    try:
        same = code_tokens(apply_comments(src, comments, shown)) == code_tokens(src)
    except (tokenize.TokenError, IndentationError, SyntaxError) as err:
        same, problems = False, problems + [f"the translated cell does not tokenize: {err}"]
    if not same:
        problems.append("with its comments translated the cell's code differs from the English")
    return problems


# ---------------------------------------------------------- the set-up cell

SETUP = I18N / "setup.json"
# What the Chinese edition's set-up cell adds after the English one's code.
LANGUAGE_LINES = ('import minigrad.checks  # 中文版：练习检查的提示信息用中文显示\n'
                  'minigrad.checks.set_language("zh")\n')


def load_setup() -> dict:
    """The translation of the set-up cell's comments: {"en_sha": ..., "comments": {...}}."""
    if not SETUP.is_file():
        return {"en_sha": "", "comments": {}}
    return json.loads(SETUP.read_text(encoding="utf-8"))


def chinese_setup_source(src: str) -> str:
    """The Chinese edition's set-up cell: the English one (comments translated where the
    translation is current) and LANGUAGE_LINES, which set the checks' language."""
    tr = load_setup()
    if tr.get("en_sha") == sha(src):
        src = apply_comments(src, tr["comments"])
    return src + ("" if src.endswith("\n") else "\n") + LANGUAGE_LINES


# ------------------------------------------------------------ check messages

CHECKS = ROOT / "minigrad" / "checks"
CATALOGUE = CHECKS / "zh.json"


def _docstring_ids(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                out.add(id(body[0].value))
    return out


def _template(node: ast.AST) -> str:
    """The text of a string or f-string, each field as ``{expression!conversion:spec}``."""
    if isinstance(node, ast.Constant):
        return node.value
    parts = []
    for v in node.values:
        if isinstance(v, ast.Constant):
            parts.append(v.value.replace("{", "{{").replace("}", "}}"))
        else:
            conv = "" if v.conversion == -1 else "!" + chr(v.conversion)
            spec = "" if v.format_spec is None else ":" + _template(v.format_spec)
            parts.append("{" + ast.unparse(v.value) + conv + spec + "}")
    return "".join(parts)


def message_templates(path: pathlib.Path) -> list[str]:
    """The message templates of one checks module, in source order.

    Every string and f-string of the module is one, except docstrings, what is printed
    (a check's report of a passing run is an output of the notebook, the same in both
    editions), ``__all__``, operands of comparisons, keys read from a dict, and strings that are
    not prose: a string without a space and a word, an f-string without text of its own.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstring_ids(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            for v in node.values:
                skip.add(id(v))
                if isinstance(v, ast.FormattedValue) and v.format_spec is not None:
                    skip.update(id(w) for w in ast.walk(v.format_spec))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            skip.update(id(w) for w in ast.walk(node))
        elif isinstance(node, ast.Compare):
            skip.update(id(w) for w in (node.left, *node.comparators))
        elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Store):
            skip.add(id(node.slice))  # a key that is read (a key that is written may be a name shown)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                  for t in node.targets):
            skip.update(id(w) for w in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if " " not in text.strip() or not re.search(r"[A-Za-z]{2,}", text):
                continue
        elif isinstance(node, ast.JoinedStr):
            text = _template(node)
            if not "".join(v for k, v in _lang.parse(text) if k == "text").strip():
                continue
        else:
            continue
        found.append((node.lineno, node.col_offset, text))
    return list(dict.fromkeys(t for _, _, t in sorted(found)))


def check_modules() -> list[pathlib.Path]:
    return sorted(p for p in CHECKS.glob("*.py") if p.stem not in ("__init__", "_language"))


def all_message_templates() -> dict[str, list[str]]:
    """{module stem: its templates} for every checks module."""
    return {p.stem: message_templates(p) for p in check_modules()}


def load_catalogue() -> dict:
    if not CATALOGUE.is_file():
        return {"messages": {}}
    return json.loads(CATALOGUE.read_text(encoding="utf-8"))


def save_catalogue(data: dict) -> None:
    CATALOGUE.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def messages_state() -> dict[str, dict]:
    """Per checks module: "templates", "current" (translated), "missing", "stale" (a translation
    whose English is no longer a template of the module), "nearest" ({stale: a current
    template like it, or None})."""
    catalogue = load_catalogue()["messages"]
    out = {}
    for stem, templates in all_message_templates().items():
        entries = catalogue.get(stem, {})
        missing = [t for t in templates if not entries.get(t)]
        stale = [t for t in entries if t not in templates]
        nearest = {t: next(iter(difflib.get_close_matches(t, missing, n=1, cutoff=0.5)), None)
                   for t in stale}
        out[stem] = {"templates": templates, "current": [t for t in templates if entries.get(t)],
                     "missing": missing, "stale": stale, "nearest": nearest}
    for stem in catalogue:
        if stem not in out:
            out[stem] = {"templates": [], "current": [], "missing": [], "stale": list(catalogue[stem]),
                         "nearest": {t: None for t in catalogue[stem]}}
    return out


def _message_fixed(template: str) -> Counter:
    text = "".join(v for k, v in _lang.parse(template) if k == "text")
    return Counter({k: v for k, v in fixed_parts(text).items() if k[0] in ("number", "code")})


def message_problems(en: str, zh: str) -> list[str]:
    """How a message's translation differs from its English in what it must keep: the fields
    (the same expressions, as many times) and the numbers and code spans of its text."""
    problems = []
    a, b = Counter(_lang.fields(en)), Counter(_lang.fields(zh))
    if a != b:
        problems.append(f"fields {sorted(a.elements())} in the English, "
                        f"{sorted(b.elements())} in the translation")
    a, b = _message_fixed(en), _message_fixed(zh)
    for key in sorted(set(a) | set(b)):
        if a[key] != b[key]:
            problems.append(f"{key[0]} {key[1]!r} appears {a[key]}x in the English, "
                            f"{b[key]}x in the translation")
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
    # Code cells: the translations of their comments, keyed by the hash of the whole source.
    code = code_cells(nb)
    code_entries = tr.get("code", {}) if tr else {}
    state.update({"code": code, "shown": {c["id"]: shown_lines(c) for c in nb["cells"] if c["id"] in code},
                  "code_missing": [], "code_stale": [], "code_current": [],
                  "code_orphans": [k for k in code_entries if k not in code],
                  "exercises": [c["id"] for c in nb["cells"] if c["id"] in code and _is_exercise(c)]})
    for cid, src in code.items():
        e = code_entries.get(cid)
        if e is None or not e.get("comments"):
            state["code_missing"].append(cid)
        elif e.get("en_sha") != sha(src):
            state["code_stale"].append(cid)
        else:
            state["code_current"].append(cid)
    return state


def _is_exercise(cell: dict) -> bool:
    """A code cell with a solution to blank (tools/make_student.py's markers)."""
    return cell.get("cell_type") == "code" and "# BEGIN SOLUTION" in source(cell)


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
    code = [notebook_state(p) for p in paths]
    n_code = sum(len(s["code"]) for s in code)
    done = sum(len(s["code_current"]) for s in code)
    words_done = sum(comment_words(s["code"][c], s["shown"][c]) for s in code for c in s["code_current"])
    fit = sum(comments_fit(s["code"][c], s["translation"]["code"][c]["comments"], s["shown"][c])
              for s in code for c in s["code_stale"])
    print(f"Code cells with comments: {n_code}, their comments translated and current in {done} "
          f"({words_done} English words); stale {sum(len(s['code_stale']) for s in code)} "
          f"({fit} of them only in code: `mark NOTEBOOK --comments-fit`), "
          f"missing {sum(len(s['code_missing']) for s in code)} (-v names them)")
    if args.verbose:
        for p, s in zip(paths, code):
            for kind in ("code_stale", "code_missing", "code_orphans"):
                if s[kind]:
                    print(f"    {p.stem} {kind.replace('_', ' ')}: {', '.join(s[kind])}")
    msgs = messages_state()
    n = sum(len(m["templates"]) for m in msgs.values())
    cur = sum(len(m["current"]) for m in msgs.values())
    stale = sum(len(m["stale"]) for m in msgs.values())
    print(f"Check messages ({CATALOGUE.relative_to(ROOT)}): {cur} of {n} translated, "
          f"{n - cur} missing, {stale} stale (`tools/i18n.py messages` lists them)")
    return 0


def comment_words(src: str, shown: str = "") -> int:
    return sum(words(re.sub(r"^\s*#+", "", b["text"], flags=re.M)) for b in comment_blocks(src, shown))


def cmd_messages(args) -> int:
    """The check messages that have no translation, or whose English changed (with the current
    template most like it); --json prints the missing ones as entries to fill in."""
    state = messages_state()
    stems = args.modules or list(state)
    skeleton: dict[str, dict[str, str]] = {}
    for stem in stems:
        if stem not in state:
            print(f"i18n: no checks module {stem!r} (they are {', '.join(state)})", file=sys.stderr)
            return 1
        m = state[stem]
        if not args.json:
            print(f"{stem:<12} {len(m['current']):>3} of {len(m['templates']):>3} translated, "
                  f"{len(m['missing'])} missing, {len(m['stale'])} stale")
            for t in m["stale"]:
                print(f"    stale: {t!r}")
                near = m["nearest"][t]
                print(f"      its English is no longer in minigrad/checks/{stem}.py"
                      + (f"; the current message most like it: {near!r}" if near else ""))
            for t in m["missing"]:
                print(f"    missing: {t!r}")
        elif m["missing"]:
            skeleton[stem] = {t: "" for t in m["missing"]}
    if args.json:
        print(json.dumps(skeleton, ensure_ascii=False, indent=1))
    return 0


def _old_english(path: pathlib.Path, cid: str, want: str, depth: int = 200, cells=None) -> str | None:
    """The English source of cell ``cid`` whose hash was ``want``, from git history (``cells``
    picks the cells of a notebook: its markdown cells, or code_cells)."""
    cells = cells or markdown_cells
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
            old = cells(json.loads(text)).get(cid)
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
    if not args.cells and not ids:
        ids = s["code_stale"] + [c for c in s["code_missing"] if c in s["exercises"]]
    for cid in ids:
        if cid in s["code"]:
            _show_code(path, s, cid)
            continue
        if cid not in s["cells"]:
            print(f"i18n: {path.stem} has no markdown cell or commented code cell {cid!r}", file=sys.stderr)
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


def _show_code(path: pathlib.Path, s: dict, cid: str) -> None:
    """A code cell's comments beside their translations, and whether the comments changed."""
    src = s["code"][cid]
    e = (s["translation"] or {}).get("code", {}).get(cid)
    kind = "missing" if cid in s["code_missing"] else "stale" if cid in s["code_stale"] else "current"
    print(f"==== {path.stem} {cid} (code cell, {kind}; en_sha now {sha(src)})")
    comments = e.get("comments", {}) if e else {}
    if kind == "stale":
        old = _old_english(path, cid, e.get("en_sha"), cells=code_cells)
        same = old is not None and [b["text"] for b in comment_blocks(old, s["shown"][cid])] == \
            [b["text"] for b in comment_blocks(src, s["shown"][cid])]
        if same:
            print(f"---- only code changed, the comments did not: `tools/i18n.py mark {path.stem} {cid}`")
        elif old is not None:
            print("---- what changed in the cell since its comments were translated:")
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), src.splitlines(True),
                                                       "then", "now", n=1))
            print()
    for b in comment_blocks(src, s["shown"][cid]):
        print(f"---- line {b['rows'][0] + 1}:")
        print(b["text"])
        print(f"  -> {comments[b['text']]}" if b["text"] in comments else "  -> (no translation)")


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
    problems += code_problems(s, path)
    return problems


def code_problems(s: dict, path: pathlib.Path, required: bool = False) -> list[str]:
    """The problems of a notebook's comment translations: stale, orphan, out of order, wrong
    (comment_problems); with ``required``, also every commented code cell without one, else
    only the exercise cells without one."""
    entries = s["translation"].get("code", {}) if s["translation"] else {}
    must = s["code_missing"] if required else [c for c in s["code_missing"] if c in s["exercises"]]
    problems = [f"{c}: code cell whose comments have no translation" for c in must]
    problems += [f"{c}: stale code cell (its source changed after its comments were translated: "
                 f"`tools/i18n.py show {path.stem} {c}`)" for c in s["code_stale"]]
    problems += [f"{c}: orphan (no code cell with comments {c} in {path.name})" for c in s["code_orphans"]]
    keys = [c for c in entries if c in s["code"]]
    if keys != [c for c in s["code"] if c in keys]:
        problems.append("code cells are not in notebook order")
    for cid in s["code_current"]:
        problems += [f"{cid}: {p}" for p in comment_problems(s["code"][cid], entries[cid]["comments"],
                                                             s["shown"][cid])]
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
    if args.comments_fit:
        return _mark_comments_fit(path, s)
    if not args.cells:
        print("i18n: name the cells to mark (or --comments-fit)", file=sys.stderr)
        return 1
    for cid in args.cells:  # check all first, then change
        if cid in s["code"] and cid not in s["code_missing"]:
            continue
        if cid not in s["cells"] or cid in s["missing"]:
            print(f"i18n: {path.stem} {cid}: no such cell, or no translation to mark", file=sys.stderr)
            return 1
    for cid in args.cells:
        if cid in s["code"]:
            s["translation"]["code"][cid]["en_sha"] = sha(s["code"][cid])
        else:
            s["translation"]["cells"][cid]["en_sha"] = sha(s["cells"][cid])
    save_translation(path.stem, s["translation"])
    print(f"{path.stem}: marked {len(args.cells)} cell(s) as translating the current English")
    return 0


def comments_fit(src: str, comments: dict[str, str], shown: str = "") -> bool:
    """Whether every comment of the source has a translation in ``comments``."""
    return all(b["text"] in comments for b in comment_blocks(src, shown))


def _mark_comments_fit(path: pathlib.Path, s: dict) -> int:
    """Mark each stale code cell whose comments all still have their translation (only code changed);
    translations of comments the cell no longer has are dropped."""
    marked = []
    for cid in s["code_stale"]:
        e = s["translation"]["code"][cid]
        src = s["code"][cid]
        if comments_fit(src, e["comments"], s["shown"][cid]):
            keep = {b["text"] for b in comment_blocks(src, s["shown"][cid])}
            e["comments"] = {k: v for k, v in e["comments"].items() if k in keep}
            e["en_sha"] = sha(src)
            marked.append(cid)
    save_translation(path.stem, s["translation"])
    rest = [c for c in s["code_stale"] if c not in marked]
    print(f"{path.stem}: marked {len(marked)} code cell(s) whose comments did not change"
          + (f"; {len(rest)} have new comments to translate: {', '.join(rest)}" if rest else ""))
    return 0


def chinese_notebook(path: pathlib.Path) -> tuple[dict, list[str]]:
    """The Chinese notebook built from an English one, and the ids of the cells left in English."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    s = notebook_state(path)
    entries = s["translation"]["cells"] if s["translation"] else {}
    nb = copy.deepcopy(nb)
    code = s["translation"].get("code", {}) if s["translation"] else {}
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown" and cell["id"] in s["current"]:
            cell["source"] = entries[cell["id"]]["zh"].splitlines(keepends=True)
        elif cell["cell_type"] == "code" and cell["id"] in s["code_current"]:
            src = apply_comments(source(cell), code[cell["id"]]["comments"], s["shown"][cell["id"]])
            cell["source"] = src.splitlines(keepends=True)
        elif cell["cell_type"] == "code" and cell["id"] == colab.CELL_ID:
            cell["source"] = chinese_setup_source(source(cell)).splitlines(keepends=True)
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


# ------------------------------------------------------ published for Colab

# The Chinese edition, committed so that Colab can open its notebooks from GitHub (as the
# English student/): PUBLISHED/notebooks holds the reference notebooks (outputs included),
# PUBLISHED/student their student versions (exercises blanked, outputs cleared).
PUBLISHED = ROOT / "zh"

PUBLISHED_README = """\
# 中文版学生笔记本：在 Colab 中打开

这些是中文版的课程笔记本：每道练习的答案换成了 `raise NotImplementedError`，所有输出都已清除，
与 `make student LANG=zh` 写出的相同；放在这里，是为了让链接能在 Colab 中打开它们。带答案和已保存输出的
参考笔记本在旁边的 [`../notebooks/`](../notebooks/) 中。请不要修改这些文件：`make publish-student`
会根据 `notebooks/` 和 `i18n/zh/` 重新写出 `zh/`，测试会检查它们是否同步。要在自己的机器上做练习，
请运行 `make lab-student LANG=zh`（你的作业保存在 `build/zh/student/` 中）。

| 章节 | 参考版（含答案） | 学生版 |
| --- | --- | --- |
"""


def colab_links(where: str = "zh") -> list[tuple[str, str, str]]:
    """(notebook stem, Colab URL of its Chinese reference notebook, of its Chinese student version)."""
    return [(p.stem, colab.colab_url(f"{where}/notebooks/{p.name}"),
             colab.colab_url(f"{where}/student/{p.name}")) for p in english_notebooks()]


def published_files(where: str = "zh") -> dict[str, str]:
    """What ``publish`` writes, {path under the folder: text}: the Chinese notebooks, their
    student versions and the student folder's README (whose Colab links point at ``where``)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import make_student

    files = {}
    for p in english_notebooks():
        nb, _ = chinese_notebook(p)
        files[f"notebooks/{p.name}"] = json.dumps(nb, ensure_ascii=False, indent=1) + "\n"
        student = make_student.student_notebook(nb, p.name)
        files[f"student/{p.name}"] = json.dumps(student, ensure_ascii=False, indent=1) + "\n"
    rows = [f"| {stem} | [在 Colab 中运行]({ref}) | [在 Colab 中运行]({stu}) |\n"
            for stem, ref, stu in colab_links(where)]
    files["student/README.md"] = PUBLISHED_README + "".join(rows)
    return files


def publish(out: pathlib.Path = PUBLISHED) -> list[str]:
    """Write the published Chinese edition into ``out`` (notebooks/, student/); notebooks that are
    no longer the course's are removed. Returns the files that changed."""
    where = out.resolve().relative_to(ROOT).as_posix() if out.resolve().is_relative_to(ROOT) else "zh"
    files = published_files(where)  # everything first: an error leaves ``out`` as it was
    changed = []
    for folder in ("notebooks", "student"):
        (out / folder).mkdir(parents=True, exist_ok=True)
        for old in (out / folder).glob("*.ipynb"):
            if f"{folder}/{old.name}" not in files:
                old.unlink()
                changed.append(f"{folder}/{old.name}")
    for rel, text in files.items():
        target = out / rel
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
            changed.append(rel)
    return changed


def cmd_publish(args) -> int:
    changed = publish(args.out)
    print(f"wrote the Chinese notebooks and their student versions to {args.out} "
          f"({len(changed)} file(s) changed)")
    return 0


def cmd_build(args) -> int:
    left = build(args.out, [_notebook(n) for n in args.notebooks] or None)
    full = [s for s, e in left.items() if not e]
    print(f"wrote {len(left)} Chinese notebooks to {args.out} ({len(full)} fully translated)")
    for stem, english in left.items():
        if english:
            print(f"  {stem}: {len(english)} markdown cell(s) still in English")
    for p in [_notebook(n) for n in args.notebooks] or english_notebooks():
        s = notebook_state(p)
        if s["code_missing"] or s["code_stale"]:
            n = len(s["code_missing"]) + len(s["code_stale"])
            print(f"  {p.stem}: {n} code cell(s) with English comments")
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
    p.add_argument("cells", nargs="*")
    p.add_argument("--comments-fit", action="store_true",
                   help="mark every stale code cell whose comments all still have their translation")
    p.set_defaults(func=cmd_mark)
    p = sub.add_parser("messages", help="the checks' messages without a current translation")
    p.add_argument("modules", nargs="*", help="checks modules, e.g. nb05 (default: all)")
    p.add_argument("--json", action="store_true", help="print the missing ones as JSON entries to fill in")
    p.set_defaults(func=cmd_messages)
    p = sub.add_parser("build", help="write the Chinese notebooks")
    p.add_argument("notebooks", nargs="*")
    p.add_argument("--out", type=pathlib.Path, default=OUT)
    p.set_defaults(func=cmd_build)
    p = sub.add_parser("publish", help="write zh/ (committed, for Colab): the Chinese notebooks and "
                                       "their student versions")
    p.add_argument("--out", type=pathlib.Path, default=PUBLISHED)
    p.set_defaults(func=cmd_publish)
    p = sub.add_parser("glossary", help="the glossary page, as Markdown")
    p.add_argument("--lang", choices=("en", "zh"), required=True)
    p.set_defaults(func=cmd_glossary)
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
