"""Offer every executed page as a notebook: copy it into the site and link it.

myst-nb writes each page it executes to ``<build>/jupyter_execute/<page>.ipynb``
(outputs included). While a page is written, this copies that notebook beside
the page's HTML (``<page>.ipynb``), with a first cell that installs what the page
imports (:mod:`fxsite.sphinx.running`), and sets ``fxguide_notebook`` in the template
context to its relative URL; ``templates/notebook-download.html`` shows the link.
Everything stays inside the built site, so the download works offline.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx

from fxsite.sphinx import running

OUTPUT_FOLDER = "jupyter_execute"  # where myst-nb writes executed notebooks, beside the html folder


def executed_notebook(outdir: Path, docname: str) -> Path:
    """Where myst-nb left the executed notebook of ``docname`` for a build into ``outdir``.

    >>> executed_notebook(Path("_build/html"), "reference/errors").as_posix()
    '_build/jupyter_execute/reference/errors.ipynb'
    """
    if (not isinstance(docname, str) or not docname or docname.startswith("/")
            or any(part in {"", ".", ".."} for part in docname.split("/"))):
        raise ValueError(f"executed_notebook: docname must be a relative Sphinx docname like 'quickstart', got {docname!r}")
    return Path(outdir).parent / OUTPUT_FOLDER / f"{docname}.ipynb"


def _is_notebook_page(app: Sphinx, docname: str) -> bool:
    # myst-nb records the kernel of every page it parsed as a notebook.
    return "kernelspec" in app.env.metadata.get(docname, {})


def add_notebook_link(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    context["fxguide_notebook"] = None
    if app.builder.format != "html" or doctree is None or not _is_notebook_page(app, pagename):
        return
    source = executed_notebook(Path(app.outdir), pagename)
    if not source.is_file():
        return
    target = Path(app.outdir) / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    # A reader runs it elsewhere: its first cell installs what it imports (fxsite.sphinx.running).
    reads = "reads" in str(app.env.metadata[pagename].get("fxguide", ""))  # front matter `fxguide: reads`
    reads_checkout = (Path("docs") / pagename).parent.as_posix() if reads else False  # the page's folder
    running.rewrite_notebook(target, app.config.fxguide_torch, app.config.fxguide_repository.rstrip("/"),
                             gallery=False, reads_checkout=reads_checkout)
    context["fxguide_notebook"] = Path(pagename).name + ".ipynb"  # relative to the page itself


def setup(app: Sphinx) -> None:
    app.connect("html-page-context", add_notebook_link)
