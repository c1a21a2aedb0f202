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
    for cid, e in data["cells"].items():
        assert re.fullmatch(r"[0-9a-f]{16}", e.get("en_sha", "")), f"{path.name} {cid}: en_sha is not 16 hex"
        assert isinstance(e.get("zh"), str), f"{path.name} {cid}: no 'zh' text"
        assert set(e) <= {"en_sha", "zh", "exempt", "why"}, f"{path.name} {cid}: unknown keys {set(e)}"
        if e.get("exempt"):
            assert e.get("why"), f"{path.name} {cid}: an exemption needs a 'why'"


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
    assert len(zh["cells"]) == len(en["cells"])
    for a, b in zip(en["cells"], zh["cells"]):
        if a["cell_type"] == "markdown":
            assert i18n.source(b) == entries[a["id"]]["zh"]
            assert re.search(r"[\u4e00-\u9fff]", i18n.source(b)), f"{stem} {a['id']}: no Chinese"
            assert {k: v for k, v in a.items() if k != "source"} == \
                   {k: v for k, v in b.items() if k != "source"}
        else:
            assert a == b, f"{stem} {a['id']}: a code cell changed"


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
