"""The behaviour atlas's machinery: the rows it holds and the judge that fills each cell.

The cells themselves are torch's behaviour, checked on the atlas pages by the
output check; here the judge is run with stand-in tools whose behaviour we know,
so that each verdict it can give is shown to be given when, and only when, it applies.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from torch import nn

from fxguide import atlas
from fxguide.atlas import judge
from fxguide.atlas.render import COLUMNS, counts, details, table
from fxguide.atlas.tools import TOOLS, Captured


@pytest.fixture(scope="module")
def rows():
    return atlas.all_cases()


def test_the_atlas_has_at_least_100_construct_rows_and_30_export_contract_rows(rows):
    assert set(atlas.family_names()) == {"side_effects", "randomness", "tensor_data", "autograd_state",
                                         "module_state", "python_structure", "calls_out", "export_contracts"}
    contracts = atlas.family("export_contracts")
    assert len(rows) - len(contracts) >= 100
    assert len(contracts) >= 25


def test_every_row_has_a_unique_anchor_a_fix_and_its_code(rows):
    anchors = [row.anchor for row in rows]
    assert len(anchors) == len(set(anchors)), [a for a in anchors if anchors.count(a) > 1]
    for row in rows:
        assert row.fix.strip(), row.title
        assert "def forward" in row.code, row.title


def test_the_columns_are_eager_then_every_tool():
    assert COLUMNS == ["eager", *TOOLS]
    assert len(TOOLS) >= 8


def _case(title: str) -> atlas.Case:
    return next(case for case in atlas.all_cases() if case.title == title)


@pytest.fixture
def stand_in(monkeypatch):
    """Register a stand-in tool under the name ``stand-in`` for one test."""
    def use(tool):
        monkeypatch.setitem(TOOLS, "stand-in", tool)
        return "stand-in"
    return use


def test_a_tool_that_returns_the_model_itself_is_the_same_as_eager(stand_in):
    tool = stand_in(lambda model, args: Captured(model))
    for title in ["print", "logger.warning(...)", "a counter attribute (self.calls += 1)", "torch.randn_like"]:
        assert judge.run(_case(title), tool).kind == "same", title


def test_a_capture_that_returns_another_value_differs_in_output(stand_in):
    tool = stand_in(lambda model, args: Captured(lambda *a: model(*a) * 0, holds_state=False))
    cell = judge.run(_case("print"), tool)
    assert (cell.kind, cell.differs) == ("differs", ["output"])


@pytest.mark.parametrize("title, effect", [("print", "print"), ("logger.warning(...)", "log"),
                                           ("warnings.warn(...)", "warning"),
                                           ("a counter attribute (self.calls += 1)", "state")])
def test_a_capture_that_skips_the_forward_s_python_drops_its_effect(stand_in, title, effect):
    frozen = {}

    def tool(model, args):
        frozen["out"] = model(*args)  # runs the forward once, like a tracer; then only x + 1, its arithmetic
        return Captured(lambda *a: frozen["out"] + (a[0] - args[0]), holds_state=False)

    cell = judge.run(_case(title), stand_in(tool))
    assert cell.kind == "differs" and effect in cell.differs, cell


def test_a_tool_that_raises_while_capturing_is_an_error_with_its_message(stand_in):
    def tool(model, args):
        raise RuntimeError("cannot capture\nsecond line")
    cell = judge.run(_case("print"), stand_in(tool))
    assert (cell.kind, cell.error, cell.short) == ("error", "RuntimeError: cannot capture", "error: RuntimeError")


def test_a_capture_that_raises_on_the_second_input_is_refused_not_wrong(stand_in):
    calls = []

    def run(*args):
        calls.append(args)
        if len(calls) > 1:
            raise AssertionError("Guard failed: x.size()[0] == 2")
        return args[0] + 1

    cell = judge.run(_case("torch.randn_like"), stand_in(lambda model, args: Captured(run)))
    assert cell.kind == "refused" and cell.error.startswith("AssertionError: Guard failed")


def test_a_graph_break_id_is_read_from_dynamo_s_message():
    message = "For more details: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0291.html"
    assert judge.Cell("compile", "error", error="Unsupported: x", breaks=judge.gb_ids(message)).short \
        == "error: Unsupported GB0291"


def test_a_check_eager_raises_must_raise_through_the_capture(stand_in):
    case = _case("raise on a bad input")
    assert judge.run(case, stand_in(lambda model, args: Captured(model))).kind == "same"
    cell = judge.run(case, stand_in(lambda model, args: Captured(lambda x: x.abs().sqrt())))
    assert (cell.kind, cell.differs) == ("differs", ["no ValueError"])


def test_state_is_compared_by_what_the_call_changed():
    assert judge.changes({"n": 1, "b": torch.zeros(1)}, {"n": 2, "b": torch.zeros(1)}) == {"n": ("by", 1)}
    assert judge.changes({"a": 1}, {}) == {"a": "<deleted>"}
    assert judge.changes([1], [1]) == "<unchanged>"


def test_the_judge_refuses_an_unknown_tool_and_family():
    with pytest.raises(ValueError, match="unknown tool 'nope'"):
        judge.run(_case("print"), "nope")
    with pytest.raises(ValueError, match="unknown family 'nope'"):
        atlas.family("nope")


def test_the_judge_leaves_the_logging_levels_as_it_found_them():
    levels = logging.getLogger().level, logging.getLogger("torch").level
    judge.run(_case("logger.warning(...)"), "export")
    assert (logging.getLogger().level, logging.getLogger("torch").level) == levels


def test_a_table_and_its_details_render_every_cell_as_text_and_html(stand_in):
    from fxguide.atlas.render import Row
    cells = [judge.Cell(tool, "same") for tool in COLUMNS]
    cells[3] = judge.Cell(COLUMNS[3], "differs", differs=["print"])
    rows = [Row(_case("print"), cells)]
    assert "print | same | same | same | DIFFERS: print | same" in str(table(rows))
    assert 'id="atlas-print"' in details(rows)._repr_html_()
    assert 'class="atlas-differs"' in table(rows)._repr_html_()
    assert "| make_fx | 0 | 1 |" in str(counts(rows)).replace("  ", " ")


def test_the_fx_tools_table_has_10_graph_kinds_and_15_tools_at_least():
    from fxguide.atlas import graph_tools
    assert len(graph_tools.FX_TOOLS) >= 15
    kinds = graph_tools.graph_kinds()
    assert len(kinds) >= 10 and len({g.kind for g in kinds}) == len(kinds)


def test_an_fx_tool_that_changes_the_values_is_reported_not_passed(monkeypatch):
    from fxguide.atlas import graph_tools
    graph = graph_tools.graph_kinds()[0]

    def wrong(g):
        graph_tools._runs_alike(lambda *inputs: g.expected * 2, g)
        return "works"

    monkeypatch.setitem(graph_tools.FX_TOOLS, "wrong", wrong)
    assert graph_tools.apply("wrong", graph).startswith("error: AssertionError: ran, but returns other values")
    with pytest.raises(ValueError, match="unknown tool"):
        graph_tools.apply("nope", graph)
    with pytest.raises(TypeError, match="must be a Graph"):
        graph_tools.apply("pickle", graph.module)


def test_the_lookup_s_atlas_index_is_the_one_the_recorded_pages_give():
    import json

    from fxsite import atlas as site_atlas
    committed = json.loads(site_atlas.INDEX.read_text(encoding="utf-8"))
    assert committed == site_atlas.index(), (
        "fxguide/atlas/outcomes.json is not what tests/expected/docs/atlas holds: run `python -m fxsite.atlas` "
        "after re-recording the atlas pages")


def test_the_concrete_tracer_never_differs_silently_on_any_atlas_row():
    """Its promise, held over the whole atlas (the recorded pages): every row either runs as eager mode does
    (output, print, log, warning, state, input) or raises, while tracing or on the second input."""
    from fxsite import atlas as site_atlas
    cells = [(row["title"], row["tools"]["concrete_trace"]["outcome"]) for row in site_atlas.index()["rows"]
             if "concrete_trace" in row["tools"]]
    silent = [(title, outcome) for title, outcome in cells if outcome.startswith("DIFFERS")]
    assert len(cells) >= 120 and not silent, silent


def _raised(rows):
    """(row, tool, pasted message) for every cell whose outcome quotes an error message."""
    for row in rows:
        for tool, outcome in row["tools"].items():
            for prefix in ("raises ", "captured; the second input raises "):
                if outcome["outcome"].startswith(prefix):
                    yield row, tool, outcome["outcome"][len(prefix):]


def test_every_message_an_atlas_cell_raises_finds_its_row_when_pasted():
    import json

    from fxguide.atlas.lookup import _MIN_MESSAGE, rows_for
    from fxsite import atlas as site_atlas
    rows = json.loads(site_atlas.INDEX.read_text(encoding="utf-8"))["rows"]
    missed, checked = [], 0
    for row, tool, message in _raised(rows):
        if len(message.partition(": ")[2]) < _MIN_MESSAGE and not row["tools"][tool]["breaks"]:
            continue  # too short to tell apart from unrelated code ("KeyError: 'a'"); listed in the note
        checked += 1
        paste = f"Traceback (most recent call last):\n  File \"model.py\", line 3, in forward\ntorch.{message}\n"
        paste += "".join(f"visit https://meta-pytorch.github.io/compile-graph-break-site/gb/{gb.lower()}.html\n"
                         for gb in row["tools"][tool]["breaks"])
        if row["anchor"] not in {hit.anchor for hit in rows_for(paste)}:
            missed.append((row["title"], tool, message[:80]))
    assert checked > 150 and not missed, missed[:10]


def test_the_atlas_lookup_reads_a_megabyte_paste_in_linear_time():
    import time

    from fxguide.atlas.lookup import rows_for
    start = time.perf_counter()
    rows_for(("frame: " + "x" * 200 + "\n") * 5000)
    assert time.perf_counter() - start < 1.0
    with pytest.raises(TypeError, match="text must be str"):
        rows_for(None)


def test_explain_names_the_atlas_rows_a_pasted_error_meets(monkeypatch):
    from fxguide.explain import explain
    monkeypatch.setenv("FXGUIDE_LOCAL_SITE", "")
    _, report = explain("NotImplementedError: Calling eval() is not supported yet.")
    assert "In the behaviour atlas" in report
    assert "- model.eval() after capture (met under: export, export dynamic, export strict)" in report
    assert "atlas/module-state.html#atlas-model-eval-after-capture" in report
    _, plain = explain("ZeroDivisionError: division by zero")
    assert "behaviour atlas" not in plain


def test_the_index_reads_a_row_s_outcomes_and_its_fix_s_apart():
    from fxsite.atlas import rows_of
    recording = "\n".join([
        "## print  (#atlas-print)", "eager: runs", "export: DIFFERS from eager, silently: print",
        "compile: same as eager [graph breaks: GB0059]", "what to do: print outside",
        "the fix, run (PrintAsNode):", "  eager: runs", "  export: same as eager"])
    (row,) = rows_of(recording, "atlas/side-effects")
    assert row["tools"]["export"]["outcome"] == "DIFFERS from eager, silently: print"
    assert row["tools"]["compile"] == {"outcome": "same as eager", "breaks": ["GB0059"]}
    assert row["fix"]["export"]["outcome"] == "same as eager" and "what to do" not in row["tools"]


def _claims():
    """Every ``% atlas-claim: ANCHOR TOOL "OUTCOME" [GBnnnn]`` comment in the pages: a sentence beside it says
    what a tool does with a construct, and the atlas row must agree."""
    import re

    from fxsite import ROOT
    pattern = re.compile(r'^% atlas-claim: (atlas-[a-z0-9-]+) (.+?) "([^"]+)"(?: (GB\d{4}))?$')
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("% atlas-claim:"):
                found = pattern.match(line)
                assert found, f"{page}:{number}: write claims as % atlas-claim: ANCHOR TOOL \"OUTCOME\" [GBnnnn]"
                yield f"{page.relative_to(ROOT)}:{number}", *found.groups()


def test_a_page_s_claim_about_a_tool_and_a_construct_agrees_with_the_atlas_row():
    import json

    from fxsite import atlas as site_atlas
    rows = {row["anchor"]: row for row in json.loads(site_atlas.INDEX.read_text(encoding="utf-8"))["rows"]}
    claims = list(_claims())
    assert len(claims) >= 5
    for where, anchor, tool, outcome, gb in claims:
        assert anchor in rows, f"{where}: no atlas row {anchor}"
        cell = rows[anchor]["tools"][tool]
        assert cell["outcome"].startswith(outcome), f"{where}: the page says {outcome!r}, the atlas {cell['outcome']!r}"
        assert gb is None or gb in cell["breaks"], f"{where}: the page names {gb}, the atlas {cell['breaks']}"


def test_the_lookup_s_list_of_reproduced_messages_is_the_registry_s():
    import json

    from fxsite import atlas as site_atlas
    assert json.loads(site_atlas.REPROS.read_text(encoding="utf-8")) == site_atlas.reproduced(), (
        "fxguide/atlas/reproduced.json is not what fxguide.atlas.repros registers: run `python -m fxsite.atlas`")


def test_explain_points_a_recognised_message_at_its_reproduction(monkeypatch):
    from fxguide.explain import explain
    monkeypatch.setenv("FXGUIDE_LOCAL_SITE", "")
    _, report = explain("torch._dynamo.exc.Unsupported: logging.Logger method not supported for non-export cases")
    assert "Reproduced, with a fix that runs and matches eager mode" in report
    assert "atlas/messages.html" in report


@pytest.mark.parametrize("pasted", [
    "RuntimeError: Unable to call ExportedProgram directly. You should use `exported_program.module()` instead.",
    "RuntimeError: Expected positional argument for parameter x, but one was not passed in!",
    "torch._dynamo.exc.Unsupported: Attempted to copy.deepcopy a tensor",  # the catalogue's catch-all matches too
])
def test_explain_leads_with_the_cause_of_the_reproduction_a_recognised_message_has(pasted, monkeypatch):
    """A message no cause of the catalogue names (or only its catch-all, "another graph break"), but which the
    inventory recognises and a reproduction of the messages page raises, is answered by that reproduction's
    cause, with exit status 0: the reproduction and its fix were executed by the site."""
    import json

    from fxguide.diagnose.recognise import recognise
    from fxguide.explain import explain
    monkeypatch.setenv("FXGUIDE_LOCAL_SITE", "")
    entries = json.loads(Path(__file__).resolve().parents[1].joinpath(
        "fxguide", "atlas", "reproduced.json").read_text(encoding="utf-8"))["entries"]
    (first, *_) = [item for found in recognise(pasted) for item in entries.get(found.entry.id, [])]
    status, report = explain(pasted)
    assert status == 0
    assert report.splitlines()[0] == f"cause (reproduced on the atlas's messages page): {first['cause']}"
    assert "atlas/messages.html" in report


def test_every_atlas_row_and_fx_tool_has_its_heading_on_its_page():
    from fxsite.atlas import pages
    for family in pages.SLUGS:
        assert pages.page(family).read_text(encoding="utf-8") == pages.written(family), (
            f"{pages.page(family).name} and the registry part: run `python -m fxsite.atlas pages`")
    assert pages.FX_TOOLS_PAGE.read_text(encoding="utf-8") == pages.fx_tools_written(), (
        "fx-tools.md and the FX tools part: run `python -m fxsite.atlas pages`")
