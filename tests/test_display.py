"""Display helpers print stable text (no addresses) and refuse what they cannot show."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx as fx

from fxguide.display import show_code, show_diff, show_nodes, target_name
from fxguide.models import AllOpcodes, seeded


def test_show_code_strips_the_blank_lines_of_gm_code(capsys):
    gm = fx.symbolic_trace(seeded(AllOpcodes))
    assert gm.code.startswith("\n")  # the reason show_code exists
    show_code(gm)
    printed = capsys.readouterr().out
    assert printed.startswith("def forward(self, x):") and printed == gm.code.strip() + "\n"


def test_show_nodes_lists_every_node_once_without_addresses(capsys):
    gm = fx.symbolic_trace(seeded(AllOpcodes))
    show_nodes(gm)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:]] == [n.name for n in gm.graph.nodes]
    assert "0x" not in "\n".join(lines)
    assert ["sum_1", "call_method", "sum", "relu_1", "output"] in [line.split() for line in lines]


def test_target_name_is_qualified_for_functions():
    assert target_name(torch.sigmoid) == "torch.sigmoid"
    assert target_name(operator.mul) == "operator.mul"
    assert target_name(torch.nn.functional.silu) == "torch.nn.functional.silu"


def test_show_diff_marks_only_changed_lines(capsys):
    before = fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    after = fx.symbolic_trace(lambda x: torch.relu(x) * 1)
    show_diff(before, after)
    lines = capsys.readouterr().out.splitlines()
    changed = [line for line in lines if line[:1] in ("+", "-")]
    assert sorted(line[0] for line in changed) == ["+", "+", "-", "-"]
    assert all(line.startswith("  ") for line in lines if line not in changed)


@pytest.mark.parametrize("call", [
    lambda: show_code(torch.nn.ReLU()),
    lambda: show_nodes("graph"),
    lambda: show_diff(fx.symbolic_trace(torch.nn.ReLU()), None),
    lambda: target_name(3),
])
def test_helpers_reject_wrong_types_with_a_type_error(call):
    with pytest.raises(TypeError, match="expected"):
        call()


def _fails(message):
    def trigger():
        print("noise on stdout")
        raise ValueError(message)
    return trigger


def test_show_error_prints_the_first_lines_and_swallows_what_the_call_printed(capsys):
    from fxguide.display import show_error

    show_error(_fails("first\n\nsecond\nthird"), ValueError, "first", lines=2)
    assert capsys.readouterr().out == "ValueError: first\nsecond\n"


@pytest.mark.parametrize(("trigger", "error_type", "start", "says"), [
    (_fails("other text"), ValueError, "first", "got ValueError: other text"),
    (_fails("first"), KeyError, "first", "expected KeyError"),
    (lambda: None, ValueError, "first", "nothing was raised"),
])
def test_show_error_stops_when_torch_raises_something_else(trigger, error_type, start, says):
    from fxguide.display import show_error

    with pytest.raises(AssertionError, match=says):
        show_error(trigger, error_type, start)


@pytest.mark.parametrize(("args", "kwargs", "error"), [
    (("not callable", ValueError, "x"), {}, TypeError),
    ((lambda: None, "ValueError", "x"), {}, TypeError),
    ((lambda: None, ValueError, 3), {}, TypeError),
    ((lambda: None, ValueError, "x"), {"lines": 0}, ValueError),
])
def test_show_error_validates_its_arguments(args, kwargs, error):
    from fxguide.display import show_error

    with pytest.raises(error, match="show_error"):
        show_error(*args, **kwargs)


def test_torch_logs_collects_a_recompile_and_leaves_no_handler_behind():
    import logging

    from fxguide.display.torch_logs import _Collect, torch_logs

    with torch_logs(recompiles=True) as messages:
        torch._dynamo.reset()
        double = torch.compile(lambda t: t * 2, backend="eager", dynamic=False)
        double(torch.ones(2))
        double(torch.ones(3))
    torch._dynamo.reset()
    assert any("size mismatch at index 0. expected 2, actual 3" in m for m in messages), messages
    torch_loggers = [logging.getLogger(n) for n in ["torch", *logging.root.manager.loggerDict] if n.startswith("torch")]
    assert not any(isinstance(h, _Collect) for logger in torch_loggers for h in logger.handlers)


def test_torch_logs_needs_a_log_name():
    from fxguide.display.torch_logs import torch_logs

    with pytest.raises(ValueError, match="say which logs"):
        with torch_logs():
            pass


def test_a_line_break_inside_a_markdown_table_cell_stays_in_its_row():
    from fxguide.display import markdown_table

    table = str(markdown_table(["a"], [["x\ny"], ["z\r\nw"]]))
    assert table.splitlines() == ["| a |", "|---|", "| x<br>y |", "| z<br>w |"]


@pytest.mark.parametrize("header, rows", [(None, []), (["a"], None), ("ab", [])])
def test_markdown_table_says_what_header_and_rows_must_be(header, rows):
    from fxguide.display import markdown_table

    with pytest.raises(TypeError, match=r"markdown_table: (header|rows) must be a list"):
        markdown_table(header, rows)


def test_show_error_shows_an_expected_system_exit(capsys):
    import sys

    from fxguide.display import show_error

    show_error(lambda: sys.exit(3), SystemExit, "3")
    assert capsys.readouterr().out == "SystemExit: 3\n"
    with pytest.raises(SystemExit):  # one it does not expect goes on up
        show_error(lambda: sys.exit(3), ValueError, "")
