"""The atlas's index for the lookup, written from the atlas pages' recorded outputs.

``python -m fxguide.explain`` names the atlas rows that meet a pasted message.
It cannot run the atlas (a minute of captures), so it reads
``fxguide/atlas/outcomes.json``: for each row, its page, anchor and title, and
for each tool the outcome and message. This module writes that file from the
recordings in ``tests/expected/docs/atlas/`` — the outputs the output check
compares with every build — so the index holds what the built pages show, and
a test fails when the two part (``python -m fxsite.atlas`` writes it again).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from fxsite import ROOT

RECORDED = ROOT / "tests" / "expected" / "docs" / "atlas"
INDEX = ROOT / "fxguide" / "atlas" / "outcomes.json"
REPROS = ROOT / "fxguide" / "atlas" / "reproduced.json"
_ROW = re.compile(r"^## (?P<title>.+)  \(#(?P<anchor>atlas-[a-z0-9-]+)\)$")
_OUTCOME = re.compile(r"^(?P<tool>[a-z_A-Z][a-z_A-Z. ]*): (?P<outcome>.*)$")
_BREAKS = re.compile(r"\[graph breaks: (?P<ids>[A-Z0-9, ]+)\]$")


def rows_of(recording: str, page: str) -> list[dict]:
    """The rows of one page's recording: title, anchor, page, and each tool's outcome text and graph breaks."""
    rows: list[dict] = []
    part = "tools"
    for line in recording.splitlines():
        head = _ROW.match(line)
        if head:
            rows.append({"title": head["title"], "anchor": head["anchor"], "page": page, "tools": {}})
            part = "tools"
            continue
        if rows and line.startswith("the fix, run"):
            part = "fix"  # the fix's outcomes follow, indented
            rows[-1]["fix"] = {}
            continue
        outcome = _OUTCOME.match(line.strip())
        if rows and outcome and not line.startswith(("what to do:", "note:")):
            text = outcome["outcome"]
            breaks = _BREAKS.search(text)
            rows[-1][part][outcome["tool"]] = {
                "outcome": _BREAKS.sub("", text).strip(),
                "breaks": breaks["ids"].split(", ") if breaks else []}
    return rows


def index(recorded: Path = RECORDED) -> dict:
    """The index: every row of every recorded atlas page, in page order."""
    rows: list[dict] = []
    for path in sorted(recorded.glob("*.md.txt")):
        page = "atlas/" + path.name.removesuffix(".md.txt")
        rows += rows_of(path.read_text(encoding="utf-8"), page)
    return {"about": "Written by `python -m fxsite.atlas` from tests/expected/docs/atlas; do not edit.",
            "rows": rows}


def reproduced() -> dict:
    """Inventory entry id -> the reproductions of ``docs/atlas/messages.md`` that raise it (message, tool, cause);
    and, as ``unlisted``, those whose message the inventory does not hold, with the pattern that identifies it.

    Read from the registry itself (importing it defines the reproductions' custom ops: about a second,
    too slow for every lookup, hence the file)."""
    from fxguide.atlas.repros import all_repros
    found: dict[str, list[dict]] = {}
    unlisted: list[dict] = []  # raised where the inventory does not look: found by the words that identify them
    for item in all_repros():
        shown = {"message": item.message, "tool": item.tool, "cause": item.cause, "anchor": item.anchor}
        if item.entry:
            found.setdefault(item.entry, []).append(shown)
        else:
            unlisted.append({"says": item.identified_by, **shown})
    return {"about": "Written by `python -m fxsite.atlas` from fxguide.atlas.repros; do not edit.",
            "entries": dict(sorted(found.items())), "unlisted": unlisted}


def write(path: Path = INDEX, repros: Path = REPROS) -> Path:
    """Write :func:`index` as JSON to ``path``, and :func:`reproduced` to ``repros``."""
    path.write_text(json.dumps(index(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    repros.write_text(json.dumps(reproduced(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
