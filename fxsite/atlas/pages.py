"""The atlas family pages' "rows in full" section, written from the case registry.

Each row gets a heading of its own (with the row's anchor as its label), so that
the site's search, which ranks headings first, finds a row by the words of its
construct and of the tools ("logger.warning torch.compile"), and a cell that
shows that row. Everything above the section is the page's own prose.
``python -m fxsite.atlas pages`` rewrites the sections; ``tests/test_atlas.py``
fails when a page and the registry part.
"""

from __future__ import annotations

from pathlib import Path

from fxsite import ROOT

MARK = "## The rows in full\n"
SLUGS = {"side_effects": "side-effects", "randomness": "randomness", "tensor_data": "tensor-data",
         "autograd_state": "autograd-state", "module_state": "module-state",
         "python_structure": "python-structure", "calls_out": "calls-out", "export_contracts": "export-contracts"}
TOOLS_WORDS = "what symbolic_trace, make_fx, torch.export and torch.compile (fullgraph or not) do"


def page(family: str) -> Path:
    """The page of ``family``."""
    return ROOT / "docs" / "atlas" / f"{SLUGS[family]}.md"


def section(family: str) -> str:
    """The generated section: a labelled heading and a cell for every row of ``family``."""
    from fxguide.atlas import family as rows_of
    parts = [MARK, "Each row: its code, what each tool did with it and the message it raised, what to do, and,\n"
             "where the row has one, its fix run through every tool.\n"]
    for case in rows_of(family):
        title = case.title.replace("`", "")
        parts.append(f"({case.anchor})=\n### {title}: {TOOLS_WORDS}\n\n"
                     f"```{{code-cell}} python\nrow_details(rows, {case.title!r})\n```\n")
    return "\n".join(parts)


def written(family: str) -> str:
    """The page of ``family`` with its section as the registry gives it."""
    text = page(family).read_text(encoding="utf-8")
    head = text[:text.index(MARK)] if MARK in text else text.rstrip() + "\n\n"
    return head + section(family)


FX_TOOLS_PAGE = ROOT / "docs" / "atlas" / "fx-tools.md"
FX_MARK = "## Each tool in full\n"


def fx_tools_section() -> str:
    """The FX-tools page's section: a labelled heading and a cell for every tool."""
    import re

    from fxguide.atlas.graph_tools import FX_TOOLS
    parts = [FX_MARK, "Each tool on every kind of graph, with each error's message in full.\n"]
    for tool in FX_TOOLS:
        label = "atlas-fx-" + re.sub(r"[^a-z0-9]+", "-", tool.lower()).strip("-")
        parts.append(f"({label})=\n### {tool} on each kind of graph: symbolic_trace, make_fx, an exported program, "
                     f"torch.compile's graphs\n\n```{{code-cell}} python\nprint(tool_outcomes(kinds, found, {tool!r}))\n```\n")
    return "\n".join(parts)


def fx_tools_written() -> str:
    """The FX-tools page with its section as the tools give it."""
    text = FX_TOOLS_PAGE.read_text(encoding="utf-8")
    head = text[:text.index(FX_MARK)] if FX_MARK in text else text.rstrip() + "\n\n"
    return head + fx_tools_section()


def write() -> list[Path]:
    """Rewrite every family page's section, and the FX-tools page's."""
    done = []
    for family in SLUGS:
        page(family).write_text(written(family), encoding="utf-8")
        done.append(page(family))
    FX_TOOLS_PAGE.write_text(fx_tools_written(), encoding="utf-8")
    return done + [FX_TOOLS_PAGE]
