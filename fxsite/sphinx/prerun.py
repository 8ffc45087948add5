"""Execute the pages that need it all at once, while sphinx-gallery runs the examples.

Left to itself, Sphinx executes a notebook page when it reads it: after
sphinx-gallery has run every example, and in chunks of about a dozen documents
per process, so the last chunk's pages run one after another on one core. This
extension starts, as soon as the builder exists, one execution per page whose
output myst-nb's cache (``nb_execution_cache_path``) does not hold, as many at a
time as there are cores, in kernels of their own (warm ones:
:mod:`fxsite.sphinx.warm_kernels`). Before Sphinx reads, it stores each
successful result in that cache, so reading finds every page executed.

A page that fails is not stored: myst-nb then executes it again while reading
and reports the failure exactly as without this extension. What a page shows is
what myst-nb's cache mode shows; only the moment of execution moves.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.matching import Matcher

logger = logging.getLogger(__name__)


MEMO = "fxguide-cached-pages.json"
"""In the execution cache's folder, for each page: its text, hashed, when the cache last held its
notebook (or when it was not a notebook), and the hash of the data its cells read (:func:`data_key`)."""

_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)


def declared_reads(text: str) -> list[str]:
    """The files a page's cells read, as its front matter declares them: globs relative to the page.

    The execution cache knows a page by its code alone, so a page whose cells read a
    committed data file (the model-zoo surveys) says so, and runs again when the data changes::

        fxguide:
          reads: ["../drift/torch-*/survey.json"]

    >>> declared_reads("---\\nfile_format: mystnb\\nfxguide:\\n  reads: [a/*.json]\\n---\\n# Page\\n")
    ['a/*.json']
    >>> declared_reads("# A page without front matter\\n")
    []
    """
    found = _FRONT_MATTER.match(text)
    if not found:
        return []
    import yaml

    try:
        matter = yaml.safe_load(found.group(1)) or {}
    except yaml.YAMLError:
        return []  # myst-nb reports a broken front matter when it reads the page
    reads = (matter.get("fxguide") or {}).get("reads", []) if isinstance(matter, dict) else []
    reads = [reads] if isinstance(reads, str) else reads
    if not isinstance(reads, list) or not all(isinstance(r, str) for r in reads):
        raise ValueError(f"fxguide: reads must be a glob or a list of globs (relative to the page), got {reads!r}")
    return reads


def data_key(page: Path, text: str | None = None) -> str:
    """A hash of every file the page declares it reads (:func:`declared_reads`), by name and content;
    "" for a page that declares none. A new file matching a glob changes it too."""
    page = Path(page)
    try:
        patterns = declared_reads(page.read_text(encoding="utf-8") if text is None else text)
    except ValueError as error:
        raise ValueError(f"{page}: {error}") from None
    if not patterns:
        return ""
    digest = hashlib.sha256()
    for pattern in patterns:
        digest.update(f"{pattern}\0".encode())
        for match in sorted(glob.glob(str(page.parent / pattern), recursive=True)):
            digest.update(f"{os.path.relpath(match, page.parent)}\0".encode() + Path(match).read_bytes())
    return digest.hexdigest()


def _entry(path: Path) -> dict[str, str]:
    raw = path.read_bytes()
    return {"text": hashlib.sha256(raw).hexdigest(), "data": data_key(path, raw.decode("utf-8"))}


def _read_memo(cache_path: Path) -> dict[str, dict[str, str]]:
    try:
        memo = json.loads((Path(cache_path) / MEMO).read_text())
    except (OSError, ValueError):
        return {}
    return memo if isinstance(memo, dict) else {}


def _write_memo(cache_path: Path, memo: dict[str, dict[str, str]]) -> None:
    Path(cache_path).mkdir(parents=True, exist_ok=True)
    (Path(cache_path) / MEMO).write_text(json.dumps(memo, indent=0, sort_keys=True))


def stale_pages(app: Sphinx) -> list[tuple[Path, object]]:
    """(path, notebook) of each MyST-NB page under the source folder that the cache lacks,
    or holds from before a change of the data the page reads (that record is removed).

    Reading a page into a notebook takes a fraction of a second, so a build with
    thirty pages would spend seconds on it before every rebuild. The pages the
    cache held at the last check are remembered by a hash of their text and of
    their data, in a file of the cache's own folder (:data:`MEMO`): a page is read
    again only when either changed, and a new cache (a new environment, a forced
    build) starts with no memo. Should the cache lose a remembered notebook anyway,
    myst-nb, which checks the cache itself, executes the page while reading it:
    slower, never stale.
    """
    if not isinstance(app, Sphinx):
        raise TypeError(f"stale_pages: expected the Sphinx application, got {type(app).__name__}")
    from fxsite.drift.extract import read_page

    cache_path = Path(app.config.nb_execution_cache_path)
    memo = _read_memo(cache_path)
    excluded = Matcher(list(app.config.exclude_patterns) + list(app.config.nb_execution_excludepatterns))
    srcdir = Path(app.srcdir)
    stale, cache, known, entries = [], None, {}, {}
    for path in sorted(srcdir.rglob("*.md")):
        relative = path.relative_to(srcdir).as_posix()
        if excluded(relative):
            continue
        entry = _entry(path)
        if memo.get(relative) == entry:
            known[relative] = entry
            continue
        notebook = read_page(path)
        if notebook is None:  # not a notebook: nothing to execute while its text stays the same
            known[relative] = entry
            continue
        if cache is None:
            from jupyter_cache import get_cache

            cache = get_cache(str(cache_path))
        try:
            record = cache.match_cache_notebook(notebook)
        except KeyError:
            record = None
        if record is not None and entry["data"] and (memo.get(relative) or {}).get("data") != entry["data"]:
            cache.remove_cache(record.pk)  # executed on other data (or on data this memo never saw)
            record = None
        if record is None:
            stale.append((path, notebook))
            entries[path] = entry  # what was executed: an edit made during the build is not taken as cached
        else:
            known[relative] = entry
    app._fxguide_entries = entries
    if known != memo:
        _write_memo(cache_path, known)
    return stale


def _remember(app: Sphinx, paths: list[Path]) -> None:
    """Add ``paths``, just stored in the cache, to the memo of :func:`stale_pages` (one write)."""
    if not paths:
        return
    cache_path = Path(app.config.nb_execution_cache_path)
    memo = _read_memo(cache_path)
    for path in paths:
        memo[path.relative_to(app.srcdir).as_posix()] = app._fxguide_entries[path]
    _write_memo(cache_path, memo)


def reread_when_data_changed(app: Sphinx, env, added: set, changed: set, removed: set) -> list[str]:
    """Pages whose declared data changed since Sphinx last read them (it knows only their text)."""
    read = getattr(env, "fxguide_page_data", {})
    return sorted(doc for doc, key in read.items() if doc in env.found_docs and doc not in added | changed
                  and data_key(Path(env.doc2path(doc))) != key)


def note_data(app: Sphinx, docname: str, source: list[str]) -> None:
    """source-read: remember the data a page declares, as it is when the page is read."""
    if not hasattr(app.env, "fxguide_page_data"):
        app.env.fxguide_page_data = {}
    key = data_key(Path(app.env.doc2path(docname)), source[0])
    if key:
        app.env.fxguide_page_data[docname] = key
    else:
        app.env.fxguide_page_data.pop(docname, None)


def _merge_data(app: Sphinx, env, docnames, other) -> None:
    """env-merge-info: the data keys a parallel reader noted for its pages (none: the page declares none)."""
    mine, theirs = getattr(env, "fxguide_page_data", {}), getattr(other, "fxguide_page_data", {})
    for doc in docnames:
        if doc in theirs:
            mine[doc] = theirs[doc]
        else:
            mine.pop(doc, None)
    env.fxguide_page_data = mine


def _execute(app: Sphinx, path: Path, notebook):
    from fxsite.sphinx.limits import execute_notebook

    return execute_notebook(notebook, cwd=str(path.parent), timeout=app.config.nb_execution_timeout,
                            allow_errors=app.config.nb_execution_allow_errors, meta_override=True)


BENCH_RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results.json"


def longest_first(pages: list[Path], srcdir: Path, results: Path = BENCH_RESULTS) -> list[Path]:
    """``pages`` in the order to start them: longest first, by their time in ``make bench``'s results.

    Pages run as many at a time as there are cores, so a long page started last
    makes every other core wait for it (a page that builds real models takes several
    times the others). Pages the results do not know yet start first, as they may be long.
    The order changes when a page runs, never what it shows; without readable
    results the order is the sources' own.

    >>> longest_first([Path("docs/a.md"), Path("docs/b.md"), Path("docs/new.md")], Path("docs"),
    ...               Path("no such file.json"))
    [PosixPath('docs/a.md'), PosixPath('docs/b.md'), PosixPath('docs/new.md')]
    """
    try:
        items = json.loads(Path(results).read_text())["items"]
        seconds = {name: float(item["seconds"]) for name, item in items.items()}
    except (OSError, ValueError, KeyError, TypeError):
        return list(pages)
    folder = Path(srcdir).name

    def cost(page: Path) -> float:
        return seconds.get(f"{folder}/{Path(page).relative_to(srcdir).as_posix()}", float("inf"))

    return sorted(pages, key=cost, reverse=True)  # a stable sort: ties keep the sources' order


def _start(app: Sphinx) -> None:
    """builder-inited, before sphinx-gallery: start executing every stale page."""
    app._fxguide_prerun = []
    if not app.config.fxguide_prerun or app.config.nb_execution_mode != "cache":
        return
    stale = stale_pages(app)
    if not stale:
        return
    from fxsite.sphinx import warm_kernels

    warm_kernels.start_for(app)
    notebooks = dict(stale)
    pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 2, thread_name_prefix="fxguide-prerun")
    app._fxguide_prerun = [(path, pool.submit(_execute, app, path, notebooks[path]))
                           for path in longest_first(list(notebooks), Path(app.srcdir))]
    pool.shutdown(wait=False)
    logger.info("executing %d page(s) while the gallery runs", len(stale))


def _finish(app: Sphinx, env, docnames: list[str]) -> None:
    """env-before-read-docs: wait for the executions and cache each one that succeeded."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    runs: list[tuple[Path, Future]] = getattr(app, "_fxguide_prerun", [])
    if not runs:
        return
    cache = get_cache(app.config.nb_execution_cache_path)
    cached: list[Path] = []
    for path, future in runs:
        result = future.result()
        if result.err is None:
            cache.cache_notebook_bundle(CacheBundleIn(result.nb, str(path), data={"execution_seconds": result.time}),
                                        check_validity=False, overwrite=True)
            cached.append(path)
            logger.info("executed %s in %.2f s", path.name, result.time)
    _remember(app, cached)
    app._fxguide_prerun = []


def setup(app: Sphinx) -> dict:
    """``fxsite.sphinx.prerun`` in ``conf.py``'s extensions; ``fxguide_prerun = False`` turns it off."""
    app.add_config_value("fxguide_prerun", True, "")
    app.connect("builder-inited", _start, priority=100)  # sphinx-gallery runs its examples at 500
    app.connect("env-before-read-docs", _finish, priority=100)
    app.connect("source-read", note_data)
    app.connect("env-get-outdated", reread_when_data_changed)
    app.connect("env-merge-info", _merge_data)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
