"""The site search takes a pasted error: the catalogue of causes in the scorer, and each cause's messages on its
section of the error index.

- ``config-inited``: the scorer Sphinx loads (``html_search_scorer``) is ``static/search-scorer.js`` with, above
  it, ``FXGUIDE_CAUSES``: each cause of :data:`fxguide.diagnose.causes.CAUSES` (its page, anchor, heading,
  pattern, messages, graph-break id), and ``FXGUIDE_TOPICS``, the guide's page for each part of torch
  (:data:`fxguide.diagnose.topics.TOPICS`), written into the build's doctree folder. The scorer reads a pasted
  message the way a traceback prints it and lands it on its cause's section (see the file's header).
- ``doctree-read`` of the error index: each cause's section ends with the messages it answers as torch printed
  them (the first line; for a graph break, Dynamo's ``Explanation:`` line and the graph-break id with PyTorch's
  page for it), so they are on the page and in the search index. ``tests/test_catalogue.py`` checks that each was
  printed by a cell of the site.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes

STATIC = Path(__file__).resolve().parent / "static"
SCORER = STATIC / "search-scorer.js"
ERRORS_PAGE = "reference/errors"


def _headings(source: Path) -> dict[str, str]:
    """anchor -> heading text (no Markdown backticks) of the error index's entries ({} for a site without one)."""
    if not source.is_file():
        return {}
    found = re.findall(r"^\(([\w-]+)\)=\n#+ (.+)$", source.read_text(), flags=re.MULTILINE)
    return {anchor: heading.replace("`", "").strip() for anchor, heading in found}


def catalogue(srcdir: Path) -> list[dict]:
    """The causes as the scorer reads them."""
    from fxguide.diagnose.causes import CAUSES

    headings = _headings(srcdir / f"{ERRORS_PAGE}.md")
    return [{"page": cause.section.page, "anchor": cause.section.anchor,
             "title": headings.get(cause.section.anchor, cause.name) if cause.section.page == ERRORS_PAGE
             else cause.name,
             "regex": cause.regex.pattern, "messages": list(cause.messages), "graph_break": cause.graph_break,
             "frames": cause.frames.pattern if cause.frames else "",
             "type_only": cause.type_only}
            for cause in CAUSES]


def topics() -> list[dict]:
    """The parts of torch and the guide's page on each (:data:`fxguide.diagnose.topics.TOPICS`), as the scorer
    reads them: a pasted traceback no cause answers lands on the page for the part of torch that raised it."""
    from fxguide.diagnose.topics import TOPICS

    return [{"prefix": prefix, "page": section.page, "anchor": section.anchor, "what": what}
            for prefix, section, what in TOPICS]


def scorer_text(srcdir: Path) -> str:
    data = json.dumps(catalogue(srcdir), ensure_ascii=False, indent=None, sort_keys=True)
    parts = json.dumps(topics(), ensure_ascii=False, indent=None, sort_keys=True)
    return f"var FXGUIDE_CAUSES = {data};\nvar FXGUIDE_TOPICS = {parts};\n" + SCORER.read_text()


def _write_scorer(app, config) -> None:
    if config.html_search_scorer and Path(config.html_search_scorer) != SCORER:
        return  # a project's own scorer
    target = Path(app.doctreedir) / "fxguide-search-scorer.js"
    text = scorer_text(Path(app.srcdir))
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.is_file() or target.read_text() != text:
        target.write_text(text)
    config.html_search_scorer = str(target)


def _messages_on_sections(app, doctree) -> None:
    if app.env.docname != ERRORS_PAGE:
        return
    from fxguide.diagnose.causes import CAUSES, graph_break_url

    by_anchor = {cause.section.anchor: cause for cause in CAUSES if cause.section.page == ERRORS_PAGE}
    for section in doctree.findall(nodes.section):
        cause = next((by_anchor[i] for i in section["ids"] if i in by_anchor), None)
        if cause is None or not cause.messages:
            continue
        box = nodes.container(classes=["fxguide-messages"])
        box += nodes.paragraph("", "", nodes.strong("", "As torch prints it."))
        for message in cause.messages:
            box += nodes.literal_block(message, message, language="text")
        if cause.graph_break:
            url = graph_break_url(cause.graph_break)
            box += nodes.paragraph("", "", nodes.Text(f"Graph-break id {cause.graph_break} ({cause.graph_break.lower()}"
                                                      "); PyTorch's page for it: "),
                                   nodes.reference("", url, refuri=url), nodes.Text("."))
        section += box


def setup(app) -> None:
    app.connect("config-inited", _write_scorer, priority=900)  # after site.py's default
    app.connect("doctree-read", _messages_on_sections)
