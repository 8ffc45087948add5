"""A Sphinx extension: a page cell that raises without saying so fails the build at its line.

myst-nb reports a failed notebook by page; this names the cell, its line in the
``.md`` source and the exception, e.g.::

    docs/limitations.md:42: WARNING: cell 3 raised TraceError: symbolically traced ...
    (tag the cell raises-exception if this error is the point of the example)

and a cell the build stopped at its time limit (:mod:`fxsite.sphinx.limits`), tagged or not::

    docs/limitations.md:42: WARNING: cell 3 ran longer than its time limit of 120 s and was stopped ...

Under ``-W`` the warning fails the build.

It also writes the Compatibility page (``docs/compatibility.md``, generated,
git-ignored) and the home page's ``{{ verified_on }}`` sentence from the
committed drift reports (:mod:`fxsite.drift.compat`), and adds to each atlas row
what it did on the releases where it differs ("torch 2.13.0, compile: ...").
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

from fxsite.drift import compat
from fxsite.drift.extract import LIMIT_EXCEEDED, code_cells, merge_streams_exactly

logger = logging.getLogger(__name__)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# What Sphinx's smart quotes make of a heading's straight quotes and dashes ("..." becomes an ellipsis apart)
_UNSMART = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "--",
                          "\u2014": "---"})


def _last_line(traceback: str) -> str:
    lines = [line for line in _ANSI.sub("", traceback).splitlines() if line.strip()]
    return lines[-1].strip() if lines else "an exception"


def check_unexpected_errors(app: Sphinx, doctree: nodes.document) -> None:
    source = Path(doctree.get("source", ""))
    fences = [cell.line for cell in code_cells(source)] if source.suffix == ".md" else []
    cells = [c for c in doctree.findall(nodes.container) if c.get("nb_element") == "cell_code"]
    for number, cell in enumerate(cells, 1):
        tags = (cell.get("cell_metadata") or {}).get("tags", [])
        for block in cell.findall(nodes.literal_block):
            if "traceback" not in block.get("classes", []):
                continue
            error = _last_line(block.astext())
            hung = error.startswith(LIMIT_EXCEEDED + ":")
            if "raises-exception" in tags and not hung:  # a tagged cell may raise, never hang
                break
            line = fences[number - 1] if len(fences) == len(cells) else cell.line
            app.env.metadata[app.env.docname]["fxguide_failed"] = True
            if hung:
                logger.warning("cell %s %s", number, error.split(": ", 1)[1], location=(app.env.docname, line),
                               type="fxguide", subtype="execution-limit")
            else:
                logger.warning(
                    "cell %s raised %s (tag the cell raises-exception if this error is the point of the example)",
                    number, error, location=(app.env.docname, line), type="fxguide",
                    subtype="unexpected-exception",
                )
            break


def _execution_failed(app: Sphinx, docname: str) -> bool:
    from myst_nb.sphinx_ import NbMetadataCollector

    data = NbMetadataCollector.get_exec_data(app.env, docname) or {}
    return data.get("succeeded") is False


def reread_failed_pages(app: Sphinx, env, added: set, changed: set, removed: set) -> list[str]:
    """Pages that failed last time are read (and executed) again, so a rebuild cannot hide the failure."""
    return sorted(
        d for d in env.found_docs - added - changed
        if env.metadata.get(d, {}).get("fxguide_failed") or _execution_failed(app, d)
    )


def write_compatibility(app: Sphinx, config: Config) -> None:
    """Generate the Compatibility page and the "verified on" sentence before any page is read.

    Only a site with a ``drift/`` folder beside its ``conf.py`` gets the page
    (throwaway test sites have none).
    """
    root = Path(app.confdir)
    current = compat.current_snapshots(root / "tests" / "expected")
    reports = compat.load_reports(root / "drift")
    config.myst_substitutions = {**config.myst_substitutions,
                                 "verified_on": compat.verified_sentence(reports, current)}
    if (root / "drift").is_dir():
        compat.write_if_changed(Path(app.srcdir) / "compatibility.md", compat.render_page(reports, current))
    # Each page's "verified on" line (fxsite.sphinx.running) reads them too; a change of them rewrites every page.
    # The coverages are computed once here, not once per page written.
    covs = [compat.coverage(r, current) for r in reports if r["torch"] != compat.REFERENCE_TORCH]
    app.fxguide_drift = (reports, current, covs)  # type: ignore[attr-defined]
    row_notes: dict[str, dict[str, list[str]]] = {}  # by page, then by row
    for (source, row), lines in compat.table_row_changes(covs, current).items():
        row_notes.setdefault(source, {})[row] = lines
    app.fxguide_row_notes = row_notes  # type: ignore[attr-defined]
    app.fxguide_drift_digest = hashlib.sha256(json.dumps(  # type: ignore[attr-defined]
        [list(reports), {s: sorted(i) for s, i in current.items()}], sort_keys=True, default=str).encode()).hexdigest()


def add_release_notes_to_rows(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Under each atlas row's heading, what the row did on the releases where it differs from this page."""
    notes = getattr(app, "fxguide_row_notes", {}).get(f"docs/{docname}.md", {})
    if not notes:
        return
    for section in doctree.findall(nodes.section):
        title = section.next_node(nodes.title)
        if title is None or title.parent is not section:
            continue
        text = title.astext().translate(_UNSMART).replace("\u2026", "...")  # the heading as the page's source wrote it
        name = next((n for n in notes if text.startswith(tuple(n + after for after in compat.ROW_HEADING_AFTER))),
                    None)
        if name is None:
            continue
        box = nodes.admonition(classes=["fxguide-other-releases"])
        box += nodes.title(text="On other releases")
        box += nodes.paragraph(text="Where this row's cells differ from this page's torch (the committed drift "
                                    "reports; the Compatibility page has each difference in full):")
        items = nodes.bullet_list()
        for line in notes[name]:
            items += nodes.list_item("", nodes.paragraph(text=line))
        box += items
        section.insert(section.index(title) + 1, box)


def reread_when_drift_changed(app: Sphinx, env, added, changed, removed) -> list[str]:
    """Every page, when the drift reports changed since the last build: each page's line quotes them."""
    digest = getattr(app, "fxguide_drift_digest", "")
    if getattr(env, "fxguide_drift_digest", None) == digest:
        return []
    env.fxguide_drift_digest = digest
    return sorted(env.found_docs - set(added) - set(changed))


def keep_cached_outputs_in_executed_notebooks() -> None:
    """Make myst-nb's ``jupyter_execute/<page>.ipynb`` hold the outputs also when they come from its cache.

    The drift check reads those notebooks. On a cache hit, myst-nb 1.4 renders the
    cached outputs but writes the notebook it parsed, without outputs, so a page
    re-read without re-execution (its prose edited, say) would look as if every
    cell had stopped printing. This copies the cached notebook (cells and
    metadata) into the one myst-nb writes. Idempotent.
    """
    from myst_nb.core.execute.cache import NotebookClientCache

    if getattr(NotebookClientCache.start_client, "fxguide_keeps_outputs", False):
        return
    start_client = NotebookClientCache.start_client

    def start_client_keeping_outputs(self: NotebookClientCache) -> None:
        parsed = self._notebook  # the object myst-nb writes to jupyter_execute after rendering
        start_client(self)
        if self._notebook is not parsed:  # a cache hit: outputs were merged into a copy
            parsed.update(self._notebook)  # cells with outputs, and the kernel's language_info
            self._notebook = parsed

    start_client_keeping_outputs.fxguide_keeps_outputs = True  # type: ignore[attr-defined]
    NotebookClientCache.start_client = start_client_keeping_outputs  # type: ignore[method-assign]


def setup(app: Sphinx) -> dict:
    import myst_nb.core.render

    myst_nb.core.render.coalesce_streams = merge_streams_exactly
    keep_cached_outputs_in_executed_notebooks()
    app.connect("config-inited", write_compatibility)
    app.connect("doctree-read", check_unexpected_errors)
    app.connect("doctree-resolved", add_release_notes_to_rows)
    app.connect("env-get-outdated", reread_failed_pages)
    app.connect("env-get-outdated", reread_when_drift_changed)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
