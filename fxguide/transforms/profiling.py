"""A per-node profiler built on :class:`torch.fx.Interpreter`.

An ``Interpreter`` runs a graph one node at a time, which makes it the natural
place to put a stopwatch: :class:`NodeProfiler` times every ``run_node`` call,
and :func:`profile_nodes` repeats the run and keeps the median per node.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx

from fxguide._checks import int_at_least
from fxguide.display.timing import MAX_REPEATS, format_time
from fxguide.transforms import GuardedRun, _graph_inputs


class NodeProfiler(GuardedRun, fx.Interpreter):
    """An Interpreter that records how long each node took, in seconds, per run.

    ``samples[name]`` holds one duration for every :meth:`~torch.fx.Interpreter.run` so far.

    >>> gm = fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    >>> profiler = NodeProfiler(gm)
    >>> _ = profiler.run(torch.ones(3))
    >>> list(profiler.samples)
    ['x', 'relu', 'add', 'output']
    """

    def __init__(self, gm: fx.GraphModule, timer: Callable[[], float] = time.perf_counter) -> None:
        if not isinstance(gm, fx.GraphModule):
            raise TypeError(f"NodeProfiler: expected a torch.fx.GraphModule (e.g. from "
                            f"torch.fx.symbolic_trace(model)), got {type(gm).__name__}")
        if not callable(timer):
            raise TypeError(f"NodeProfiler: timer must be a clock function such as time.perf_counter, got {timer!r}")
        super().__init__(gm)
        self.timer = timer
        self.samples: dict[str, list[float]] = {node.name: [] for node in gm.graph.nodes}

    def run_node(self, n: fx.Node) -> Any:
        start = self.timer()
        result = super().run_node(n)
        self.samples[n.name].append(self.timer() - start)
        return result


@dataclass(frozen=True)
class NodeTime:
    """The median time of one node over the profiled runs."""

    name: str
    op: str
    target: str
    seconds: float


def _target_name(node: fx.Node) -> str:
    target = node.target
    if isinstance(target, str):
        return target
    return getattr(target, "__name__", repr(target))


def profile_nodes(gm: fx.GraphModule, *args: Any, repeats: int = 10, warmup: int = 1) -> list[NodeTime]:
    """Run ``gm(*args)`` node by node ``warmup + repeats`` times; return each node's median time.

    The list follows graph order (not sorted by time), so what is printed from it
    does not depend on which node happened to be slowest on this run.

    >>> gm = fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    >>> [(t.name, t.op) for t in profile_nodes(gm, torch.ones(3), repeats=3)]
    [('x', 'placeholder'), ('relu', 'call_function'), ('add', 'call_function'), ('output', 'output')]
    """
    int_at_least("profile_nodes", "repeats", repeats, maximum=MAX_REPEATS)
    int_at_least("profile_nodes", "warmup", warmup, minimum=0, maximum=MAX_REPEATS)
    profiler = NodeProfiler(_graph_inputs(gm, args, "profile_nodes"))
    with torch.no_grad():
        for _ in range(warmup):
            profiler.run(*args)
        for samples in profiler.samples.values():
            samples.clear()
        for _ in range(repeats):
            profiler.run(*args)
    return [NodeTime(node.name, node.op, _target_name(node), statistics.median(profiler.samples[node.name]))
            for node in gm.graph.nodes]


def format_profile(times: list[NodeTime]) -> str:
    """A table of node, opcode, target and median time, in graph order.

    The time column comes last and is left-aligned, so the table keeps its shape
    when the drift guard replaces each time by ``<time>``.

    >>> print(format_profile([NodeTime("relu", "call_function", "relu", 1.5e-5)]))
    node  op             target  median time
    relu  call_function  relu    15.00 µs
    """
    if not isinstance(times, list) or not all(isinstance(t, NodeTime) for t in times):
        raise TypeError("format_profile: expected the list of NodeTime that profile_nodes returns")
    rows = [("node", "op", "target", "median time")]
    rows += [(t.name, t.op, t.target, format_time(t.seconds)) for t in times]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3]
                     for row in rows)
