"""Which atlas rows meet a pasted error: by the graph-break ids it names, or by its message.

Reads ``outcomes.json`` (written from the atlas pages' recorded outputs by the
site's tooling), so looking up needs no capture to run. The paste is read line
by line, once: time grows with its length, not with its square.

>>> [hit.title for hit in rows_for("torch._dynamo.exc.Unsupported: logging.Logger method not supported "
...                                "for non-export cases")][:2]
['logger.warning(...)', 'logger.info(...)']
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

_GB = re.compile(r"\b[Gg][Bb](\d{4})\b")
_MIN_MESSAGE = 20  # a shorter message ("KeyError: 'a'") would meet rows of unrelated code


@dataclass(frozen=True)
class Hit:
    """An atlas row that meets the paste, and the tools whose outcome there holds it."""

    title: str
    page: str
    anchor: str
    tools: tuple[str, ...]

    @property
    def where(self) -> str:
        """The row's address on the site, relative to its root."""
        return f"{self.page}.html#{self.anchor}"


@functools.cache
def _index() -> tuple[dict[str, list[tuple[dict, str]]], dict[str, list[tuple[dict, str]]]]:
    """Two maps: graph-break id -> (row, tool) pairs, and an error's message -> (row, tool) pairs."""
    rows = json.loads((Path(__file__).with_name("outcomes.json")).read_text(encoding="utf-8"))["rows"]
    by_break: dict[str, list[tuple[dict, str]]] = {}
    by_message: dict[str, list[tuple[dict, str]]] = {}
    for row in rows:
        for tool, outcome in row["tools"].items():
            for gb in outcome["breaks"]:
                by_break.setdefault(gb, []).append((row, tool))
            message = _message(outcome["outcome"])
            if message:
                by_message.setdefault(message, []).append((row, tool))
    return by_break, by_message


def _message(outcome: str) -> str | None:
    """The message of an outcome that quotes one (``raises Type: message``), without the type."""
    for prefix in ("raises ", "captured; the second input raises "):
        if outcome.startswith(prefix):
            _, _, message = outcome[len(prefix):].partition(": ")
            message = message.split(" (", 1)[0].strip() if message.endswith("graphs)") else message.strip()
            return message if len(message) >= _MIN_MESSAGE else None
    return None


def rows_for(text: str) -> list[Hit]:
    """The atlas rows whose outcomes name a graph-break id of ``text`` or raise one of its messages.

    Rows are ordered by how many of their tools meet the text, then as the atlas lists them.
    """
    if not isinstance(text, str):
        raise TypeError(f"rows_for: text must be str, got {type(text).__name__}")
    by_break, by_message = _index()
    met: dict[str, tuple[dict, set[str]]] = {}
    for line in text.splitlines():
        pairs = [pair for number in _GB.findall(line) for pair in by_break.get(f"GB{number}", [])]
        stripped = line.strip()
        _, _, message = stripped.partition(": ")
        pairs += by_message.get(message.strip(), []) + by_message.get(stripped, [])
        for row, tool in pairs:
            met.setdefault(row["anchor"], (row, set()))[1].add(tool)
    ranked = sorted(met.values(), key=lambda found: -len(found[1]))
    return [Hit(row["title"], row["page"], row["anchor"], tuple(sorted(tools))) for row, tools in ranked]
