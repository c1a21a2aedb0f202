"""The Chinese edition (tools/i18n.py, i18n/zh/): translations complete, current and faithful.

Which notebooks must be translated is the list ``EXPECTED`` below: each of them
must have a translation file. Every notebook that has a translation file, listed
or not, must be complete (no missing cell), current (no stale cell), free of
orphans, keep its English cells' fixed parts (formulas, code, numbers, link
targets, structure) and use the glossary's terms. So a translation that is
being written can be committed without failing the test, but once it is
listed, or once its file exists, it is held to all of it. The list grows to
all sixteen notebooks as their translations land.

The rest tests the checker itself (each check fails for a translation that is
wrong in its way), the generated notebooks, and the student versions of them.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# The notebooks whose Chinese translation must exist.
EXPECTED = (
    "00_the_training_loop",
    "01_computation_graphs",
    "02_the_forward_graph",
    "03_backpropagation",
    "04_autodiff_modes",
    "05_vjp_matmul",
    "06_vjp_relu",
    "07_vjp_softmax",
    "08_vjp_cross_entropy",
    "09_mini_autograd_end_to_end",
    "10_gradient_flow",
    "11_where_memory_goes",
    "12_activation_checkpointing",
    "13_what_real_frameworks_add",
    "14_beyond_the_minimum",
    "15_self_check",
)


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


i18n = _load("i18n_tool", ROOT / "tools" / "i18n.py")
make_student = _load("make_student_tool", ROOT / "tools" / "make_student.py")
colab = _load("colab_tool", ROOT / "tools" / "colab.py")

ENGLISH = {p.stem: p for p in i18n.english_notebooks()}
TRANSLATED = sorted(set(EXPECTED) | {p.stem for p in i18n.I18N.glob("[0-9][0-9]_*.json")})


def test_expected_names_real_notebooks():
    assert set(EXPECTED) <= set(ENGLISH), f"EXPECTED names no notebook: {set(EXPECTED) - set(ENGLISH)}"


def test_every_translation_file_names_an_english_notebook():
    extra = [s for s in TRANSLATED if s not in ENGLISH]
    assert not extra, f"translation files of notebooks that do not exist: {extra}"


@pytest.mark.parametrize("stem", EXPECTED)
def test_expected_notebook_has_a_translation(stem):
    path = i18n.translation_path(stem)
    assert path.is_file(), (f"{path.relative_to(ROOT)} is missing: `python tools/i18n.py show {stem}` "
                            "prints the English to translate")


def _state(stem):
    if stem not in ENGLISH:
        pytest.skip(f"no English notebook {stem}")
    if not i18n.translation_path(stem).is_file():
        pytest.skip(f"no translation file for {stem} (test_expected_notebook_has_a_translation says "
                    "whether one is due)")
    return i18n.notebook_state(ENGLISH[stem])


@pytest.mark.parametrize("stem", TRANSLATED)
def test_file_format(stem):
    _state(stem)
    path = i18n.translation_path(stem)
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    assert data["notebook"] == f"{stem}.ipynb", f"{path.name}: 'notebook' must be {stem}.ipynb"
    assert text == json.dumps(data, ensure_ascii=False, indent=1) + "\n", (
        f"{path.name} is not written as json.dump(obj, f, ensure_ascii=False, indent=1) plus a newline "
        "(tools/i18n.save_translation writes it so)")
    assert set(data) <= {"notebook", "cells", "code"}, f"{path.name}: unknown keys {set(data)}"
    for cid, e in data["cells"].items():
        assert re.fullmatch(r"[0-9a-f]{16}", e.get("en_sha", "")), f"{path.name} {cid}: en_sha is not 16 hex"
        assert isinstance(e.get("zh"), str), f"{path.name} {cid}: no 'zh' text"
        assert set(e) <= {"en_sha", "zh", "exempt", "why"}, f"{path.name} {cid}: unknown keys {set(e)}"
        if e.get("exempt"):
            assert e.get("why"), f"{path.name} {cid}: an exemption needs a 'why'"
    for cid, e in data.get("code", {}).items():
        assert set(e) == {"en_sha", "comments"}, f"{path.name} code {cid}: keys must be en_sha and comments"
        assert re.fullmatch(r"[0-9a-f]{16}", e["en_sha"]), f"{path.name} code {cid}: en_sha is not 16 hex"
        assert all(isinstance(k, str) and isinstance(v, str) and v for k, v in e["comments"].items()), \
            f"{path.name} code {cid}: comments map each English comment to its translation"


@pytest.mark.parametrize("stem", TRANSLATED)
def test_no_cell_missing(stem):
    s = _state(stem)
    assert not s["missing"], (f"{stem}: markdown cells without a translation: {s['missing']} "
                              f"(`python tools/i18n.py show {stem}`)")


@pytest.mark.parametrize("stem", TRANSLATED)
def test_no_cell_stale(stem):
    s = _state(stem)
    assert not s["stale"], (f"{stem}: the English of {s['stale']} changed after it was translated; "
                            f"`python tools/i18n.py show {stem}` shows what changed, then update the "
                            "translation (or `tools/i18n.py mark` it if it still fits)")


@pytest.mark.parametrize("stem", TRANSLATED)
def test_no_orphan(stem):
    s = _state(stem)
    assert not s["orphans"], f"{stem}: translations of cells that are not its markdown cells: {s['orphans']}"


@pytest.mark.parametrize("stem", TRANSLATED)
def test_fixed_parts_kept(stem):
    s = _state(stem)
    entries = s["translation"]["cells"]
    problems = [f"{cid}: {p}" for cid in s["current"] + s["stale"]
                for p in i18n.fixed_part_problems(s["cells"][cid], entries[cid]["zh"],
                                                  entries[cid].get("exempt", []))]
    assert not problems, f"{stem}: the translation changes what it must keep:\n" + "\n".join(problems)


@pytest.mark.parametrize("stem", TRANSLATED)
def test_cells_in_notebook_order(stem):
    s = _state(stem)
    keys = [k for k in s["translation"]["cells"] if k in s["cells"]]
    assert keys == [k for k in s["cells"] if k in keys], f"{stem}: cells not in notebook order"


# ------------------------------------------------------------- glossary

GLOSSARY = i18n.load_glossary()


def _term_patterns(term):
    return [re.compile(rf"(?<![A-Za-z-]){m}(?![A-Za-z-])", re.I) for m in term["match"]]


def _zh_forms(term):
    return [term["zh"], *term.get("zh_also", []), *term.get("zh_match", [])]


def glossary_misses(stem, cells, entries):
    """(cell, term) pairs where the English uses a glossary term and the translation none of its forms."""
    misses = []
    for cid, en in cells.items():
        if cid not in entries:
            continue
        prose = i18n.prose_of(en)
        for t in GLOSSARY["terms"]:
            if any(p.search(prose) for p in _term_patterns(t)):
                if not any(z in entries[cid]["zh"] for z in _zh_forms(t)):
                    misses.append((cid, t["en"]))
    return misses


def test_glossary_has_the_course_terms():
    zh = {t["zh"] for t in GLOSSARY["terms"]}
    for need in ("计算图", "前向传播", "反向传播", "链式法则", "自动微分", "前向模式", "反向模式",
                 "激活值", "梯度累加", "激活检查点", "内存", "显存", "混合精度"):
        assert need in zh, f"the glossary lacks {need}"
    pytorch = {a for t in GLOSSARY["terms"] for a in t.get("pytorch", [])}
    for api in ("ctx.save_for_backward", "torch.no_grad", "retain_graph=True", "Tensor.grad_fn"):
        assert api in pytorch, f"the glossary lacks PyTorch's {api}"
    for t in GLOSSARY["terms"]:
        assert t["match"] and t["zh"], f"glossary entry {t['en']!r} needs 'match' and 'zh'"
        first = _term_patterns(t)[0]
        assert first.search(t["en"]), (
            f"glossary entry {t['en']!r}: its first pattern {first.pattern!r} does not match the term itself")


@pytest.mark.parametrize("stem", TRANSLATED)
def test_translation_uses_the_glossary(stem):
    s = _state(stem)
    allowed = {(x["notebook"], x["cell"], x["term"]) for x in GLOSSARY["exceptions"]}
    misses = [m for m in glossary_misses(stem, s["cells"], s["translation"]["cells"])
              if (stem, *m) not in allowed]
    forms = {t["en"]: _zh_forms(t) for t in GLOSSARY["terms"]}
    assert not misses, (f"{stem}: these cells use a glossary term in English but not its Chinese "
                        "(say it the glossary's way, or list an exception in i18n/zh/glossary.json):\n"
                        + "\n".join(f"  {cid}: {en!r} -> one of {forms[en]}" for cid, en in misses))


def test_glossary_exceptions_are_needed():
    for x in GLOSSARY["exceptions"]:
        assert x.get("why"), f"glossary exception {x} says no 'why'"
        stem = x["notebook"]
        if stem not in TRANSLATED or not i18n.translation_path(stem).is_file():
            continue
        s = i18n.notebook_state(ENGLISH[stem])
        assert (x["cell"], x["term"]) in glossary_misses(stem, s["cells"], s["translation"]["cells"]), (
            f"glossary exception {x} is not needed any more: remove it")


def test_glossary_page_lists_every_term():
    for lang in ("en", "zh"):
        page = i18n.glossary_markdown(lang)
        rows = [ln for ln in page.splitlines() if ln.startswith("| ") and not ln.startswith("| English")]
        assert len(rows) == len(GLOSSARY["terms"]), f"the {lang} glossary page has {len(rows)} rows"
        for t in GLOSSARY["terms"]:
            assert f"| {t['en']} | {t['zh']}" in page, f"the {lang} glossary page lacks {t['en']!r}"


# ------------------------------------------------------ the checker itself

EN_CELL = ("## 2. The step\n\nWith $\\eta = 0.1$ the loss falls from 2.30 to 0.41 in 3 epochs; "
           "`loss.backward()` fills `.grad`. See [notebook 03](03_backpropagation.ipynb).\n\n"
           "- one\n- two\n")
ZH_CELL = ("## 2. 一步更新\n\n取 $\\eta = 0.1$ 时，损失在 3 轮内从 2.30 降到 0.41；"
           "`loss.backward()` 会填好 `.grad`。见[第 03 章](03_backpropagation.ipynb)。\n\n"
           "- 一\n- 二\n")


def test_fixed_parts_accept_a_faithful_translation():
    assert i18n.fixed_part_problems(EN_CELL, ZH_CELL) == []


@pytest.mark.parametrize("wrong, says", [
    (ZH_CELL.replace("0.41", "0.42"), "number '0.41'"),
    (ZH_CELL.replace("3 轮", "三轮"), "number '3'"),
    (ZH_CELL.replace("$\\eta = 0.1$", "$\\eta=0.1$"), "formula"),
    (ZH_CELL.replace("`loss.backward()`", "loss.backward()"), "code '`loss.backward()`'"),
    (ZH_CELL.replace("`.grad`", "`grad`"), "code"),
    (ZH_CELL.replace("03_backpropagation.ipynb", "03_backprop.ipynb"), "link"),
    (ZH_CELL.replace("## 2.", "### 2."), "headings"),
    (ZH_CELL.replace("- 二\n", ""), "list items"),
])
def test_fixed_parts_reject_a_changed_part(wrong, says):
    problems = i18n.fixed_part_problems(EN_CELL, wrong)
    assert any(says in p for p in problems), f"not caught ({says}): {problems}"


def test_exempt_allows_a_listed_difference_and_must_be_used():
    wrong = ZH_CELL.replace("3 轮", "三轮")
    assert i18n.fixed_part_problems(EN_CELL, wrong, exempt=["3"]) == []
    assert any("no longer matches" in p for p in i18n.fixed_part_problems(EN_CELL, ZH_CELL, exempt=["3"]))


def test_numbers_beside_chinese_characters_are_found():
    assert i18n.fixed_parts("共3个节点")[("number", "3")] == 1
    assert i18n.fixed_parts("float64 and x2")[("number", "64")] == 0


@pytest.fixture
def fake_course(tmp_path, monkeypatch):
    """A one-notebook course in tmp_path, with its translation."""
    nbdir, trdir = tmp_path / "notebooks", tmp_path / "i18n"
    nbdir.mkdir()
    trdir.mkdir()
    nb = {"cells": [
        {"cell_type": "markdown", "id": "c000", "metadata": {}, "source": ["# Title\n", "\n", "Intro."]},
        {"cell_type": "code", "id": "c001", "metadata": {}, "execution_count": 1,
         "source": ["print(1)"], "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}]},
        {"cell_type": "markdown", "id": "c002", "metadata": {}, "source": "With $x$ and `y`."},
    ], "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    (nbdir / "00_fake.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    tr = {"notebook": "00_fake.ipynb", "cells": {
        "c000": {"en_sha": i18n.sha("# Title\n\nIntro."), "zh": "# 标题\n\n引言。"},
        "c002": {"en_sha": i18n.sha("With $x$ and `y`."), "zh": "有 $x$ 和 `y`。"}}}
    (trdir / "00_fake.json").write_text(json.dumps(tr, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setattr(i18n, "NOTEBOOKS", nbdir)
    monkeypatch.setattr(i18n, "I18N", trdir)
    monkeypatch.setattr(i18n, "ROOT", tmp_path)
    return nbdir / "00_fake.ipynb", nb, tr


def test_checker_passes_a_complete_translation(fake_course):
    path, _, _ = fake_course
    assert i18n.check_notebook(path) == []


def test_checker_finds_missing_stale_and_orphan(fake_course):
    path, nb, tr = fake_course
    nb["cells"][2]["source"] = "With $x$ and `y`, changed."
    path.write_text(json.dumps(nb), encoding="utf-8")
    s = i18n.notebook_state(path)
    assert s["stale"] == ["c002"] and s["missing"] == [] and s["orphans"] == []
    tr["cells"]["c009"] = tr["cells"].pop("c000")
    i18n.translation_path("00_fake").write_text(json.dumps(tr, ensure_ascii=False), encoding="utf-8")
    s = i18n.notebook_state(path)
    assert s["missing"] == ["c000"] and s["orphans"] == ["c009"] and s["stale"] == ["c002"]
    problems = i18n.check_notebook(path)
    assert any("c000: missing" in p for p in problems)
    assert any("c002: stale" in p for p in problems)
    assert any("c009: orphan" in p for p in problems)


def test_mark_records_the_current_hash(fake_course, capsys):
    path, nb, _ = fake_course
    nb["cells"][0]["source"] = "# Title\n\nIntro, reworded."
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert i18n.notebook_state(path)["stale"] == ["c000"]
    assert i18n.main(["mark", str(path), "c000"]) == 0
    assert i18n.notebook_state(path)["stale"] == []
    assert i18n.main(["mark", str(path), "c001"]) == 1  # a code cell: nothing changed
    assert i18n.notebook_state(path)["current"] == ["c000", "c002"]


def test_show_prints_what_changed_in_the_english(fake_course, tmp_path, capsys):
    path, nb, _ = fake_course
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    if subprocess.run(git + ["init", "-q"], capture_output=True).returncode:
        pytest.skip("git is not available")
    subprocess.run(git + ["add", "notebooks"], check=True)
    subprocess.run(git + ["commit", "-qm", "the English as translated"], check=True)
    nb["cells"][2]["source"] = "With $x$, `y` and `z`."
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert i18n.main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "c002 (stale" in out
    assert "-With $x$ and `y`." in out and "+With $x$, `y` and `z`." in out, out
    assert "有 $x$ 和 `y`。" in out, "the old translation is printed beside the English"


def test_build_replaces_prose_only(fake_course, tmp_path):
    path, nb, tr = fake_course
    nb["cells"][2]["source"] = "With $x$ and `y`, changed."  # stale: stays English
    path.write_text(json.dumps(nb), encoding="utf-8")
    left = i18n.build(tmp_path / "out")
    zh = json.loads((tmp_path / "out" / "00_fake.ipynb").read_text(encoding="utf-8"))
    assert left == {"00_fake": ["c002"]}
    assert "".join(zh["cells"][0]["source"]) == "# 标题\n\n引言。"
    assert zh["cells"][1] == nb["cells"][1], "a code cell (source, outputs, id) must be copied unchanged"
    assert zh["cells"][2]["source"] == nb["cells"][2]["source"], "a stale cell must keep its English"
    assert [c["id"] for c in zh["cells"]] == [c["id"] for c in nb["cells"]]
    assert zh["metadata"]["language"] == "zh-CN"
    assert zh["metadata"]["kernelspec"] == nb["metadata"]["kernelspec"]


def test_build_says_when_a_notebook_has_no_translation(fake_course, tmp_path):
    path, nb, _ = fake_course
    i18n.translation_path("00_fake").unlink()
    assert i18n.build(tmp_path / "out") == {"00_fake": ["c000", "c002"]}
    zh = json.loads((tmp_path / "out" / "00_fake.ipynb").read_text(encoding="utf-8"))
    first = zh["cells"][0]
    assert first["cell_type"] == "markdown" and first["id"] == i18n.UNTRANSLATED_ID
    assert re.search(r"[\u4e00-\u9fff]", i18n.source(first)), "the note is in Chinese"
    assert zh["cells"][1:] == nb["cells"], "after the note, the English notebook as it is"


# ------------------------------------------------ the real Chinese notebooks

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("zh")
    left = i18n.build(out)
    return out, left


@pytest.mark.parametrize("stem", TRANSLATED)
def test_built_notebook_is_the_english_with_chinese_prose(built, stem):
    out, left = built
    _state(stem)
    assert left[stem] == [], f"{stem}: cells left in English: {left[stem]}"
    en = json.loads(ENGLISH[stem].read_text(encoding="utf-8"))
    zh = json.loads((out / f"{stem}.ipynb").read_text(encoding="utf-8"))
    entries = i18n.load_translation(stem)["cells"]
    code = i18n.load_translation(stem).get("code", {})
    assert len(zh["cells"]) == len(en["cells"])
    for a, b in zip(en["cells"], zh["cells"]):
        same = {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}
        assert same, f"{stem} {a['id']}: only a cell's source may differ (outputs, id, metadata: English)"
        if a["cell_type"] == "markdown":
            assert i18n.source(b) == entries[a["id"]]["zh"]
            assert re.search(r"[\u4e00-\u9fff]", i18n.source(b)), f"{stem} {a['id']}: no Chinese"
        elif a["id"] == colab.CELL_ID:
            # The set-up cell: the English code, then the lines that set the checks' language.
            assert i18n.code_tokens(i18n.source(b)) == i18n.code_tokens(i18n.source(a) + i18n.LANGUAGE_LINES)
        else:
            # Comments stripped, a code cell is the English one, token for token.
            assert i18n.code_tokens(i18n.source(b)) == i18n.code_tokens(i18n.source(a)), \
                f"{stem} {a['id']}: the code of a code cell changed"
            if a["id"] in code:
                assert i18n.source(b) == i18n.apply_comments(i18n.source(a), code[a["id"]]["comments"],
                                                             i18n.shown_lines(a))
            else:
                assert a == b, f"{stem} {a['id']}: a code cell without translated comments changed"


def test_student_versions_of_the_chinese_notebooks(built, tmp_path):
    out, _ = built
    paths = [out / f"{s}.ipynb" for s in TRANSLATED if (out / f"{s}.ipynb").is_file()]
    written, kept = make_student.write_student_version(paths, tmp_path / "student")
    assert len(written) == len(paths) and not kept
    for p in written:
        nb = json.loads(p.read_text(encoding="utf-8"))
        ref = json.loads((out / p.name).read_text(encoding="utf-8"))
        assert nb["metadata"]["language"] == "zh-CN"
        n_ex = sum(make_student.is_exercise(c) for c in ref["cells"])
        stubs = sum("raise NotImplementedError" in i18n.source(c) for c in nb["cells"]
                    if c["cell_type"] == "code")
        assert stubs >= n_ex, f"{p.name}: {stubs} stubs for {n_ex} exercises"
        md = [i18n.source(c) for c in nb["cells"] if c["cell_type"] == "markdown"]
        assert md == [i18n.source(c) for c in ref["cells"] if c["cell_type"] == "markdown"]



# ------------------------------------------------ the websites' language switch

lang_switch = _load("lang_switch", ROOT / "docs" / "lang_switch.py")


def _app(**conf):
    from types import SimpleNamespace
    return SimpleNamespace(config=SimpleNamespace(lang_switch=conf))


@pytest.mark.parametrize("page, root, pages, href", [
    ("notebooks/03_backpropagation", "zh/", ["index", "notebooks/03_backpropagation"],
     "../zh/notebooks/03_backpropagation.html"),
    ("index", "zh/", ["index"], "zh/index.html"),
    ("benchmarks/RESULTS", "zh/", ["index"], "../zh/index.html"),       # not in the other edition
    ("notebooks/03_backpropagation", "../", ["notebooks/03_backpropagation"],
     "../../notebooks/03_backpropagation.html"),                         # from zh/ back to English
    ("glossary", "../", ["glossary", "index"], "../glossary.html"),
])
def test_language_switch_leads_to_the_same_page(page, root, pages, href):
    link = lang_switch._link(_app(label="中文", lang="zh-CN", root=root, pages=pages), page)
    assert f'href="{href}"' in link and 'hreflang="zh-CN"' in link and ">中文</a>" in link, link


# ------------------------------------------- what make e2e checks of the edition

e2e = _load("e2e_tool", ROOT / "tools" / "e2e.py")


def test_e2e_reports_chinese_drawn_as_boxes():
    ok = {"found": True, "family": "sans-serif", "chinese": 120, "distinct": True, "notBox": True}
    assert e2e.cjk_problems(ok, "page") == []
    assert any("empty boxes" in p for p in e2e.cjk_problems(dict(ok, distinct=False, notBox=False), "page"))
    assert any("0 Chinese" in p for p in e2e.cjk_problems(dict(ok, chinese=0), "page"))
    assert e2e.cjk_problems({"found": False}, "page")


def test_e2e_language_switch_must_lead_to_the_same_page(tmp_path, monkeypatch):
    for rel in ("index.html", "zh/index.html", "notebooks/03_x.html", "zh/notebooks/03_x.html",
                "benchmarks/RESULTS.html"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("<html></html>")
    monkeypatch.setattr(e2e, "SITE", tmp_path)
    base = "http://127.0.0.1:8000"
    good = e2e.lang_switch_problems
    assert good("notebooks/03_x.html", f"{base}/zh/notebooks/03_x.html", base) == []
    assert good("zh/notebooks/03_x.html", f"{base}/notebooks/03_x.html", base) == []
    assert good("benchmarks/RESULTS.html", f"{base}/zh/index.html", base) == []   # no Chinese page
    assert good("notebooks/03_x.html", f"{base}/zh/index.html", base), "a page both editions have"
    assert good("notebooks/03_x.html", None, base) == ["no language switch (English <-> 中文)"]


# ------------------------------------------------------- comments in code cells

# The notebooks whose every commented code cell must have its comments translated (in any
# other, the exercise cells must): all sixteen.
CODE_EXPECTED = EXPECTED


@pytest.mark.parametrize("stem", TRANSLATED)
def test_code_comments_current(stem):
    s = _state(stem)
    problems = i18n.code_problems(s, ENGLISH[stem], required=stem in CODE_EXPECTED)
    assert not problems, (f"{stem}: the translations of code cells' comments "
                          f"(`python tools/i18n.py show {stem}`):\n" + "\n".join(problems))


CODE_CELL = '''\
# Try it: a batch of 2 through one layer.
# The shapes are printed below.
x = np.ones((2, 3))   # two rows
def f(a):
    # BEGIN SOLUTION
    return a * 2      # double it
    # END SOLUTION
s = "# not a comment"  # a string holds it
'''
COMMENTS = {
    "# Try it: a batch of 2 through one layer.\n# The shapes are printed below.":
        "# 试一试：让 2 行的批经过一层，形状打印在下面。",
    "# two rows": "# 两行",
    "# double it": "# 翻倍",
    "# a string holds it": "# 它在字符串里",
}


def test_comment_blocks_leave_the_markers_and_strings_alone():
    blocks = i18n.comment_blocks(CODE_CELL)
    assert [b["text"] for b in blocks] == list(COMMENTS)
    assert [b["own"] for b in blocks] == [True, False, False, False]
    zh = i18n.apply_comments(CODE_CELL, COMMENTS)
    assert "# BEGIN SOLUTION" in zh and "# END SOLUTION" in zh and '"# not a comment"' in zh
    assert zh.splitlines()[0] == "# 试一试：让 2 行的批经过一层，形状打印在下面。"
    assert "x = np.ones((2, 3))   # 两行" in zh
    assert i18n.code_tokens(zh) == i18n.code_tokens(CODE_CELL)
    assert i18n.comment_problems(CODE_CELL, COMMENTS) == []
    assert make_student.blank_solutions(zh).count("raise NotImplementedError") == 1


@pytest.mark.parametrize("change, says", [
    ({"# two rows": "两行"}, "must start with '#'"),
    ({"# two rows": "# 两行\n# 第二行"}, "must stay on its line"),
    ({"# two rows": "# 3 行"}, "number '3'"),
    ({"# double it": "# 翻倍 # BEGIN SOLUTION"}, "marker"),
    ({"# a comment it does not have": "# 没有"}, "does not have"),
])
def test_comment_problems_reject_a_bad_translation(change, says):
    problems = i18n.comment_problems(CODE_CELL, {**COMMENTS, **change})
    assert any(says in p for p in problems), f"not caught ({says}): {problems}"


def test_comment_problems_name_an_untranslated_comment():
    partial = {k: v for k, v in COMMENTS.items() if k != "# two rows"}
    assert any("without a translation" in p for p in i18n.comment_problems(CODE_CELL, partial))


def _with_code_cell(fake_course, comments=None):
    """The fake course with an exercise code cell and (optionally) its comments' translation."""
    path, nb, tr = fake_course
    nb["cells"].insert(2, {"cell_type": "code", "id": "c010", "metadata": {}, "execution_count": 2,
                           "source": CODE_CELL, "outputs": []})
    path.write_text(json.dumps(nb), encoding="utf-8")
    if comments is not None:
        tr["code"] = {"c010": {"en_sha": i18n.sha(CODE_CELL), "comments": comments}}
        i18n.translation_path("00_fake").write_text(json.dumps(tr, ensure_ascii=False), encoding="utf-8")
    return path, nb, tr


def test_an_exercise_cell_without_translated_comments_is_missing(fake_course):
    path, _, _ = _with_code_cell(fake_course)
    s = i18n.notebook_state(path)
    assert s["code_missing"] == ["c010"] and s["exercises"] == ["c010"]
    assert any("c010: code cell whose comments have no translation" in p for p in i18n.check_notebook(path))


def test_code_cell_comments_go_stale_when_the_source_changes(fake_course, capsys):
    path, nb, _ = _with_code_cell(fake_course, COMMENTS)
    assert i18n.notebook_state(path)["code_current"] == ["c010"]
    assert i18n.check_notebook(path) == []
    nb["cells"][2]["source"] = CODE_CELL.replace("a * 2", "a + a")     # code only: the comments still fit
    path.write_text(json.dumps(nb), encoding="utf-8")
    s = i18n.notebook_state(path)
    assert s["code_stale"] == ["c010"]
    assert any("c010: stale code cell" in p for p in i18n.check_notebook(path))
    left = i18n.build(path.parent.parent / "out")
    zh = json.loads((path.parent.parent / "out" / "00_fake.ipynb").read_text(encoding="utf-8"))
    assert i18n.source(zh["cells"][2]) == i18n.source(nb["cells"][2]), "a stale cell keeps its English"
    assert left == {"00_fake": []}
    assert i18n.main(["mark", str(path), "--comments-fit"]) == 0
    assert i18n.notebook_state(path)["code_current"] == ["c010"]
    nb["cells"][2]["source"] = CODE_CELL.replace("# two rows", "# two rows of ones")   # a new comment
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert i18n.main(["mark", str(path), "--comments-fit"]) == 0
    assert i18n.notebook_state(path)["code_stale"] == ["c010"], "a changed comment needs its translation"
    assert i18n.main(["mark", str(path), "c010"]) == 0   # marking by hand: then the checker names the comment
    assert any("without a translation" in p for p in i18n.check_notebook(path))


def test_build_translates_comments_only(fake_course, tmp_path):
    path, nb, _ = _with_code_cell(fake_course, COMMENTS)
    i18n.build(tmp_path / "out")
    zh = json.loads((tmp_path / "out" / "00_fake.ipynb").read_text(encoding="utf-8"))
    a, b = nb["cells"][2], zh["cells"][2]
    assert i18n.source(b) == i18n.apply_comments(CODE_CELL, COMMENTS)
    assert i18n.code_tokens(i18n.source(b)) == i18n.code_tokens(i18n.source(a))
    assert {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}
    assert zh["cells"][1] == nb["cells"][1], "a code cell without comments is copied as it is"


# ------------------------------------------------------------ the set-up cell

def test_the_set_up_cell_comments_are_current_and_translated():
    tr = i18n.load_setup()
    assert tr["en_sha"] == i18n.sha(colab.SOURCE), (
        "the set-up cell (tools/colab.py) changed after its comments were translated: update "
        "i18n/zh/setup.json (its en_sha, and its comments if they changed)")
    assert i18n.comment_problems(colab.SOURCE, tr["comments"]) == []
    zh = i18n.chinese_setup_source(colab.SOURCE)
    assert re.search(r"[\u4e00-\u9fff]", zh.split("def _set_up")[0]), "its opening comment is in Chinese"


def test_the_chinese_set_up_cell_prints_nothing_where_the_course_is_installed():
    # As in the course's lab (and under nbval): the package imports, dot is on PATH.
    import os
    import shutil
    import sys
    assert shutil.which("dot"), "the tests need Graphviz's dot"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MINIGRAD_INSTALL": "/nonexistent.whl"}
    run = subprocess.run([sys.executable, "-c", i18n.chinese_setup_source(colab.SOURCE)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "" and run.stderr == "", (run.stdout, run.stderr)


def test_the_chinese_set_up_cell_sets_the_checks_language():
    from minigrad.checks import _language
    zh = i18n.chinese_setup_source(colab.SOURCE)
    assert zh.endswith(i18n.LANGUAGE_LINES)
    try:
        exec(compile(zh, "setup", "exec"), {})
        assert _language.language() == "zh"
    finally:
        _language.set_language("en")
    assert _language.language() == "en"


# ------------------------------------------------------------ the checks' messages

checks_language = _load("checks_language", ROOT / "minigrad" / "checks" / "_language.py")
CATALOGUE = i18n.load_catalogue()
MESSAGES = i18n.messages_state()
# Checks modules whose messages need not all be translated yet, and why (none: all are).
UNTRANSLATED_ALLOWED: dict[str, str] = {}


def test_catalogue_format():
    text = i18n.CATALOGUE.read_text(encoding="utf-8")
    assert text == json.dumps(CATALOGUE, ensure_ascii=False, indent=1) + "\n", (
        "minigrad/checks/zh.json is not written as tools/i18n.save_catalogue writes it")
    assert set(CATALOGUE) == {"messages"}
    for stem, entries in CATALOGUE["messages"].items():
        assert all(isinstance(k, str) and isinstance(v, str) and v for k, v in entries.items()), stem


def test_the_catalogue_ships_in_the_package():
    import tomllib
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "checks/zh.json" in data["tool"]["setuptools"]["package-data"]["minigrad"], (
        "Colab installs the package: minigrad/checks/zh.json must be package data")


@pytest.mark.parametrize("stem", sorted(MESSAGES))
def test_no_check_message_is_stale(stem):
    m = MESSAGES[stem]
    assert not m["stale"], (
        f"minigrad/checks/zh.json translates messages of {stem} whose English is no longer in "
        f"minigrad/checks/{stem}.py; give each the current English as its key and update the translation "
        f"(`python tools/i18n.py messages {stem}`):\n"
        + "\n".join(f"  {t!r}\n    now most like: {m['nearest'][t]!r}" for t in m["stale"]))


@pytest.mark.parametrize("stem", sorted(MESSAGES))
def test_every_check_message_is_translated(stem):
    m = MESSAGES[stem]
    if stem in UNTRANSLATED_ALLOWED:
        pytest.skip(f"{stem}: {UNTRANSLATED_ALLOWED[stem]} ({len(m['missing'])} untranslated)")
    assert not m["missing"], (
        f"{stem}: check messages without a translation in minigrad/checks/zh.json "
        f"(`python tools/i18n.py messages {stem} --json` prints them as entries to fill in):\n"
        + "\n".join(f"  {t!r}" for t in m["missing"]))


def test_check_translations_keep_fields_numbers_and_code():
    problems = [f"{stem}: {en[:50]!r}: {p}" for stem, entries in CATALOGUE["messages"].items()
                for en, zh in entries.items() for p in i18n.message_problems(en, zh)]
    assert not problems, "\n".join(problems)


def test_one_english_message_one_chinese():
    seen: dict[str, str] = {}
    for entries in CATALOGUE["messages"].values():
        for en, zh in entries.items():
            assert seen.setdefault(en, zh) == zh, f"{en!r} has two translations: {seen[en]!r} and {zh!r}"


def _sample(template):
    """A message made from a template, each field a distinct value, and that message's Chinese."""
    values, k = {}, 0
    zh_words = {}
    for kind, field in checks_language.parse(template["zh"]):
        if kind == "field":
            expr, words = checks_language.split_field(field)
            zh_words[expr] = words
    for expr in checks_language.fields(template["en"]):
        if expr not in values:
            k += 1
            words = zh_words.get(expr) or {}
            values[expr] = next(iter(words)) if words else (str(k + 6) if checks_language._numeric(expr)
                                                             else f"Q{k}")
    def fill(text, chinese):
        out = []
        for kind, field in checks_language.parse(text):
            if kind == "text":
                out.append(field)
            else:
                expr, words = checks_language.split_field(field)
                out.append(words.get(values[expr], values[expr]) if chinese else values[expr])
        return "".join(out)
    return fill(template["en"], False), fill(template["zh"], True)


TEMPLATES = [{"en": en, "zh": zh} for entries in CATALOGUE["messages"].values()
             for en, zh in entries.items() if zh != en]


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t["en"][:40])
def test_each_message_comes_out_as_its_translation(template):
    en, want = _sample(template)
    assert checks_language.translate(en, "zh") == want


def _message(check, *args):
    with pytest.raises(AssertionError) as info:
        check(*args)
    return str(info.value)


def _english_left(zh):
    return re.findall(r"(?:[A-Za-z']{3,} +){3,}[A-Za-z']{3,}", zh)


def test_real_failures_of_the_checks_read_in_chinese():
    from minigrad import Function
    from minigrad.checks import nb00, nb03, nb05

    class NoSaveMatMul(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a @ b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved
            return g @ b.T, a.T @ g

    messages = [
        _message(nb00.check_one_step, 1.0, 1.0),
        _message(nb03.check_order, lambda root: []),
        _message(nb03.check_backward, lambda root: None),
        _message(nb05.check_matmul, NoSaveMatMul),
    ]
    for en in messages:
        zh = checks_language.translate(en, "zh")
        assert re.search(r"[\u4e00-\u9fff]", zh) and not _english_left(zh), (en, zh)
        assert checks_language.translate(en, "en") == en


def test_ipython_shows_a_failed_check_in_chinese(capsys):
    shell_mod = pytest.importorskip("IPython.core.interactiveshell")
    from minigrad.checks import _language, set_language
    shell = shell_mod.InteractiveShell.instance()
    try:
        set_language("zh")
        shell.run_cell("from minigrad.checks import nb00\nnb00.check_one_step(1.0, 1.0)")
        out = capsys.readouterr().out
        assert "AssertionError" in out and "初始权重处的损失" in out, out[-2000:]
        set_language("en")
        shell.run_cell("nb00.check_one_step(1.0, 1.0)")
        out = capsys.readouterr().out
        assert "the loss at the initial weights" in out and "初始权重" not in out, out[-2000:]
    finally:
        _language.set_language("en")


# ------------------------------------------- the Chinese edition on Colab (zh/)

PUBLISHED = i18n.PUBLISHED


def test_the_published_chinese_edition_is_in_step():
    # Colab opens zh/notebooks/NN_*.ipynb and zh/student/NN_*.ipynb from GitHub; `make publish-student`
    # writes them from notebooks/ and i18n/zh/.
    want = i18n.published_files("zh")
    have = {p.relative_to(PUBLISHED).as_posix() for folder in ("notebooks", "student")
            for p in (PUBLISHED / folder).glob("*.ipynb")}
    assert have == {rel for rel in want if rel.endswith(".ipynb")}, "run: make publish-student"
    stale = [rel for rel, text in want.items()
             if not (PUBLISHED / rel).is_file() or (PUBLISHED / rel).read_text(encoding="utf-8") != text]
    assert not stale, f"zh/ is out of step with notebooks/ and i18n/zh/ (run: make publish-student): {stale}"


def test_the_published_student_notebooks_hold_no_solution_and_no_output():
    for path in sorted((PUBLISHED / "student").glob("*.ipynb")):
        text = path.read_text(encoding="utf-8")
        nb = json.loads(text)
        assert make_student.BEGIN not in text and make_student.END not in text, path.name
        assert not any(c.get("outputs") for c in nb["cells"]), path.name
        assert nb["metadata"]["language"] == "zh-CN"
        if any(make_student.is_exercise(c) for c in json.loads(
                (PUBLISHED / "notebooks" / path.name).read_text(encoding="utf-8"))["cells"]):
            assert make_student.STUBS["zh-CN"] in text, f"{path.name}: no Chinese stub"


def test_readme_zh_and_the_chinese_site_link_every_notebook_to_colab():
    readme = (ROOT / "README.zh.md").read_text(encoding="utf-8")
    front = (ROOT / "docs" / "zh" / "index.md").read_text(encoding="utf-8")
    assert "```{include} README.zh.md" in front, "the Chinese front page shows README.zh.md"
    student = (PUBLISHED / "student" / "README.md").read_text(encoding="utf-8")
    for stem, ref, stu in i18n.colab_links():
        for url in (ref, stu):
            assert url in readme, f"README.zh.md lacks the Colab link {url}"
            assert url in student, f"zh/student/README.md lacks the Colab link {url}"
        assert ref.endswith(f"/zh/notebooks/{stem}.ipynb") and stu.endswith(f"/zh/student/{stem}.ipynb")


def test_each_chinese_notebook_page_offers_its_chinese_student_version():
    pytest.importorskip("docutils")
    student_version = _load("student_version", ROOT / "docs" / "student_version.py")
    zh = student_version.student_links("notebooks/03_backpropagation", "zh_CN")
    assert "zh/student/03_backpropagation.ipynb" in zh and "下载学生版" in zh
    assert 'href="../student/03_backpropagation.ipynb"' in zh
    en = student_version.student_links("notebooks/03_backpropagation", "en")
    assert "/blob/main/student/03_backpropagation.ipynb" in en and "download the student version" in en
    assert student_version.student_links("glossary", "zh_CN") is None


def test_a_comment_the_outputs_print_stays_english():
    # A cell that prints one of its own lines (a traceback, an anomaly's frame.line) shows the English
    # comment in its saved output: the comment stays English, so the output is still the cell's.
    cell = {"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": 1,
            "source": "r = u ** 0.25   # its VJP divides by 0\nprint(line)  # the line\n",
            "outputs": [{"output_type": "stream", "name": "stdout",
                         "text": ["created at line: r = u ** 0.25   # its VJP divides by 0\n"]}]}
    shown, src = i18n.shown_lines(cell), i18n.source(cell)
    assert [b["text"] for b in i18n.comment_blocks(src, shown)] == ["# the line"]
    assert [b["text"] for b in i18n.comment_blocks(src)] == ["# its VJP divides by 0", "# the line"]
    zh = i18n.apply_comments(src, {"# the line": "# 这一行", "# its VJP divides by 0": "# 除以 0"}, shown)
    assert "# its VJP divides by 0" in zh and "# 这一行" in zh


# ---------------------------------------- a Chinese student notebook, as Colab runs it

sys.path.insert(0, str(ROOT / "tests"))
from test_colab import colab_runtime  # noqa: E402,F401  (tests/test_colab.py's fresh runtime)


@pytest.mark.slow
def test_a_chinese_student_notebook_runs_on_a_fresh_runtime(colab_runtime, tmp_path, monkeypatch):  # noqa: F811
    """zh/student/00 alone in a folder, on a fresh runtime (tests/test_colab.py's): its set-up cell
    installs the wheel, the cells before the first exercise run, the exercise stops at its stub, and a
    failed check speaks Chinese (the catalogue ships in the wheel)."""
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    import os
    python, wheel = colab_runtime
    name = "00_the_training_loop.ipynb"
    nb = json.loads((PUBLISHED / "student" / name).read_text(encoding="utf-8"))
    first = next(k for k, c in enumerate(nb["cells"]) if "raise NotImplementedError" in i18n.source(c))
    nb["cells"] = nb["cells"][:first + 1] + [
        {"cell_type": "code", "id": "fail", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "from minigrad.checks import nb00\nnb00.check_one_step(1.0, 1.0)"}]
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / name).write_text(json.dumps(nb), encoding="utf-8")
    kernels = tmp_path / "jupyter" / "kernels" / "fresh"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "fresh runtime", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setenv("MINIGRAD_INSTALL", str(wheel))
    book = nbformat.read(str(folder / name), as_version=4)
    nbclient.NotebookClient(book, kernel_name="fresh", timeout=600, allow_errors=True,
                            resources={"metadata": {"path": str(folder)}}).execute()
    assert sorted(os.listdir(folder)) == [name]
    errors = [[o for o in c.get("outputs", []) if o.get("output_type") == "error"] for c in book.cells]
    assert "Installing" in "".join(o.get("text", "") for o in book.cells[1]["outputs"])
    assert not any(errors[:first]), f"a cell before the first exercise failed: {errors[:first]}"
    assert [e["ename"] for e in errors[first]] == ["NotImplementedError"]
    (failed,) = errors[-1]
    assert failed["ename"] == "AssertionError" and "初始权重处的损失" in failed["evalue"], failed["evalue"]


def test_the_message_state_finds_missing_and_stale_translations(tmp_path, monkeypatch):
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "nb99.py").write_text(
        '"""A checks module."""\n\n'
        'def check(x):\n'
        '    """Raise unless x is 1."""\n'
        '    assert x == 1, f"x is {x}, but it should be 1: set it to one"\n'
        '    print("a printed report line, not a message")\n'
        '    raise AssertionError("the second message of the module")\n', encoding="utf-8")
    old = "x is {x}, but it must be 1: set it to one"
    catalogue = {"messages": {"nb99": {old: "x 是 {x}，但它必须是 1：把它设为一"}}}
    (checks / "zh.json").write_text(json.dumps(catalogue, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setattr(i18n, "CHECKS", checks)
    monkeypatch.setattr(i18n, "CATALOGUE", checks / "zh.json")
    m = i18n.messages_state()["nb99"]
    now = "x is {x}, but it should be 1: set it to one"
    assert m["templates"] == [now, "the second message of the module"]
    assert m["missing"] == m["templates"], "the docstrings and the printed line are not messages"
    assert m["stale"] == [old] and m["nearest"][old] == now
    assert i18n.main(["messages", "nb99"]) == 0
