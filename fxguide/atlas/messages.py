"""The messages page: every reproduction of :mod:`fxguide.atlas.repros` run, as one table with its details.

Like :class:`fxguide.atlas.render.RowDetails`, the table is a ``str`` whose text
is what the output check records (one line per reproduction, then each in full)
and whose ``_repr_html_`` is the page's view: a table, and under it each row's
full message, cause, code and fix in a ``<details>`` block.
"""

from __future__ import annotations

import html

from fxguide.atlas.repros import Reproduction, source_of, all_repros, reproduce

HEAD = ["message", "subsystem", "tool", "raised", "inventory entry", "fix matches eager"]


def run_all() -> list[Reproduction]:
    """Run every reproduction and its fix."""
    return [reproduce(item) for item in all_repros()]


def _cells(outcome: Reproduction) -> list[str]:
    item = outcome.repro
    entry = item.entry if outcome.hit else f"{item.missed}, not recognised" if item.missed else "-"
    raised = "graph break" if outcome.error.startswith("Graph break:") else "yes" if outcome.raised else "no"
    return [item.message, item.group, item.tool, raised, entry, str(outcome.fix_matches)]


def _fix_source(outcome: Reproduction) -> str:
    found = outcome.repro.fix
    return source_of(found[0]) if found else ""


class MessagesTable(str):
    """Every reproduction: one line each, then each in full (text); a table with details blocks (HTML)."""

    def __new__(cls, outcomes: list[Reproduction]) -> MessagesTable:
        lines = [" | ".join(HEAD)] + [" | ".join(_cells(outcome)) for outcome in outcomes]
        blocks = [f"## {outcome.repro.message}\nraised: {outcome.error or '(nothing)'}\ncause: {outcome.repro.cause}\n"
                  f"{outcome.repro.source}\nfix:\n{_fix_source(outcome)}" for outcome in outcomes]
        table = super().__new__(cls, "\n".join(lines) + "\n\n" + "\n\n".join(blocks))
        table.outcomes = outcomes
        return table

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(name)}</th>" for name in HEAD)
        rows = []
        for outcome in self.outcomes:
            cells = "".join(f"<td>{html.escape(cell)}</td>" for cell in _cells(outcome))
            code = html.escape(outcome.repro.source)
            fix = html.escape(_fix_source(outcome))
            details = (f"<details><summary>message, cause, code and fix</summary>"
                       f"<pre>{html.escape(outcome.error or '(nothing raised)')}</pre>"
                       f"<p><b>Cause:</b> {html.escape(outcome.repro.cause)}</p>"
                       f'<pre><code class="language-python">{code}</code></pre>'
                       f'<p><b>Fix:</b></p><pre><code class="language-python">{fix}</code></pre></details>')
            rows.append(f'<tr id="{outcome.repro.anchor}">{cells}</tr><tr><td colspan="{len(HEAD)}">{details}</td></tr>')
        return (f'<div class="atlas-scroll"><table class="table atlas"><thead><tr>{head}</tr></thead>'
                f"<tbody>{''.join(rows)}</tbody></table></div>")


def table(outcomes: list[Reproduction]) -> MessagesTable:
    """The page's table of ``outcomes`` (from :func:`run_all`)."""
    return MessagesTable(outcomes)


__all__ = ["HEAD", "MessagesTable", "run_all", "table"]
