"""How sphinx-codeautolink links the names in the site's code, where its defaults fall short.

sphinx-codeautolink reads every code cell, finds what each name refers to and,
once the HTML is written, turns the name into a link to its reference entry.
These adjustments make it fit this site:

- Gallery pages are left to sphinx-gallery, which already links their code
  from what each example ran (:func:`skip_gallery_pages`); both rewriting the
  same blocks would break each other's links.
- Doctest blocks are matched to their HTML without their ``# doctest:`` flags,
  which Sphinx removes from the page (:func:`clean_doctest`, named in ``conf.py``'s
  ``codeautolink_custom_blocks``).
- Links are added to every page written in this build, not only to pages whose
  source changed (:func:`link_every_written_page`): sphinx-codeautolink 0.19
  picks its pages before the build from the html builder's outdated documents,
  so a page re-read for another reason (a new torch, an edited fxguide module)
  would be rewritten without links. What it learnt of such a page in an earlier
  build comes from its cache (:func:`stored_transforms`), which it reads back
  only for ``.rst`` sources. Nothing is read or resolved when nothing is written.
- Every page is read again when a setting that changes only the HTML changed
  (:func:`reread_when_the_html_config_changed`): Sphinx would write every page
  without reading it, and the links are matched with what was noted while reading.
- What each name resolves to is remembered between builds (:func:`remember_resolutions`):
  resolving imports the name's module and follows its attributes and annotations,
  which for ``torch`` names means importing torch in Sphinx's process, about
  2 s of a rebuild that re-read one page.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

from sphinx.application import Sphinx

from fxsite.sphinx.apiref import gallery_dirs

# Sphinx's own pattern for the flags it trims from doctest blocks (trim_doctest_flags).
_DOCTEST_FLAGS = re.compile(r"[ \t]*#\s*doctest:.+$", re.MULTILINE)


def clean_doctest(source: str) -> tuple[str, str]:
    """A doctest block as Sphinx shows it, and as Python code (codeautolink's ``pycon`` block).

    >>> clean_doctest(">>> f(1)  # doctest: +ELLIPSIS\\n2")
    ('>>> f(1)\\n2', 'f(1)\\n')
    """
    from sphinx_codeautolink.extension.block import clean_pycon

    return clean_pycon(_DOCTEST_FLAGS.sub("", source))


def skip_gallery_pages(app: Sphinx, docname: str, source: list[str]) -> None:
    """``source-read``: a gallery page starts with ``.. autolink-skip:: file``."""
    if any(docname.startswith(f"{out}/") for _, out in gallery_dirs(app)) and docname.rpartition("/")[2] != "index":
        source[0] = ".. autolink-skip:: file\n\n" + source[0]  # an example page opens with a comment


def link_every_written_page(app: Sphinx) -> None:
    """Hand sphinx-codeautolink every page this build wrote (see the module's docstring).

    A page counts as written when its HTML file is newer than the start of the
    build: pages are written by worker processes in a parallel build, where the
    main process sees no per-page event.
    """
    started: list[float] = []

    def note_start(app) -> None:
        started.append(time.time())

    def before_links(app, exception) -> None:
        if exception is not None or not started:
            return
        written = {doc for doc in app.env.found_docs
                   if (path := Path(app.outdir, app.builder.get_target_uri(doc))).is_file()
                   and path.stat().st_mtime >= started[0]}
        state = _state(app)
        if state is None or state.do_nothing:
            return
        # pages not read again in this build (written or not): their names come from the cache
        state.cache.transforms.update(stored_transforms(app, set(state.cache.transforms)))
        state.outdated_docs = pages_to_link(state.outdated_docs | {str(Path(doc)) for doc in written},
                                            state.cache.transforms)

    app.connect("builder-inited", note_start, priority=100)
    app.connect("build-finished", before_links, priority=100)


def pages_to_link(pages: set[str], transforms: dict[str, list]) -> set[str]:
    """The ``pages`` with at least one name to link: sphinx-codeautolink parses and rewrites the HTML
    of every page it is given, even one with nothing to link (a gallery page, skipped whole).

    >>> class T:
    ...     def __init__(self, *names): self.names = list(names)
    >>> sorted(pages_to_link({"page", "gallery/example", "plain"},
    ...                      {"page": [T(), T("torch.randn")], "gallery/example": [T(), T()]}))
    ['page']
    """
    return {page for page in pages if any(t.names for t in transforms.get(page, []))}


def _state(app: Sphinx):
    """sphinx-codeautolink's state object (it keeps no other handle than its event handlers)."""
    from sphinx_codeautolink.extension import SphinxCodeAutoLink

    for listeners in app.events.listeners.values():
        for listener in listeners:
            state = getattr(listener.handler, "__self__", None)
            if isinstance(state, SphinxCodeAutoLink):
                return state
    return None


def stored_transforms(app: Sphinx, known: set[str]) -> dict:
    """What sphinx-codeautolink stored in an earlier build about documents other than ``known``,
    names already resolved (no import, no analysis).

    Its own reading of the cache keeps only documents whose source is ``.rst``;
    then, writing it back, it drops the others for good.
    """
    from sphinx_codeautolink.extension.cache import DataCache

    stored = Path(app.doctreedir) / DataCache.cache_filename
    if not stored.is_file():
        return {}
    # DataCache.read() rebuilds the records; only its check of the source file is .rst-only.
    everything = DataCache(app.doctreedir, app.srcdir)
    everything.src_dir = _AnySuffix(Path(app.srcdir), list(app.config.source_suffix))
    everything.read()
    return {doc: transforms for doc, transforms in everything.transforms.items() if doc not in known}


class _AnySuffix:
    """A source folder where ``folder / "page.rst"`` is whichever of page.md, page.ipynb, ... exists."""

    def __init__(self, folder: Path, suffixes: list[str]) -> None:
        self.folder, self.suffixes = folder, suffixes

    def __truediv__(self, name: str) -> Path:
        stem = name.removesuffix(".rst")
        return next((self.folder / (stem + s) for s in self.suffixes if (self.folder / (stem + s)).is_file()),
                    self.folder / name)


RESOLVED = "fxguide-resolved-names.json"
"""In the doctree folder: what each name chain resolved to, under the key of the build's environment."""


class ResolutionMemo:
    """sphinx-codeautolink's ``resolve_location``, remembered by the name's import path.

    A name resolves from its import path (``torch``, ``fx``, ``symbolic_trace``, ``()``...)
    and the site's inventory alone, by importing modules and reading their attributes.
    So the result holds as long as neither changes, nor anything installed: the memo
    is kept under the build's fingerprint (torch, every installed distribution,
    fxguide and fxsite's sources, Python) and a hash of the inventory, and starts
    empty when either differs. A name that could not be resolved is remembered too,
    and raises the same error again.
    """

    def __init__(self, resolve, path: Path, environment: str) -> None:
        self.resolve, self.path, self.environment = resolve, path, environment
        self.key = ""  # set by start(), which remember_resolutions calls before the memo is put in place
        self.known: dict[str, list] = {}
        self.changed = False

    def start(self, inventory: dict) -> None:
        """Before names are resolved: load what the last build with this environment and inventory resolved."""
        digest = hashlib.sha256(json.dumps(sorted(inventory), default=str).encode()).hexdigest()[:16]
        self.key = f"{self.environment}-{digest}"
        try:
            stored = json.loads(self.path.read_text())
        except (OSError, ValueError):
            stored = {}
        self.known = stored.get("names", {}) if isinstance(stored, dict) and stored.get("key") == self.key else {}
        self.changed = False

    def __call__(self, chain, inventory) -> str:
        from sphinx_codeautolink.extension.resolve import CouldNotResolve

        name = "\x1f".join(map(str, chain.import_components))
        if name not in self.known:
            try:
                self.known[name] = ["found", self.resolve(chain, inventory)]
            except CouldNotResolve as error:
                self.known[name] = ["not found", str(error)]
            self.changed = True
        outcome, value = self.known[name]
        if outcome == "not found":
            raise CouldNotResolve(value)
        return value

    def save(self) -> None:
        if self.changed:
            self.path.write_text(json.dumps({"key": self.key, "names": self.known}))
            self.changed = False


def remember_resolutions(app: Sphinx) -> None:
    """Put a :class:`ResolutionMemo` in place of sphinx-codeautolink's ``resolve_location`` for this build.

    A site without ``fxguide_fingerprint`` in its configuration resolves every name every build.
    """
    import sphinx_codeautolink.extension as codeautolink

    def start(app: Sphinx, env) -> None:
        environment = getattr(app.config, "fxguide_fingerprint", None)
        state = _state(app)
        if not environment or state is None or state.do_nothing:
            return
        memo = ResolutionMemo(codeautolink.resolve_location, Path(app.doctreedir) / RESOLVED, environment)
        memo.start(state.make_inventory(app))
        codeautolink.resolve_location = memo
        app._fxguide_resolution_memo = memo

    def finish(app: Sphinx, env) -> None:
        memo = getattr(app, "_fxguide_resolution_memo", None)
        if memo is not None:
            codeautolink.resolve_location = memo.resolve
            memo.save()

    app.connect("env-updated", start, priority=400)  # sphinx-codeautolink resolves at 500
    app.connect("env-updated", finish, priority=600)


def reread_when_the_html_config_changed(app: Sphinx) -> None:
    """Read every page again when the html builder is about to write them all.

    A setting that changes only the HTML (``html_title``, a theme option) makes the html builder
    write every page without reading it again (its ``.buildinfo`` no longer matches). sphinx-codeautolink
    matches the code of a page to its HTML with what it noted while reading the page, so each block of
    a page written but not read gets a "Could not match transformation" warning, an error under ``-W``.
    Reading every page costs a parse of each; executed notebooks come from the cache. The comparison is
    made when the builder starts: it replaces ``.buildinfo`` before the environment asks what is outdated.
    """
    mismatch: list[bool] = []

    def compare(app: Sphinx) -> None:
        current = getattr(app.builder, "build_info", None)
        if current is None:  # not the html builder
            return
        from sphinx.builders.html._build_info import BuildInfo

        try:
            previous = BuildInfo.load(Path(app.outdir, ".buildinfo"))
        except (OSError, ValueError):  # a first build, or a broken file: everything is read anyway
            return
        mismatch.append(current != previous)

    def outdated(app: Sphinx, env, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
        return sorted(env.found_docs - added - changed) if mismatch and mismatch[-1] else []

    app.connect("builder-inited", compare, priority=100)
    app.connect("env-get-outdated", outdated)


def _keep_config_picklable(app: Sphinx) -> None:
    """sphinx-codeautolink replaces the names in ``codeautolink_custom_blocks`` by the functions
    they name, in the configuration itself, which Sphinx then cannot store with the environment
    (a warning, so an error here). It has read them by now: give the configuration its names back."""
    blocks = app.config.codeautolink_custom_blocks
    app.config.codeautolink_custom_blocks = {
        lang: value if isinstance(value, str) else f"{value.__module__}.{value.__qualname__}"
        for lang, value in blocks.items()}


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx_codeautolink")
    app.connect("builder-inited", _keep_config_picklable, priority=600)
    app.connect("source-read", skip_gallery_pages)
    reread_when_the_html_config_changed(app)
    link_every_written_page(app)
    remember_resolutions(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
