"""Alt text for every picture a notebook's outputs put on the website.

A Sphinx extension used by docs/conf.py. myst-nb turns each display output into
a bundle that still holds every MIME type (the choice of one happens later,
when the page is written), so this hook sees a graph's picture together with
its DOT source, and a figure's picture together with its cell's code. The alt
text says what the picture shows, as a reader would put it:

* a computation graph (its ``text/plain`` is DOT with tensors and ops): its
  caption, then what it computes, written out (``z = matmul(x, w); loss =
  sum(relu(z))``; a summary from its leaves to its root when that is too long
  to read out), which leaves require grad and which need none, the gradients
  when the boxes show them, and which node is highlighted or finished (a
  step-by-step frame). The legend under a drawing (colours and borders) is
  left out: it is about the picture's look, and the text already says it;
* another drawing: "Diagram: <caption>. <the boxes' labels>";
* a figure: what kind of picture a minigrad.viz function draws (a confusion
  matrix, a grid of images...), then its title and axis labels, from the
  output's ``text/plain`` if that says something other than matplotlib's
  ``<Figure ...>``, else as the cell's code sets them (``set_title("...")``,
  ``title="..."``, ``suptitle="..."``, ``set_xlabel(...)``, ...), else the
  cell's first comment line, else the heading the cell sits under.

TeX in a title or label is read out as text (``$e_1^\\top J$`` as "e_1ᵀ J").
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
# The node attributes that say what state minigrad.viz drew a node in (its cue besides colour).
STATE_ATTRS = ("peripheries", "style", "penwidth", "fontname")


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
            found[name].update({k: v for k, v in a.items() if k in ("label", "shape") + STATE_ATTRS})

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
                          "cluster": n["scope"]["label"] if n["scope"] else "",
                          **{k: n[k] for k in STATE_ATTRS if k in n}})
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


# The words a legend line of minigrad.viz starts its entries with: a colour or a cue.
LEGEND_LEADS = ("blue", "grey", "yellow", "white", "pale yellow", "orange", "green", "red", "purple",
                "ellipse", "others")


def _is_legend(line: str) -> bool:
    """Whether a caption line is a legend of minigrad.viz ("blue, double border: requires grad   ...")."""
    parts = [p for p in re.split(r"\s{3,}", line.strip()) if p]
    return bool(parts) and all(re.match(r"[a-z][a-z ]*(, [a-z ]+)?: \S", p)
                               and p.split(":")[0].split(",")[0].strip() in LEGEND_LEADS for p in parts)


def caption(title: str) -> str:
    """A drawing's caption without its legend lines, on one line, TeX read out."""
    lines = re.split(r"\\[lnr]|\n", title)
    return tex_to_text(_one_line(" ".join(line for line in lines if not _is_legend(line))))


def _lines(label: str) -> list[str]:
    return [_one_line(x) for x in re.split(r"\\[lnr]|\n", label) if _one_line(x)]


def _state(n: dict) -> str:
    """What minigrad.viz's cues say about a node: 'param', 'data', 'root', 'focus', 'done' or ''."""
    style = n.get("style", "")
    if n.get("penwidth") == "3":
        return "focus"
    if "dashed" in style:
        return "done"
    if "Bold" in n.get("fontname", ""):
        return "root"
    if n.get("peripheries") == "2":
        return "param"
    if "dotted" in style:
        return "data"
    return ""


def _and(items: list[str]) -> str:
    items = list(dict.fromkeys(items))
    if not items:
        return ""
    if len(items) > MAX_NAMES:
        items = items[:MAX_NAMES] + ["…"]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _computation(g: dict, lead: str) -> str:
    """Alt text of a computation graph: what it computes, from its leaves to its root."""
    nodes = {n["name"]: n for n in g["nodes"]}
    ops = [n for n in g["nodes"] if n["shape"] == "ellipse" and n["name"] != "hidden"]
    boxes = [n for n in g["nodes"] if n["shape"] != "ellipse" and n["name"] != "hidden"
             and n["shape"] != "note"]
    into: dict[str, list[str]] = {}
    out_of: dict[str, str] = {}
    for a, b in g["edges"]:
        if b in nodes and nodes[b]["shape"] == "ellipse":
            into.setdefault(b, []).append(a)
        if a in nodes and nodes[a]["shape"] == "ellipse" and b in nodes and nodes[b] in boxes:
            out_of[a] = b

    def name(n: dict) -> str:
        return _first_line(n["label"])

    uses = Counter(a for a, _ in g["edges"])
    shared: dict[str, str] = {}  # a freed value read twice (s * s): written out once, under a name

    def op_name(n: dict) -> tuple[str, str]:
        """(the value it makes, the op): traced graphs label ops "v3 = matmul"."""
        first = name(n)
        if " = " in first:
            value, op = first.split(" = ", 1)
            return value, op
        return "", first

    def expr(src: str, depth: int = 0) -> str:
        n = nodes.get(src)
        if n is None or src == "hidden":
            return "earlier nodes"
        if n["shape"] != "ellipse":
            return name(n)
        value, op = op_name(n)
        if value:
            return value
        if src in out_of:
            return name(nodes[out_of[src]])
        if src in shared:
            return shared[src]
        if depth > 6:
            return "…"
        return f"{op}({', '.join(expr(a, depth + 1) for a in into.get(src, []))})"

    statements = []
    for n in ops:
        value, op = op_name(n)
        target = value or (name(nodes[out_of[n["name"]]]) if n["name"] in out_of else "")
        if not target and uses[n["name"]] > 1:
            target = f"the {op}"
            if target in shared.values():
                target += f" {sum(v.startswith(target) for v in shared.values()) + 1}"
        if target:
            statements.append(f"{target} = {op}({', '.join(expr(a) for a in into.get(n['name'], []))})")
            if not value and n["name"] not in out_of:
                shared[n["name"]] = target
    used = {a for a, _ in g["edges"]}
    roots = [name(n) for n in boxes if n["name"] not in used] or [s.split(" = ")[0] for s in statements[-1:]]
    by_state: dict[str, list[str]] = {}
    for n in boxes + ops:
        by_state.setdefault(_state(n), []).append(name(n) if n in boxes else op_name(n)[0] or name(n))
    leaves = [name(n) for n in boxes if n["name"] not in out_of.values()]
    parts = []
    if statements:
        parts.append("It computes " + "; ".join(statements))
    else:  # nothing joined up: name what is there
        parts.append(f"It shows {_and([name(n) for n in boxes])} and the op{'s' * (len(ops) != 1)} "
                     f"{_and([op_name(n)[1] for n in ops])}")
    hidden = [n for n in g["nodes"] if n["name"] == "hidden"]
    if hidden:
        parts.append(_first_line(hidden[0]["label"]))
    if by_state.get("param"):
        parts.append(f"{_and(by_state['param'])} require{'s' * (len(by_state['param']) == 1)} grad")
    if by_state.get("data"):
        parts.append(f"{_and(by_state['data'])} need{'s' * (len(by_state['data']) == 1)} no gradient")
    grads = [(name(n), line[5:]) for n in boxes for line in _lines(n["label"]) if line.startswith("grad ")]
    known = [(k, v) for k, v in grads if v != "None"]
    if known:
        parts.append("Gradients shown: " + ", ".join(f"{k} {v}" for k, v in known[:MAX_NAMES])
                     + (", …" if len(known) > MAX_NAMES else ""))
    elif grads:
        parts.append("No tensor has a gradient yet")
    if by_state.get("focus"):
        parts.append(f"Highlighted: {_and(by_state['focus'])}")
    if by_state.get("done"):
        parts.append(f"Finished: {_and(by_state['done'])}")
    parts = [p.rstrip(".") for p in parts]
    text = f"Computation graph{lead} " + ". ".join(parts) + "."
    if len(text) > MAX_ALT and statements:  # too long to read out: from the leaves to the root instead
        counts = Counter(op_name(n)[1] for n in ops)
        op_text = ", ".join(f"{op} ×{k}" if k > 1 else op for op, k in counts.items())
        summary = (f"It computes {_and(roots) or 'its result'}" + (f" from {_and(leaves)}" if leaves else "")
                   + f" in {len(ops)} op{'s' * (len(ops) != 1)} ({op_text})")
        text = f"Computation graph{lead} " + ". ".join([summary] + parts[1:]) + "."
    return _shorten(text)


def graph_alt(dot_source: str) -> str:
    """Alt text for a Graphviz drawing, from its DOT source."""
    g = parse_dot(dot_source)
    title = caption(g["title"])
    ops = [n for n in g["nodes"] if n["shape"] == "ellipse" and n["name"] != "hidden"]
    boxes = [n for n in g["nodes"] if n["shape"] != "ellipse" and n["name"] != "hidden"]
    lead = f": {title.rstrip('.')}." if title else ":"
    if ops and boxes:
        return _computation(g, lead)
    groups: dict[str, list[str]] = {}
    for n in g["nodes"]:
        groups.setdefault(_one_line(n["cluster"]), []).append(_one_line(_fields(n["label"])[0]))
    parts = [(f"{cluster.rstrip('.')}: " if cluster else "") + "; ".join(labels)
             for cluster, labels in groups.items()]
    text = f"Diagram{lead} {'. '.join(parts)}." if parts else f"Diagram{lead.rstrip(':')}"
    return _shorten(tex_to_text(text))


# ---------------------------------------------------------------- TeX, read out

TEX_SYMBOLS = {
    "top": "ᵀ", "otimes": "⊗", "odot": "⊙", "cdot": "·", "times": "×", "circ": "∘", "pm": "±",
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "neq": "≠", "approx": "≈", "sim": "~", "propto": "∝",
    "infty": "∞", "sum": "Σ", "prod": "Π", "partial": "∂", "nabla": "∇", "to": "→", "rightarrow": "→",
    "ldots": "…", "dots": "…", "cdots": "…", "in": "∈", "ell": "ℓ", "sqrt": "√", "|": "‖",
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "Delta": "Δ", "epsilon": "ε",
    "varepsilon": "ε", "eta": "η", "theta": "θ", "lambda": "λ", "mu": "μ", "pi": "π", "rho": "ρ",
    "sigma": "σ", "Sigma": "Σ", "tau": "τ", "phi": "φ", "varphi": "φ", "omega": "ω",
}


def tex_to_text(text: str) -> str:
    """TeX as a reader would say it: symbols as characters, no dollars, braces or backslashes."""
    if "$" not in text and "\\" not in text:
        return text
    text = text.replace("$", "")
    text = re.sub(r"\\(?:mathcal|mathbb|mathrm|mathbf|text|operatorname|boldsymbol)\s*\{([^{}]*)\}",
                  r"\1", text)
    text = re.sub(r"\\(?:mathcal|mathbb|mathrm|mathbf)\s+(\w)", r"\1", text)
    text = re.sub(r"\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"(\1)/(\2)", text)
    text = re.sub(r"\^\s*\\top\b", "ᵀ", text)
    text = re.sub(r"\\(?:left|right|big|Big|bigg|Bigg)\b", "", text)
    text = re.sub(r"\\[,;:! ]", " ", text)
    text = re.sub(r"\\(\||[A-Za-z]+)", lambda m: TEX_SYMBOLS.get(m.group(1), m.group(1)), text)
    text = re.sub(r"([\^_])\{([^{}]*)\}", lambda m: m.group(1) + (m.group(2) if len(m.group(2)) == 1
                                                                 else f"({m.group(2)})"), text)
    return re.sub(r"\s+", " ", text.replace("{", "").replace("}", "")).strip()


# ------------------------------------------------------------------ figures

TITLE_CALLS = {"set_title": "title", "title": "title", "suptitle": "title",
               "set_xlabel": "x", "xlabel": "x", "set_ylabel": "y", "ylabel": "y"}
TITLE_KWARGS = {"title": "title", "suptitle": "title", "xlabel": "x", "ylabel": "y"}
# What the figure of a minigrad.viz function shows, when a cell calls one.
FIGURE_KINDS = {
    "plot_images": "Grid of images",
    "plot_confusion": "Confusion matrix, true class against predicted class",
    "plot_curves": "Training curves",
    "plot_grad_flow": "Gradient size per layer",
    "plot_activation_scale": "Activation scale per layer",
    "plot_histograms": "Histograms per layer",
    "plot_update_ratios": "Update-to-weight ratio per layer",
    "plot_jacobian": "Heat map of a Jacobian",
    "plot_scaling": "Cost against size",
    "plot_memory_timeline": "Memory over one training step, stacked by category",
    "plot_saved": "Bytes each op saves for backward, by kind",
}


def _text_of(node: ast.expr) -> str | None:
    """A string literal's text; an f-string's, with "…" for what it fills in."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)
    return None


def _clean(text: str) -> str:
    return tex_to_text(_one_line(text))


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


def figure_kind(cell_source: str) -> str:
    """What the minigrad.viz function the cell calls draws ("" if it calls none)."""
    try:
        tree = ast.parse(cell_source)
    except SyntaxError:
        return ""
    for call in sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)),
                       key=lambda n: (n.lineno, n.col_offset)):
        f = call.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name in FIGURE_KINDS:
            return FIGURE_KINDS[name]
    return ""


def figure_alt(text_plain: str, cell_source: str, heading: str = "") -> str:
    """Alt text for a figure: the output's own text, else what its cell's code
    says (what it plots, title, axis labels), else the cell's first comment, else its heading."""
    text_plain = text_plain.strip()
    m = MATPLOTLIB_REPR.match(text_plain)
    panels = int(m.group(1)) if m else 1
    if text_plain and not m and not text_plain.startswith("<"):
        return _shorten(f"Figure: {tex_to_text(text_plain)}")
    kind = figure_kind(cell_source)
    if kind:
        labels = figure_labels(cell_source)
        words = "; ".join(labels["title"]) or first_comment(cell_source)
        return _shorten(f"{kind}: {tex_to_text(words).rstrip('.')}." if words else f"{kind}.")
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
            parts.append(tex_to_text(comment))
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
