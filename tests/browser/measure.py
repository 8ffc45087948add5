"""Measure the site search on pasted messages and readers' words: ``python tests/browser/measure.py SITE_HTML``.

Serves SITE_HTML (a built site's ``html`` folder) on 127.0.0.1, types every query of test_pasted.py into its
search page with Debian's Chromium, and prints, per form, the share of queries whose answer is in the first 3
results. The numbers test_pasted.py requires, for a site built from another branch (before/after a change).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

from playwright.sync_api import sync_playwright  # noqa: E402

from browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from browser.searching import TOP, pages, type_and_search  # noqa: E402
from browser.test_findable import ERROR_MESSAGES, PROBLEMS, _query  # noqa: E402
from browser.test_pasted import DESCRIBED  # noqa: E402
from fxsite.web.serve import serving  # noqa: E402


def main(site: Path, queries: Path | None = None) -> None:  # noqa: C901 - one loop per kind of query
    if queries is not None and queries.is_file():
        pasted = [tuple(row) for row in json.loads(queries.read_text())]
    else:
        from pasted_errors import pasted as make

        pasted = list(make())
        if queries is not None:
            queries.write_text(json.dumps(pasted))
    with serving(site) as url, sync_playwright() as play:
        browser = play.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(base_url=url)
        page.goto("search.html")
        shares: dict[str, list[bool]] = {}
        for form, text, anchor in pasted:
            links = [link[len(url):] for link in type_and_search(page, text)][:TOP]
            hit = f"reference/errors.html#{anchor}" in links
            shares.setdefault(form, []).append(hit)
            if not hit:
                print(f"  miss {form:11} {anchor:32} {text[:90]!r} -> {links}")
        shares["page of a message (traceback)"] = []
        for form, text, anchor in pasted:
            if form == "traceback":
                found = pages(type_and_search(page, text), url)
                shares["page of a message (traceback)"].append("reference/errors.html" in found[:TOP])
        for query, expected in DESCRIBED.items():
            found = pages(type_and_search(page, query), url)
            shares.setdefault("described", []).append(expected in found[:TOP])
            if expected not in found[:TOP]:
                print(f"  miss described {query!r} -> {found[:TOP]}")
        for expected, heading in [*(("reference/errors.html", m) for m in ERROR_MESSAGES), *PROBLEMS]:
            found = pages(type_and_search(page, _query(heading)), url)
            shares.setdefault("index heading (test_findable)", []).append(expected in found[:TOP])
            if expected not in found[:TOP]:
                print(f"  miss heading {heading!r} -> {found[:TOP]}")
        browser.close()
    for form, hits in shares.items():
        print(f"{form:32} {sum(hits):3}/{len(hits):<3} {sum(hits) / len(hits):.0%} in the first {TOP}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None)
