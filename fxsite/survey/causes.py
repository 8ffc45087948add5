"""What the survey page shows: counts per zoo and tool, and failures grouped by cause.

A *cause* is a failure's exception type and message pattern
(:func:`fxguide.diagnose.messages.pattern`: quoted names, numbers and shapes
left out). Each is linked to the guide section of its cause class, by the same
classifier a reader's diagnosis uses (:func:`fxguide.diagnose.causes.classify`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fxguide.diagnose.causes import Section, classify
from fxguide.diagnose.messages import pattern, split as _split
from fxguide.diagnose.result import TITLES, ToolResult
from fxsite.survey.catalogue import ZOOS
from fxsite.survey.tools import TOOLS

TOOL_TITLES = {
    **TITLES,
    "hf_symbolic_trace": "transformers FX (4.x only)",  # in the surveys of older runs
    "concrete_trace": "concrete_trace",
    "export": "export",
    "export_dynamic_batch": "export, dynamic batch",
}


def link_for(text: str, tools: Sequence[str] = ()) -> Section | None:
    """The guide section of a failure ``"Type: message"`` of one of ``tools``, if a cause class has one.

    >>> link_for("TraceError: symbolically traced variables cannot be used as inputs to control flow").path
    'reference/errors.html#error-control-flow'
    >>> link_for("RuntimeError: something new") is None
    True
    """
    for tool in tools or ("",):
        cause = classify(text, tool)
        if cause:
            return cause.section
    return None


@dataclass
class Cause:
    """One failure pattern: where it happened (capture or the second input) and who hit it."""

    stage: str  # "capture" or "second input"
    pattern: str
    example: str  # one full (normalized) message
    link: Section | None
    models: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # tool -> model keys

    @property
    def count(self) -> int:
        return sum(len(keys) for keys in self.models.values())


def failure(result: dict[str, Any] | None) -> tuple[str, str] | None:
    """``(stage, "Type: message")`` of a tool's stored result that failed, or None (as :class:`ToolResult` says)."""
    if not result:
        return None
    known = {k: result[k] for k in ("captured", "error_type", "error", "matches", "mismatch") if k in result}
    return ToolResult("", **known).failure


def causes(models: list[dict[str, Any]]) -> list[Cause]:
    """Failures of every surveyed model and tool, grouped by cause, most frequent first."""
    found: dict[tuple[str, str], Cause] = {}
    for model in models:
        for tool, result in model.get("tools", {}).items():
            failed = failure(result)
            if failed is None:
                continue
            stage, text = failed
            key = (stage, pattern(*_split(text)))
            if key not in found:
                found[key] = Cause(stage, key[1], text, link_for(text, [tool]))
            found[key].models[tool].append(f"{model['zoo']}/{model['model']}")
    return sorted(found.values(), key=lambda c: (-c.count, c.stage, c.pattern))


def summary(models: list[dict[str, Any]], tools: Sequence[str] = TOOLS) -> list[dict[str, Any]]:
    """Per zoo (and in total): models surveyed, and per tool how many captured and matched eager.

    ``tools`` are the survey's own (an older survey may hold a tool the survey no longer runs).
    """
    rows = []
    for zoo in (*ZOOS, "total"):
        chosen = [m for m in models if zoo in ("total", m["zoo"])]
        surveyed = [m for m in chosen if m["status"] == "surveyed"]
        row: dict[str, Any] = {"zoo": zoo, "models": len(chosen), "surveyed": len(surveyed), "tools": {}}
        for tool in tools:
            results = [m["tools"].get(tool) for m in surveyed]
            results = [r for r in results if r is not None]
            counts = Counter()
            for r in results:
                counts["captured"] += bool(r.get("captured"))
                counts["matches"] += bool(r.get("matches"))
            row["tools"][tool] = None if not results else {"applies": len(results), **counts}
        rows.append(row)
    return rows
