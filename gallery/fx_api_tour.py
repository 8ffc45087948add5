"""
A tour of the torch.fx API
==========================

The tutorial pages use the parts of ``torch.fx`` a pass needs most. This
example runs the rest of its public API once each, on small graphs, so that
every entry of the :doc:`torch.fx reference </reference/torch-fx-api>` has a
working call to look at: building a graph node by node, moving and
inspecting nodes, the code-generation hooks, and the hooks of ``Tracer``,
``Interpreter`` and ``Transformer``, each printed as it runs.
"""

# %%
# Building a graph by hand
# ------------------------
#
# Every node-creating method of :class:`torch.fx.Graph`, then a
# :class:`~torch.fx.GraphModule` that owns the graph and the modules it calls.

import operator
from collections import Counter

import torch
import torch.fx as fx
from torch import nn

from fxguide import requires_torch

requires_torch("2.13", "Graph.create_size_node and its printed form")

graph = fx.Graph()
x = graph.placeholder("x")
weight = graph.get_attr("weight")
scaled = graph.call_function(torch.mul, (x, weight))
activated = graph.call_module("act", (scaled,))
summed = graph.call_method("sum", (activated,), {"dim": 1})
shifted = graph.create_node("call_function", operator.add, (summed, 1.0), name="shifted")
graph.output(shifted)
graph.lint()
print("owning module before:", graph.owning_module)

root = nn.Module()
root.weight = nn.Parameter(torch.full((3,), 2.0))
root.act = nn.ReLU()
gm = fx.GraphModule(root, graph, class_name="HandBuilt")
print("owning module after:", type(gm.graph.owning_module).__name__)
gm.print_readable()
print(gm(torch.tensor([[1.0, -1.0, 0.5]])))

# %%
# ``graph_copy`` copies the nodes of one graph into another (returning the
# value the copied output would return), and ``add_submodule`` /
# ``delete_submodule`` edit the module tree a graph's ``call_module`` nodes
# refer to.

copy = fx.Graph()
value_map: dict[fx.Node, fx.Node] = {}
returned = copy.graph_copy(gm.graph, value_map)
copy.output(returned)
print(len(copy.nodes), "nodes copied; x maps to", value_map[x].name)

print(gm.add_submodule("extra.act", nn.Tanh()), [name for name, _ in gm.named_modules()])
print(gm.delete_submodule("extra.act"), gm.delete_submodule("no.such"))

# %%
# Moving and inspecting nodes
# ---------------------------
#
# Nodes form a linked list in execution order (``next``, ``prev``);
# ``prepend`` and ``append`` move an existing node before or after another.


def net(x):
    y = torch.neg(x)
    z = torch.sigmoid(y)
    return torch.clamp(z, min=0.1)


traced = fx.symbolic_trace(net)
neg: fx.Node = traced.graph.find_nodes(op="call_function", target=torch.neg)[0]
print(neg.prev.name, "->", neg.name, "->", neg.next.name)
sigmoid = neg.next
clamp = sigmoid.next
scale = traced.graph.call_function(torch.mul, (neg, 3.0))  # created at the end, before output
sigmoid.prepend(scale)  # move it right before sigmoid
sigmoid.replace_input_with(neg, scale)
clamp.append(traced.graph.call_function(torch.abs, (clamp,)))  # created, then placed after clamp
print([n.name for n in traced.graph.nodes])

# %%
# ``update_kwarg`` and ``insert_arg`` edit one argument and keep the use
# lists right; ``normalized_arguments`` spells out every argument by name
# from the target's signature; ``is_impure`` tells dead-code elimination
# which nodes must stay.

clamp.update_kwarg("min", 0.2)


def total(t):
    return torch.sum(t)


per_row = fx.symbolic_trace(total)
summed = per_row.graph.find_nodes(op="call_function", target=torch.sum)[0]
summed.insert_arg(1, 1)  # torch.sum(input, dim): a sum over dim 1, one total per row
per_row.recompile()
print(summed.args, per_row(torch.ones(2, 3)))
# torch.clamp has two schemas (number or tensor bounds): the argument types pick one
print(clamp.normalized_arguments(traced, arg_types=(torch.Tensor,), kwarg_types={"min": float},
                                 normalize_to_only_use_kwargs=True).kwargs)
print({n.name: n.is_impure() for n in traced.graph.nodes})

# %%
# ``map_arg`` applies a function to every node inside a (possibly nested)
# argument, which is how passes rewrite ``args`` without caring about their
# shape; ``has_side_effect`` marks a function as impure, so
# ``eliminate_dead_code`` keeps its unused calls.

print(fx.map_arg((neg, [sigmoid, {"k": clamp}], 3), lambda node: node.name.upper()))

log: list[str] = []


def note(message: str) -> None:
    log.append(message)


fx.has_side_effect(note)
with traced.graph.inserting_before(traced.graph.output_node()):
    traced.graph.call_function(note, ("ran",))
traced.graph.eliminate_dead_code()
traced.recompile()
traced(torch.randn(3))
print(log, [n.name for n in traced.graph.nodes])

# %%
# Size, stride and symbolic integers as nodes
# -------------------------------------------
#
# ``create_size_node``, ``create_stride_node`` and
# ``create_storage_offset_node`` add nodes that ask a tensor for its layout
# when the graph runs (ATen ``sym_size`` and friends).

g = fx.Graph()
t = g.placeholder("t")
g.output((g.create_size_node(t, 0), g.create_stride_node(t, 0), g.create_storage_offset_node(t)))
layout = fx.GraphModule(nn.Module(), g)
print(layout.code.strip())
print(layout(torch.zeros(6, 4)[1:]))

# %%
# In a graph captured with symbolic shapes, a size is a ``SymInt``.
# ``materialize_symint`` turns one into a node computing it from the graph's
# inputs (or returns a plain ``int`` unchanged); ``materialize_symints`` does a list.

from torch.fx.experimental.proxy_tensor import make_fx

symbolic = make_fx(lambda a: a.reshape(-1), tracing_mode="symbolic")(torch.zeros(4, 3))
a = next(iter(symbolic.graph.nodes))
rows, cols = a.meta["val"].shape
print(rows, cols, type(rows).__name__)
with symbolic.graph.inserting_before(symbolic.graph.output_node()):
    made = symbolic.graph.materialize_symints([rows, 7])  # a product (rows * cols) prints its factors in no fixed order
    single = symbolic.graph.materialize_symint(cols)
print([m.format_node() if isinstance(m, fx.Node) else m for m in made], single.format_node())

# %%
# Code generation hooks
# ---------------------
#
# ``process_inputs`` and ``process_outputs`` are what a graph's ``CodeGen``
# does to arguments and results around the generated ``forward`` (nothing,
# by default); ``set_codegen`` swaps the ``CodeGen``; ``on_generate_code``
# wraps the code transformer for as long as a ``with`` block lasts.

print(gm.graph.process_inputs(1, 2), gm.graph.process_outputs((3,)))
gm.graph.set_codegen(fx.graph.CodeGen())


def add_banner(previous):
    def transform(lines: list[str]) -> list[str]:
        lines = previous(lines) if previous else lines
        return ["# generated for the API tour\n", *lines]
    return transform


with gm.graph.on_generate_code(add_banner):
    gm.recompile()
    print(gm.code.strip().splitlines()[:2])
gm.recompile()
print(gm.code.strip().splitlines()[0])

# %%
# The hooks of ``Tracer``
# -----------------------
#
# ``Tracer.trace`` calls overridable methods for every step. This tracer
# counts the calls of each and then hands them to the base class; it also
# names a module's path (``path_of_module``) and asks for a fresh attribute
# name (``get_fresh_qualname``).


class CountingTracer(fx.Tracer):
    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter = Counter()

    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        self.calls["create_args_for_root"] += 1
        return super().create_args_for_root(root_fn, is_module, concrete_args)

    def call_module(self, m, forward, args, kwargs):
        self.calls["call_module"] += 1
        return super().call_module(m, forward, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        self.calls["getattr"] += 1
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        self.calls["create_proxy"] += 1
        return super().create_proxy(kind, target, args, kwargs, name, type_expr, proxy_factory_fn)

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        self.calls["create_node"] += 1
        return super().create_node(kind, target, args, kwargs, name, type_expr)

    def create_arg(self, a):
        self.calls["create_arg"] += 1
        return super().create_arg(a)

    def proxy(self, node):
        self.calls["proxy"] += 1
        return super().proxy(node)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.scale = nn.Parameter(torch.ones(3))

    def forward(self, x):
        return self.linear(x) * self.scale


block = Block()
tracer = CountingTracer()
tracer.trace(block)
print(dict(tracer.calls))
print(repr(tracer.path_of_module(block.linear)), tracer.get_fresh_qualname("_tensor_constant"))

# %%
# A tracer's settings are attributes a subclass may change, and ``trace``
# leaves its state behind: the graph it built, the name of the function it
# traced, the module scope it tracked while tracing (back at the root, empty,
# when it is done), and which module each node was created in.

print("record_stack_traces", tracer.record_stack_traces, "| check_mutable_operations", tracer.check_mutable_operations,
      "| trace_asserts", tracer.trace_asserts, "| proxy_buffer_attributes", tracer.proxy_buffer_attributes)
print(tracer.traced_func_name, type(tracer.graph).__name__, len(tracer.graph.nodes), "nodes")
print(repr(tracer.scope.module_path), tracer.scope.module_type, dict(tracer.module_stack),
      tracer.node_name_to_scope)

# %%
# ``to_bool``, ``iter`` and ``keys`` are called when traced code uses a
# proxy as a condition, iterates over it, or unpacks it with ``**``. The
# base class refuses the first two with the error the limitations page
# explains, and records ``keys()`` as a method call:

proxy = tracer.proxy(tracer.graph.placeholder("p"))
for hook in (tracer.to_bool, tracer.iter):
    try:
        hook(proxy)
    except fx.proxy.TraceError as error:
        print(f"{hook.__name__}: {type(error).__name__}: {error}")
print("keys:", tracer.keys(proxy).node.format_node())

# %%
# The hooks of ``Interpreter``
# ----------------------------
#
# One method per opcode, plus the helpers that fetch a node's argument values
# from the environment. This interpreter logs, before running each node, how
# many argument values it fetched for it; the per-opcode overrides only hand
# over to the base class, to show their signatures.


class LoggingInterpreter(fx.Interpreter):
    def run_node(self, n: fx.Node):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        inputs = self.map_nodes_to_values(list(n.all_input_nodes), n)
        print(f"{n.op:14} {n.name:8} args {len(args)} kwargs {sorted(kwargs)} inputs {len(inputs)}")
        return super().run_node(n)

    def placeholder(self, target, args, kwargs):
        return super().placeholder(target, args, kwargs)

    def get_attr(self, target, args, kwargs):
        return super().get_attr(target, args, kwargs)

    def call_function(self, target, args, kwargs):
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return super().call_method(target, args, kwargs)

    def call_module(self, target, args, kwargs):
        return super().call_module(target, args, kwargs)

    def output(self, target, args, kwargs):
        return super().output(target, args, kwargs)


interpreter = LoggingInterpreter(gm)
sample = torch.tensor([[1.0, -1.0, 0.5]])
print(interpreter.run(sample))
print(fx.Interpreter(gm).boxed_run([sample]))  # boxed: one list, emptied as it is read

# %%
# ``Transformer``
# ---------------
#
# A ``Transformer`` runs the same hooks on proxies and records a new graph:
# overriding a hook rewrites every node of that opcode. This one swaps the
# ReLU module for ``torch.tanh``, doubles every weight read, and keeps the
# rest.


class TanhDoubled(fx.Transformer):
    def placeholder(self, target, args, kwargs):
        return super().placeholder(target, args, kwargs)

    def get_attr(self, target, args, kwargs):
        return super().get_attr(target, args, kwargs) * 2

    def call_module(self, target, args, kwargs):
        if isinstance(self.fetch_attr(target), nn.ReLU):
            return self.call_function(torch.tanh, args, kwargs)
        return super().call_module(target, args, kwargs)

    def call_function(self, target, args, kwargs):
        return super().call_function(target, args, kwargs)


transformed = TanhDoubled(gm).transform()
print(transformed.code.strip())
print(transformed(sample), (torch.tanh(sample * 4.0)).sum(1) + 1.0)
