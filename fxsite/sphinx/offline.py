"""Keep the site self-contained: drop raw HTML that would load scripts or styles from the web.

sphinx-gallery's execution-times pages (``sg_execution_times.rst``) start with a
``.. raw:: html`` block that pulls jQuery, DataTables and Bootstrap from CDNs to
make the table sortable. Offline that block fails (console errors, a script
that never loads); without it the table is a plain, readable table. This
removes, from every reStructuredText source as it is read, each raw HTML block
that loads something from another host.
"""

from __future__ import annotations

import re

_RAW_HTML = re.compile(r"^(?P<indent>[ \t]*)\.\. raw:: html[ \t]*\n(?:(?:(?P=indent)[ \t]+\S.*)?\n)*", re.M)
_REMOTE = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=["']?(?:https?:)?//""", re.I)


def drop_remote_html(text: str) -> str:
    """``text`` without the ``.. raw:: html`` blocks that load a resource from another host.

    >>> page = "Times\\n\\n.. raw:: html\\n\\n    <script src='https://cdn.example/x.js'></script>\\n\\nTable\\n"
    >>> drop_remote_html(page)
    'Times\\n\\nTable\\n'
    >>> drop_remote_html(".. raw:: html\\n\\n    <b>local</b>\\n")
    '.. raw:: html\\n\\n    <b>local</b>\\n'
    """
    if not isinstance(text, str):
        raise TypeError(f"drop_remote_html: expected a page's source text (str), got {type(text).__name__}")
    return _RAW_HTML.sub(lambda block: "" if _REMOTE.search(block.group(0)) else block.group(0), text)


def _on_source_read(app, docname: str, source: list[str]) -> None:
    if app.env.doc2path(docname).suffix == ".rst":
        source[0] = drop_remote_html(source[0])


def setup(app) -> None:
    app.connect("source-read", _on_source_read)
