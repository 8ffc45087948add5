"""The capture tools the atlas runs, one column each: ``capture(model, args) -> Captured``.

Each tool takes a module and its example inputs and returns what to call in
place of the model, with the number of graphs it made and, for ``torch.compile``,
the graph-break ids it met. The export and trace tools are the ones
:mod:`fxguide.diagnose` runs (:mod:`fxguide.diagnose.captures`); the atlas adds
``make_fx`` and ``torch.compile`` with graph breaks allowed. The compile columns
use the ``aot_eager`` backend: Dynamo and AOT Autograd decide what happens to a
construct, and no code is generated.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx

from fxguide.diagnose import captures

GB_ID = re.compile(r"/gb/gb(\d{4})\.html")


@dataclass
class Captured:
    """What a tool made: the callable that stands for the model, its graphs, its graph breaks."""

    run: Callable[..., Any]
    graphs: Callable[[], int] = lambda: 1
    breaks: Callable[[], list[str]] = list  # graph-break ids met so far, "GB0291"
    holds_state: bool = True
    """Whether ``run`` is a module that holds the model's state under the model's names (a GraphModule,
    an exported module); when not (``make_fx``'s graph, a compiled model), the model itself holds it."""


def gb_ids(text: str) -> list[str]:
    """The graph-break ids (``GBnnnn``) a Dynamo message names.

    >>> gb_ids("... please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0291.html")
    ['GB0291']
    """
    return [f"GB{number}" for number in GB_ID.findall(text)]


def _module(result: tuple[Callable[..., Any], int]) -> Captured:
    return Captured(result[0])


def symbolic_trace(model: nn.Module, args: tuple) -> Captured:
    """``torch.fx.symbolic_trace``; parameters the example leaves out are bound to their defaults."""
    return _module(captures.symbolic_trace(model, args, {}))


def concrete_trace(model: nn.Module, args: tuple) -> Captured:
    """fxguide's concrete tracer."""
    return _module(captures.concrete_trace(model, args, {}))


def make_fx_real(model: nn.Module, args: tuple) -> Captured:
    """``make_fx`` on real tensors: an ATen graph of the path the example takes."""
    return Captured(make_fx(model, tracing_mode="real")(*args), holds_state=False)


def make_fx_symbolic(model: nn.Module, args: tuple) -> Captured:
    """``make_fx`` with symbolic shapes; the module's real parameters are allowed in (as constants)."""
    return Captured(make_fx(model, tracing_mode="symbolic", _allow_non_fake_inputs=True)(*args),
                    holds_state=False)


def export_strict(model: nn.Module, args: tuple) -> Captured:
    """``torch.export.export(strict=True)``, run as ``program.module()``."""
    return _module(captures.export_strict(model, args, {}))


def export_nonstrict(model: nn.Module, args: tuple) -> Captured:
    """``torch.export.export`` (non-strict, the default), run as ``program.module()``."""
    return _module(captures.export(model, args, {}))


def export_dynamic(model: nn.Module, args: tuple) -> Captured:
    """Non-strict export with ``Dim.AUTO`` on each tensor input's first dimension."""
    return _module(captures.export_dynamic_batch(model, args, {}))


def _compile(model: nn.Module, args: tuple, fullgraph: bool) -> Captured:
    """``torch.compile`` with ``aot_eager``; nothing runs until the first call."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo.utils import counters
    from torch._functorch.aot_autograd import make_boxed_compiler

    torch._dynamo.reset()
    counters.clear()
    made: list[torch.fx.GraphModule] = []

    def keep(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        made.append(gm)
        return aot_eager(gm, example_inputs)

    aot_eager = aot_autograd(fw_compiler=make_boxed_compiler(lambda gm, _: gm))
    compiled = torch.compile(model, fullgraph=fullgraph, backend=keep)
    # Compiling happens on the first call: the graphs and breaks are counted after the calls.
    return Captured(compiled, graphs=lambda: len(made), holds_state=False,
                    breaks=lambda: [gb for reason in counters["graph_break"] for gb in gb_ids(reason)])


def compile_fullgraph(model: nn.Module, args: tuple) -> Captured:
    """``torch.compile(fullgraph=True)`` on ``aot_eager``: one graph or an error."""
    return _compile(model, args, fullgraph=True)


def compile_breaks(model: nn.Module, args: tuple) -> Captured:
    """``torch.compile`` on ``aot_eager``, graph breaks allowed (counted, with their ids)."""
    return _compile(model, args, fullgraph=False)


TOOLS: dict[str, Callable[[nn.Module, tuple], Captured]] = {
    "symbolic_trace": symbolic_trace,
    "concrete_trace": concrete_trace,
    "make_fx": make_fx_real,
    "make_fx symbolic": make_fx_symbolic,
    "export strict": export_strict,
    "export": export_nonstrict,
    "export dynamic": export_dynamic,
    "compile fullgraph": compile_fullgraph,
    "compile": compile_breaks,
}
"""The atlas's columns in order, each a name and its tool."""
