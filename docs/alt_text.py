"""Alt text for every picture a notebook's outputs put on the website.

A Sphinx extension used by docs/conf.py. myst-nb turns each display output into
a bundle that still holds every MIME type (the choice of one happens later,
when the page is written), so this hook sees a graph's picture together with
its DOT source, and a figure's picture together with its cell's code:

* a graph (its ``text/plain`` is DOT): "Computation graph: <caption>. N tensors
  (x, w, ...) and M ops (matmul, relu, ...)." for drawings of tensors and ops,
  "Diagram: <caption>. <the boxes' labels>" for other drawings;
* a figure: its title and axis labels, if the output's ``text/plain`` says
  something other than matplotlib's ``<Figure ...>``, else as the cell's code
  sets them (``set_title("...")``, ``title="..."``, ``set_xlabel(...)``, ...),
  else the cell's first comment line, else the heading the cell sits under.

An ``alt`` given in the cell's metadata (myst-nb's ``mystnb.image.alt``) is
kept. A picture still without alt text when a page is written is a warning,
which ``make site`` (``sphinx-build -W``) turns into an error.
"""

from __future__ import annotations

import ast
import re
from collections import Counter

from docutils import nodes

MAX_ALT = 500  # characters; a screen reader reads all of it
MAX_NAMES = 10

# --------------------------------------------------------------- DOT source

_TOKEN = re.compile(r'''
    (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<arrow>->|--)
  | (?P<punct>[\[\]{}=;,])
  | (?P<id>[^\s\[\]{}=;,"]+)
  | (?P<space>\s+)
''', re.X | re.S)


IDS = ("id", "string")


def _tokens(source: str) -> list[tuple[str, str]]:
    out = []
    for m in _TOKEN.finditer(source):
        kind = m.lastgroup
        if kind == "space":
            continue
        text = m.group()
        if kind == "string":  # a quoted ID: never a keyword
            text = re.sub(r'\\(["\\])', r"\1", text[1:-1])
        out.append((kind, text))
    return out


def parse_dot(source: str) -> dict:
    """Nodes (in order, with label, shape and cluster), edges and caption of a DOT graph.

    Enough of DOT for what Graphviz's Python package writes: statements
    ``graph|node|edge [..]``, ``key=value``, ``a [..]``, ``a -> b -> c [..]``
    and subgraphs. A node's label defaults to its name and its shape to the
    enclosing ``node [shape=..]``, as in Graphviz; its cluster is the caption
    (``label``) of the innermost subgraph it first appears in.
    """
    toks = _tokens(source)
    i = 0
    order: list[str] = []
    found: dict[str, dict] = {}
    edges: list[tuple[str, str]] = []
    scopes = [{"shape": "ellipse", "label": ""}]  # one per { }: node defaults and caption
    top: dict[str, str] = {}

    def attrs() -> dict[str, str]:
        nonlocal i
        got: dict[str, str] = {}
        while i < len(toks) and toks[i] == ("punct", "["):
            i += 1
            while i < len(toks) and toks[i] != ("punct", "]"):
                if toks[i][0] in IDS and i + 2 < len(toks) and toks[i + 1] == ("punct", "="):
                    got[toks[i][1]] = toks[i + 2][1]
                    i += 3
                else:
                    i += 1
            i += 1
        return got

    def node(name: str, a: dict[str, str] | None = None) -> None:
        name = re.sub(r":[^:]*$", "", name) if ":" in name and name not in found else name
        if name not in found:
            order.append(name)
            found[name] = {"label": name, "shape": scopes[-1]["shape"],
                           "scope": scopes[-1] if len(scopes) > 2 else None}
        if a:
            found[name].update({k: v for k, v in a.items() if k in ("label", "shape")})

    def open_scope() -> None:
        scopes.append({"shape": scopes[-1]["shape"], "label": ""})
        if len(scopes) == 2:
            scopes[-1]["label"] = ""  # the graph itself: its label is the caption

    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else ("", "")
        if (kind, text) == ("punct", "{"):
            open_scope()
            i += 1
        elif (kind, text) == ("punct", "}"):
            if len(scopes) > 1:
                scopes.pop()
            i += 1
        elif kind in ("punct", "arrow"):
            i += 1
        elif kind == "id" and text in ("digraph", "graph", "subgraph") and (
                nxt == ("punct", "{") or (nxt[0] in IDS and i + 2 < len(toks)
                                          and toks[i + 2] == ("punct", "{"))):
            i += 2 if nxt == ("punct", "{") else 3
            open_scope()
        elif kind == "id" and text == "strict":
            i += 1
        elif kind == "id" and text in ("graph", "node", "edge") and nxt == ("punct", "["):
            i += 1
            a = attrs()
            if text == "node" and "shape" in a:
                scopes[-1]["shape"] = a["shape"]
            elif text == "graph" and "label" in a:
                (top if len(scopes) <= 2 else scopes[-1])["label"] = a["label"]
        elif nxt == ("punct", "=") and i + 2 < len(toks):
            if text == "label":
                (top if len(scopes) <= 2 else scopes[-1])["label"] = toks[i + 2][1]
            i += 3
        else:
            chain = [text]
            i += 1
            while i + 1 < len(toks) and toks[i][0] == "arrow":
                chain.append(toks[i + 1][1])
                i += 2
            a = attrs()
            if len(chain) == 1:
                node(chain[0], a)
            else:
                for name in chain:
                    node(name)
                chain = [re.sub(r":[^:]*$", "", c) if c not in found else c for c in chain]
                edges.extend(zip(chain, chain[1:]))
    nodes_out = []
    for name in order:
        n = found[name]
        nodes_out.append({"name": name, "label": n["label"], "shape": n["shape"],
                          "cluster": n["scope"]["label"] if n["scope"] else ""})
    return {"title": top.get("label", ""), "edges": edges, "nodes": nodes_out}


def _one_line(text: str) -> str:
    text = re.sub(r"\\[lnr]", " ", text)  # DOT's line breaks
    return re.sub(r"\s+", " ", text).strip()


def _fields(label: str) -> list[str]:
    """A record label's fields ("x|<d> data: ..."), without ports and escapes."""
    fields = re.split(r"(?<!\\)\|", label)
    return [re.sub(r"\\(.)", r"\1", re.sub(r"^\s*<[^>]*>\s*", "", f)) for f in fields]


def _first_line(label: str) -> str:
    first = re.split(r"\\[lnr]|\n", label, maxsplit=1)[0]
    return _one_line(_fields(first)[0])


def _shorten(text: str, limit: int = MAX_ALT) -> str:
    text = _one_line(text)
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _names(items: list[str]) -> str:
    shown = ", ".join(items[:MAX_NAMES])
    return shown + (", …" if len(items) > MAX_NAMES else "")


def graph_alt(dot_source: str) -> str:
    """Alt text for a Graphviz drawing, from its DOT source."""
    g = parse_dot(dot_source)
    title = _one_line(g["title"])
    ops = [n for n in g["nodes"] if n["shape"] == "ellipse" and n["name"] != "hidden"]
    boxes = [n for n in g["nodes"] if n["shape"] != "ellipse" and n["name"] != "hidden"]
    lead = f": {title.rstrip('.')}." if title else ":"
    if ops and boxes:
        # Traced graphs label ops "v3 = matmul"; recorded graphs label them "matmul".
        op_names = [_first_line(n["label"]).split("= ")[-1] for n in ops]
        counts = Counter(op_names)
        op_text = ", ".join(f"{op} ×{k}" if k > 1 else op for op, k in counts.items())
        tensor_names = [_first_line(n["label"]) for n in boxes]
        hidden = [n for n in g["nodes"] if n["name"] == "hidden"]
        more = f" {_first_line(hidden[0]['label'])}." if hidden else ""
        text = (f"Computation graph{lead} {len(boxes)} tensor{'s' * (len(boxes) != 1)} "
                f"({_names(tensor_names)}) and {len(ops)} op{'s' * (len(ops) != 1)} ({op_text}).{more}")
    else:
        groups: dict[str, list[str]] = {}
        for n in g["nodes"]:
            groups.setdefault(_one_line(n["cluster"]), []).append(_one_line(_fields(n["label"])[0]))
        parts = [(f"{cluster.rstrip('.')}: " if cluster else "") + "; ".join(labels)
                 for cluster, labels in groups.items()]
        text = f"Diagram{lead} {'. '.join(parts)}." if parts else f"Diagram{lead.rstrip(':')}"
    return _shorten(text)


# ------------------------------------------------------------------ figures

TITLE_CALLS = {"set_title": "title", "title": "title", "suptitle": "title",
               "set_xlabel": "x", "xlabel": "x", "set_ylabel": "y", "ylabel": "y"}
TITLE_KWARGS = {"title": "title", "xlabel": "x", "ylabel": "y"}


def _text_of(node: ast.expr) -> str | None:
    """A string literal's text; an f-string's, with "…" for what it fills in."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)
    return None


def _clean(text: str) -> str:
    return _one_line(text.replace("$", ""))


def figure_labels(cell_source: str) -> dict[str, list[str]]:
    """Titles and axis labels that the code of a cell sets with string literals."""
    found: dict[str, list[str]] = {"title": [], "x": [], "y": []}
    try:
        tree = ast.parse(cell_source)
    except SyntaxError:
        return found

    def add(key: str, text: str | None) -> None:
        if text and _clean(text) and _clean(text) not in found[key]:
            found[key].append(_clean(text))

    calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)),
                   key=lambda n: (n.lineno, n.col_offset))
    for call in calls:
        f = call.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name in TITLE_CALLS and call.args:
            add(TITLE_CALLS[name], _text_of(call.args[0]))
        for kw in call.keywords:
            if kw.arg in TITLE_KWARGS:
                add(TITLE_KWARGS[kw.arg], _text_of(kw.value))
    return found


def first_comment(cell_source: str) -> str:
    """The text of the cell's first comment line ("# ..."), without the hash."""
    for line in cell_source.splitlines():
        s = line.strip()
        if s.startswith("#") and not s.startswith(("#!", "# BEGIN SOLUTION", "# END SOLUTION")):
            text = s.lstrip("#").strip()
            if text:
                return text
    return ""


MATPLOTLIB_REPR = re.compile(r"^<Figure size \d+x\d+ with (\d+) Axes>$")


def figure_alt(text_plain: str, cell_source: str, heading: str = "") -> str:
    """Alt text for a figure: the output's own text, else what its cell's code
    says (title, axis labels), else the cell's first comment, else its heading."""
    text_plain = text_plain.strip()
    m = MATPLOTLIB_REPR.match(text_plain)
    panels = int(m.group(1)) if m else 1
    if text_plain and not m and not text_plain.startswith("<"):
        return _shorten(f"Figure: {text_plain}")
    labels = figure_labels(cell_source)
    parts = []
    if labels["title"]:
        parts.append("; ".join(labels["title"]))
    axes = [f"{axis} axis: {' / '.join(labels[axis])}" for axis in ("x", "y") if labels[axis]]
    if axes:
        parts.append(", ".join(axes))
    if not parts:
        comment = first_comment(cell_source)
        if comment:
            parts.append(comment)
        elif heading:
            parts.append(f"a figure in the section “{_one_line(heading)}”")
        else:
            parts.append("a figure")
    lead = f"Figure with {panels} panels" if panels > 1 else "Figure"
    return _shorten(f"{lead}: " + ". ".join(p.rstrip(".") for p in parts) + ".")


# ---------------------------------------------------------- the Sphinx hook

def _section_title(node: nodes.Node) -> str:
    while node is not None:
        if isinstance(node, nodes.section) and node.children and isinstance(node[0], nodes.title):
            return node[0].astext()
        node = node.parent
    return ""


def _cell_source(cell: nodes.Element) -> str:
    for child in cell.children:
        if child.get("nb_element") == "cell_code_source":
            return "\n".join(b.astext() for b in child.findall(nodes.literal_block))
    return ""


def _metadata_alt(cell: nodes.Element) -> str:
    meta = cell.get("cell_metadata") or {}
    image = (meta.get("mystnb") or {}).get("image") or {}
    return str(image.get("alt") or "")


def alt_for_bundle(bundle: nodes.Element, cell: nodes.Element | None) -> str:
    text_plain = ""
    for child in bundle.children:
        if child.get("mime_type") == "text/plain":
            text_plain = child.astext()
    if re.match(r"\s*(strict\s+)?(di)?graph\b", text_plain):
        return graph_alt(text_plain)
    source = _cell_source(cell) if cell is not None else ""
    return figure_alt(text_plain, source, _section_title(bundle))


def add_alt_text(app, doctree: nodes.document) -> None:
    """doctree-read: give every image in a notebook output bundle its alt text."""
    bundles = [n for n in doctree.findall(nodes.container) if n.get("nb_element") == "mime_bundle"]
    for bundle in bundles:
        images = list(bundle.findall(nodes.image))
        if not images:
            continue
        cell = bundle.parent
        while cell is not None and cell.get("nb_element") != "cell_code":
            cell = cell.parent
        alt = (_metadata_alt(cell) if cell is not None else "") or alt_for_bundle(bundle, cell)
        for image in images:
            if not image.get("alt"):
                image["alt"] = alt


def check_alt_text(app, doctree: nodes.document, docname: str) -> None:
    """doctree-resolved: warn about any picture left without alt text."""
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    for image in doctree.findall(nodes.image):
        if not image.get("alt", "").strip():
            logger.warning("image without alt text: %s", image.get("uri"), location=image)


def setup(app):
    app.connect("doctree-read", add_alt_text)
    app.connect("doctree-resolved", check_alt_text)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
