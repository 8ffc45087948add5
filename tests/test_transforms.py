"""Every transform computes what it promises, checked numerically against the original module."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx as fx
import torch.nn.functional as F

from fxguide.models import AllOpcodes, GatedBlock, TinyMLP, seeded
from fxguide.transforms import to_graph_module
from fxguide.transforms.decompose import RULES, decompose, relu_rule, silu_rule
from fxguide.transforms.replace import Retarget, SwapOps, replace_op
from fxguide.transforms.profiling import profile_nodes
from fxguide.transforms.shapes import TensorInfo, record_shapes, record_shapes_by_hand

MODELS = [TinyMLP, AllOpcodes, GatedBlock]


def _input(features: int = 4) -> torch.Tensor:
    # Mixed signs, so that ReLU-like ops have both of their branches exercised.
    return torch.randn(5, features, generator=torch.Generator().manual_seed(0))


def _targets(gm: fx.GraphModule) -> list:
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


# -- to_graph_module ----------------------------------------------------------


def test_to_graph_module_never_shares_the_callers_graph():
    gm = fx.symbolic_trace(seeded(TinyMLP))
    copy = to_graph_module(gm)
    next(iter(copy.graph.nodes)).name = "renamed"
    assert next(iter(gm.graph.nodes)).name == "x"


def test_to_graph_module_rejects_plain_functions():
    with pytest.raises(TypeError, match="symbolic_trace"):
        to_graph_module(torch.relu)


# -- replace_op, Retarget, SwapOps ---------------------------------------------


@pytest.mark.parametrize("model_class", MODELS)
def test_replace_op_matches_the_module_with_the_op_swapped_by_hand(model_class):
    model, x = seeded(model_class), _input()
    gm = replace_op(model, torch.relu, torch.sigmoid)
    assert torch.relu not in _targets(gm) and torch.sigmoid in _targets(gm)
    reference = SwapOps(fx.symbolic_trace(model), {torch.relu: torch.sigmoid}).run(x)
    torch.testing.assert_close(gm(x), reference)
    # ...and the reference really differs from the original, so the check can fail.
    assert not torch.allclose(reference, model(x))


def test_replace_op_result_equals_hand_written_sigmoid_mlp():
    model, x = seeded(TinyMLP), _input()
    expected = (torch.sigmoid(model.linear(x)) + 1.0).sum(dim=1)
    torch.testing.assert_close(replace_op(model, torch.relu, torch.sigmoid)(x), expected)


def test_replace_op_leaves_its_input_untouched():
    gm = fx.symbolic_trace(seeded(TinyMLP))
    replace_op(gm, torch.relu, torch.tanh)
    assert torch.relu in _targets(gm)


def test_replace_op_says_what_the_graph_calls_when_nothing_matches():
    with pytest.raises(ValueError, match=r"no call_function node calls 'sigmoid'.*'add', 'relu'"):
        replace_op(seeded(TinyMLP), torch.sigmoid, torch.tanh)


@pytest.mark.parametrize("bad", [{}, {torch.relu: "tanh"}, [torch.relu]])
def test_mappings_must_be_non_empty_dicts_of_callables(bad):
    gm = fx.symbolic_trace(seeded(TinyMLP))
    with pytest.raises(TypeError):
        Retarget(gm, bad)
    with pytest.raises(TypeError):
        SwapOps(gm, bad)


@pytest.mark.parametrize("cls", [Retarget, SwapOps])
def test_interpreter_classes_require_a_graph_module(cls):
    with pytest.raises(TypeError, match="GraphModule"):
        cls(seeded(TinyMLP), {torch.relu: torch.tanh})


@pytest.mark.parametrize("model_class", MODELS)
def test_retarget_transformer_agrees_with_replace_op(model_class):
    model, x = seeded(model_class), _input()
    new = Retarget(fx.symbolic_trace(model), {torch.relu: torch.tanh}).transform()
    assert torch.tanh in _targets(new) and torch.relu not in _targets(new)
    torch.testing.assert_close(new(x), replace_op(model, torch.relu, torch.tanh)(x))


def test_swap_ops_changes_the_run_not_the_graph():
    gm = fx.symbolic_trace(seeded(TinyMLP))
    code = gm.code
    SwapOps(gm, {operator.add: operator.sub}).run(_input())
    assert gm.code == code


# -- decompose ----------------------------------------------------------------


@pytest.mark.parametrize("model_class", MODELS)
def test_decompose_computes_the_same_values(model_class):
    model, x = seeded(model_class), _input()
    gm = decompose(model)
    assert not set(_targets(gm)) & set(RULES)
    torch.testing.assert_close(gm(x), model(x))


def test_decompose_records_the_rule_ops():
    gm = decompose(seeded(GatedBlock))
    targets = _targets(gm)
    assert operator.gt in targets and torch.sigmoid in targets and F.silu not in targets


def test_decompose_with_a_custom_rule_table():
    gm = decompose(seeded(TinyMLP), {torch.relu: lambda x: torch.clamp(x, min=0)})
    assert torch.clamp in _targets(gm)
    torch.testing.assert_close(gm(_input()), seeded(TinyMLP)(_input()))


def test_decompose_rejects_rules_that_do_not_use_their_inputs():
    with pytest.raises(TypeError, match="returned Tensor"):
        decompose(seeded(TinyMLP), {torch.relu: lambda x: torch.zeros(1)})


def test_decompose_rejects_a_rule_table_that_is_not_a_mapping():
    with pytest.raises(TypeError, match="rules must map"):
        decompose(seeded(TinyMLP), [torch.relu])


# -- shape recorders ------------------------------------------------------------


@pytest.mark.parametrize("model_class", MODELS)
def test_both_shape_recorders_agree_with_the_values_computed(model_class):
    gm, x = fx.symbolic_trace(seeded(model_class)), _input()
    by_hand, by_interpreter = record_shapes_by_hand(gm, x), record_shapes(gm, x)
    assert by_hand == by_interpreter
    assert by_hand["x"] == TensorInfo((5, 4), torch.float32)
    output = gm(x)
    last = [n for n in gm.graph.nodes if n.op != "output"][-1].name
    assert by_hand[last] == TensorInfo(tuple(output.shape), output.dtype)


def test_shape_recorders_see_dtype_changes():
    gm = fx.symbolic_trace(lambda x: (x > 0).sum())
    seen = record_shapes_by_hand(gm, _input())
    assert seen["gt"].dtype == torch.bool and seen["sum_1"] == TensorInfo((), torch.int64)


@pytest.mark.parametrize("recorder", [record_shapes, record_shapes_by_hand])
def test_shape_recorders_check_their_arguments(recorder):
    with pytest.raises(TypeError, match="GraphModule"):
        recorder(seeded(TinyMLP), _input())
    with pytest.raises(TypeError, match="takes 1 input"):
        recorder(fx.symbolic_trace(seeded(TinyMLP)), _input(), _input())


def _relu_in_place_then_reuse(x):
    y = F.relu(x, inplace=True)
    return y + x  # x was overwritten by the relu


@pytest.mark.parametrize("fn", [_relu_in_place_then_reuse, lambda x: F.relu(x, True) * x],
                         ids=["keyword", "positional"])
def test_decompose_keeps_inplace_semantics(fn):
    gm = decompose(fx.symbolic_trace(fn))
    x = torch.tensor([-1.0, 2.0, -3.0])
    torch.testing.assert_close(gm(x.clone()), fn(x.clone()))
    overwritten = x.clone()
    gm(overwritten)
    torch.testing.assert_close(overwritten, torch.relu(x))  # the input is overwritten, as in eager mode


@pytest.mark.parametrize("make", [
    lambda gm: replace_op(gm, torch.tanh, torch.sigmoid),
    lambda gm: Retarget(gm, {torch.tanh: torch.sigmoid}),
    lambda gm: SwapOps(gm, {torch.tanh: torch.sigmoid}),
    lambda gm: Retarget(gm, {torch.relu: torch.sigmoid, torch.tanh: torch.sigmoid}),
], ids=["replace_op", "Retarget", "SwapOps", "Retarget-one-of-two"])
def test_every_replacement_raises_when_the_graph_does_not_call_the_op(make):
    gm = fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    with pytest.raises(ValueError, match=r"no call_function node calls 'tanh'; the graph calls \['add', 'relu'\]"):
        make(gm)


@pytest.mark.parametrize("rule, op", [(relu_rule, F.relu), (silu_rule, F.silu)], ids=["relu", "silu"])
def test_a_rule_called_with_inplace_true_overwrites_its_input_like_the_op(rule, op):
    # Issue 23: relu_rule(x, inplace=True) accepted the flag and left x as it was.
    x, expected = torch.tensor([-1.0, 2.0]), torch.tensor([-1.0, 2.0])
    op(expected, inplace=True)
    assert rule(x, inplace=True) is x
    torch.testing.assert_close(x, expected)


def test_decompose_records_one_write_for_an_inplace_call():
    gm = decompose(fx.symbolic_trace(_relu_in_place_then_reuse))
    assert [n.target for n in gm.graph.nodes if n.op == "call_method"] == ["copy_"]


class _WithDefault(torch.nn.Module):
    def forward(self, x, y=10.0):
        return x + y


@pytest.mark.parametrize("run", [record_shapes, record_shapes_by_hand, profile_nodes],
                         ids=["record_shapes", "record_shapes_by_hand", "profile_nodes"])
def test_an_input_with_a_default_may_be_left_out_as_when_calling_the_graph(run):
    # Issue 23: record_shapes(gm, x) refused a graph whose second input has a default.
    gm = fx.symbolic_trace(_WithDefault())
    assert run(gm, torch.ones(2)) is not None
    with pytest.raises(TypeError, match="the graph takes 1 to 2 input"):
        run(gm, torch.ones(2), torch.ones(2), torch.ones(2))


def test_the_hand_written_recorder_uses_the_default_value():
    gm = fx.symbolic_trace(_WithDefault())
    seen = record_shapes_by_hand(gm, torch.ones(2, dtype=torch.int64))
    assert seen["add"] == TensorInfo((2,), torch.float32)  # int64 + 10.0: the default took part
