"""The guide's tracers: leaves by type or path, module paths and tags in node.meta."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from fxguide.tracing.limitations import ClampIfLarge, WithUntraceableBlock
from fxguide.models import seeded
from fxguide.tracing.tracers import LeafTracer, ModulePathTracer, TaggingTracer, trace
from fxguide.models import TwoStageMLP


def test_leaf_types_keep_a_module_opaque_and_the_result_matches_eager():
    model = seeded(WithUntraceableBlock)
    gm = trace(model, LeafTracer(leaf_types=[ClampIfLarge]))
    assert [n.op for n in gm.graph.nodes].count("call_module") == 2
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0)) * 5
    torch.testing.assert_close(gm(x), model(x))


def test_leaf_paths_keep_one_instance_opaque():
    model = seeded(TwoStageMLP)
    gm = trace(model, LeafTracer(leaf_paths=["encoder.1"]))
    modules = [n.target for n in gm.graph.nodes if n.op == "call_module"]
    assert modules == ["encoder.0.linear", "encoder.1", "head"]


def test_autowrap_functions_records_a_global_function():
    # (autowrap skips globals whose name starts with "_", so the helper has a public name)
    gm = trace(uses_helper, LeafTracer(autowrap_functions=[helper]))
    assert helper in [n.target for n in gm.graph.nodes]
    gm_default = trace(uses_helper)
    assert helper not in [n.target for n in gm_default.graph.nodes]


def helper(x):
    return x * 2


def uses_helper(x):
    return helper(x) + 1


def test_without_math_in_autowrap_modules_math_sqrt_of_a_size_fails():
    def f(x):
        return x * math.sqrt(x.shape[-1])

    assert trace(f, LeafTracer())(torch.ones(4)).tolist() == [2.0] * 4
    with pytest.raises(TypeError, match="Proxy"):
        trace(f, LeafTracer(autowrap_modules=()))


def test_module_path_tracer_records_the_innermost_module():
    tracer = ModulePathTracer()
    gm = trace(seeded(TwoStageMLP), tracer)
    paths = {n.name: n.meta["module_path"] for n in gm.graph.nodes}
    assert paths["encoder_0_linear"] == "encoder.0.linear"
    assert paths["relu"] == "encoder.0" and paths["relu_1"] == "encoder.1"
    assert paths["x"] == "" and paths["output"] == ""
    assert tracer.module_outputs["encoder"].name == "add_1"
    assert tracer.module_outputs["head"].name == "head"


def test_module_called_twice_gets_a_numbered_key():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = nn.Linear(2, 2)

        def forward(self, x):
            return self.block(self.block(x))

    tracer = ModulePathTracer()
    trace(Twice(), tracer)
    assert list(tracer.module_outputs) == ["block", "block@1"]


def test_tagging_tracer_uses_the_longest_prefix_and_whole_components():
    tracer = TaggingTracer({"encoder": "backbone", "encoder.1": "late"}, default="other")
    gm = trace(seeded(TwoStageMLP), tracer)
    tags = {n.name: n.meta["tag"] for n in gm.graph.nodes}
    assert tags["relu"] == "backbone" and tags["relu_1"] == "late" and tags["head"] == "other"
    assert TaggingTracer({"enc": "x"}).tag_for("encoder.0") is None


def test_bad_arguments_are_rejected_with_a_message():
    with pytest.raises(TypeError, match="nn.Module subclass"):
        LeafTracer(leaf_types=[int])
    with pytest.raises(TypeError, match="Python modules"):
        LeafTracer(autowrap_modules=["math"])
    with pytest.raises(TypeError, match="callables"):
        LeafTracer(autowrap_functions=[3])
    with pytest.raises(TypeError, match="str to str"):
        TaggingTracer({"a": 1})
    with pytest.raises(TypeError, match="torch.fx.Tracer"):
        trace(nn.ReLU(), tracer="fx")
    with pytest.raises(TypeError, match="concrete_args"):
        trace(nn.ReLU(), concrete_args=[1])
