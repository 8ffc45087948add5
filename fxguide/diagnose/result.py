"""A diagnosis as data: one :class:`ToolResult` per capture tool, gathered in a :class:`Diagnosis`.

A diagnosis prints as a table, and has :meth:`Diagnosis.to_json` and
:meth:`Diagnosis.to_markdown` for reports and issues.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from fxguide.diagnose.causes import TOOL_SECTIONS, Cause, Section, classify
from fxguide.diagnose.compare import CANNOT_COMPARE

FROZE_RANDOM = "froze a random draw"
FROZE_STATE = "froze state from the first call"
NONDETERMINISTIC = "the model is nondeterministic"

TITLES = {
    "symbolic_trace": "fx.symbolic_trace",
    "concrete_trace": "fxguide concrete_trace",
    "library_route": "library's FX route",
    "export_strict": "export, strict",
    "export": "export, non-strict",
    "export_dynamic_batch": "export, Dim.AUTO batch",
    "compile_fullgraph": "compile, fullgraph",
}
"""How each tool is named in a table."""


@dataclass
class ToolResult:
    """What one capture tool did with the model.

    ``captured`` is ``None`` when the tool could not be tried (the model fails
    eagerly on the input it needs). ``matches`` is ``None`` until the capture
    was called on the second input; ``mismatch`` then says what differed, or
    which error calling it raised.
    """

    tool: str
    captured: bool | None = False
    error_type: str = ""
    error: str = ""
    where: str = ""
    nodes: int | None = None
    matches: bool | None = None
    mismatch: str = ""
    seconds: float = 0.0
    largest_difference: float | None = None  # the largest element-wise difference from eager the comparison saw
    note: str = ""  # what else the row must say (the decisions a concrete trace's graph holds for)
    frames: str = field(default="", repr=False)  # the files the error passed through (messages.frames), for its cause

    def __post_init__(self) -> None:
        if not isinstance(self.tool, str):
            raise TypeError(f"ToolResult: tool must be a tool's name (a str), got {self.tool!r}")

    @property
    def ok(self) -> bool:
        """Captured, and the capture gives the eager result on the second input."""
        return bool(self.captured and self.matches)

    @property
    def failure(self) -> tuple[str, str] | None:
        """``(stage, "Type: message")`` when the tool failed: stage ``capture``, ``second input`` or ``eager``."""
        if self.captured is False:
            return "capture", f"{self.error_type}: {self.error}" if self.error else self.error_type
        if self.captured is None and self.error:
            return "eager", self.error
        if self.matches is False:
            return "second input", self.mismatch
        return None

    @property
    def cause(self) -> Cause | None:
        """The failure's cause class, if the guide has one for it."""
        failed = self.failure
        return classify(failed[1], self.tool, traceback=self.frames) if failed else None

    @property
    def section(self) -> Section | None:
        """The guide section that explains the fix (the cause's, or the tool's own when unclassified)."""
        if self.failure is None:
            return None
        cause = self.cause
        return cause.section if cause else TOOL_SECTIONS.get(self.tool)

    @property
    def verdict(self) -> str:
        """The table's cell, one of ``matches eager``, ``differs: values differ``, ``fails: TraceError``,
        ``second input: GuardError`` (calling the capture on the second input raised), ``froze a random draw``,
        ``froze state from the first call``, ``not judged: the model is nondeterministic``, ``not compared: ...``
        (the outputs hold something that cannot be compared), or ``not tried``."""
        if self.captured is None:
            return "not tried"
        if not self.captured:
            return f"fails: {self.error_type or 'error'}"
        if self.matches:
            return "matches eager"
        if self.mismatch in (FROZE_RANDOM, FROZE_STATE):
            return self.mismatch
        if self.mismatch.startswith(NONDETERMINISTIC):
            return f"not judged: {NONDETERMINISTIC}"
        if self.mismatch.startswith(CANNOT_COMPARE):
            reason = self.mismatch.removeprefix(CANNOT_COMPARE).lstrip(": ")
            return "not compared: " + reason.split(" (")[0].split(" at ")[0]
        kind, _, rest = self.mismatch.partition(": ")
        return f"second input: {kind}" if rest and kind.isidentifier() else f"differs: {self.mismatch}"

    def record(self) -> dict[str, Any]:
        """The fields the model-zoo survey stores for a tool (no tool name, no links)."""
        data = asdict(self)
        del data["tool"], data["frames"]  # local paths: they decide a link, not a record
        return data

    def to_dict(self) -> dict[str, Any]:
        """Everything, links included: one row of :meth:`Diagnosis.to_json`."""
        section = self.section
        cause = self.cause
        fields = {name: value for name, value in asdict(self).items() if name != "frames"}
        return {**fields, "ok": self.ok, "verdict": self.verdict,
                "cause": cause.name if cause else ("unclassified" if self.failure else ""),
                "section": section.path if section else "", "url": section.url() if section else "",
                "local": section.local() if section else ""}


@dataclass
class Diagnosis:
    """Every tool's result on one model; ``ok`` when each captured and matched eager."""

    model: str
    inputs: str
    results: list[ToolResult] = field(default_factory=list)
    unchanged: bool = True  # the model is as it was after every tool (see fxguide.diagnose.safety.Snapshot)
    eager: list[str] = field(default_factory=list)  # what eager's own runs showed: "eager depends on the random seed"
    left_changed: list[str] = field(default_factory=list)  # what could not be put back, one line each

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not isinstance(self.inputs, str):
            raise TypeError(f"Diagnosis: model and inputs must be str (the model's name, the inputs described), "
                            f"got {type(self.model).__name__} and {type(self.inputs).__name__}")
        if not isinstance(self.results, list) or not all(isinstance(r, ToolResult) for r in self.results):
            raise TypeError(f"Diagnosis: results must be a list of ToolResult, got {self.results!r}")

    @property
    def ok(self) -> bool:
        return bool(self.results) and all(r.ok for r in self.results)

    def __getitem__(self, tool: str) -> ToolResult:
        for result in self.results:
            if result.tool == tool:
                return result
        raise KeyError(f"no {tool!r} row; the rows are {[r.tool for r in self.results]}")

    def rows(self) -> list[list[str]]:
        """One row per tool: tool, verdict, nodes, cause, and the guide section (relative to the site)."""
        rows = []
        for r in self.results:
            section = r.section
            cause = r.cause.name if r.cause else ("unclassified" if r.failure else "")
            rows.append([TITLES.get(r.tool, r.tool), r.verdict, "" if r.nodes is None else str(r.nodes), cause,
                         section.path if section else ""])
        return rows

    _HEADERS = ["tool", "result", "nodes", "cause", "guide section"]

    def errors(self) -> list[str]:
        """Each failed tool's first error, with the line of model code it came from."""
        lines = []
        for r in self.results:
            if r.failure:
                lines.append(f"{TITLES.get(r.tool, r.tool)}: {r.failure[1]}")
                if r.where:
                    lines.append(f"    at {r.where}")
        return lines

    def __str__(self) -> str:
        from tabulate import tabulate
        lines = [f"{self.model} on {self.inputs}", tabulate(self.rows(), headers=self._HEADERS, tablefmt="simple")]
        if self.eager:
            lines += ["", "eager: " + "; ".join(self.eager)]
        if errors := self.errors():
            lines += ["", *errors]
        notes = [f"{TITLES.get(r.tool, r.tool)}: {r.note}" for r in self.results if r.note]
        if notes:
            lines += ["", *notes]
        sections = [r.section for r in self.results if r.section]
        if sections and (site := sections[0].url().removesuffix(sections[0].path)):
            lines += ["", f"guide sections are relative to {site}"]
        if not self.unchanged:
            lines += ["", "warning: the model was not put back exactly as it was after each tool:",
                      *(f"    {line}" for line in self.left_changed)]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """A Markdown table, each guide section a link to the published guide."""
        def cell(text: str) -> str:
            return text.replace("|", "\\|").replace("\n", " ")
        out = [f"**{cell(self.model)}** on `{cell(self.inputs)}`", "",
               "| tool | result | nodes | cause | first error | where | guide |", "|---" * 7 + "|"]
        for r, row in zip(self.results, self.rows()):
            section = r.section
            link = f"[{section.path}]({section.url() or section.path})" if section else ""
            message = r.failure[1] if r.failure else ""
            out.append("| " + " | ".join([*(cell(c) for c in row[:4]), cell(message),
                                          f"`{cell(r.where)}`" if r.where else "", link]) + " |")
        return "\n".join(out)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def to_json(self, indent: int | None = 2) -> str:
        """The diagnosis as JSON: the model, the inputs, ``ok``, ``unchanged`` and one object per tool."""
        return json.dumps({"model": self.model, "inputs": self.inputs, "ok": self.ok, "unchanged": self.unchanged,
                           "left_changed": self.left_changed, "eager": self.eager,
                           "tools": [r.to_dict() for r in self.results]}, indent=indent)
