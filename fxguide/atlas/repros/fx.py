"""``torch.fx``'s own messages: symbolic tracing (proxies in control flow, iteration, ``len``, factory calls),
graph surgery (``erase_node``, ``lint``, ``GraphModule`` roots), ``Interpreter`` and ``ShapeProp``, and ``make_fx``.

Module reproductions run under ``symbolic_trace`` or ``make_fx symbolic``; the
others build or run a graph by hand, and their fix returns the graph's output and
eager mode's.
"""

import torch
import torch.fx
from torch import nn
from torch.fx.passes.shape_prop import ShapeProp

from fxguide.atlas.repros import fix_of, repro
from fxguide.tracing import wrapping
from fxguide.atlas.repros.dynamo import BoolBranch, ItemBranch, signs
from fxguide.atlas.cases.calls_out import _Doubler as Double

X = torch.arange(8.0).reshape(2, 4)


class AddRelu(nn.Module):
    """The model the graph-surgery reproductions trace."""

    def forward(self, x):
        return (x + 1).relu()


def traced() -> torch.fx.GraphModule:
    return torch.fx.symbolic_trace(AddRelu())


repro("symbolically traced variables cannot be used as inputs to control flow", tool="symbolic_trace",
      entry="78fcfe9627", inputs=signs,
      cause="An if on a Proxy: symbolic tracing has no value to decide the branch with.")(BoolBranch)


@repro("randn() received an invalid combination of arguments - got (Proxy, Proxy)", tool="symbolic_trace",
       entry="", cause="x.size(0) is a Proxy under symbolic tracing; torch.randn takes ints only.")
class RandnOfSizes(nn.Module):
    def forward(self, x):
        return x + torch.randn(x.size(0), x.size(1))


@fix_of(RandnOfSizes)
class RandnLike(nn.Module):
    def forward(self, x):
        return x + torch.randn_like(x)


@repro("Proxy object cannot be iterated", tool="symbolic_trace", entry="4fd26538a3",
       cause="A for loop over a Proxy: symbolic tracing does not know how many items it has.")
class LoopOverRows(nn.Module):
    def forward(self, x):
        return torch.stack([row * 2 for row in x])


@fix_of(LoopOverRows)
class WholeTensor(nn.Module):
    def forward(self, x):
        return x * 2


@repro("'len' is not supported in symbolic tracing by default", tool="symbolic_trace", entry="fa3b4e9b0f",
       cause="len() of a Proxy needs a value; torch.fx.wrap('len') records it as a call instead.")
class LenOfTensor(nn.Module):
    def forward(self, x):
        return x * len(x)


@fix_of(LenOfTensor)
class ShapeInsteadOfLen(nn.Module):
    def forward(self, x):
        return x * x.shape[0]


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = [nn.Linear(4, 4)]  # a plain list: not registered as a submodule

    def forward(self, x):
        return self.layers[0](x)


@repro("Module is not installed as a submodule", tool="symbolic_trace", entry="03b7dffb12",
       cause="A module kept in a plain list is not a submodule, so the tracer cannot name it.")
class PlainListOfModules(Holder):
    pass


@fix_of(PlainListOfModules)
class ModuleListOfModules(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList([nn.Linear(4, 4)])

    def forward(self, x):
        return self.layers[0](x)


@repro("ShapeProp error for: node=", tool="ShapeProp(gm).propagate", entry="25ee9c3150",
       cause="ShapeProp runs the graph on the example it is given: a wrong shape fails at the node that needs it.")
def shape_prop_wrong_shape():
    gm = torch.fx.symbolic_trace(nn.Linear(4, 3))
    ShapeProp(gm).propagate(torch.ones(2, 5))


@fix_of(shape_prop_wrong_shape)
def shape_prop_right_shape():
    torch.manual_seed(0)
    linear = nn.Linear(4, 3)
    gm = torch.fx.symbolic_trace(linear)
    return ShapeProp(gm).propagate(X), linear(X)


@repro("Expected positional argument for parameter", tool="torch.fx.Interpreter(gm).run", entry="a8c69f8239",
       cause="Interpreter.run is given fewer arguments than the graph has placeholders.")
def interpreter_missing_argument():
    torch.fx.Interpreter(traced()).run()


@fix_of(interpreter_missing_argument)
def interpreter_all_arguments():
    return torch.fx.Interpreter(traced()).run(X), AddRelu()(X)


def graph_with_get_attr() -> torch.fx.Graph:
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    weight = graph.get_attr("weight")
    graph.output(graph.call_function(torch.mul, (x, weight)))
    return graph


@repro("referenced target but that target was not provided in root", tool="torch.fx.GraphModule(root, graph)",
       entry="a5bb4126d7", cause="A graph's get_attr names an attribute the dict given as root does not hold.")
def graph_module_missing_target():
    torch.fx.GraphModule({}, graph_with_get_attr())


@fix_of(graph_module_missing_target)
def graph_module_with_target():
    gm = torch.fx.GraphModule({"weight": torch.full((4,), 2.0)}, graph_with_get_attr())
    return gm(X), X * 2


@repro("references nonexistent attribute", tool="graph.lint()", entry="7417d21a42",
       cause="lint() checks every get_attr against the owning module; this one names an attribute it lacks.")
def lint_nonexistent_attribute():
    gm = torch.fx.symbolic_trace(nn.Sequential(nn.Linear(4, 4)))
    x = next(iter(gm.graph.nodes))
    with gm.graph.inserting_after(x):
        gm.graph.get_attr("0.missing")
    gm.graph.lint()


@fix_of(lint_nonexistent_attribute)
def lint_registered_attribute():
    gm = traced()
    gm.register_buffer("scale", torch.tensor(3.0))
    output = gm.graph.output_node()
    with gm.graph.inserting_before(output):
        scale = gm.graph.get_attr("scale")
        scaled = gm.graph.call_function(torch.mul, (output.args[0], scale))
    output.args = (scaled,)
    gm.graph.lint()
    gm.recompile()
    return gm(X), AddRelu()(X) * 3


@repro("Tried to erase Node but it still had users", tool="graph.erase_node", entry="b42906f226",
       cause="A node is erased while other nodes still use its value.")
def erase_used_node():
    gm = traced()
    add = next(node for node in gm.graph.nodes if node.op == "call_function")
    gm.graph.erase_node(add)


@fix_of(erase_used_node)
def replace_then_erase():
    """Point the node's users elsewhere first (here: skip the +1), then erase it."""
    gm = traced()
    add = next(node for node in gm.graph.nodes if node.op == "call_function")
    add.replace_all_uses_with(add.args[0])
    gm.graph.erase_node(add)
    gm.recompile()
    return gm(X), X.relu()


repro("GuardOnDataDependentSymNode under make_fx (symbolic)", tool="make_fx symbolic", entry="", inputs=signs,
      cause="make_fx with symbolic shapes traces fake tensors: .item() has no value to return.",
      says=r"Could not guard on data-dependent expression")(ItemBranch)


@repro("int() argument must be ... not 'Proxy'", tool="symbolic_trace", entry="",
       cause="int() of a size under symbolic tracing: x.shape[0] is a Proxy, which has no value.",
       says=r"int\(\) argument must be a string, a bytes-like object or a real number, not 'Proxy'")
class IntOfSize(nn.Module):
    def forward(self, x):
        return x * int(x.shape[0])


@fix_of(IntOfSize)
class SizeKeptSymbolic(nn.Module):
    def forward(self, x):
        return x * x.shape[0]


@repro("'Proxy' object cannot be interpreted as an integer", tool="symbolic_trace", entry="",
       cause="range() of a size under symbolic tracing: the loop's length is a Proxy.")
class RangeOverSize(nn.Module):
    def forward(self, x):
        return sum(x[i] for i in range(x.shape[0]))


@fix_of(RangeOverSize)
class SumOverRows(nn.Module):
    def forward(self, x):
        return x.sum(0)


@repro("zeros() takes 1 positional argument but 2 were given (a Proxy size)", tool="symbolic_trace", entry="",
       cause="A factory function given a Proxy as a size: torch.zeros does not take Proxies.")
class ZerosOfSize(nn.Module):
    def forward(self, x):
        return torch.cat([x, torch.zeros(x.shape[0], 3)], dim=1)


@fix_of(ZerosOfSize)
class NewZeros(nn.Module):
    """A tensor method (new_zeros) is recorded as a call, Proxy sizes and all."""

    def forward(self, x):
        return torch.cat([x, x.new_zeros(x.shape[0], 3)], dim=1)


@repro("Argument of Node was used before it has been defined", tool="graph.lint()", entry="19783f8d3a",
       cause="A node is made to use a node that comes after it: the graph is no longer in topological order.")
def use_before_definition():
    gm = traced()
    add, relu = [node for node in gm.graph.nodes if node.op in ("call_function", "call_method")]
    add.args = (relu, *add.args[1:])
    gm.graph.lint()


@fix_of(use_before_definition)
def insert_after_the_value():
    """Insert a new node after the one it uses (graph.inserting_after), and use it from there on."""
    gm = traced()
    relu = next(node for node in gm.graph.nodes if node.op in ("call_function", "call_method") and node.target in
                ("relu", torch.relu))
    with gm.graph.inserting_after(relu):
        doubled = gm.graph.call_function(torch.mul, (relu, 2))
    relu.replace_all_uses_with(doubled, delete_user_cb=lambda user: user is not doubled)
    gm.graph.lint()
    gm.recompile()
    return gm(X), AddRelu()(X) * 2


@repro("Expected node.target to be callable", tool="gm.recompile()", entry="c9275600f6",
       cause="A call_function node's target was set to a name; it must be the function itself.")
def target_as_name():
    gm = traced()
    add = next(node for node in gm.graph.nodes if node.op == "call_function")
    add.target = "sub"
    gm.recompile()


@fix_of(target_as_name)
def target_as_function():
    gm = traced()
    add = next(node for node in gm.graph.nodes if node.op == "call_function")
    add.target = torch.sub
    gm.recompile()
    return gm(X), (X - 1).relu()


@repro("Placeholder count mismatch", tool="torch.fx.replace_pattern", entry="e571975dba",
       cause="The replacement takes another number of inputs than the pattern it replaces.")
def replacement_arity():
    torch.fx.replace_pattern(traced(), lambda x: x + 1, lambda x, y: x - y)


@fix_of(replacement_arity)
def replacement_same_arity():
    gm = traced()
    torch.fx.replace_pattern(gm, lambda x: x + 1, lambda x: x - 1)
    return gm(X), (X - 1).relu()


@repro("GraphModule has no attribute `missing` (call_module)", tool="graph.lint()", entry="", missed="65b84bb7f1",
       cause="A call_module node names a submodule the GraphModule does not have.", says=r"has no attribute `\w+`")
def call_module_missing():
    gm = traced()
    x = next(iter(gm.graph.nodes))
    with gm.graph.inserting_after(x):
        gm.graph.call_module("missing", (x,))
    gm.graph.lint()


@fix_of(call_module_missing)
def call_module_added():
    """Add the submodule first (gm.add_submodule), then call it."""
    gm = traced()
    gm.add_submodule("doubler", Double())
    output = gm.graph.output_node()
    with gm.graph.inserting_before(output):
        doubled = gm.graph.call_module("doubler", (output.args[0],))
    output.args = (doubled,)
    gm.graph.lint()
    gm.recompile()
    return gm(X), AddRelu()(X) * 2


@repro("Argument of Node does not belong to this Graph", tool="graph.lint()", entry="33a2f8c70c",
       cause="A node of another graph is used as an argument here (replace_all_uses_with given it): each graph's "
             "nodes are its own.")
def node_of_another_graph():
    gm, other = traced(), torch.fx.symbolic_trace(Double())
    add = next(n for n in gm.graph.nodes if n.op == "call_function")
    doubled = next(n for n in other.graph.nodes if n.op == "call_function")
    add.replace_all_uses_with(doubled)
    gm.graph.lint()


@fix_of(node_of_another_graph)
def node_copied_into_the_graph():
    """Copy the node into this graph (graph.node_copy), mapping its arguments to this graph's nodes."""
    gm, other = traced(), torch.fx.symbolic_trace(Double())
    x = next(iter(gm.graph.nodes))
    add = next(n for n in gm.graph.nodes if n.op == "call_function")
    doubled = next(n for n in other.graph.nodes if n.op == "call_function")
    with gm.graph.inserting_after(add):
        copied = gm.graph.node_copy(doubled, lambda arg: x)  # its one argument: this graph's input
    add.replace_all_uses_with(copied)
    gm.graph.erase_node(add)
    gm.graph.lint()
    gm.recompile()
    return gm(X), (X * 2).relu()


class ThreeLayers(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.first, self.second, self.third = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        return self.third(self.second(self.first(x)))


@repro("cycle exists between partitions!", tool="split_module", entry="05837ead0d",
       cause="The callback puts first and third in partition 0 and second in 1: 1 needs 0's output and 0 needs 1's. "
             "Partitions must follow the order the graph runs in.")
def cyclic_partitions():
    from torch.fx.passes.split_module import split_module

    model = ThreeLayers()
    split_module(torch.fx.symbolic_trace(model), model,
                 lambda node: {"first": 0, "second": 1, "third": 0}.get(str(node.target), 0))


@fix_of(cyclic_partitions)
def ordered_partitions():
    from torch.fx.passes.split_module import split_module

    model = ThreeLayers()
    split = split_module(torch.fx.symbolic_trace(model), model,
                         lambda node: {"first": 0, "second": 1, "third": 2}.get(str(node.target), 0))
    return split(X), model(X)


def _add_then_relu(x):
    return (x + 1).relu()


@repro("Returning nodes count mismatch", tool="torch.fx.replace_pattern", entry="184909d36e",
       cause="The replacement returns two values where the pattern returns one: each output of the pattern is "
             "replaced by the replacement's output in the same place.")
def replacement_returns_more():
    def replacement(x):
        shifted = x + 1
        return shifted.clamp(min=0), shifted

    torch.fx.replace_pattern(traced(), _add_then_relu, replacement)


@fix_of(replacement_returns_more)
def replacement_returns_as_many():
    def replacement(x):
        return (x + 1).clamp(min=0)

    gm = traced()
    torch.fx.replace_pattern(gm, _add_then_relu, replacement)
    return gm(X), AddRelu()(X)


@repro("type Proxy doesn't define __round__ method", tool="symbolic_trace", entry="",
       cause="round() asks the Proxy for __round__, a Python number it does not have while tracing.")
class RoundedWidth(nn.Module):
    def forward(self, x):
        return x[:, : round(x.shape[1] * 0.5)]


@fix_of(RoundedWidth)
class WrappedRoundedWidth(nn.Module):
    """round() in a wrapped function: recorded as one call, run on the real size."""

    def forward(self, x):
        return x[:, : wrapping.as_rounded(x.shape[1] * 0.5)]


repro("It appears that you're trying to get value out of a tracing tensor with aten._local_scalar_dense",
      tool="make_fx", entry="6fddfc88b2", inputs=signs,
      cause="make_fx (real tracing mode) traces with tensors that have no values: .item() has no number to "
            "return.")(ItemBranch)


def rows_divided(x):
    torch.fx.wrap("len")
    return x / len(x)


@repro("wrap must be called at the top level of a module", tool="torch.fx.wrap", entry="c66b2ff058",
       cause="torch.fx.wrap patches a name in a module's globals, so it is called once at module level, not inside "
             "the function being traced.")
def wrap_inside_function():
    torch.fx.symbolic_trace(rows_divided)


@fix_of(wrap_inside_function)
def wrap_at_module_level():
    """Call a helper of a module that wraps len at its top level (fxguide.tracing.wrapping does)."""
    gm = torch.fx.symbolic_trace(lambda x: wrapping.divide_by_rows(x))
    return gm(X), X / len(X)


@repro("Expected FunctionType, got <class 'builtin_function_or_method'>", tool="torch.fx.symbolic_trace",
       entry="3c563e45f5",
       cause="symbolic_trace takes an nn.Module or a Python function; torch.relu is a built-in written in C, with no "
             "Python code to trace.")
def trace_builtin():
    torch.fx.symbolic_trace(torch.relu)


@fix_of(trace_builtin)
def trace_python_function():
    """Wrap the built-in in a Python function (or a module) and trace that."""
    def relu(x):
        return torch.relu(x)
    return torch.fx.symbolic_trace(relu)(X), torch.relu(X)


@repro("op 'call_fn' is not in _legal_ops", tool="graph.create_node", entry="8b785db412",
       cause="A node's op must be one of FX's six: placeholder, get_attr, call_function, call_method, call_module, "
             "output.")
def illegal_op():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.create_node("call_fn", torch.relu, (x,)))


@fix_of(illegal_op)
def legal_op():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.create_node("call_function", torch.relu, (x,)))
    return torch.fx.GraphModule(nn.Module(), graph)(X), torch.relu(X)
