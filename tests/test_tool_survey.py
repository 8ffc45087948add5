"""The survey behind the tools table: verdicts follow from what each capture did."""

from __future__ import annotations

import pytest

from fxguide.tracing.concrete import GuardError
from fxguide.models import cases
from fxguide.tracing.tool_survey import TOOLS, MarkdownTable, Outcome, survey, survey_all, survey_table

CASES = {case.name: case for case in cases()}


@pytest.mark.parametrize(
    ("outcome", "verdict"),
    [
        (Outcome("t", "m", error=TypeError("no")), "fails (TypeError)"),
        (Outcome("t", "m", other="refused by a guard"), "guards"),
        (Outcome("t", "m", other="wrong result"), "silently specializes (wrong result)"),
        (Outcome("t", "m", other="IndexError inside"), "silently specializes (IndexError inside)"),
        (Outcome("t", "m", other="same as eager"), "general"),
        (Outcome("t", "m", other="same as eager", recompiled=1), "recompiles"),
        (Outcome("t", "m", graphs=[None, None], other="same as eager", recompiled=1),
         "graph break (2 graphs), recompiles"),
    ],
    ids=["fails", "guards", "wrong", "inside", "general", "recompiles", "graph-break"],
)
def test_verdict_is_derived_from_what_happened(outcome, verdict):
    assert outcome.verdict == verdict


@pytest.mark.parametrize("name", list(CASES))
def test_concrete_trace_guards_every_dynamic_model(name):
    outcome = survey("concrete_trace", CASES[name])
    assert outcome.verdict == "guards"
    assert isinstance(outcome.other_error, GuardError)


def test_symbolic_trace_fails_on_every_dynamic_model():
    assert {o.verdict.split(" ")[0] for o in survey_all("symbolic_trace", CASES.values()).values()} == {"fails"}


def test_make_fx_runs_the_traced_loop_on_fewer_rows_and_fails_inside():
    outcome = survey("make_fx", CASES["loop over rows"])
    assert outcome.error is None
    assert isinstance(outcome.other_error, IndexError)
    assert outcome.verdict == "silently specializes (IndexError inside)"


def test_export_failure_is_recorded_without_writing_to_stderr(capsys):
    outcome = survey("torch.export", CASES["data branch"])
    assert outcome.error is not None and outcome.graphs == []
    assert capsys.readouterr().err == ""


def test_compile_counts_graphs_per_input_separately():
    outcome = survey("torch.compile", CASES["data branch"])
    assert outcome.other == "same as eager"
    assert len(outcome.graphs) == 2  # split by the graph break, for the traced input
    assert outcome.recompiled >= 1  # the other branch, compiled on the second call


def test_table_has_one_row_per_model_and_one_column_per_tool():
    outcomes = [Outcome(tool, name, other="wrong result") for name in ("a", "b") for tool in ("x", "y")]
    table = survey_table(outcomes)
    assert isinstance(table, MarkdownTable)
    assert table.splitlines() == [
        "| model | x | y |",
        "|---|---|---|",
        "| a | silently specializes (wrong result) | silently specializes (wrong result) |",
        "| b | silently specializes (wrong result) | silently specializes (wrong result) |",
    ]
    assert table._repr_html_().count("<tr>") == 3
    assert repr(table) == str(table)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: survey("jit", CASES["data branch"]), ValueError, "unknown tool 'jit'"),
        (lambda: survey("make_fx", "data branch"), TypeError, "expected a fxguide.models.Case"),
        (lambda: survey_all("make_fx", []), ValueError, "at least one Case"),
        (lambda: survey_table([]), TypeError, "non-empty list of Outcome"),
    ],
    ids=["tool", "case", "no-cases", "no-outcomes"],
)
def test_bad_inputs_get_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()

