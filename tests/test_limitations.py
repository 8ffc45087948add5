"""Every limitation demo still fails exactly as recorded, and every fix traces and matches eager."""

from __future__ import annotations

import pytest
import torch
import torch.fx as fx

from fxguide.tracing import limitations
from fxguide.tracing.limitations import LIMITATIONS, get, still_needed_rows

NAMES = sorted(LIMITATIONS)


@pytest.mark.parametrize("name", NAMES)
def test_broken_version_raises_the_recorded_error(name):
    lim = get(name)
    if lim.error is None:
        assert lim.raised() is None, f"{name}: expected to trace on this torch"
        return
    with pytest.raises(lim.error) as caught:
        lim.trace_broken()
    assert type(caught.value) is lim.error
    assert str(caught.value) == lim.message


@pytest.mark.parametrize("name", NAMES)
def test_fixed_version_traces_and_matches_eager(name):
    lim = get(name)
    assert isinstance(lim.trace_fixed(), fx.GraphModule)
    assert lim.fixed_matches_eager(), f"{name}: the traced fix computes something else than the original"


def test_fixed_matches_eager_detects_a_wrong_fix():
    wrong = limitations.Limitation(
        "wrong", "a fix that doubles", limitations.sum_rows_with_range, lambda x: x.sum(dim=0) * 2,
        TypeError, "", limitations.LIMITATIONS["range"].inputs,
    )
    assert not wrong.fixed_matches_eager()


def test_concrete_args_fix_keeps_the_argument_and_guards_it():
    gm = get("concrete_args").trace_fixed()
    placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    assert placeholders == ["x", "relu_1"]
    assert any(n.target is torch._assert for n in gm.graph.nodes)
    with pytest.raises(AssertionError, match="relu has been specialized to have value True"):
        gm(torch.ones(2), False)


def test_untraceable_block_becomes_one_call_module_node():
    gm = get("untraceable_block").trace_fixed()
    assert [n.target for n in gm.graph.nodes if n.op == "call_module"] == ["linear", "clamp"]


def test_unknown_name_lists_close_matches():
    with pytest.raises(KeyError, match="did you mean: range"):
        get("rang")
    with pytest.raises(TypeError):
        get(3)


def test_still_needed_rows_follow_the_measurement(monkeypatch):
    rows = {row[0]: row for row in still_needed_rows()}
    assert rows["`a @ b`"][2:] == ("yes", "no")
    assert rows["`assert cond`"][2:] == ("no: `TraceError`", "yes")
    # If the assert demo started tracing, the table must say the workaround is no longer needed.
    monkeypatch.setattr(limitations.Limitation, "raised", lambda self: None)
    assert all(row[3] == "no" for row in still_needed_rows())


def test_show_source_prints_the_code_and_rejects_non_code(capsys):
    limitations.show_source(limitations.matmul_operator, limitations.matmul_function)
    out = capsys.readouterr().out
    assert "return a @ b" in out and "return torch.matmul(a, b)" in out
    with pytest.raises(TypeError):
        limitations.show_source(3)
    with pytest.raises(ValueError):
        limitations.show_source()


def test_still_needed_table_shows_its_markdown_as_text_and_renders_as_html():
    table = limitations.still_needed_table()
    assert repr(table) == str(table) and str(table).startswith("| Instead of |")
    rendered = table._repr_html_()
    assert rendered.count("<tr>") == 1 + len(limitations.WORKAROUNDS)
    assert "<code>a @ b</code>" in rendered and "`" not in rendered


def test_the_out_of_place_slice_update_refuses_what_the_in_place_one_refuses():
    # Issue 23: x of shape (3, 1) made the cat version broadcast into a (3, 2) result.
    x, y = torch.ones(3, 1), torch.ones(3, 2)
    with pytest.raises(RuntimeError):
        limitations.add_to_first_columns(x.clone(), y)
    with pytest.raises(RuntimeError, match="expanded size"):
        limitations.add_to_first_columns_with_cat(x, y)
    gm = fx.symbolic_trace(limitations.add_to_first_columns_with_cat)
    with pytest.raises(RuntimeError, match="expanded size"):
        gm(x, y)
    wide, row = torch.randn(3, 4), torch.randn(2)  # y broadcast to the slice: allowed by both
    torch.testing.assert_close(gm(wide, row), limitations.add_to_first_columns(wide.clone(), row))


def test_a_limitation_without_code_is_refused_instead_of_reporting_that_it_still_raises():
    # Issue 23: Limitation(broken=None).raised() returned trace's TypeError, read as "still raises".
    with pytest.raises(TypeError, match="broken must be a function"):
        limitations.Limitation("bad", "s", None, limitations.matmul_function, None, "", lambda: ())
