"""A sentence that names a condition is backed by a witness that ran in it, as measured.

"Loads with no compiler", "a fresh process with an empty cache", "with the
default settings": a page's prose says these; the cell that shows them prints
the conditions it ran in (``fxguide.conditions``), measured in the process
itself, on a ``conditions:`` line. These tests read each page's prose and its
recorded outputs (``tests/expected``; ``test_outputs`` holds the build to them):

- every section whose prose names a condition holds a cell whose recorded
  ``conditions:`` line shows that condition met (a summary section, before the
  first heading or under "What to remember" or another summary heading, may point at a witness anywhere on
  its page; a paragraph with a ``{ref}`` link may point at the linked section);
- no recorded ``conditions:`` line shows a condition not met: a witness that ran
  with a warm cache, a compiler, or a setting changed fails here by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from fxsite.drift import snapshots
from fxsite.drift.extract import ROOT, page_sources

# What the prose says -> what a conditions line must show for it. Case-insensitive, whole words.
CLAIMS = {
    "a new process": (r"\b(fresh|new) process(es)?\b|\bprocess(es)? of (its|their) own\b",
                      lambda line: "| new interpreter" in line or line.startswith("conditions: new interpreter")),
    "an empty Inductor cache": (r"\bempty,? (private )?(Inductor )?cache\b|\bcache folders? (is |are )?empty\b"
                                r"|\bempty(, private)? cache folders?\b",
                                lambda line: "Inductor cache: empty" in line),
    "no C++ compiler": (r"(?<!ran )\bno (C\+\+ |working )?compiler\b|\bwithout a (C\+\+ )?compiler\b",
                        lambda line: "C++ compiler: none" in line),
    "the default settings": (r"\bdefault settings\b",
                             lambda line: "(its default)" in line or " unset" in line),
}
# What a conditions line says when the witness ran outside the condition it was meant to show.
NOT_MET = ("not a new interpreter", "entries at start", "(not the default", "(set, not unset)", ": missing")
SUMMARY_HEADINGS = ("What to remember", "Which route fits", "What to use when")


@dataclass(frozen=True)
class Section:
    label: str | None
    heading: str
    start: int  # first line (1-based) of the section in the page
    end: int  # last line
    prose: list[tuple[int, str]]  # (first line, text) of each paragraph outside code


def sections(page: Path) -> list[Section]:
    """The page cut at its ``##`` headings (the part before the first one is the introduction)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Section] = []
    label, heading, start, prose, paragraph, fence = None, "introduction", 1, [], [], None
    pending_label = None

    def close_paragraph(number):
        if paragraph:
            prose.append((number - len(paragraph), " ".join(paragraph)))
            paragraph.clear()

    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence) and stripped.strip("`~") == "":
                fence = None
            continue
        if re.match(r"^(```+|~~~+)", stripped):
            close_paragraph(number)
            fence = re.match(r"^(```+|~~~+)", stripped).group(1)
            continue
        if match := re.match(r"^\((?P<label>[\w.-]+)\)=$", stripped):
            close_paragraph(number)
            pending_label = match.group("label")
            continue
        if line.startswith("## "):
            close_paragraph(number)
            found.append(Section(label, heading, start, number - 1, prose))
            label, heading, start, prose, pending_label = pending_label, line[3:].strip(), number, [], None
            continue
        if not stripped:
            close_paragraph(number)
        else:
            paragraph.append(stripped)
    close_paragraph(len(lines) + 1)
    found.append(Section(label, heading, start, len(lines), prose))
    return found


def conditions_lines(source: str) -> list[tuple[int, str]]:
    """(page line of the cell, line) for every ``conditions:`` line recorded for ``source``."""
    recorded = snapshots.load(source) or {}
    return [(expected.line, line.strip()) for expected in recorded.values()
            for line in expected.output.splitlines() if line.strip().startswith("conditions:")]


def claims(section: Section):
    """(condition, paragraph line, paragraph) for each condition a paragraph of the section names."""
    for line, text in section.prose:
        for condition, (pattern, _) in CLAIMS.items():
            if re.search(pattern, text, re.IGNORECASE):
                yield condition, line, text


PAGES = [page for page in page_sources() if any(True for s in sections(page) for _ in claims(s))]


def test_the_claim_finder_reads_every_kind_of_condition_on_the_site(tmp_path):
    """The patterns are not dead: each kind of condition is named somewhere on the site, and the finder
    sees claims in prose, never in code."""
    named = {condition for page in page_sources() for s in sections(page) for condition, _, _ in claims(s)}
    assert named == set(CLAIMS), f"conditions no page names (a pattern that no longer matches?): {set(CLAIMS) - named}"
    fenced = sections(_page(tmp_path, "Intro.\n\n```{code-cell} python\nprint('no compiler')\n```\n\n## A\n\nText.\n"))
    assert [list(claims(s)) for s in fenced] == [[], []]


def test_a_claim_without_a_witness_in_its_section_is_reported(tmp_path):
    page = _page(tmp_path, "Intro.\n\n(here)=\n## Loading\n\nThe package loads with no compiler.\n")
    (section,) = [s for s in sections(page) if s.label == "here"]
    assert [c for c, _, _ in claims(section)] == ["no C++ compiler"]
    assert _unwitnessed(section, [], sections(page)) == ["no C++ compiler"]
    met = [(section.start + 1, "conditions: new interpreter | C++ compiler: none (exits 127)")]
    assert _unwitnessed(section, met, sections(page)) == []


@pytest.mark.parametrize("doc", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_condition_a_section_names_is_shown_met_by_a_cell_of_it(doc):
    source = str(doc.relative_to(ROOT))
    lines, parts = conditions_lines(source), sections(doc)
    missing = []
    for section in parts:
        for condition in _unwitnessed(section, lines, parts):
            where = next(f"line {line}: {text[:140]}" for c, line, text in claims(section) if c == condition)
            missing.append(f"§ {section.heading!r} claims {condition!r} ({where}) but none of its cells printed a "
                           "'conditions:' line showing it")
    assert not missing, (f"{source}:\n" + "\n".join(missing) + "\n\nRun the witness with fxguide.conditions "
                         "(run_fresh, settings_here), print its conditions, and re-record the page.")


@pytest.mark.parametrize("doc", page_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_recorded_witness_ran_outside_its_conditions(doc):
    source = str(doc.relative_to(ROOT))
    bad = [f"cell at line {line}: {text}" for line, text in conditions_lines(source)
           if any(sign in text for sign in NOT_MET)]
    assert not bad, (f"{source}: a witness ran outside the conditions it shows:\n" + "\n".join(bad)
                     + "\n\nFind what the cell's process shared (a cache, a compiler, a setting) and run it apart.")


def _unwitnessed(section: Section, lines: list[tuple[int, str]], parts: list[Section]) -> list[str]:
    """The conditions ``section`` names that no conditions line in its scope shows met."""
    summary = section.heading == "introduction" or section.heading in SUMMARY_HEADINGS
    missing = []
    for condition, _, text in claims(section):
        met = CLAIMS[condition][1]
        linked = set(re.findall(r"\{ref\}`(?:[^`<]*<)?([\w.-]+)>?`", text))
        scope = [s for s in parts if summary or s == section or s.label in linked]
        if not any(met(line) for cell, line in lines for s in scope if s.start <= cell <= s.end):
            if condition not in missing:
                missing.append(condition)
    return missing


def _page(folder: Path, text: str) -> Path:
    page = folder / "page.md"
    page.write_text(text, encoding="utf-8")
    return page
