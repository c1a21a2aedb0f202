"""On each notebook's page, its student version: a download link and a Colab link.

A Sphinx extension used by docs/conf.py. `make site` writes the student
notebooks (exercises blanked, outputs cleared; ``tools/colab.py
--publish-student``) to ``build/site-extra/student/``, which the site serves as
``student/``. Under the title of every page ``notebooks/NN_name``, this
extension puts a line that offers ``../student/NN_name.ipynb`` for download and
opens the committed ``student/NN_name.ipynb`` in Colab; the theme's own
download button offers the reference notebook, with its solutions. The Chinese
edition's pages say it in Chinese, offer its own student notebooks (``make
site`` writes them to ``build/site-extra-zh/student/``) and open the committed
``zh/student/NN_name.ipynb``.
"""

from __future__ import annotations

import html
import posixpath

from docutils import nodes

COLAB = "https://colab.research.google.com/github/minigrad-course/minigrad-course/blob/main"


def student_links(docname: str, language: str | None = None) -> str | None:
    """The HTML line for the page ``docname``, or None if it is not a notebook's page.

    In the Chinese edition (``language`` zh_CN) the line is Chinese and opens the committed
    Chinese student version, ``zh/student/NN_name.ipynb``, in Colab.
    """
    folder, name = posixpath.split(docname)
    if folder != "notebooks" or not name[:2].isdigit():
        return None
    file = html.escape(f"{name}.ipynb")
    if (language or "").startswith("zh"):
        return (f'<p class="student-version">不含答案的练习版：'
                f'<a href="../student/{file}" download="{file}">下载学生版</a>，'
                f'或者<a href="{COLAB}/zh/student/{file}">在 Colab 中打开</a>。</p>')
    return (f'<p class="student-version">Exercises without the solutions: '
            f'<a href="../student/{file}" download="{file}">download the student version</a> '
            f'or <a href="{COLAB}/student/{file}">open it in Colab</a>.</p>')


def add_student_links(app, doctree):
    line = student_links(app.env.docname, app.config.language)
    if line is None:
        return
    for section in doctree.findall(nodes.section):
        title = next(iter(section.findall(nodes.title)), None)
        if title is not None:
            section.insert(section.index(title) + 1, nodes.raw("", line, format="html"))
            return


def setup(app):
    app.connect("doctree-read", add_student_links)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
