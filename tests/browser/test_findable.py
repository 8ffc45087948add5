"""Findable from the symptom: each message of the error index, and the heading of
each entry of the problem-first part, typed into the site's own search box.

The queries are read from the pages' sources (docs/reference/errors.md and
docs/problems/*.md), so a new entry is searched for without touching this file.
The expected page must be among the first three results the built site's
search (Sphinx's, offline) shows.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from fxsite import ROOT

pytestmark = [pytest.mark.docs, pytest.mark.browser]

DOCS = ROOT / "docs"
TOP = 3
# Sphinx lists the results one by one, best first, and fetches each result's page for its summary; when
# the last is listed, its heading "Searching" becomes "Search Results". The first TOP pages are final as soon
# as they are listed, so the wait ends there (or when the search finished with fewer), not after every fetch.
TOP_LISTED = """(top) => {
    if (document.querySelector('#search-results h2')?.textContent === 'Search Results') return true;
    const links = document.querySelectorAll('#search-results ul.search li a');
    return new Set(Array.from(links, a => a.pathname)).size >= top;
}"""


def _headings(source: Path, label_prefix: str) -> list[str]:
    """The level-2 headings of ``source`` that follow a ``(label)=`` target starting with ``label_prefix``."""
    text = source.read_text()
    return re.findall(rf"^\({re.escape(label_prefix)}[\w-]*\)=\n## (.+)$", text, flags=re.MULTILINE)


def _query(heading: str) -> str:
    """What a reader would paste: the heading without Markdown backticks or the index's `...` elisions."""
    text = heading.replace("`", "")
    text = text.replace("...", " ").replace("…", " ")
    return re.sub(r"\s+", " ", text).strip()


ERROR_MESSAGES = _headings(DOCS / "reference" / "errors.md", "error-")
PROBLEMS = [(f"problems/{page.stem}.html", heading)
            for page in sorted((DOCS / "problems").glob("*.md")) for heading in _headings(page, "problems-")]


def test_the_sources_give_queries():
    assert len(ERROR_MESSAGES) >= 20, ERROR_MESSAGES
    assert len(PROBLEMS) >= 10, PROBLEMS


@pytest.fixture(scope="module")
def search_page(site_context):
    """One tab for every search of this module, opened on the search page. Each search is typed into the box
    of the results page the last one left, as a reader searches again; pressing Enter loads the page afresh."""
    tab = site_context.new_page()
    tab.goto("search.html")
    yield tab
    tab.close()


def _type_and_search(page, query: str) -> list[str]:
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


def _pages(results: list[str], site_url: str) -> list[str]:
    seen: list[str] = []
    for url in results:
        path = url[len(site_url):].split("#")[0].split("?")[0]
        if path not in seen:
            seen.append(path)
    return seen


@pytest.mark.parametrize("message", ERROR_MESSAGES)
def test_an_error_message_finds_the_error_index(search_page, site_url, message):
    query = _query(message)
    found = _pages(_type_and_search(search_page, query), site_url)
    assert "reference/errors.html" in found[:TOP], f"searching {query!r}: first results {found[:5]}"


@pytest.mark.parametrize(("expected", "symptom"), PROBLEMS)
def test_a_symptom_finds_its_entry(search_page, site_url, expected, symptom):
    query = _query(symptom)
    found = _pages(_type_and_search(search_page, query), site_url)
    assert expected in found[:TOP], f"searching {query!r}: first results {found[:5]}"
