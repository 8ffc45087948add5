"""The thread map behind docs/problems/coverage.md: well formed, every answer points at a section that exists,
and the shares the page prints are the ones the file holds."""

import csv
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "problems" / "threads.csv"
COLUMNS = ["url", "gist", "theme", "answer", "year", "kind", "grade", "upstream", "graded"]
GRADES = ["answers", "partly", "not yet"]
RECORDED = ROOT / "tests" / "expected" / "docs" / "problems" / "coverage.md.txt"
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
    if page.startswith("docs/atlas/") and not anchor:
        return  # an atlas page answers with one of its rows, which have no labels: the page itself is the target
    assert anchor in labels_in(source), f"{page} has no label ({anchor})="


@pytest.mark.parametrize("row", rows(), ids=lambda row: row["url"].split("github.com/")[-1])
def test_each_row_is_graded_in_the_map_s_own_terms(row):
    kind, grade, upstream, reason = row["kind"], row["grade"], row["upstream"], row["graded"]
    if grade == "ungraded":
        assert kind == "" and upstream == "", "a row not read yet has no kind or upstream mark"
        return
    assert kind in ("problem", "change"), f"kind is {kind!r}"
    if kind == "change":
        assert grade == "" and upstream == "", "a change to torch is not graded and is no upstream bug"
    else:
        assert grade in GRADES, f"grade is {grade!r}"
    assert upstream == "" or upstream == "not yet" or re.fullmatch(r"fixed upstream in 2\.\d+", upstream), upstream
    assert reason.strip() and len(reason) < 120, f"reason empty or too long: {reason!r}"
    if grade == "answers":
        assert row["answer"] != "not yet", "an answer needs a section"


def shares_from_the_file() -> dict[str, tuple]:
    """Per theme and overall ('*'): changes, rows not graded yet, graded problems and the count of each grade."""
    groups: dict[str, list[dict]] = {"*": rows()}
    for row in rows():
        groups.setdefault(row["theme"], []).append(row)
    out = {}
    for name, members in groups.items():
        graded = [r for r in members if r["kind"] == "problem" and r["grade"] in GRADES]
        grades = Counter(r["grade"] for r in graded)
        out[name] = (sum(r["kind"] == "change" for r in members), sum(r["grade"] == "ungraded" for r in members),
                     len(graded), *(grades[g] for g in GRADES))
    return out


def shares_the_page_printed() -> dict[str, tuple]:
    text = RECORDED.read_text()
    head = re.search(r"changes to torch, counted apart: (\d+); not graded yet: (\d+); graded problems: (\d+)\n"
                     r"overall: answers +(\d+) \(.*?\)  partly +(\d+) \(.*?\)  not yet +(\d+) ", text)
    assert head, f"{RECORDED.name} has no overall line"
    out = {"*": tuple(int(n) for n in head.groups())}
    for m in re.finditer(r"^([a-z0-9-]+) +\d+ +(\d+) +(\d+) +(\d+)  answers +(\d+) .*?partly +(\d+) .*?not yet +(\d+) ",
                         text, flags=re.MULTILINE):
        out[m.group(1)] = tuple(int(n) for n in m.groups()[1:])
    return out


def test_the_page_prints_the_shares_the_file_holds():
    assert shares_the_page_printed() == shares_from_the_file(), (
        "docs/problems/coverage.md's recorded output differs from threads.csv: re-record the page")


def test_the_recorded_percentages_are_the_counts_over_graded_problems():
    for line in RECORDED.read_text().splitlines():
        found = re.findall(r"(answers|partly|not yet) +(\d+) \( *(\d+)%\)", line)
        if not found:
            continue
        total = sum(int(n) for _, n, _ in found)
        for grade, n, pct in found:
            assert int(pct) == round(100 * int(n) / total), f"{grade} {n} of {total} printed as {pct}%: {line}"


def test_the_checker_rejects_a_missing_anchor(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("(real-label)=\n## A section\n")
    assert labels_in(page) == {"real-label"}
    assert "made-up" not in labels_in(page)
