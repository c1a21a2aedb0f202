"""A link to the same page in the other edition (English <-> 中文), on every page.

A Sphinx extension used by docs/conf.py. The English site is build/site/ and
the Chinese one build/site/zh/ (`make site` builds both). ``lang_switch`` in
the configuration says where the other edition is and which pages it has::

    lang_switch = {"label": "中文", "lang": "zh-CN", "root": "zh/", "pages": ["index", ...]}

``root`` is the other edition's root relative to this edition's root. A page
the other edition lacks links to the other edition's first page. The link is
put at the top of each page's body, with ``hreflang`` and ``lang`` set, and
styled by _static/lang_switch.css.
"""

from __future__ import annotations

import html

CSS = "lang_switch.css"


def _link(app, pagename: str) -> str:
    conf = app.config.lang_switch
    target = pagename if pagename in set(conf["pages"]) else "index"
    up = "../" * pagename.count("/")
    href = f"{up}{conf['root']}{target}.html"
    label, lang = html.escape(conf["label"]), html.escape(conf["lang"])
    title = html.escape(conf.get("title", label))
    return (f'<p class="lang-switch"><a href="{html.escape(href)}" hreflang="{lang}" lang="{lang}" '
            f'title="{title}">{label}</a></p>\n')


def _page_context(app, pagename, templatename, context, doctree):
    if not app.config.lang_switch or "body" not in context:
        return
    context["body"] = _link(app, pagename) + context["body"]


def setup(app):
    app.add_config_value("lang_switch", {}, "html")
    app.add_css_file(CSS)
    app.connect("html-page-context", _page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
