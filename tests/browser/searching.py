"""Searching the built site the way a reader does: type into the search page's box, press Enter, read the list.

Shared by test_findable.py (the index's headings) and test_pasted.py (messages as readers paste them).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

TOP = 3
# Sphinx lists the results one by one, best first, and fetches each result's page for its summary; when
# the last is listed, its heading "Searching" becomes "Search Results". The first TOP pages are final as soon
# as they are listed, so the wait ends there (or when the search finished with fewer), not after every fetch.
TOP_LISTED = """(top) => {
    if (document.querySelector('#search-results h2')?.textContent === 'Search Results') return true;
    const links = document.querySelectorAll('#search-results ul.search li a');
    return new Set(Array.from(links, a => a.pathname)).size >= top;
}"""


@pytest.fixture(scope="module")
def search_page(site_context):
    """One tab for every search of this module, opened on the search page. Each search is typed into the box
    of the results page the last one left, as a reader searches again; pressing Enter loads the page afresh."""
    tab = site_context.new_page()
    tab.goto("search.html")
    yield tab
    tab.close()


def type_and_search(page, query: str) -> list[str]:
    """Paste ``query`` into the search box of the search page, press Enter, return the results listed, best first
    (at least the first ``TOP`` pages, or all of them)."""
    if urlsplit(page.url).path.rpartition("/")[2] != "search.html":
        page.goto("search.html")
    box = page.locator("#search-results").locator("xpath=..").locator("input[name=q]")
    if box.count() == 0:
        box = page.locator("form[action*='search'] input[name=q]").first
    box.first.fill(query)  # as a reader pastes an error message
    with page.expect_navigation():
        box.first.press("Enter")
    page.wait_for_function(TOP_LISTED, arg=TOP)
    return page.eval_on_selector_all("#search-results ul.search li a", "links => links.map(a => a.href)")


def pages(results: list[str], site_url: str) -> list[str]:
    seen: list[str] = []
    for url in results:
        path = url[len(site_url):].split("#")[0].split("?")[0]
        if path not in seen:
            seen.append(path)
    return seen


