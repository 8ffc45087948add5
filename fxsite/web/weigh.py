"""How big the built site is: ``python -m fxsite.web.weigh _build/html``.

Prints the number of HTML pages a reader reaches (from ``index.html``, plus the
search and index pages: :data:`fxsite.web.links.UNLINKED`), the total size of
the site folder, and what loading each page costs with an empty cache: every
byte Chromium receives for it (HTML, styles, scripts, fonts, images), measured
in a fresh browser context per page.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from fxsite.web.links import UNLINKED, check_site
from fxsite.web.serve import serving


@dataclass(frozen=True)
class Weight:
    pages: int
    site_bytes: int
    transfer: dict[str, int]  # page -> bytes received to show it, cold cache

    @property
    def heaviest(self) -> tuple[str, int]:
        return max(self.transfer.items(), key=lambda item: item[1])


def folder_bytes(folder: Path) -> int:
    """Total size of the files under ``folder``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = (Path(d) / "a.html").write_text("12345")
    ...     folder_bytes(Path(d))
    5
    """
    if not Path(folder).is_dir():
        raise NotADirectoryError(f"folder_bytes: {folder} is not a folder")
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def weigh(html_dir: Path) -> Weight:
    """Measure the site in ``html_dir`` (see the module's docstring)."""
    from playwright.sync_api import sync_playwright

    from fxsite.web.chromium import launch

    html_dir = Path(html_dir)
    pages = check_site(html_dir).pages
    pages += [p for p in UNLINKED if p not in pages and (html_dir / p).is_file()]
    transfer: dict[str, int] = {}
    with serving(html_dir) as url, sync_playwright() as playwright:
        browser = launch(playwright)
        for page_name in pages:
            context = browser.new_context()
            received: list = []
            page = context.new_page()
            page.on("requestfinished", lambda request: received.append(request))
            page.goto(url + page_name, wait_until="networkidle")
            transfer[page_name] = sum(r.sizes()["responseBodySize"] + r.sizes()["responseHeadersSize"] for r in received)
            context.close()
        browser.close()
    return Weight(pages=len(pages), site_bytes=folder_bytes(html_dir), transfer=transfer)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m fxsite.web.weigh", description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, nargs="?", default=Path("_build/html"))
    parser.add_argument("--top", type=int, default=5, help="list this many of the heaviest pages")
    args = parser.parse_args(argv)
    weight = weigh(args.directory)
    print(f"pages: {weight.pages}")
    print(f"site folder: {weight.site_bytes / 1e6:.2f} MB ({weight.site_bytes} bytes)")
    for page, size in sorted(weight.transfer.items(), key=lambda item: -item[1])[: args.top]:
        print(f"transfer, cold cache: {size / 1e3:8.1f} kB  {page}")


if __name__ == "__main__":
    main()
