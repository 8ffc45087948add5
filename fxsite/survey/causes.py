"""What the survey page shows: counts per zoo and tool, and failures grouped by cause.

A *cause* is a failure's exception type and message pattern
(:func:`fxsite.survey.tools.pattern`: quoted names, numbers and shapes left
out). Causes the guide explains are linked to their entry (:data:`LINKS`: a
regular expression over ``"Type: message"`` and a label of the error index or
the limitations page).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fxsite.survey.catalogue import ZOOS
from fxsite.survey.tools import TOOLS, pattern

TOOL_TITLES = {
    "symbolic_trace": "fx.symbolic_trace",
    "library_route": "library's FX route",
    "hf_symbolic_trace": "transformers FX (4.x only)",
    "concrete_trace": "concrete_trace",
    "export": "export",
    "export_dynamic_batch": "export, dynamic batch",
}

# (regex over "Type: message", where the guide explains it: a label, or "doc:" and a page)
LINKS: list[tuple[re.Pattern[str], str]] = [(re.compile(regex), label) for regex, label in (
    (r"symbolically traced variables cannot be used as inputs to control flow", "error-control-flow"),
    (r"Proxy object cannot be iterated", "error-proxy-iterated"),
    (r"'len' is not supported in symbolic tracing", "error-len"),
    (r"int\(\) argument must be .*not '(Proxy|Attribute)'", "error-int-proxy"),
    (r"float\(\) argument must be .*not '(Proxy|Attribute)'", "error-float-proxy"),
    (r"must be real number, not (Proxy|Attribute)", "error-math-proxy"),
    (r"'(Proxy|Attribute)' object cannot be interpreted as an integer", "error-interpreted-as-integer"),
    (r"slice indices must be integers or None or have an __index__ method", "limitations-python-numbers"),
    (r"'(Proxy|Attribute)' object does not support item assignment", "error-item-assignment"),
    (r"__cuda_array_interface__", "error-cuda-array-interface"),
    (r"is not installed as a submodule", "error-not-a-submodule"),
    (r"has been specialized to have value", "error-specialized"),
    (r"Boolean value of Tensor with more than one value is ambiguous", "error-boolean-ambiguous"),
    (r"must be tuple of ints, but found element of type (Proxy|Attribute)", "limitations-constructors"),
    (r"^GuardOnDataDependentSymNode: Could not guard on data-dependent expression", "error-data-dependent-guard"),
    (r"co_varnames is too small", "error-decorated-forward"),
)]


def link_for(text: str) -> str | None:
    """The label of the guide's entry for a failure ``"Type: message"``, if there is one.

    >>> link_for("TraceError: symbolically traced variables cannot be used as inputs to control flow")
    'error-control-flow'
    >>> link_for("RuntimeError: something new") is None
    True
    """
    for regex, label in LINKS:
        if regex.search(text):
            return label
    return None


@dataclass
class Cause:
    """One failure pattern: where it happened (capture or the second input) and who hit it."""

    stage: str  # "capture" or "second input"
    pattern: str
    example: str  # one full (normalized) message
    link: str | None
    models: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # tool -> model keys

    @property
    def count(self) -> int:
        return sum(len(keys) for keys in self.models.values())


def failure(result: dict[str, Any] | None) -> tuple[str, str] | None:
    """``(stage, "Type: message")`` of a tool's result that failed, or None."""
    if not result:
        return None
    if result.get("captured") is False:
        return "capture", f"{result['error_type']}: {result['error']}" if result["error"] else result["error_type"]
    if result.get("captured") is None and result.get("error"):
        return "eager", result["error"]
    if result.get("matches") is False:
        return "second input", result["mismatch"]
    return None


def _split(text: str) -> tuple[str, str]:
    head, _, rest = text.partition(": ")
    return (head, rest) if head.isidentifier() else ("", text)


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
                found[key] = Cause(stage, key[1], text, link_for(text))
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
