"""Make every page runnable by a reader: what to install, a notebook that installs it, the source.

Every executed page and gallery example imports :mod:`fxguide`, often a model library too.
This module works out, from the page's own code, what a reader has to install to run it
(:func:`extras_for`), and gives three things to the templates and to the downloads:

- ``fxguide_install``: one ``pip install`` line, pinned to the torch the page was executed
  with (``templates/run-this-page-short.html``, at the top of the page);
- ``fxguide_source_url``, ``fxguide_edit_url``, ``fxguide_issue_url``: the page's source in the
  repository (a gallery example's is its script), from ``pyproject.toml``'s project URLs
  (``templates/source-links.html``);
- ``sitemap.xml`` of every page (:func:`write_sitemap`);
- the downloaded notebooks (:func:`make_runnable`): a first cell that runs the same install,
  and, for gallery examples, Markdown cells that read as Markdown (sphinx-gallery leaves
  reST roles such as ``:func:`` in them).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from urllib.parse import quote
from xml.sax.saxutils import escape

from fxsite import ROOT
from fxsite.drift import compat
from fxsite.drift.normalize import hide_paths

#: The optional parts of fxguide (pyproject's extras) and what in a page's code needs each.
EXTRA_MARKERS: dict[str, tuple[str, ...]] = {
    # The atlas runs diagnose's captures, and a row of its export contracts passes a transformers cache.
    "models": ("torchvision", "timm", "transformers", "fxguide.models.real", "fxguide.diagnose", "fxguide.atlas"),
    "quant": ("torchao", "fxguide.atlas.messages"),  # the messages page reproduces PT2E's errors
    "onnx": ("onnxruntime", "onnxscript", "import onnx", "dynamo=True"),
    "draw": ("matplotlib", "fxguide.display.drawing", "plot_graphs", "FxGraphDrawer", "fxguide.atlas.graph_tools"),
}
#: Tools a page uses that fxguide does not need: installed beside it, at the version the site was built with.
TOOL_MARKERS: dict[str, tuple[str, ...]] = {"tlparse": ("tlparse",)}

#: The first line of the install cell: the notebook test finds the cell by it.
INSTALL_MARKER = "# Install what this notebook imports"


def extras_for(code: str) -> list[str]:
    """The extras of fxguide that ``code`` needs, sorted.

    >>> extras_for("import torch\\nfrom torchvision.models import resnet18")
    ['models']
    >>> extras_for("import torch.fx")
    []
    >>> extras_for("from torchao.quantization.pt2e import prepare_pt2e\\nimport matplotlib.pyplot as plt")
    ['draw', 'quant']
    """
    if not isinstance(code, str):
        raise TypeError(f"extras_for: code must be the page's source text (str), got {type(code).__name__}")
    return sorted(extra for extra, markers in EXTRA_MARKERS.items()
                  if any(re.search(rf"\b{re.escape(marker)}\b", code) for marker in markers))


@functools.cache
def _pins() -> dict[str, str]:
    """The reference environment's pins (constraints.txt), read once per build, not once per page."""
    return dict(line.strip().split("==", 1) for line in (ROOT / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))


def tools_for(code: str) -> list[str]:
    """The tools besides fxguide that ``code`` runs, pinned as the reference environment has them.

    >>> tools_for("subprocess.run([tlparse, trace])")[0].startswith("tlparse==")
    True
    """
    pins = _pins()
    return [f"{tool}=={pins[tool]}" for tool, markers in TOOL_MARKERS.items()
            if any(re.search(rf"\b{re.escape(marker)}\b", code) for marker in markers)]


def install_command(extras: list[str], torch: str, repository: str, tools: list[str] = ()) -> str:
    """The ``pip install`` line that gets what a page imports.

    >>> install_command(["models"], "2.14.1", "https://github.com/o/r")
    'pip install "torch==2.14.1" "fxguide[models] @ git+https://github.com/o/r"'
    >>> install_command([], "2.14.1", "https://github.com/o/r", ["tlparse==0.4.3"])
    'pip install "torch==2.14.1" "fxguide @ git+https://github.com/o/r" "tlparse==0.4.3"'
    """
    unknown = set(extras) - set(EXTRA_MARKERS)
    if unknown:
        raise ValueError(f"install_command: unknown extras {sorted(unknown)}; fxguide has {sorted(EXTRA_MARKERS)}")
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", torch or ""):
        raise ValueError(f"install_command: torch must be a release like '2.14.1', got {torch!r}")
    if not isinstance(repository, str) or not repository.startswith("https://"):
        raise ValueError(f"install_command: repository must be an https URL, got {repository!r}")
    package = f"fxguide[{','.join(extras)}]" if extras else "fxguide"
    return f'pip install "torch=={torch}" "{package} @ git+{repository}"' + "".join(f' "{t}"' for t in tools)


def install_cell(extras: list[str], torch: str, repository: str, *, tools: list[str] = (),
                 reads_checkout: bool | str = False) -> dict:
    """A notebook code cell that installs what the notebook imports (``%pip``: into its own kernel).

    A page that reads data committed in the repository (front matter ``fxguide: reads``)
    also gets a copy of the repository and runs from the page's folder in it (``reads_checkout``:
    that folder, ``docs/`` when ``True``), as it was built.
    """
    folder = reads_checkout if isinstance(reads_checkout, str) else "docs"
    source = (f"{INSTALL_MARKER}: the torch it was checked with, and fxguide.\n"
              f"%{install_command(extras, torch, repository, tools)}")
    if reads_checkout:
        source += ("\n# This page reads data committed in the repository (the model-zoo surveys):\n"
                   f"!git clone --depth 1 {repository} fxguide-repository\n%cd fxguide-repository/{folder}")
    return {"cell_type": "code", "execution_count": None, "id": "fxguide-install",
            "metadata": {"tags": ["fxguide-install"]}, "outputs": [], "source": source}


_ROLE = re.compile(r":(?:py:)?[a-z]+:`(?:(?P<title>[^`<]*?)\s*<[^`>]*>|(?P<short>~)?(?P<name>[^`]*))`")
_LINK = re.compile(r"`([^`<]+?)\s*<(https?://[^`>]+)>`__?")


def rest_to_markdown(text: str) -> str:
    """Rewrite the reST that sphinx-gallery leaves in a notebook's Markdown cells.

    >>> rest_to_markdown("Use :func:`~torch.fx.symbolic_trace` and ``gm.graph``.")
    'Use `symbolic_trace` and `gm.graph`.'
    >>> rest_to_markdown("See :doc:`the limits </limitations>` or `torch.fx <https://pytorch.org/docs>`_.")
    'See the limits or [torch.fx](https://pytorch.org/docs).'
    """
    def role(match: re.Match) -> str:
        if match["title"] is not None:
            return match["title"]
        return f"`{match['name'].split('.')[-1] if match['short'] else match['name']}`"

    text = _LINK.sub(r"[\1](\2)", text)
    text = _ROLE.sub(role, text)
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _hide_output_paths(output: dict) -> dict:
    if "text" in output:
        output["text"] = hide_paths("".join(output["text"]) if isinstance(output["text"], list) else output["text"])
    if "evalue" in output:
        output["evalue"] = hide_paths(output["evalue"])
    if "traceback" in output:
        output["traceback"] = [hide_paths(line) for line in output["traceback"]]
    for mime, value in output.get("data", {}).items():
        if mime.startswith("text/"):
            output["data"][mime] = hide_paths("".join(value) if isinstance(value, list) else value)
    return output


def make_runnable(notebook: dict, torch: str, repository: str, *, gallery: bool,
                  reads_checkout: bool | str = False) -> dict:
    """``notebook`` with an install cell first (once), no build-machine path in its outputs and,
    from the gallery, Markdown cells that read as Markdown."""
    cells = [cell for cell in notebook["cells"] if "fxguide-install" not in cell.get("metadata", {}).get("tags", [])]
    for cell in cells:
        cell["outputs"] = [_hide_output_paths(output) for output in cell.get("outputs", [])] \
            if cell["cell_type"] == "code" else cell.get("outputs")
        if cell["outputs"] is None:
            del cell["outputs"]
    code = "\n".join(_source(cell) for cell in cells if cell["cell_type"] == "code")
    if gallery:
        for cell in cells:
            if cell["cell_type"] == "markdown":
                cell["source"] = rest_to_markdown(_source(cell))
    first = install_cell(extras_for(code), torch, repository, tools=tools_for(code), reads_checkout=reads_checkout)
    notebook = dict(notebook, cells=[first, *cells])
    notebook["nbformat"], notebook["nbformat_minor"] = 4, max(5, notebook.get("nbformat_minor", 5))
    return notebook


def rewrite_notebook(path: Path, torch: str, repository: str, *, gallery: bool,
                     reads_checkout: bool | str = False) -> None:
    """Make the notebook file at ``path`` runnable in place (see :func:`make_runnable`)."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    runnable = json.dumps(make_runnable(notebook, torch, repository, gallery=gallery, reads_checkout=reads_checkout),
                          indent=1)
    if runnable != Path(path).read_text(encoding="utf-8"):  # already runnable: left as it is
        Path(path).write_text(runnable, encoding="utf-8")


def binder_url(repository: str, relative: str) -> str:
    """The mybinder.org link that opens a page of the repository as a notebook in JupyterLab.

    Binder builds the repository from ``.binder/`` (the reference pins, jupytext to open MyST pages).

    >>> binder_url("https://github.com/fxguide/fxguide", "docs/quickstart.md")
    'https://mybinder.org/v2/gh/fxguide/fxguide/main?urlpath=lab/tree/docs/quickstart.md'
    """
    owner_repo = repository.removeprefix("https://github.com/").strip("/")
    if owner_repo.count("/") != 1:
        raise ValueError(f"binder_url: {repository!r} is not a GitHub repository URL (https://github.com/OWNER/NAME)")
    return f"https://mybinder.org/v2/gh/{owner_repo}/main?urlpath=lab/tree/{quote(relative)}"


def page_source(app, pagename: str) -> Path | None:
    """The file in the repository a page is made from: a gallery example's script, or the page."""
    if pagename.startswith("gallery/") and pagename != "gallery/index":
        script = ROOT / "gallery" / (pagename.removeprefix("gallery/") + ".py")
        return script if script.is_file() else None
    if pagename not in app.env.all_docs:
        return None
    path = Path(app.env.doc2path(pagename))
    return path if path.is_file() and ROOT in path.parents and "gallery" not in path.relative_to(ROOT).parts[:2] \
        else None


def add_page_context(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    config = app.config
    context["fxguide_torch"] = config.fxguide_torch
    context["fxguide_install"] = context["fxguide_source_url"] = context["fxguide_edit_url"] = None
    context["fxguide_verified"] = []
    context["fxguide_binder"] = None
    repository = config.fxguide_repository.rstrip("/")
    context["fxguide_issue_url"] = f"{repository}/issues/new?title=" + quote(f"Page {pagename}: ")
    source = page_source(app, pagename)
    if source is None:
        return
    relative = source.relative_to(ROOT).as_posix()
    context["fxguide_source_url"] = f"{repository}/blob/main/{relative}"
    context["fxguide_edit_url"] = f"{repository}/edit/main/{relative}"
    reports, current, covs = getattr(app, "fxguide_drift", ([], {}, []))
    parts = compat.page_status(relative, reports, current, covs)
    context["fxguide_verified"] = parts
    context["fxguide_verified_anchor"] = compat.anchor_of(relative)
    executed = source.suffix == ".py" or "kernelspec" in app.env.metadata.get(pagename, {})
    if executed and doctree is not None:
        code = source.read_text(encoding="utf-8")
        context["fxguide_install"] = install_command(extras_for(code), config.fxguide_torch, repository, tools_for(code))
        if source.suffix == ".md":
            context["fxguide_binder"] = binder_url(repository, relative)


def runnable_gallery_notebooks(app, exception) -> None:
    """After a good build: every gallery notebook in the site's downloads gets its install cell."""
    if exception is not None or app.builder.format != "html":
        return
    for path in Path(app.outdir, "_downloads").glob("*/*.ipynb"):
        rewrite_notebook(path, app.config.fxguide_torch, app.config.fxguide_repository.rstrip("/"), gallery=True)


def write_sitemap(app, exception) -> None:
    """After a good build: ``sitemap.xml`` lists every page under the published URL.

    Written from every document Sphinx knows, not from the pages this build wrote:
    sphinx-sitemap collects the pages as they are written, so an incremental build
    (``make docs`` after an edit, ``make livehtml``) would replace the sitemap with
    one that lists only the pages it rewrote.
    """
    if exception is not None or app.builder.format != "html" or not app.config.html_baseurl:
        return
    base = app.config.html_baseurl.rstrip("/") + "/"
    skip = {"404", "search", "genindex", "py-modindex"}
    urls = sorted(base + app.builder.get_target_uri(doc) for doc in app.env.found_docs if doc not in skip)
    lines = ['<?xml version="1.0" encoding="utf-8"?>',
             '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
             *(f"  <url><loc>{escape(url)}</loc></url>" for url in urls), "</urlset>", ""]
    sitemap, text = Path(app.outdir, "sitemap.xml"), "\n".join(lines)
    if not sitemap.is_file() or sitemap.read_text(encoding="utf-8") != text:  # a no-op build writes nothing
        sitemap.write_text(text, encoding="utf-8")


def setup(app) -> None:
    app.add_config_value("fxguide_repository", "", "html", types=frozenset({str}))
    app.add_config_value("fxguide_torch", "", "html", types=frozenset({str}))
    app.connect("html-page-context", add_page_context)
    app.connect("build-finished", runnable_gallery_notebooks)
    app.connect("build-finished", write_sitemap)
