"""Read what the docs build showed: one :class:`Snippet` per executed cell or block.

Pages come from the notebooks myst-nb writes after executing them
(``<build>/jupyter_execute/<page>.ipynb``); gallery scripts from the ``.rst``
pages sphinx-gallery generates (``docs/gallery/<name>.rst``). Reading the build's
own artefacts means the check compares exactly what a reader sees.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from fxsite.drift.normalize import normalize

from fxsite import ROOT  # noqa: E402 (re-exported for the drift modules)
DOCS = ROOT / "docs"
GALLERY = ROOT / "gallery"
GALLERY_OUT = DOCS / "gallery"

LIMIT_EXCEEDED = "ExecutionLimitExceeded"
"""The exception a page cell or a gallery example is stopped with when it runs past the build's time limit
(:mod:`fxsite.sphinx.limits`); the drift check reports such a snippet as newly hanging."""

_STOPPED = re.compile(r"^fxguide: (\S+) did not stop .*; stopping the build", re.MULTILINE)


def stopped_line(name: str, grace: float, pid: int) -> str:
    """The line the build's watchdog prints when it stops a build whose example ``name`` could not be interrupted.

    >>> stopped_by_watchdog("x\\n" + stopped_line("gallery/a.py", 30, 12) + "\\n")
    ['gallery/a.py']
    """
    return (f"fxguide: {name} did not stop {grace:g} s after its time limit (it runs code that cannot be "
            f"interrupted); stopping the build (process {pid})")


def stopped_by_watchdog(log: str) -> list[str]:
    """The examples a build log says the watchdog stopped the build for (:func:`stopped_line`)."""
    return _STOPPED.findall(log)


_SG_MARK = re.compile(r"^\.\. GENERATED FROM PYTHON SOURCE LINES (\d+)-(\d+)$")


def relative(path: Path) -> str:
    """``path`` as the reader knows it: relative to the repository when inside it."""
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


@dataclass(frozen=True)
class Snippet:
    """The shown result of one code cell (page) or code block (gallery script)."""

    source: str  # path relative to the repository root, e.g. "docs/quickstart.md"
    index: int  # 1-based number of the cell or block within its source
    line: int  # line of the source file where the cell or block starts
    output: str  # normalized text output ("" when it printed nothing)
    raised: str | None = None  # "TraceError: message" when it raised (on purpose)
    expects_raise: bool = False  # tagged raises-exception in the page source

    @property
    def hung(self) -> bool:
        """Whether the build stopped this snippet at its time limit."""
        return self.raised is not None and self.raised.startswith(LIMIT_EXCEEDED + ":")

    @property
    def where(self) -> str:
        kind = "cell" if self.source.endswith(".md") else "block"
        return f"{self.source}, {kind} {self.index} (line {self.line})"


def page_sources() -> list[Path]:
    """Every MyST-NB page of the guide: a ``docs/**/*.md`` with code cells."""
    return sorted(
        p for p in DOCS.rglob("*.md")
        if GALLERY_OUT not in p.parents and "{code-cell}" in p.read_text()
    )


def gallery_sources() -> list[Path]:
    """Every gallery script."""
    return sorted(p for p in GALLERY.glob("*.py") if p.name != "__init__.py")


def read_page(page: Path, *, source_map: bool = False):
    """A MyST-NB page as the notebook myst-nb executes, or None when it is not a notebook
    (its front matter does not say ``file_format: mystnb``).

    ``source_map`` records the line each cell starts at in ``metadata["source_map"]``.
    """
    from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook

    text = Path(page).read_text(encoding="utf-8")
    if not is_myst_markdown_notebook(text):
        return None
    return read_myst_markdown_notebook(text, add_source_map=source_map, path=page)


@dataclass(frozen=True)
class CodeCell:
    """One ``{code-cell}`` of a MyST-NB page, as myst-nb reads it."""

    line: int  # of its opening fence in the page
    source: str  # its code, without the cell's options
    tags: tuple[str, ...]


def code_cells(page: Path) -> list[CodeCell]:
    """The code cells of a MyST-NB page, in order (none when the page is not a notebook).

    Every reader of the pages' code goes through this: the output check, the build's
    error report, the reference's "used in" lists and ``make bench``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     page = Path(folder) / "page.md"
    ...     _ = page.write_text("---\\nfile_format: mystnb\\n---\\n# T\\n\\n```{code-cell} python\\n"
    ...                         ":tags: [raises-exception]\\nx = 1\\n```\\n")
    ...     code_cells(page)
    [CodeCell(line=6, source='x = 1', tags=('raises-exception',))]
    """
    notebook = read_page(page, source_map=True)
    if notebook is None:
        return []
    return [CodeCell(line, cell.source, tuple(cell.metadata.get("tags", ())))
            for cell, line in zip(notebook.cells, notebook.metadata["source_map"]) if cell.cell_type == "code"]


def merge_streams_exactly(outputs: list) -> list:
    """Join each stream's chunks into one output, text untouched, the notebook unchanged.

    ``fxsite.sphinx.sphinx_ext`` puts it in place of myst-nb's ``coalesce_streams``
    (which strips every chunk's trailing whitespace and adds a newline, so
    ``print("a:", x)`` streamed as two chunks shows as two lines, and which edits
    the notebook's first chunk in place), so the build shows what is extracted here.

    The joined streams stand where the first chunk of either stood, standard output
    first: which of a cell's two streams reaches the notebook first is a race between
    two pipes, not something the cell decides, so a fixed order is what makes it the
    same from run to run.

    >>> merge_streams_exactly([{"output_type": "stream", "name": "stderr", "text": "warn\\n"},
    ...                        {"output_type": "stream", "name": "stdout", "text": "a"},
    ...                        {"output_type": "stream", "name": "stdout", "text": "b\\n"}])
    [{'output_type': 'stream', 'name': 'stdout', 'text': 'ab\\n'}, {'output_type': 'stream', 'name': 'stderr', 'text': 'warn\\n'}]
    """
    merged, streams, at = [], {}, None
    for output in outputs:
        if output.get("output_type") != "stream":
            merged.append(output)
            continue
        if at is None:
            at = len(merged)
        if output["name"] in streams:
            streams[output["name"]]["text"] += "".join(output["text"])
        else:
            copy = type(output)(output)
            copy["text"] = "".join(output["text"])
            streams[output["name"]] = copy
    order = sorted(streams, key=lambda name: (name != "stdout", name != "stderr", name))
    return merged[:at] + [streams[name] for name in order] + merged[at:] if streams else merged


def _text_of(output: dict) -> str:
    kind = output["output_type"]
    if kind == "stream":
        return "".join(output["text"])
    if kind in {"execute_result", "display_data"}:
        data = output.get("data", {})
        if "text/plain" in data and not any(k.startswith("image/") for k in data):
            return "".join(data["text/plain"])
        images = sorted(k for k in data if k.startswith("image/"))
        if not images:
            return "<" + ", ".join(sorted(data)) + ">"
        # A picture is recorded by its kind plus its text form, when the object
        # gives a meaningful one (fxguide's graph pictures print their edges).
        text = "".join(data.get("text/plain", ""))
        return f"<{images[0]}>" + ("\n" + text if text and not text.startswith("<") else "")
    return ""


def page_snippets(page: Path, build_dir: Path, root: Path = ROOT) -> list[Snippet]:
    """The executed cells of one page, read from the build's notebook.

    ``root`` is the repository (or throwaway site) the page belongs to.
    """
    page, root = Path(page), Path(root)
    docname = page.relative_to(root / "docs").with_suffix("")
    notebook = Path(build_dir) / "jupyter_execute" / docname.with_suffix(".ipynb")
    if not notebook.is_file():
        raise FileNotFoundError(
            f"{page.relative_to(root)}: no executed notebook at {notebook}; build the docs first (make docs)"
        )
    return notebook_snippets(page, json.loads(notebook.read_text()), root, where=f"the executed notebook {notebook}")


def notebook_snippets(page: Path, notebook: dict, root: Path = ROOT, *, where: str = "the notebook") -> list[Snippet]:
    """The executed cells of ``notebook`` (a page's cells, run by the build or by a reader), as snippets of ``page``.

    The code cells must be the page's, in order (a reader's download without its install cell).
    """
    page, root = Path(page), Path(root)
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    lines = [cell.line for cell in code_cells(page)]
    if len(lines) != len(cells):
        raise ValueError(
            f"{page.relative_to(root)}: found {len(lines)} code-cell fences but {where} has "
            f"{len(cells)} code cells; is it stale?"
        )
    snippets = []
    for index, (cell, line) in enumerate(zip(cells, lines), 1):
        errors = [o for o in cell["outputs"] if o["output_type"] == "error"]
        raised = f"{errors[0]['ename']}: {errors[0]['evalue']}" if errors else None
        snippets.append(
            Snippet(
                source=str(page.relative_to(root)),
                index=index,
                line=line,
                output=normalize("".join(_text_of(o) for o in merge_streams_exactly(cell["outputs"])), root),
                raised=normalize(raised, root) if raised else None,
                expects_raise="raises-exception" in cell.get("metadata", {}).get("tags", []),
            )
        )
    return snippets


def _exception_line(traceback: str) -> str:
    """``Type: message`` from the last line of a traceback, with the type unqualified (as notebooks record it).

    >>> _exception_line("Traceback (most recent call last):\\n  ...\\ntorch.fx.proxy.TraceError: no")
    'TraceError: no'
    """
    last = [line for line in traceback.splitlines() if line.strip()][-1].strip()
    name, sep, message = last.partition(": ")
    return name.rsplit(".", 1)[-1] + sep + message


def _sg_output(body: list[str]) -> tuple[str, str | None]:
    """Text of the script-out and image blocks sphinx-gallery wrote for one code block,
    and ``Type: message`` when the block raised (sphinx-gallery shows a ``pytb`` block)."""
    shown, raised, i = [], None, 0
    while i < len(body):
        line = body[i]
        if line.startswith(".. rst-class:: sphx-glr-script-out"):
            i += 1
            while i < len(body) and not body[i].lstrip().startswith(".. code-block::"):
                i += 1
            is_traceback = i < len(body) and body[i].strip() == ".. code-block:: pytb"
            i += 1
            block = []
            while i < len(body) and (body[i].startswith("    ") or not body[i].strip()):
                block.append(body[i][4:])
                i += 1
            if is_traceback:
                raised = _exception_line("\n".join(block))
            else:
                shown.append("\n".join(block))
            continue
        if line.startswith((".. image-sg::", ".. image::")) and "sphx_glr" in line:
            shown.append("<figure>")
        elif line.startswith(".. raw:: html") and i + 2 < len(body) and "output_html" in body[i + 2]:
            shown.append("<html repr>")
        i += 1
    return "\n".join(shown), raised


def gallery_snippets(script: Path, gallery_out: Path | None = None, root: Path = ROOT) -> list[Snippet]:
    """The code blocks of one gallery script, read from sphinx-gallery's generated page.

    ``gallery_out`` defaults to ``<root>/docs/gallery``, where the build writes it.
    """
    script, root = Path(script), Path(root)
    rst = Path(gallery_out or root / "docs" / "gallery") / script.with_suffix(".rst").name
    if not rst.is_file():
        raise FileNotFoundError(
            f"{script.relative_to(root)}: no generated page at {rst}; build the docs first (make docs)"
        )
    lines = rst.read_text().splitlines()
    marks = [(n, m) for n, line in enumerate(lines) if (m := _SG_MARK.match(line))]
    if not marks:
        raise ValueError(f"{script.relative_to(root)}: {rst} is not a page sphinx-gallery generated (no "
                         f"'.. GENERATED FROM PYTHON SOURCE LINES' marks); rebuild the docs (make docs)")
    snippets = []
    for k, (n, mark) in enumerate(marks):
        end = marks[k + 1][0] if k + 1 < len(marks) else len(lines)
        body = lines[n + 1 : end]
        if not any(line.startswith(".. code-block:: Python") for line in body):
            continue  # a text block
        output, raised = _sg_output(body)
        snippets.append(
            Snippet(
                source=str(script.relative_to(root)),
                index=len(snippets) + 1,
                line=int(mark.group(1)),
                output=normalize(output, root),
                raised=normalize(raised, root) if raised else None,
            )
        )
    return snippets


def collect(build_dir: Path) -> dict[str, list[Snippet]]:
    """Every snippet of the guide, by source path."""
    found = {str(p.relative_to(ROOT)): page_snippets(p, build_dir) for p in page_sources()}
    found.update({str(p.relative_to(ROOT)): gallery_snippets(p) for p in gallery_sources()})
    return found


def only(found: dict, pages: list[str]) -> dict:
    """The snippets of ``pages`` alone (paths as given, relative to the repository or absolute).

    >>> only({"docs/a.md": [1], "gallery/b.py": [2]}, ["./docs/a.md"])
    {'docs/a.md': [1]}
    >>> only({"docs/a.md": [1]}, ["docs/c.md"])
    Traceback (most recent call last):
    ...
    ValueError: docs/c.md is not a page or gallery script of the guide; give a path such as docs/quickstart.md or gallery/fuse_conv_bn.py
    """
    chosen = {}
    for page in pages:
        full = (ROOT / page).resolve()  # an absolute page stays itself
        key = str(full.relative_to(ROOT.resolve())) if full.is_relative_to(ROOT.resolve()) else page
        if key not in found:
            raise ValueError(f"{page} is not a page or gallery script of the guide; give a path such as "
                             "docs/quickstart.md or gallery/fuse_conv_bn.py")
        chosen[key] = found[key]
    return chosen
