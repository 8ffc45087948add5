"""Directives that render the reference pages from code, so they never fall behind it.

``.. torch-fx-api::`` (in an ``{eval-rst}`` block of a MyST page)
    One section per name in the installed torch's ``torch.fx.__all__``; the
    classes the guide teaches (:data:`fxsite.sphinx.usage.CLASSES`) with their
    public methods and properties. Each entry ends with links to the guide's
    pages and gallery examples whose code uses it (found by
    :mod:`fxsite.sphinx.usage`).

``.. package-api:: PACKAGE``
    One section per module of ``PACKAGE`` (found with ``pkgutil`` when the
    page is built, so a new module appears without editing the page), rendered
    by autodoc from its docstrings.

The reference pages are re-read when the "used in" links would change (a page
or script starts or stops using a name, or is added or removed), and only then:
they are the slowest pages to read, and most edits leave the links alone.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import pkgutil
import textwrap
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

# torch.fx and fxsite.sphinx.usage (which reads torch.fx) are imported where they are
# used, when a reference page is read: a rebuild that reads no such page never
# imports torch (a second off every no-op rebuild).

def _sources(srcdir: Path, gallery_dirs: list[tuple[Path, str]]) -> list[tuple[str, Path]]:
    """(docname, path) of every page and gallery script whose code may use ``torch.fx``."""
    found = [(page.relative_to(srcdir).with_suffix("").as_posix(), page) for page in sorted(srcdir.rglob("*.md"))]
    for scripts, out in gallery_dirs:
        found += [(f"{out}/{script.stem}", script) for script in sorted(scripts.glob("*.py"))
                  if script.name != "__init__.py"]
    return found


def _digest(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


# What decides a memo entry besides a source's own text: the code that reads pages and credits names.
_MEMO_CODE = ("fxsite/sphinx/usage.py", "fxsite/sphinx/apiref.py", "fxsite/drift/extract.py")


def memo_key(fingerprint: str) -> str:
    """The key the memo of :func:`_examples` is kept under: the build's fingerprint (torch,
    every installed package, fxguide and the Sphinx extensions) and the code that reads pages."""
    root = Path(__file__).resolve().parents[2]
    return _digest(fingerprint + "".join(_digest((root / name).read_bytes()) for name in _MEMO_CODE))


def _examples(srcdir: Path, gallery_dirs: list[tuple[Path, str]],
              memo: dict[str, list[str]] | None = None) -> dict[str, list[tuple[str, Path]]]:
    """docname -> sources for every executed page and gallery script, and the names each uses.

    ``memo`` (filled in here) maps a source's text, and then its code, to what the code
    uses: a rebuild reads again only the sources that changed, and works out the names only
    when their code changed. Reading every page takes seconds, and finding the names imports
    torch; after a prose edit neither is needed. The caller keeps the memo only under one
    :func:`memo_key`.
    """
    memo = {} if memo is None else memo
    found: dict[str, list[tuple[str, Path]]] = {}
    for docname, path in _sources(srcdir, gallery_dirs):
        raw = path.read_bytes()
        text_key = "text:" + _digest(raw)
        if text_key not in memo:
            if path.suffix == ".py":
                code = [raw.decode("utf-8")]
            else:
                from fxsite.drift.extract import code_cells

                code = [cell.source for cell in code_cells(path)]
            memo[text_key] = ["code:" + _digest("\0".join(code))] if code else []
            if code and memo[text_key][0] not in memo:
                from fxsite.sphinx.usage import uses_in_code

                memo[memo[text_key][0]] = sorted(uses_in_code(code))
        for code_key in memo[text_key]:
            for name in memo[code_key]:
                found.setdefault(name, []).append((docname, path))
    return found


def gallery_dirs(app: Sphinx) -> list[tuple[Path, str]]:
    """(scripts folder, docname prefix of its pages) of each of sphinx-gallery's galleries."""
    conf = getattr(app.config, "sphinx_gallery_conf", {}) or {}
    examples, outs = conf.get("examples_dirs", []), conf.get("gallery_dirs", [])
    examples = [examples] if isinstance(examples, str) else list(examples)
    outs = [outs] if isinstance(outs, str) else list(outs)
    return [((Path(app.srcdir) / e).resolve(), o) for e, o in zip(examples, outs)]


def _section(directive: SphinxDirective, title: str, rst: list[str]) -> nodes.section:
    section = nodes.section(ids=[nodes.make_id(title)], names=[nodes.fully_normalize_name(title)])
    section += nodes.title(text=title)
    content = StringList(rst, source=directive.get_source_info()[0])
    nested_parse_with_titles(directive.state, content, section)
    directive.state.document.note_implicit_target(section, section)
    return section


def _note_api_page(directive: SphinxDirective) -> None:
    if not hasattr(directive.env, "fxguide_api_pages"):
        directive.env.fxguide_api_pages = set()
    directive.env.fxguide_api_pages.add(directive.env.docname)


class TorchFxApi(SphinxDirective):
    """``.. torch-fx-api::``: the public API of the installed ``torch.fx``.

    ``:also:`` adds names from deeper in ``torch.fx`` that the guide uses
    (``torch.fx.passes.shape_prop.ShapeProp``), space-separated, so that
    references to them resolve too; they show the first paragraph of their docstring.

    The content holds the guide's notes on entries whose docstring says less, or
    other, than what the guide shows: a line naming the entry (``symbolic_trace``,
    as in ``torch.fx.__all__``), then the note, indented. Each note is shown as a
    "note" box right after that entry's docstring.
    """

    has_content = True
    option_spec = {"also": directives.unchanged}

    def notes(self) -> dict[str, list[str]]:
        """The content's notes: entry name -> the note's reStructuredText lines."""
        found: dict[str, list[str]] = {}
        current = None
        for line in self.content:
            if line and not line[0].isspace():
                current = line.strip()
                found[current] = []
            elif current is None:
                if line.strip():
                    raise self.error(f"torch-fx-api: a note must follow the line naming its entry, got {line!r}")
            else:
                found[current].append(line)
        return found

    def run(self) -> list[nodes.Node]:
        import torch.fx as fx

        from fxsite.sphinx.usage import CLASSES, public_members

        _note_api_page(self)
        self.env.fxguide_usage = _links(self.env.app)  # the links this page is rendered with
        notes = self.notes()
        unknown = sorted(set(notes) - set(fx.__all__))
        if unknown:
            raise self.error(f"torch-fx-api: notes for {unknown}, which are not in torch.fx.__all__ "
                             f"of the installed torch")
        sections = []
        for name in fx.__all__:
            obj = getattr(fx, name)
            if inspect.isclass(obj):
                rst = [f".. autoclass:: torch.fx.{name}"]
                if obj in CLASSES:
                    rst += [f"   :members: {', '.join(public_members(obj))}", "   :undoc-members:"]
                    if any(m not in vars(obj) for m in public_members(obj)):
                        rst.append("   :inherited-members:")
            else:
                rst = [f".. autofunction:: torch.fx.{name}"]
            if name in notes:  # content of the autodoc directive: shown after the docstring
                rst += ["", "   .. admonition:: Note from the guide", "      :class: note", ""]
                note = textwrap.dedent("\n".join(notes[name])).splitlines()
                rst += [f"      {line}" if line.strip() else "" for line in note]
            sections.append(_section(self, name, rst))
        for dotted in self.options.get("also", "").split():
            module, _, attr = dotted.rpartition(".")
            try:
                obj = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError, ValueError) as error:
                raise self.error(f"torch-fx-api :also: cannot import {dotted!r} from the installed torch: {error}")
            kind = "autoclass" if inspect.isclass(obj) else "autofunction"
            _SUMMARY_ONLY.add(dotted)
            sections.append(_section(self, dotted, [f".. {kind}:: {dotted}"]))
        return sections


# Names added with :also: show torch's one-paragraph summary only: deeper in torch.fx,
# docstrings are not written for rendering (torch 2.13's ShapeProp docstring is not valid
# reStructuredText) and the guide's pages say how to use them.
_SUMMARY_ONLY: set[str] = set()


def keep_summary(app: Sphinx, what: str, name: str, obj, options, lines: list[str]) -> None:
    if name in _SUMMARY_ONLY and "" in lines:
        del lines[lines.index(""):]


class PackageApi(SphinxDirective):
    """``{package-api} PACKAGE``: every public module of ``PACKAGE``, from its docstrings."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        _note_api_page(self)
        package = importlib.import_module(self.arguments[0])
        found = [info for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + ".")
                 if not any(part.startswith("_") for part in info.name.split("."))]
        # The modules readers import first (fxguide.models, ...), then the subpackages
        # that build and check the site (fxsite.drift, ...), each alphabetically.
        names = [package.__name__] + sorted(
            (info.name for info in found), key=lambda name: (name.count(".") > 1 or any(
                i.ispkg and i.name == name for i in found), name))
        sections = []
        for name in names:
            module = importlib.import_module(name)
            self.env.note_dependency(module.__file__)
            # The atlas's case and reproduction modules are examples, shown with their outcomes on the atlas
            # pages: their docstring here, not their classes (whose members would repeat torch's own docstrings).
            members = [] if ".atlas.cases." in name or ".atlas.repros." in name else ["   :members:"]
            sections.append(_section(self, name, [f".. automodule:: {name}", *members]))
        return sections


_USAGE: dict[str, list[tuple[str, Path]]] | None = None


def _usage(app: Sphinx) -> dict[str, list[tuple[str, Path]]]:
    """What every source uses, worked out once per build, from the memo the environment keeps."""
    global _USAGE
    if _USAGE is None:
        fingerprint = getattr(app.config, "fxguide_fingerprint", None)  # conf.py's; a site without one keeps no memo
        key = memo_key(fingerprint) if fingerprint else None
        kept = getattr(app.env, "fxguide_usage_memo", None)
        memo = kept[1] if key and isinstance(kept, tuple) and kept[0] == key else {}
        used = dict(memo)
        _USAGE = _examples(Path(app.srcdir), gallery_dirs(app), used)
        live = {key for key in used if key.startswith("text:")}
        live |= {code for text in live for code in used[text]}
        app.env.fxguide_usage_memo = (key, {k: v for k, v in used.items() if k in live})
    return _USAGE


def _links(app: Sphinx) -> dict[str, list[str]]:
    """name -> the docnames whose code uses it: what the reference pages' "used in" links show."""
    return {name: sorted({doc for doc, _ in uses}) for name, uses in _usage(app).items()}


def add_used_in(app: Sphinx, domain: str, objtype: str, content: addnodes.desc_content) -> None:
    """End each ``torch.fx`` entry of a reference page with links to the examples that use it.

    Runs after autodoc has merged type hints into the entry, so the links come last.
    """
    env = app.env
    signature = content.parent.children[0] if content.parent is not None else None
    if domain != "py" or not isinstance(signature, addnodes.desc_signature):
        return
    name = ".".join(filter(None, [signature.get("module"), signature.get("fullname")]))
    if not name.startswith("torch.fx.") or env.docname not in getattr(env, "fxguide_api_pages", ()):
        return
    examples = _usage(app).get(name, [])
    found = [doc for doc, _ in examples if doc in env.found_docs]
    content += nodes.rubric(text="Used in the guide")
    paragraph = nodes.paragraph(classes=["fxguide-used-in"])
    if not found:
        paragraph += nodes.Text("No executed example in the guide uses it yet.")
    for number, doc in enumerate(found):
        if number:
            paragraph += nodes.Text(", ")
        paragraph += addnodes.pending_xref(
            "", nodes.inline(doc, doc), refdomain="std", reftype="doc", reftarget=f"/{doc}",
            refdoc=env.docname, refexplicit=False, refwarn=True,
        )
    content += paragraph


def reread_api_pages(app: Sphinx, env, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
    """Re-read the reference pages when their "used in" links would change, not otherwise."""
    global _USAGE
    _USAGE = None
    if not (added or changed or removed) or not getattr(env, "fxguide_api_pages", None):
        return []  # nothing changed, or no reference page read yet (reading one works the links out)
    usage = _links(app)
    if usage == getattr(env, "fxguide_usage", None) and not (added or removed):
        return []
    env.fxguide_usage = usage
    return sorted(getattr(env, "fxguide_api_pages", set()) & env.found_docs)


def add_canonical_names(app: Sphinx, env) -> None:
    """Register each documented torch.fx member under its defining module's name too.

    autodoc does this for the classes (``:canonical:``), not for their members, so
    ``torch.fx.graph_module.GraphModule.recompile`` (how sphinx-codeautolink and
    signatures name it) would not find ``torch.fx.GraphModule.recompile``. Runs
    before sphinx-codeautolink resolves the code's names (``env-updated``, priority 400).
    """
    domain = env.domains["py"]
    done = getattr(env, "fxguide_canonical_names", None)
    if done and all(alias in domain.objects for alias in done):
        return  # added in an earlier build, and the reference page was not read again: no torch import
    api_pages = getattr(env, "fxguide_api_pages", set())
    if not any(entry.docname in api_pages for entry in domain.objects.values()):
        return  # no reference page: nothing to alias
    from fxsite.sphinx.usage import canonical_names

    for alias, name in canonical_names().items():
        entry = domain.objects.get(name)
        if entry is not None and alias not in domain.objects:
            domain.objects[alias] = entry._replace(aliased=True)
    env.fxguide_canonical_names = [alias for alias in canonical_names() if alias in domain.objects]


def _merge(app: Sphinx, env, docnames, other) -> None:
    env.fxguide_api_pages = getattr(env, "fxguide_api_pages", set()) | getattr(other, "fxguide_api_pages", set())
    if getattr(other, "fxguide_usage", None) is not None:  # a parallel reader read a reference page
        env.fxguide_usage = other.fxguide_usage
    if getattr(other, "fxguide_usage_memo", None) is not None:  # ... and worked the links out there
        env.fxguide_usage_memo = other.fxguide_usage_memo


def setup(app: Sphinx) -> None:
    app.add_directive("torch-fx-api", TorchFxApi)
    app.add_directive("package-api", PackageApi)
    app.connect("autodoc-process-docstring", keep_summary)
    app.connect("object-description-transform", add_used_in, priority=900)
    app.connect("env-get-outdated", reread_api_pages)
    app.connect("env-merge-info", _merge)
    app.connect("env-updated", add_canonical_names, priority=400)
