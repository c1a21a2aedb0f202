"""Sphinx configuration of the course's website (`make site`).

The website is the README and the sixteen notebooks with their saved outputs:
nothing is executed. `make site` lays the sources out under build/site-src/
(this folder's index.md, README.md, notebooks/, benchmarks/RESULTS.md) and
runs `sphinx-build -c docs build/site-src build/site`.

The Chinese edition is built with the same configuration and
MINIGRAD_SITE_LANG=zh, from build/site-src-zh/ (docs/zh/index.md,
README.zh.md, the glossary, the Chinese notebooks of tools/i18n.py) into
build/site/zh/; every page of each edition links to the same page of the
other (lang_switch.py).
"""

import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))  # alt_text.py

# MathJax is served from the site itself (no CDN): `make site` unpacks it here.
MATHJAX = ROOT / "build" / "site-static"
if not (MATHJAX / "mathjax" / "tex-mml-chtml.js").is_file():
    raise RuntimeError(f"MathJax is missing from {MATHJAX}/mathjax: build the site with `make site`")

project = "minigrad"
author = "the minigrad authors"
copyright = "the minigrad authors, MIT licence"
html_title = "minigrad"

# githubpages writes .nojekyll, so GitHub Pages serves _static/ and _images/ as they are.
extensions = ["myst_nb", "sphinx.ext.githubpages", "alt_text"]
root_doc = "index"
# index.md is the learners' front door; README.md (developers, instructors) is a page of its own.
# README.zh.md is the Chinese front page's source (docs/zh/index.md includes it).
exclude_patterns = ["README.zh.md", "**/.ipynb_checkpoints"]

# Notebooks are shown as saved, outputs included: never executed here.
nb_execution_mode = "off"
# myst-nb's own order picks a graph's SVG (sharp at any zoom) over its PNG, and
# a figure's PNG over its text.
nb_output_stderr = "show"

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

mathjax_path = "mathjax/tex-mml-chtml.js"  # under _static/
html_static_path = ["_static", str(MATHJAX)]
html_css_files = ["site.css"]

html_theme = "sphinx_book_theme"
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "show_prev_next": True,
}
html_last_updated_fmt = None  # the same sources give the same pages
html_copy_source = True  # the download button offers each page's .ipynb

# ------------------------------------------------ the two editions
# MINIGRAD_SITE_LANG=zh builds the Chinese edition (build/site-src-zh -> build/site/zh).
EDITION = os.environ.get("MINIGRAD_SITE_LANG", "en")
if EDITION not in ("en", "zh"):
    raise RuntimeError(f"MINIGRAD_SITE_LANG is {EDITION!r}: en or zh")
extensions.append("lang_switch")


def _pages(src: pathlib.Path) -> list[str]:
    """The docnames of an edition's sources (for its pages' language switch)."""
    names = [p.relative_to(src).with_suffix("").as_posix() for p in src.rglob("*")
             if p.suffix in (".md", ".ipynb") and ".ipynb_checkpoints" not in p.parts]
    return sorted(n for n in names if not n.startswith("README"))


if EDITION == "zh":
    language = "zh_CN"
    # Sphinx's Chinese search script names a ChineseStemmer it never defines (a
    # script error on every page); the English index still finds code names.
    html_search_language = "en"
    html_title = "minigrad 中文版"
    lang_switch = {"label": "English", "lang": "en", "root": "../", "title": "This page in English",
                   "pages": _pages(ROOT / "build" / "site-src")}
else:
    lang_switch = {"label": "中文", "lang": "zh-CN", "root": "zh/", "title": "本页的中文版",
                   "pages": _pages(ROOT / "build" / "site-src-zh")}

# ------------------------------------------------ learners: launch and download
# Each notebook page gets the theme's launch buttons (Colab, Binder) and, under
# its title, the student version (docs/student_version.py): `make site` writes
# the student notebooks to build/site-extra/student/, served as student/.
# The Chinese edition's student notebooks are in build/site-extra-zh/student/, served as
# zh/student/; its launch buttons open the committed Chinese notebooks (zh/notebooks/...).
extensions.append("student_version")
html_extra_path = [str(ROOT / "build" / ("site-extra-zh" if EDITION == "zh" else "site-extra"))]
html_theme_options.update({
    "repository_url": "https://github.com/minigrad-course/minigrad-course",
    "repository_branch": "main",
    # the site's sources are laid out as in the repository (notebooks/..., zh/notebooks/...)
    "path_to_docs": "zh" if EDITION == "zh" else "",
    "use_repository_button": True,
    "launch_buttons": {
        "colab_url": "https://colab.research.google.com",
        "binderhub_url": "https://mybinder.org",
        "notebook_interface": "jupyterlab",
    },
})

# ------------------------------------------------ accessibility
# A copy button on every code cell (sphinx-copybutton); formulas out of the Tab
# order, their assistive MathML kept for screen readers; wide outputs that
# scroll become keyboard-reachable regions (_static/site.js).
extensions.append("sphinx_copybutton")
# Two of the theme's templates, changed for the same audit (docs/_templates/): the search buttons' accessible
# name is their visible label, and the sidebar's logo sits in a landmark.
templates_path = ["_templates"]
mathjax3_config = {"options": {"menuOptions": {"settings": {"inTabOrder": False, "assistiveMml": True}}}}
html_js_files = ["site.js"]
