"""The atlas's second table: which FX tool works on which kind of graph.

A *graph kind* is where a graph comes from: ``symbolic_trace``, the concrete
tracer, ``make_fx``, an ``ExportedProgram`` (its ``graph_module``, its
``module()``, ``torch.export.unflatten``), a Dynamo graph handed to a backend,
AOT Autograd's forward and backward graphs, and the graph a custom Inductor pass
receives. Each kind is made from one small model and comes with the inputs its
graph is called with and what it returns on them. An *FX tool* is applied to
each: it works (and, where it produces something callable, that gives the same
values), or it raises, and the cell shows the message.
"""

from __future__ import annotations

import copy
import io
import pickle
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.fx as fx
from torch import nn

from fxguide.atlas.judge import first_line, same, watched
from fxguide.display import MarkdownTable, markdown_table


class Block(nn.Module):
    """The model every graph kind is made from: a linear layer, a ReLU, a buffer added."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.register_buffer("offset", torch.ones(4))

    def forward(self, x):
        return torch.relu(self.linear(x)) + self.offset


@dataclass
class Graph:
    """A graph of one kind: the module that holds it, the inputs it is called with, its outputs on them."""

    kind: str
    module: Any
    inputs: tuple
    expected: Any
    program: Any = None  # the ExportedProgram, for the kinds that come from one
    remake: Callable[[], tuple[Any, Any]] | None = None  # a new (module, program), so no tool sees another's edits

    def fresh(self) -> Graph:
        """The same kind, made again (each tool gets its own: tools edit graphs and their metadata)."""
        if self.remake is None:
            return self
        module, program = self.remake()
        return Graph(self.kind, module, self.inputs, self.expected, program, self.remake)


def _model_and_input() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return Block().eval(), torch.randn(2, 4)


def _kind(kind: str, module: Any, inputs: tuple, program: Any = None,
          remake: Callable[[], tuple[Any, Any]] | None = None) -> Graph:
    with torch.no_grad():
        return Graph(kind, module, inputs, module(*inputs), program, remake)


def _copies(module: Any) -> Callable[[], tuple[Any, Any]]:
    pristine = copy.deepcopy(module)
    return lambda: (copy.deepcopy(pristine), None)


def graph_kinds() -> list[Graph]:
    """Every graph kind, made from :class:`Block` (torch's notes while compiling are not shown)."""
    with watched(0):
        return _graph_kinds()


def _graph_kinds() -> list[Graph]:
    from torch.fx.experimental.proxy_tensor import make_fx

    from fxguide.tracing.concrete import concrete_trace

    model, x = _model_and_input()
    makers: dict[str, Callable[[], Any]] = {
        "symbolic_trace": lambda: fx.symbolic_trace(model),
        "concrete_trace": lambda: concrete_trace(model, (x,)),
        "make_fx": lambda: make_fx(model)(x),
    }
    kinds = [_kind(kind, make(), (x,), remake=lambda make=make: (make(), None)) for kind, make in makers.items()]

    def exported(view: Callable[[Any], Any]) -> Callable[[], tuple[Any, Any]]:
        def remake() -> tuple[Any, Any]:
            program = torch.export.export(model, (x,))
            return view(program), program
        return remake

    program = torch.export.export(model, (x,))
    flat = tuple(program.state_dict[name] if name in program.state_dict else program.constants[name]
                 for name in program.graph_signature.parameters + program.graph_signature.buffers) + (x,)
    for kind, view, inputs in [("ep.graph_module", lambda p: p.graph_module, flat),
                               ("ep.module()", lambda p: p.module(), (x,)),
                               ("unflatten(ep)", torch.export.unflatten, (x,))]:
        kinds.append(_kind(kind, view(program), inputs, program, exported(view)))
    return kinds + _compiled_kinds(model, x)


def _compiled_kinds(model: nn.Module, x: torch.Tensor) -> list[Graph]:
    """The graphs torch.compile hands on: Dynamo's, AOT Autograd's forward and backward, an Inductor pass's."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_compiler

    seen: dict[str, tuple] = {}

    def keep(name: str) -> Callable:
        def compiler(gm, example_inputs):
            seen.setdefault(name, (gm, tuple(example_inputs)))
            return make_boxed_compiler(lambda g, _: g)(gm, example_inputs) if name != "dynamo" else gm
        return compiler

    def dynamo(gm, example_inputs):
        seen.setdefault("dynamo", (gm, tuple(example_inputs)))
        return aot_autograd(fw_compiler=keep("aot forward"), bw_compiler=keep("aot backward"))(gm, example_inputs)

    torch._dynamo.reset()
    leaf = x.clone().requires_grad_()
    torch.compile(model, backend=dynamo)(leaf).sum().backward()
    torch._dynamo.reset()
    kinds = [_kind(kind, *_boxed(seen[key]), remake=_copies(seen[key][0]))
             for kind, key in [("Dynamo backend", "dynamo"), ("AOT forward", "aot forward"),
                               ("AOT backward", "aot backward")]]
    return kinds + [_inductor_pass_graph(model, x)]


def _boxed(entry: tuple) -> tuple:
    gm, inputs = entry
    return gm, _real(inputs)


def _real(inputs: tuple) -> tuple:
    """Real tensors in place of the fake ones a compiler was shown (same shapes and dtypes, seeded values)."""
    from torch._subclasses.fake_tensor import FakeTensor
    generator = torch.Generator().manual_seed(0)
    return tuple(torch.randn(i.shape, dtype=i.dtype, generator=generator) if isinstance(i, FakeTensor)
                 else i.detach() if isinstance(i, torch.Tensor) else i for i in inputs)


def _inductor_pass_graph(model: nn.Module, x: torch.Tensor) -> Graph:
    """The graph a ``post_grad_custom_post_pass`` receives (Inductor runs; its kernels are compiled)."""
    import torch._inductor.config as inductor_config

    seen: list[fx.Graph] = []

    def custom_pass(graph: fx.Graph) -> None:
        seen.append(copy.deepcopy(graph.owning_module))

    torch._dynamo.reset()
    with inductor_config.patch(post_grad_custom_post_pass=custom_pass, fx_graph_cache=False):
        with torch.no_grad():
            torch.compile(model)(x)
    torch._dynamo.reset()
    gm = seen[0]
    return _kind("Inductor pass", gm, _real(tuple(n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder")),
                 remake=_copies(gm))


def _runs_alike(module: Callable[..., Any], graph: Graph) -> None:
    with torch.no_grad():
        got = module(*graph.inputs)
    if not same(got, graph.expected):
        raise AssertionError("ran, but returns other values or another structure than the graph it came from")


def _relu(x):
    return torch.relu(x)


def _sigmoid(x):
    return torch.sigmoid(x)


def interpreter(g: Graph) -> str:
    """``fx.Interpreter(gm).run(*inputs)``."""
    _runs_alike(fx.Interpreter(g.module).run, g)
    return "works"


def transformer(g: Graph) -> str:
    """``fx.Transformer(gm).transform()`` (no change), then the new module is called."""
    _runs_alike(fx.Transformer(g.module).transform(), g)
    return "works"


def shape_prop(g: Graph) -> str:
    """``ShapeProp(gm).propagate(*inputs)``: every node gets ``meta["tensor_meta"]``."""
    from torch.fx.passes.shape_prop import ShapeProp
    ShapeProp(g.module).propagate(*g.inputs)
    return "works"


def fake_tensor_prop(g: Graph) -> str:
    """``FakeTensorProp(gm).propagate(*inputs)``: every node gets ``meta["val"]``."""
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp
    FakeTensorProp(g.module).propagate(*g.inputs)
    return "works"


def _matches(count: int) -> str:
    return f"works, {count} match{'es' if count != 1 else ''}" + ("" if count else " (torch.relu is not in it)")


def replace_pattern(g: Graph) -> str:
    """``fx.replace_pattern(gm, torch.relu -> torch.sigmoid)`` on a copy; the edited module is called."""
    gm = copy.deepcopy(g.module)
    count = len(fx.replace_pattern(gm, _relu, _sigmoid))
    with torch.no_grad():
        gm(*g.inputs)
    return _matches(count)


def replace_with_filters(g: Graph) -> str:
    """``replace_pattern_with_filters`` with a filter that accepts every match."""
    from torch.fx.subgraph_rewriter import replace_pattern_with_filters
    gm = copy.deepcopy(g.module)
    count = len(replace_pattern_with_filters(gm, _relu, _sigmoid, [lambda *_: True]))
    with torch.no_grad():
        gm(*g.inputs)
    return _matches(count)


def subgraph_matcher(g: Graph) -> str:
    """``SubgraphMatcher(pattern).match(gm.graph)`` for ``torch.relu``."""
    from torch.fx.passes.utils.matcher_utils import SubgraphMatcher
    pattern = fx.symbolic_trace(_relu).graph
    return _matches(len(SubgraphMatcher(pattern, ignore_literals=True).match(g.module.graph)))


def split_module(g: Graph) -> str:
    """``split_module`` into two parts at the graph's middle; the split module is called."""
    from torch.fx.passes.split_module import split_module as split
    nodes = [n for n in g.module.graph.nodes if n.op not in ("placeholder", "output")]
    half = {n: i * 2 // max(len(nodes), 1) for i, n in enumerate(nodes)}
    _runs_alike(split(g.module, g.module, lambda n: half.get(n, 0)), g)
    return "works"


def split_by_tags(g: Graph) -> str:
    """``split_by_tags`` with the first half of the nodes tagged ``a``, the rest ``b``."""
    from torch.fx.passes.split_utils import split_by_tags as split
    gm = copy.deepcopy(g.module)
    nodes = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]
    for i, n in enumerate(nodes):
        n.tag = "a" if i < len(nodes) // 2 else "b"
    _runs_alike(split(gm, ["a", "b"]), g)
    return "works"


def partitioner(g: Graph) -> str:
    """``CapabilityBasedPartitioner`` for every ``call_function`` node, then ``fuse_partitions``."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupportBase

    class CallFunctions(OperatorSupportBase):
        def is_node_supported(self, submodules, node):
            return node.op == "call_function"

    gm = copy.deepcopy(g.module)
    fused = CapabilityBasedPartitioner(gm, CallFunctions()).partition_and_fuse()
    _runs_alike(fused, g)
    return "works"


def eliminate_dead_code(g: Graph) -> str:
    """``graph.eliminate_dead_code()`` and ``recompile()`` on a copy."""
    gm = copy.deepcopy(g.module)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    _runs_alike(gm, g)
    return "works"


def pass_manager(g: Graph) -> str:
    """``torch.fx.passes.infra.pass_manager.PassManager`` running one pass that returns a ``PassResult``."""
    from torch.fx.passes.infra.pass_base import PassResult
    from torch.fx.passes.infra.pass_manager import PassManager

    def dce(gm):
        return PassResult(gm, gm.graph.eliminate_dead_code())

    result = PassManager([dce])(copy.deepcopy(g.module))
    result.graph_module.recompile()
    _runs_alike(result.graph_module, g)
    return "works"


def graph_drawer(g: Graph) -> str:
    """``FxGraphDrawer(gm, name).get_dot_graph()`` (pydot)."""
    from torch.fx.passes.graph_drawer import FxGraphDrawer
    FxGraphDrawer(g.module, "g").get_dot_graph().to_string()
    return "works"


def print_readable(g: Graph) -> str:
    """``gm.print_readable(print_output=False)``."""
    g.module.print_readable(print_output=False)
    return "works"


def to_folder(g: Graph) -> str:
    """``gm.to_folder(path)``, then the module written there is imported and called."""
    import importlib.util
    import sys
    with tempfile.TemporaryDirectory() as folder:
        name = f"fxguide_atlas_folder_{abs(hash(g.kind))}"
        g.module.to_folder(Path(folder) / name, "Saved")
        spec = importlib.util.spec_from_file_location(name, Path(folder) / name / "__init__.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
            _runs_alike(module.Saved(), g)
        finally:
            del sys.modules[name]
    return "works"


def pickled(g: Graph) -> str:
    """``pickle.dumps`` and ``loads``; the loaded module is called."""
    _runs_alike(pickle.loads(pickle.dumps(g.module)), g)
    return "works"


def deepcopied(g: Graph) -> str:
    """``copy.deepcopy``; the copy is called."""
    _runs_alike(copy.deepcopy(g.module), g)
    return "works"


def lint_recompile(g: Graph) -> str:
    """``gm.graph.lint()`` and ``gm.recompile()``."""
    g.module.graph.lint()
    g.module.recompile()
    _runs_alike(g.module, g)
    return "works"


def re_export(g: Graph) -> str:
    """``torch.export.export(gm, inputs)``; the new program's module is called."""
    _runs_alike(torch.export.export(copy.deepcopy(g.module), g.inputs).module(), g)
    return "works"


def export_save_after_edit(g: Graph) -> str:
    """For an exported program: a node added to ``ep.graph_module`` (x * 1), then ``torch.export.save``
    and ``load``; the loaded program is called."""
    if g.program is None:
        return "n/a (no ExportedProgram)"
    program = copy.deepcopy(g.program)
    graph = program.graph_module.graph
    output = next(n for n in graph.nodes if n.op == "output")
    value = output.args[0][0]
    with graph.inserting_before(output):
        times_one = graph.call_function(torch.ops.aten.mul.Tensor, (value, 1))
    output.args = ((times_one,),)
    program.graph_module.recompile()
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    buffer.seek(0)
    loaded = torch.export.load(buffer)
    with torch.no_grad():
        got = loaded.module()(*g.inputs[-1:])
    if not same(got, g.expected if g.kind != "ep.graph_module" else g.expected[0]):
        raise AssertionError("ran, but gives other values than the program before the edit")
    return "works"


FX_TOOLS: dict[str, Callable[[Graph], str]] = {
    "Interpreter": interpreter, "Transformer": transformer, "ShapeProp": shape_prop,
    "FakeTensorProp": fake_tensor_prop, "replace_pattern": replace_pattern,
    "replace_pattern_with_filters": replace_with_filters, "SubgraphMatcher": subgraph_matcher,
    "split_module": split_module, "split_by_tags": split_by_tags, "CapabilityBasedPartitioner": partitioner,
    "eliminate_dead_code": eliminate_dead_code, "PassManager": pass_manager, "FxGraphDrawer": graph_drawer,
    "print_readable": print_readable, "to_folder": to_folder, "pickle": pickled, "deepcopy": deepcopied,
    "lint + recompile": lint_recompile, "re-export": re_export, "export.save after an edit": export_save_after_edit,
}
"""The second table's columns, each a name and its tool."""


def apply(tool: str, graph: Graph) -> str:
    """``tool``'s outcome on ``graph``: what it returned (``works``...) or ``error: Type: message``."""
    if tool not in FX_TOOLS:
        raise ValueError(f"apply: unknown tool {tool!r}; choose one of {list(FX_TOOLS)}")
    if not isinstance(graph, Graph):
        raise TypeError(f"apply: graph must be a Graph from graph_kinds(), got {type(graph).__name__}")
    try:
        with watched(0):  # torch's warnings about the tools (pickled children...) are not outcomes
            return FX_TOOLS[tool](graph.fresh())
    except Exception as error:  # noqa: BLE001 - every failure is an outcome to show
        return f"error: {first_line(error)}"


def short(outcome: str) -> str:
    """The table cell for an outcome: ``works``, ``1 match``, ``error: ShapeError``, ``n/a``.

    >>> short("error: RuntimeError: Cannot access data pointer")
    'error: RuntimeError'
    >>> short("works, 0 matches (torch.relu is not in it)")
    '0 matches'
    """
    if outcome.startswith("error: "):
        return "error: " + outcome[7:].split(":", 1)[0]
    if outcome.startswith("works, "):
        return outcome[7:].split(" (", 1)[0]
    return outcome.split(" (", 1)[0]


def outcomes() -> tuple[list[str], dict[str, list[str]]]:
    """The graph kinds' names, and each tool's outcome on each kind (the second table, computed once)."""
    kinds = graph_kinds()
    return [graph.kind for graph in kinds], {tool: [apply(tool, graph) for graph in kinds] for tool in FX_TOOLS}


def table_of(kinds: list[str], found: dict[str, list[str]]) -> MarkdownTable:
    """The second table: one row per tool, one column per graph kind, each cell :func:`short`."""
    return markdown_table(["tool", *kinds], [[tool, *(short(o) for o in found[tool])] for tool in found])


def tool_outcomes(kinds: list[str], found: dict[str, list[str]], tool: str) -> str:
    """One tool's outcome on every kind of graph, in full (each error's message)."""
    if tool not in found:
        raise ValueError(f"tool_outcomes: unknown tool {tool!r}; choose one of {list(found)}")
    return "\n".join(f"{kind}: {outcome}" for kind, outcome in zip(kinds, found[tool]))


def table() -> tuple[MarkdownTable, str]:
    """The second table and every error in full (one string)."""
    kinds, found = outcomes()
    errors = [f"{tool} on {kind}: {o[7:]}" for tool in found for kind, o in zip(kinds, found[tool])
              if o.startswith("error")]
    return table_of(kinds, found), "\n".join(errors)
