"""The thread map behind docs/problems/coverage.md: well formed, and every answer points at a section that exists."""

import csv
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "problems" / "threads.csv"
COLUMNS = ["url", "gist", "theme", "answer", "year"]
URL = re.compile(r"^https://(github\.com/[\w.-]+/[\w.-]+/(issues|pull|discussions)/\d+|discuss\.pytorch\.org/t/\S+)$")


def rows() -> list[dict]:
    with MAP.open(newline="") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == COLUMNS, f"{MAP.name} header is {reader.fieldnames}, expected {COLUMNS}"
        return list(reader)


def labels_in(page: Path) -> set[str]:
    return set(re.findall(r"^\(([\w-]+)\)=$", page.read_text(), flags=re.MULTILINE))


def test_the_map_holds_at_least_200_distinct_threads_from_2024_to_2026():
    table = rows()
    urls = [row["url"] for row in table]
    assert len(table) >= 200
    assert not [url for url, n in Counter(urls).items() if n > 1], "a thread is listed twice"
    assert {row["year"] for row in table} <= {"2024", "2025", "2026"}


@pytest.mark.parametrize("row", rows(), ids=lambda row: row["url"].split("github.com/")[-1])
def test_each_row_is_well_formed(row):
    assert URL.match(row["url"]), f"not a thread URL: {row['url']}"
    assert row["gist"].strip() and len(row["gist"]) <= 140, f"gist empty or longer than a line: {row['gist']!r}"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", row["theme"]), f"theme is not a slug: {row['theme']!r}"
    answer = row["answer"]
    if answer == "not yet" or answer.startswith("fixed upstream in "):
        return
    page, _, anchor = answer.partition("#")
    source = ROOT / page
    assert page.startswith("docs/") and page.endswith(".md") and source.is_file(), f"no page {page}"
    assert anchor in labels_in(source), f"{page} has no label ({anchor})="


def test_every_theme_with_three_threads_is_answered():
    unanswered = Counter(row["theme"] for row in rows() if row["answer"] == "not yet")
    totals = Counter(row["theme"] for row in rows())
    open_themes = {theme for theme, n in totals.items() if n >= 3 and unanswered[theme] == n}
    assert open_themes == set(), f"themes with no answer: {sorted(open_themes)}"


def test_the_checker_rejects_a_missing_anchor(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("(real-label)=\n## A section\n")
    assert labels_in(page) == {"real-label"}
    assert "made-up" not in labels_in(page)
