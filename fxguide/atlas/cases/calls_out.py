"""Calls out of torch: NumPy, C code, custom ops, control-flow operators and the escape hatches."""

import warnings

import numpy as np
import torch
import torch.fx
from torch import nn

from fxguide.atlas import case, fix_for
from fxguide.tracing import wrapping

# --- custom ops, defined once for the cases below -------------------------------------------------


@torch.library.custom_op("fxguide_atlas::scale", mutates_args=())
def scale_op(x: torch.Tensor, factor: float) -> torch.Tensor:
    return x * factor


@scale_op.register_fake
def _(x, factor):
    return torch.empty_like(x)


@torch.library.custom_op("fxguide_atlas::no_fake", mutates_args=())
def no_fake_op(x: torch.Tensor) -> torch.Tensor:
    return x + 1


@torch.library.custom_op("fxguide_atlas::count_nonzero_rows", mutates_args=())
def nonzero_rows_op(x: torch.Tensor) -> torch.Tensor:
    return x[x.sum(1) > 0]


@nonzero_rows_op.register_fake
def _(x):
    n = torch.library.get_ctx().new_dynamic_size()
    return x.new_empty(n, x.shape[1])


@torch.compiler.disable
def disabled_helper(x):
    return x * 2


@torch.library.custom_op("fxguide_atlas::doubled", mutates_args=())
def doubled_op(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@doubled_op.register_fake
def _(x):
    return torch.empty_like(x)


@torch.compiler.allow_in_graph
def allowed_helper(x):
    return x * 3


@torch._dynamo.nonstrict_trace
def nonstrict_helper(x):
    return x * 4


def python_helper(x):
    return x * 5


torch.fx.wrap("python_helper")


def signs():
    return (torch.ones(2, 4),), (-torch.ones(2, 4),)


@case("a NumPy round trip", fix="Use torch operations; under torch.compile NumPy calls are traced, "
      "elsewhere the value is a constant.")
class NumpyRoundTrip(nn.Module):
    def forward(self, x):
        return torch.from_numpy(np.tanh(x.numpy()))


@case("np.asarray of a tensor", fix="As for a NumPy round trip.")
class NumpyAsarray(nn.Module):
    def forward(self, x):
        return x * float(np.asarray(x).mean())


@case("a custom op with a fake kernel", fix="Nothing: this is the way to bring your own code into every "
      "tool's graph.")
class CustomOpFake(nn.Module):
    def forward(self, x):
        return scale_op(x, 2.0)


@case("a custom op without a fake kernel", fix="Register a fake kernel with @op.register_fake.")
class CustomOpNoFake(nn.Module):
    def forward(self, x):
        return no_fake_op(x)


@case("a custom op with a data-dependent output size", fix="In the fake kernel, make the size with "
      "torch.library.get_ctx().new_dynamic_size().",
      inputs=lambda: ((torch.tensor([[1.0, 1.0], [-3.0, 1.0]]),), (torch.tensor([[1.0, 1.0], [1.0, 1.0]]),)))
class CustomOpDynamicSize(nn.Module):
    def forward(self, x):
        return nonzero_rows_op(x)


@case("torch.cond with two branches", fix="Nothing: both branches are captured and chosen at run time.",
      inputs=signs)
class TorchCond(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,))


@case("print inside a torch.cond branch", fix="Branches must be free of side effects: print outside "
      "the cond, or use torch._higher_order_ops.print.", inputs=signs)
class TorchCondPrint(nn.Module):
    def forward(self, x):
        def positive(t):
            print("positive branch")
            return t + 1
        return torch.cond(x.sum() > 0, positive, lambda t: t - 1, (x,))


@case("torch.cond branch mutating its input", fix="Branches must not mutate inputs: return the new "
      "value instead.", inputs=signs)
class TorchCondMutation(nn.Module):
    def forward(self, x):
        def positive(t):
            t.add_(1)
            return t.clone()
        return torch.cond(x.sum() > 0, positive, lambda t: t - 1, (x.clone(),))


@case("torch.cond branches with different output shapes", fix="Nothing where only sizes differ: the output "
      "gets a size of its own (u0), checked when the program runs. The number of dimensions and the dtypes "
      "must agree (the next row).", inputs=signs)
class TorchCondShapes(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t[:1] + 1, lambda t: t - 1, (x,))


@case("torch.cond branches with different numbers of dimensions", fix="Both branches must return the same "
      "structure, dtypes and number of dimensions: reshape one branch's result to the other's (t.sum(0, "
      "keepdim=True)).", inputs=signs)
class TorchCondRanks(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t.sum(0), lambda t: t - 1, (x,))


@case("torch.cond branch returning its input", fix="A branch must not return an input or a view of one: "
      "return a copy (t.clone()).", inputs=signs)
class TorchCondAlias(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t, lambda t: t - 1, (x,))


@case("while_loop", fix="Nothing for torch's tools; the loop runs at run time.",
      inputs=lambda: ((torch.tensor(3), torch.ones(4)), (torch.tensor(5), torch.ones(4))))
class WhileLoop(nn.Module):
    def forward(self, n, x):
        from torch._higher_order_ops.while_loop import while_loop
        return while_loop(lambda i, t: i > 0, lambda i, t: (i - 1, t * 2), (n, x))


@case("torch._higher_order_ops.map", fix="Nothing for torch's tools.")
class HopMap(nn.Module):
    def forward(self, x):
        from torch._higher_order_ops.map import map as hop_map
        return hop_map(lambda row: row * 2, x)


@case("torch._higher_order_ops.print", fix="Nothing: the print is a node, it runs each call.")
class HopPrint(nn.Module):
    def forward(self, x):
        torch._higher_order_ops.print("sum is {}", x.sum())
        return x + 1


@case("a torch.compiler.disable helper", fix="Expected to break the graph: the helper runs as Python (under "
      "fullgraph, an error). To keep one graph, make the helper a custom op with a fake kernel (the fix): one node "
      "in every tool's graph, whose body is the kernel that runs.")
class CompilerDisable(nn.Module):
    def forward(self, x):
        return disabled_helper(x) + 1


@case("an allow_in_graph helper", fix="Nothing for torch.compile (the helper is one node); other tools "
      "trace through it.")
class AllowInGraph(nn.Module):
    def forward(self, x):
        return allowed_helper(x) + 1


@case("a nonstrict_trace helper", fix="Nothing for torch.compile; the helper's Python runs while graphs "
      "are made, not on every call.")
class NonstrictTrace(nn.Module):
    def forward(self, x):
        return nonstrict_helper(x) + 1


@case("a torch.fx.wrap helper", fix="Nothing for symbolic_trace (the helper is one node); other tools "
      "trace through it.")
class FxWrap(nn.Module):
    def forward(self, x):
        return python_helper(x) + 1


@case("an fxguide wrapped function (sizes_tensor)", fix="As for torch.fx.wrap.",
      inputs=lambda: ((torch.ones(2, 4),), (torch.ones(3, 4),)))
class FxguideWrapped(nn.Module):
    def forward(self, x):
        return wrapping.sizes_tensor(x) * 2


@case("a Python builtin on a tensor (len)", fix="Use x.shape[0].",
      inputs=lambda: ((torch.ones(2, 4),), (torch.ones(3, 4),)))
class LenOfTensor(nn.Module):
    def forward(self, x):
        return x * len(x)


@case("torch.Tensor subclass output (nn.Parameter)", fix="Return plain tensors.")
class ParameterOutput(nn.Module):
    def forward(self, x):
        return nn.Parameter(x * 2, requires_grad=False)


@case("copy.deepcopy of a tensor", fix="Use x.clone().")
class DeepcopyTensor(nn.Module):
    def forward(self, x):
        import copy
        return copy.deepcopy(x) + 1


@case("torch.jit.script function", fix="Call the Python function, not the scripted one.")
class JitScripted(nn.Module):
    def forward(self, x):
        return torch.jit.script(torch.nn.functional.relu)(x)


class _Doubler(nn.Module):
    """x * 2: the submodule this row scripts; the reproductions of ``dynamo`` and ``fx`` use it too."""

    def forward(self, x):
        return x * 2


@case("a torch.jit.script submodule", fix="Keep the submodule a Python module while capturing (script it "
      "afterwards, if at all): a ScriptModule is TorchScript, which the capture tools do not read as Python.")
class ScriptedSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        with warnings.catch_warnings():  # torch.jit.script's own deprecation notice, once per model built
            warnings.simplefilter("ignore", FutureWarning)
            self.sub = torch.jit.script(_Doubler())

    def forward(self, x):
        return self.sub(x) + 1


# --- The fixes, each run through every tool like the rows above --------------------------------


@torch.library.custom_op("fxguide_atlas::plus_one", mutates_args=())
def plus_one_op(x: torch.Tensor) -> torch.Tensor:
    return x + 1


@plus_one_op.register_fake
def _(x):
    return torch.empty_like(x)


@fix_for(CustomOpNoFake)
class CustomOpWithFake(nn.Module):
    def forward(self, x):
        return plus_one_op(x)


@fix_for(CompilerDisable)
class CustomOpHelper(nn.Module):
    def forward(self, x):
        return doubled_op(x) + 1


@fix_for(NumpyRoundTrip)
class TorchTanh(nn.Module):
    def forward(self, x):
        return torch.tanh(x)


@fix_for(NumpyAsarray)
class TorchMean(nn.Module):
    def forward(self, x):
        return x * x.mean()


@fix_for(TorchCondPrint)
class TorchCondPrintAsNode(nn.Module):
    def forward(self, x):
        def positive(t):
            torch._higher_order_ops.print("positive branch")
            return t + 1
        return torch.cond(x.sum() > 0, positive, lambda t: t - 1, (x,))


@fix_for(TorchCondMutation)
class TorchCondNewValue(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x.clone(),))


@fix_for(TorchCondRanks)
class TorchCondSameRanks(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t.sum(0, keepdim=True), lambda t: t - 1, (x,))


@fix_for(TorchCondAlias)
class TorchCondCopy(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t.clone(), lambda t: t - 1, (x,))


@fix_for(LenOfTensor)
class ShapeInsteadOfLen(nn.Module):
    def forward(self, x):
        return x * x.shape[0]


@fix_for(DeepcopyTensor)
class Clone(nn.Module):
    def forward(self, x):
        return x.clone() + 1


@fix_for(ParameterOutput)
class PlainTensorOutput(nn.Module):
    def forward(self, x):
        return x * 2


@fix_for(JitScripted)
class PythonFunction(nn.Module):
    def forward(self, x):
        return torch.nn.functional.relu(x)
