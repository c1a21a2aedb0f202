"""The language of the checks' messages: English, or Chinese in the course's Chinese edition.

The checks raise ``AssertionError`` with English messages, built from the
f-strings of ``minigrad/checks/*.py``. ``set_language("zh")`` (the set-up cell
of every Chinese notebook calls it) has IPython show those messages in Chinese:
when an ``AssertionError`` reaches the notebook, its message is translated
before the traceback is drawn. The checks themselves never change; nor does
anything in the English edition, where the language stays ``"en"``.

The translations are the catalogue ``zh.json`` beside this module::

    {"messages": {"nb05": {"<English template>": "<Chinese template>", ...}, ...}}

An English template is the text of a message's f-string (or string) as the
source writes it, each ``{...}`` field with its expression, e.g.
``"{label}: dA differs from the package's matmul: dA = g @ B.T"``; the
Chinese template uses the same fields. A message is matched against the
templates (a field matches any text); the fields' values are translated in
turn, because a message is often built of several pieces (a graph's name, a
hint added to a sentence). A message, or a piece of one, that no template
matches is shown as it is, in English: a stale translation is never shown.
``tools/i18n.py`` lists the templates that have no translation, or whose
English changed; ``tests/test_i18n.py`` keeps the catalogue in step.
"""

from __future__ import annotations

import functools
import json
import pathlib
import re
import sys

__all__ = ["set_language", "language", "translate"]

LANGUAGES = ("en", "zh")
CATALOGUE = pathlib.Path(__file__).with_name("zh.json")
_MIN_PIECE = 12  # characters of text a template needs to be found inside a longer message
_ERROR_FIELDS = {"err", "e", "error", "exc"}  # fields that hold an exception: kept as they are
_NUMBER = r"[-+]?(?:\d[\d,]*(?:\.\d*)?(?:e[-+]?\d+)?%?|nan|inf)"  # what a numeric field shows
# A field's value, one character or bracketed group at a time: a value's brackets are balanced
# (a shape (5, 2) is one value, not "(5" and "2)"); an exception's text may be anything.
_BALANCED = (r"(?:[^()\[\]{}]|\((?:[^()]|\([^()]*\))*\)"
             r"|\[(?:[^\[\]]|\[(?:[^\[\]]|\[[^\[\]]*\])*\])*\]|\{[^{}]*\})")
_DEEPER = 0.999
_EMPTY = 10.0  # what a reading loses for each field that holds nothing  # what a field's value scores counts this much in the template's score

_language = "en"
_templates: list[_Template] | None = None
_by_char: dict[str, list[_Template]] = {}
_exact: dict[str, str] = {}  # templates without fields, for the text between two pieces
_leads: re.Pattern | None = None


def parse(template: str) -> list[tuple[str, str]]:
    """A template as ("text", literal) and ("field", expression) parts; ``{{`` and ``}}`` are braces."""
    parts: list[tuple[str, str]] = []
    text, i, n = [], 0, len(template)
    while i < n:
        ch = template[i]
        if ch in "{}" and template[i + 1:i + 2] == ch:
            text.append(ch)
            i += 2
        elif ch == "{":
            depth, j, quote = 1, i + 1, None
            while j < n and depth:
                c = template[j]
                if quote:
                    quote = None if c == quote else quote
                elif c in "'\"":
                    quote = c
                elif c in "{[(":
                    depth += 1
                elif c in "}])":
                    depth -= 1
                j += 1
            if text:
                parts.append(("text", "".join(text)))
                text = []
            parts.append(("field", template[i + 1:j - 1]))
            i = j
        else:
            text.append(ch)
            i += 1
    if text:
        parts.append(("text", "".join(text)))
    return parts


def split_field(field: str) -> tuple[str, dict[str, str]]:
    """A Chinese field ``expr|value=中文|...`` as its expression and its map of values.

    The map translates a field's value where it is one of a few English words, e.g.
    ``{'positive' if positive else 'negative'|positive=正|negative=负}``.
    """
    expr, *pairs = field.split("|")
    if not pairs or not all("=" in p for p in pairs):
        return field, {}
    return expr, dict(p.split("=", 1) for p in pairs)


def fields(template: str) -> list[str]:
    """The expressions of a template's fields, in order (without a Chinese field's map of values)."""
    return [split_field(v)[0] for k, v in parse(template) if k == "field"]


def _numeric(field: str) -> bool:
    """Whether a field shows a number: a len(...) or a number's format (``{x:.3g}``, ``{n:,}``)."""
    depth, quote = 0, None
    for i, c in enumerate(field):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ":" and depth == 0:
            return bool(re.fullmatch(r"[-+ ]?,?\d*(?:\.\d+)?[dfegn%]?,?", field[i + 1:])) and field[i + 1:] != ""
    return field.startswith("len(")


class _Template:
    """One English template compiled for matching, with its Chinese."""

    def __init__(self, en: str, zh: str):
        self.en, self.zh = en, zh
        self.parts = parse(en)
        self.literals = [v for k, v in self.parts if k == "text"]
        self.weight = sum(len(v) for v in self.literals)
        self.lead = self.parts[0][1] if self.parts and self.parts[0][0] == "text" else ""
        last = self.parts[-1] if self.parts else ("text", "")
        self.trailing = last[0] == "field" and [v for _, v in self.parts].count(last[1]) == 1
        self.names: dict[str, str] = {}
        # The whole message: with every field holding something, then with empty fields too.
        self.full = [re.compile(self._regex(lazy, empty=empty), re.S)
                     for empty in (False, True) for lazy in (True, False)]
        # Inside a longer message: a field at the end takes the rest of it.
        self.piece = re.compile(self._regex(True, rest=True), re.S)

    def _regex(self, lazy: bool, rest: bool = False, empty: bool = True) -> str:
        out, seen = [], {}
        for k, (kind, value) in enumerate(self.parts):
            if kind == "text":
                out.append(re.escape(value))
            elif value in seen:
                out.append(f"(?P={seen[value]})")
            else:
                seen[value] = self.names[value] = f"f{len(seen)}"
                if _numeric(value):
                    out.append(f"(?P<{seen[value]}>{_NUMBER})")
                    continue
                last = k == len(self.parts) - 1
                many = "*" if empty else "+"
                unit = "." if value in _ERROR_FIELDS else _BALANCED
                out.append(f"(?P<{seen[value]}>{unit}{many}{'' if rest and last else '?' if lazy else ''})")
        return "".join(out)

    def fill(self, values: dict[str, tuple[str, str]]) -> str:
        """The Chinese template with its fields' values: {expression: (English value, Chinese value)}."""
        out = []
        for kind, value in parse(self.zh):
            if kind == "text":
                out.append(value)
                continue
            expr, words = split_field(value)
            en, zh = values.get(expr, ("{" + expr + "}",) * 2)
            out.append(words.get(en, zh))
        return "".join(out)


def _load() -> list[_Template]:
    global _templates, _leads
    if _templates is None:
        data = json.loads(CATALOGUE.read_text(encoding="utf-8"))
        pairs = {en: zh for module in data["messages"].values() for en, zh in module.items()
                 if zh and zh != en}
        _templates = sorted((_Template(en, zh) for en, zh in pairs.items()), key=lambda t: -t.weight)
        pieces = [t for t in _templates if t.weight >= _MIN_PIECE]
        _by_char.clear()
        for t in pieces:
            _by_char.setdefault(t.lead[:1], []).append(t)  # "" holds those that start with a field
        _exact.clear()
        _exact.update((t.en, t.zh) for t in _templates if not t.names)
        leads = sorted({t.lead for t in pieces if t.lead}, key=len, reverse=True)
        _leads = re.compile("(?=(?:" + "|".join(map(re.escape, leads)) + "))") if leads else None
        _translate.cache_clear()
    return _templates


def _boundary(text: str, i: int) -> bool:
    """Whether position i of text is not inside a word."""
    return i <= 0 or i >= len(text) or not (text[i - 1].isalnum() and text[i].isalnum())


def _fill(t: _Template, m: re.Match) -> tuple[str, float]:
    """The Chinese of a template's match, its fields' values translated in turn, and its score.

    A field that holds an exception (``{err}``, ``{e}``) or the name of a type keeps its text:
    it is the message of NumPy, Python or the engine, which stays English. What the fields'
    templates match counts a little less than the template's own text: of two readings of a
    message, the flatter one wins (a hint is a field of the sentence it ends, not of a name
    inside that sentence). An empty field costs a little: a reading that needs one wins only
    where no other does.
    """
    values, score = {}, float(t.weight)
    for expr, name in t.names.items():
        value = m.group(name)
        keep = expr in _ERROR_FIELDS or expr.endswith(".__name__")
        zh, s = (value, 0.0) if keep else _translate(value)
        values[expr] = (value, zh)
        score += _DEEPER * s - (_EMPTY if not value else 0.0)
    return t.fill(values), score


@functools.lru_cache(maxsize=4096)
def _translate(text: str) -> tuple[str, float]:
    """The Chinese of ``text`` and its score: how many of its characters templates matched.

    The better of: one template matching the whole text, or several templates each matching
    a piece of it (on a tie the pieces, if the whole match ends with a field: the pieces keep
    that field to itself). A field's value is always shorter than the text, so the recursion
    ends.
    """
    if not text.strip():
        return text, 0.0
    best, trailing = _whole(text)
    if best is not None and best[1] >= len(text):
        return best
    pieces = _pieces(text)
    if best is None or pieces[1] > best[1] or pieces[1] == best[1] and trailing:
        return pieces
    return best


def _whole(text: str) -> tuple[tuple[str, float] | None, bool]:
    """The best template that matches all of ``text``, and whether it ends with a field."""
    best: tuple[str, float] | None = None
    trailing = False
    for t in _load():
        if best is not None and best[1] >= len(text):
            break  # every character is matched: nothing can do better
        if not all(lit in text for lit in t.literals):
            continue
        for regex in t.full:
            m = regex.fullmatch(text)
            if m is not None:
                zh, score = _fill(t, m)
                if best is None or score > best[1]:
                    best, trailing = (zh, score), t.trailing
    return best, trailing


def _pieces(text: str) -> tuple[str, float]:
    """A message built of several pieces: translate each piece a template matches, keep the rest.

    A piece starts at the start of the text or where some template's text begins (not inside
    a word). A template's last field, where it ends with one, ends where the next piece
    starts. At the start of the text a piece may also start with a field (a message that
    ``+=`` extended). Text between two pieces that is a template of its own (``"; or "``) is
    translated too.
    """
    _load()
    starts = sorted({0} | {m.start() for m in _leads.finditer(text) if _boundary(text, m.start())}
                    if _leads else {0})
    out, score, plain = [], 0.0, 0
    for i in starts:
        if i < plain:
            continue
        found = None
        for t in _by_char.get(text[i], []) + (_by_char.get("", []) if i == 0 else []):
            if t.lead and not text.startswith(t.lead, i):
                continue
            m = t.piece.match(text, i)
            if m is not None and t.trailing:
                field = m.start(t.names[t.parts[-1][1]])
                cut = next((j for j in starts if field < j < m.end()), None)
                if cut is not None:
                    m = t.piece.match(text, i, cut)
            if m is None or m.end() == i or not _boundary(text, m.end()):
                continue
            zh, s = _fill(t, m)
            if found is None or s > found[1]:
                found = (zh, s, m.end())
        if found is None:
            continue
        gap = text[plain:i]
        out += [_exact.get(gap, gap) if out else gap, found[0]]
        score += found[1]
        plain = found[2]
    if not out:
        return text, 0.0
    out.append(text[plain:])
    return "".join(out), score


def translate(message: str, lang: str | None = None) -> str:
    """``message`` (a check's English message) in ``lang`` (default: the current language)."""
    lang = lang or _language
    if lang == "en" or not isinstance(message, str):
        return message
    return _translate(message)[0]


def language() -> str:
    """The language the checks' messages are shown in: "en" or "zh"."""
    return _language


def _show_translated(shell, etype, value, tb, tb_offset=None):
    """IPython's handler of AssertionError in the Chinese edition: the message in Chinese, then the traceback."""
    if value.args and isinstance(value.args[0], str):
        value.args = (translate(value.args[0]), *value.args[1:])
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def _excepthook(etype, value, tb, _previous=sys.excepthook):
    if issubclass(etype, AssertionError) and value.args and isinstance(value.args[0], str):
        value.args = (translate(value.args[0]), *value.args[1:])
    _previous(etype, value, tb)


def set_language(lang: str) -> None:
    """Show the checks' messages in ``lang``: "zh" (the Chinese edition) or "en" (the default)."""
    global _language
    if lang not in LANGUAGES:
        raise ValueError(f"set_language: {lang!r} is not one of {LANGUAGES}")
    _language = lang
    if lang != "en":
        _load()
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None:
        if lang != "en":
            shell.set_custom_exc((AssertionError,), _show_translated)
        elif shell.custom_exceptions == (AssertionError,):
            shell.set_custom_exc((), None)
    elif lang != "en" and sys.excepthook is not _excepthook:
        sys.excepthook = _excepthook
    elif lang == "en" and sys.excepthook is _excepthook:
        sys.excepthook = _excepthook.__defaults__[0]
