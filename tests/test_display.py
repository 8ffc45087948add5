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
