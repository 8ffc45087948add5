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

import pytest

from browser.searching import TOP, pages as _pages, search_page, type_and_search as _type_and_search  # noqa: F401
from fxsite import ROOT

pytestmark = [pytest.mark.docs, pytest.mark.browser]

DOCS = ROOT / "docs"


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
