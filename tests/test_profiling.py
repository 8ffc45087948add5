"""fxguide.transforms.profiling: one median time per node, in graph order, from an Interpreter run."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.fx as fx

from fxsite.drift.normalize import normalize
from fxguide.models import SmallMLP
from fxguide.models import seeded
from fxguide.transforms.profiling import NodeProfiler, NodeTime, format_profile, profile_nodes


def test_profiler_result_equals_the_model_and_every_node_is_timed_once_per_run():
    model = seeded(SmallMLP)
    gm = fx.symbolic_trace(model)
    profiler = NodeProfiler(gm)
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(profiler.run(x), model(x))
    profiler.run(x)
    assert list(profiler.samples) == [n.name for n in gm.graph.nodes]
    assert all(len(s) == 2 and min(s) >= 0 for s in profiler.samples.values())


def test_profiler_records_what_its_timer_reads():
    gm = fx.symbolic_trace(lambda x: x + 1)
    ticks = itertools.count(step=0.5)
    profiler = NodeProfiler(gm, timer=lambda: next(ticks))
    profiler.run(torch.ones(1))
    assert profiler.samples == {"x": [0.5], "add": [0.5], "output": [0.5]}


def test_profile_nodes_keeps_graph_order_and_names_targets():
    gm = fx.symbolic_trace(seeded(SmallMLP))
    times = profile_nodes(gm, torch.zeros(2, 8), repeats=3)
    assert [(t.name, t.op, t.target) for t in times][:3] == [
        ("x", "placeholder", "x"), ("fc1", "call_module", "fc1"), ("relu", "call_function", "relu")]
    assert len(times) == len(gm.graph.nodes)


def test_format_profile_normalizes_to_a_stable_table():
    text = format_profile([NodeTime("x", "placeholder", "x", 2e-6), NodeTime("fc1", "call_module", "fc1", 0.0123)])
    assert normalize(text).splitlines() == [
        "node  op           target  median time",
        "x     placeholder  x       <time>",
        "fc1   call_module  fc1     <time>",
    ]


def test_bad_inputs_are_refused():
    with pytest.raises(TypeError, match="expected a torch.fx.GraphModule"):
        NodeProfiler(SmallMLP())
    gm = fx.symbolic_trace(lambda x: x + 1)
    with pytest.raises(ValueError, match="repeats must be a positive int"):
        profile_nodes(gm, torch.ones(1), repeats=0)
    with pytest.raises(TypeError, match="list of NodeTime"):
        format_profile([("x", 1.0)])
