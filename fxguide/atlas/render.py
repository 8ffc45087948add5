"""The atlas as a page shows it: one table per family, then each row's code, outcomes and fix.

Both render as HTML on the page and as plain text in the recorded outputs (the
text is what the output check compares), so every cell is checked.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from fxguide.atlas import Case, family
from fxguide.atlas.judge import Cell, run
from fxguide.atlas.tools import TOOLS
from fxguide.display import MarkdownTable, markdown_table

COLUMNS = ["eager", *TOOLS]
_CLASS = {"same": "atlas-same", "differs": "atlas-differs", "refused": "atlas-refused", "error": "atlas-error",
          "runs": "atlas-runs"}


@dataclass
class Row:
    """One case and its cell per column."""

    case: Case
    cells: list[Cell]
    fix_cells: list[Cell] | None = None  # the fix, run through every column, when the row has one

    @property
    def fix_checked(self) -> str:
        """The fix's cell in the table, which counts the tools under which the fix runs the same as eager (``-``
        for a row without a fix)."""
        if self.fix_cells is None:
            return "-"
        tools = self.fix_cells[1:]
        return f"{sum(cell.kind == 'same' for cell in tools)}/{len(tools)} same"

    @property
    def dangerous(self) -> list[str]:
        """The tools that captured the case and gave another answer than eager mode without raising."""
        return [cell.tool for cell in self.cells if cell.kind == "differs"]


def run_family(name: str) -> list[Row]:
    """Run every case of family ``name`` through every column."""
    rows = []
    for case in family(name):
        fixed = case.fixed
        rows.append(Row(case, [run(case, tool) for tool in COLUMNS],
                        [run(fixed, tool) for tool in COLUMNS] if fixed else None))
    return rows


class AtlasTable(str):
    """The family's table: plain text (one line per row) for the output check, HTML with links for the page."""

    def __new__(cls, rows: list[Row]) -> AtlasTable:
        lines = [" | ".join(["construct", *COLUMNS, "fix, run"])]
        lines += [" | ".join([row.case.title, *(cell.short for cell in row.cells), row.fix_checked]) for row in rows]
        table = super().__new__(cls, "\n".join(lines))
        table.rows = rows
        return table

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(name)}</th>" for name in ["construct", *COLUMNS, "fix, run"])
        body = []
        for row in self.rows:
            title = f'<a href="#{row.case.anchor}">{html.escape(row.case.title)}</a>'
            cells = "".join(f'<td class="{_CLASS[cell.kind]}">{html.escape(cell.short)}</td>' for cell in row.cells)
            cells += f"<td>{html.escape(row.fix_checked)}</td>"
            body.append(f"<tr><th>{title}</th>{cells}</tr>")
        return (f'<div class="atlas-scroll"><table class="table atlas"><thead><tr>{head}</tr></thead>'
                f"<tbody>{''.join(body)}</tbody></table></div>")


def table(rows: list[Row]) -> AtlasTable:
    """The table of ``rows`` (from :func:`run_family`)."""
    return AtlasTable(rows)


class RowDetails(str):
    """Every row in full: its code, each tool's outcome with the message, and what to do."""

    def __new__(cls, rows: list[Row], headed: bool = True) -> RowDetails:
        blocks = []
        for row in rows:
            lines = [f"## {row.case.title}  (#{row.case.anchor})"]
            if row.case.note:
                lines.append(f"note: {row.case.note}")
            lines += [f"{cell.tool}: {_outcome(cell)}" for cell in row.cells]
            lines.append(f"what to do: {row.case.fix}")
            if row.fix_cells is not None:
                lines.append(f"the fix, run ({row.case.fixed.model.__name__}):")
                lines += [f"  {cell.tool}: {_outcome(cell)}" for cell in row.fix_cells]
            blocks.append("\n".join(lines))
        details = super().__new__(cls, "\n\n".join(blocks))
        details.rows, details.headed = rows, headed
        return details

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        parts = []
        for row in self.rows:
            items = "".join(f'<li><b>{html.escape(cell.tool)}</b>: <span class="{_CLASS[cell.kind]}">'
                            f"{html.escape(_outcome(cell))}</span></li>" for cell in row.cells)
            note = f"<p><em>{html.escape(row.case.note)}</em></p>" if row.case.note else ""
            head = (f' id="{row.case.anchor}"><h3>{html.escape(row.case.title)}'
                    f'<a class="headerlink" href="#{row.case.anchor}">#</a></h3>') if self.headed else ">"
            parts.append(f'<section class="atlas-row"{head}{note}'
                         f'<pre><code class="language-python">{html.escape(row.case.code)}</code></pre>'
                         f"<ul>{items}</ul><p><b>What to do:</b> {html.escape(row.case.fix)}</p>{_fix_html(row)}"
                         "</section>")
        return "".join(parts)


def _fix_html(row: Row) -> str:
    if row.fix_cells is None:
        return ""
    items = "".join(f'<li><b>{html.escape(cell.tool)}</b>: <span class="{_CLASS[cell.kind]}">'
                    f"{html.escape(_outcome(cell))}</span></li>" for cell in row.fix_cells)
    return (f"<p><b>The fix, run:</b></p><pre><code class=\"language-python\">{html.escape(row.case.fixed.code)}"
            f"</code></pre><ul>{items}</ul>")


def _outcome(cell: Cell) -> str:
    if cell.tool == "eager":
        return "runs" if cell.kind == "same" else f"raises {cell.error}"
    text = {"same": "same as eager", "differs": "DIFFERS from eager, silently: " + ", ".join(cell.differs),
            "refused": f"captured; the second input raises {cell.error}",
            "error": f"raises {cell.error}", "runs": f"captured and runs; {cell.error}"}[cell.kind]
    if cell.graphs > 1:
        text += f" ({cell.graphs} graphs)"
    if cell.breaks:
        text += f" [graph breaks: {', '.join(sorted(set(cell.breaks)))}]"
    return text


def counts(rows: list[Row]) -> MarkdownTable:
    """How many cells of each kind each tool has in ``rows``: the family at a glance."""
    kinds = ["same", "differs", "refused", "error", "runs"]
    body = [[tool, *(str(sum(row.cells[i].kind == kind for row in rows)) for kind in kinds)]
            for i, tool in enumerate(COLUMNS) if i]
    return markdown_table(["tool", "same", "DIFFERS", "refused on the second input", "error", "runs where eager raises"],
                          body)


def row_details(rows: list[Row], title: str) -> RowDetails:
    """The row of ``rows`` titled ``title`` in full, under a heading the page itself gives it."""
    found = [row for row in rows if row.case.title == title]
    if len(found) != 1:
        raise ValueError(f"row_details: no row titled {title!r}; titles: {[row.case.title for row in rows]}")
    return RowDetails(found, headed=False)


def details(rows: list[Row]) -> RowDetails:
    """Every row of ``rows`` in full."""
    return RowDetails(rows)


__all__ = ["COLUMNS", "AtlasTable", "Row", "RowDetails", "counts", "details", "row_details", "run_family",
           "table"]
