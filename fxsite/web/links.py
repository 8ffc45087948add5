"""Check a built site's links without a browser: every internal link and resource resolves.

:func:`check_site` walks the HTML files of a build from ``index.html``, reads
every ``href`` and ``src``, and reports

- internal links whose file does not exist, or whose ``#fragment`` names no
  element of the target page;
- resources (scripts, stylesheets, images, frames, ...) loaded from another
  host, which would break the site offline.

Links *to* other sites (``<a href="https://...">``) are allowed: following one is
the reader's choice, not something the page does on its own.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: Pages Sphinx writes that no link leads to but readers still open (the search
#: form's target, the general index and the Python module index).
UNLINKED = ("search.html", "genindex.html", "py-modindex.html")

# (tag, attribute) pairs that make the browser fetch something when the page loads.
_RESOURCES = {("script", "src"), ("img", "src"), ("iframe", "src"), ("source", "src"), ("video", "src"),
              ("audio", "src"), ("embed", "src"), ("object", "data"), ("input", "src"), ("image", "href")}
_LOADED_LINK_RELS = {"stylesheet", "icon", "preload", "modulepreload", "prefetch", "manifest", "shortcut"}


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []  # (kind, url): kind "link" (a/area) or "resource"

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value for name, value in attrs if value is not None}
        for name in ("id", "name") if tag in {"a", "span", "div", "section", "dt", "p"} else ("id",):
            if name in values:
                self.ids.add(values[name])
        if tag in {"a", "area"} and "href" in values:
            self.links.append(("link", values["href"]))
        elif tag == "link" and "href" in values:
            rels = set(values.get("rel", "").lower().split())
            self.links.append(("resource" if rels & _LOADED_LINK_RELS else "link", values["href"]))
        for pair_tag, attr in _RESOURCES:
            if tag == pair_tag and attr in values:
                self.links.append(("resource", values[attr]))
        if tag in {"img", "source"} and "srcset" in values:
            for candidate in values["srcset"].split(","):
                if candidate.strip():
                    self.links.append(("resource", candidate.split()[0]))


@dataclass
class SiteCheck:
    """What :func:`check_site` found: the pages it read and every problem, one line each."""

    pages: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    offsite_resources: list[str] = field(default_factory=list)


def is_external(url: str) -> bool:
    """True when ``url`` points at another host (or scheme) rather than at the site itself.

    >>> [is_external(u) for u in ("quickstart.html#x", "//cdn.example/a.js", "https://a.b", "mailto:x@y", "#top")]
    [False, True, True, True, False]
    """
    if not isinstance(url, str):
        raise TypeError(f"is_external: url must be a str, got {type(url).__name__}")
    parts = urlsplit(url)
    return bool(parts.scheme or parts.netloc)


def check_site(html_dir: Path, start: str = "index.html") -> SiteCheck:
    """Crawl ``html_dir`` from ``start`` through internal links and check every link and resource.

    Every HTML page reached is parsed once; non-HTML targets (images, notebooks,
    downloads) only have to exist. ``data:`` URLs are inline and need nothing.
    """
    root = Path(html_dir)
    if not (root / start).is_file():
        raise FileNotFoundError(f"check_site: no {start} in {root}; build the site first (make docs)")
    parsed: dict[str, _PageParser] = {}
    pending, wanted = [start], []  # wanted: (page, kind, url, target path, fragment)
    result = SiteCheck()
    while pending:
        page = pending.pop()
        if page in parsed:
            continue
        parser = _PageParser()
        parser.feed((root / page).read_text(encoding="utf-8", errors="replace"))
        parsed[page] = parser
        result.pages.append(page)
        for kind, url in parser.links:
            if url.startswith(("data:", "javascript:")):
                continue
            if is_external(url):
                if kind == "resource":
                    result.offsite_resources.append(f"{page}: loads {url}")
                continue
            parts = urlsplit(url)
            target = posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(parts.path))) \
                if parts.path else page
            if parts.path.endswith("/") or (root / target).is_dir():
                target = posixpath.join(target, "index.html")
            wanted.append((page, url, target, unquote(parts.fragment)))
            if target.endswith(".html") and (root / target).is_file() and not target.startswith(".."):
                pending.append(target)
    for page, url, target, fragment in wanted:
        if target.startswith("..") or not (root / target).is_file():
            result.broken.append(f"{page}: {url} -> no file {target}")
        elif fragment and target.endswith(".html") and fragment not in parsed[target].ids:
            result.broken.append(f"{page}: {url} -> {target} has no element with id {fragment!r}")
    result.pages.sort()
    return result
