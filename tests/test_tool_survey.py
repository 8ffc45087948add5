"""The survey behind the tools table: verdicts follow from what each capture did."""

from __future__ import annotations

import pytest
import torch
import torch.fx as fx
from torch.fx.experimental.proxy_tensor import make_fx

from fxguide.tracing.concrete import GuardError, concrete_trace
from fxguide.models import cases
from fxguide.tracing.tool_survey import MarkdownTable, Outcome, survey, survey_all, survey_table

CASES = {case.name: case for case in cases()}


# The captures, written as the concrete-tracing page writes them: capture, keep the graphs, return the callable.
def with_symbolic_trace(model, x, graphs):
    graphs.append(fx.symbolic_trace(model))
    return graphs[-1]


def with_concrete_trace(model, x, graphs):
    graphs.append(concrete_trace(model, (x,)))
    return graphs[-1]


def with_make_fx(model, x, graphs):
    graphs.append(make_fx(model)(x))
    return graphs[-1]


def with_export(model, x, graphs):
    graphs.append(torch.export.export(model, (x,)).module())
    return graphs[-1]


def with_export_auto(model, x, graphs):
    dims = {"x": [torch.export.Dim.AUTO] * x.dim()}
    graphs.append(torch.export.export(model, (x,), dynamic_shapes=dims).module())
    return graphs[-1]


def with_compile(model, x, graphs):
    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = torch.compile(model, backend=backend)
    compiled(x)
    return compiled


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
    outcome = survey("concrete_trace", with_concrete_trace, CASES[name])
    assert outcome.verdict == "guards"
    assert isinstance(outcome.other_error, GuardError)


def test_symbolic_trace_fails_on_every_dynamic_model():
    assert {o.verdict.split(" ")[0] for o in survey_all("symbolic_trace", with_symbolic_trace, CASES.values()).values()} == {"fails"}


def test_make_fx_runs_the_traced_loop_on_fewer_rows_and_fails_inside():
    outcome = survey("make_fx", with_make_fx, CASES["loop over rows"])
    assert outcome.error is None
    assert isinstance(outcome.other_error, IndexError)
    assert outcome.verdict == "silently specializes (IndexError inside)"


def test_export_failure_is_recorded_without_writing_to_stderr(capsys):
    outcome = survey("torch.export", with_export, CASES["data branch"])
    assert outcome.error is not None and outcome.graphs == []
    assert capsys.readouterr().err == ""


def test_compile_counts_graphs_per_input_separately():
    outcome = survey("torch.compile", with_compile, CASES["data branch"])
    assert outcome.other == "same as eager"
    assert len(outcome.graphs) == 2  # split by the graph break, for the traced input
    assert outcome.recompiled >= 1  # the other branch, compiled on the second call


def test_export_guard_condition_is_quoted_and_differs_with_dynamic_shapes():
    static = survey("torch.export", with_export, CASES["shape branch"])
    auto = survey("torch.export Dim.AUTO", with_export_auto, CASES["shape branch"])
    assert static.verdict == "guards (x.size()[1] == 4)"
    assert auto.verdict == "guards (x.size()[1] >= 4)"


def test_a_capture_that_returns_no_callable_is_reported():
    with pytest.raises(TypeError, match="returned int, not a callable"):
        survey("odd", lambda model, x, graphs: 3, CASES["shape branch"])


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
        (lambda: survey("", with_make_fx, CASES["data branch"]), TypeError, "tool must be a non-empty str"),
        (lambda: survey("make_fx", "make_fx", CASES["data branch"]), TypeError, "capture must be a function"),
        (lambda: survey("make_fx", with_make_fx, "data branch"), TypeError, "expected a fxguide.models.Case"),
        (lambda: survey_all("make_fx", with_make_fx, []), ValueError, "at least one Case"),
        (lambda: survey_table([]), TypeError, "non-empty list of Outcome"),
    ],
    ids=["tool", "capture", "case", "no-cases", "no-outcomes"],
)
def test_bad_inputs_get_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()



def test_a_pipe_in_a_cell_is_escaped_and_stays_in_its_cell():
    # Issue 23: "a|b" as a case name split its row into three cells.
    table = survey_table([Outcome("t", "a|b", other="same as eager")])
    assert table.splitlines()[-1] == "| a\\|b | general |"
    assert table._repr_html_().endswith("<tbody><tr><td>a|b</td><td>general</td></tr></tbody></table>")


def _case(traced, other):
    from fxguide.models import Case

    return Case("identity", torch.nn.Identity(), traced, other, "")


def test_a_result_of_another_shape_is_wrong_even_where_allclose_would_broadcast():
    # Issue 23: a (1, 2) result for an eager (3, 2) one was judged "general" (torch.allclose broadcasts).
    outcome = survey("t", lambda model, x, graphs: (lambda y: torch.ones(1, 2)), _case(torch.ones(3, 2), torch.ones(3, 2)))
    assert outcome.other == "wrong result"


def test_results_that_are_tuples_are_compared_leaf_by_leaf():
    case = _case(torch.ones(2), torch.full((2,), 3.0))
    same = survey("t", lambda model, x, graphs: (lambda y: y), case)
    assert same.verdict == "general"
    pair = survey("t", lambda model, x, graphs: (lambda y: (y, y)), case)  # eager returns one tensor
    assert pair.other == "wrong result"
