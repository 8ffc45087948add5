"""Dynamo's graph breaks, raised under ``torch.compile(fullgraph=True)``: first every id the atlas meets, then
the frequent ones (data-dependent code, unsupported builtins, generators, context managers...).

Each fix runs under the same tool and returns what eager mode returns. Where a
fix is a setting (``capture_scalar_outputs``), the code is unchanged and the
setting is the fix's ``around``.
"""

import copy
import logging
import inspect
import json
import os
import threading
import time

import numpy as np
import torch
from torch import nn

from fxguide.atlas.cases import calls_out, randomness, side_effects
from fxguide.atlas.repros import fix_of, repro

log = logging.getLogger("fxguide.repros")
FULL = "compile fullgraph"


def scalar_outputs():
    return torch._dynamo.config.patch(capture_scalar_outputs=True)


def dynamic_output_shapes():
    return torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)


def signs() -> tuple[tuple, tuple]:
    """A positive input, then a negative one: value-dependent code takes the other branch."""
    return (torch.ones(2, 4),), (-torch.ones(2, 4),)


def masks() -> tuple[tuple, tuple]:
    """Two inputs with another number of positive elements."""
    return (torch.tensor([[1.0, -1.0, 2.0, -2.0]]),), (torch.tensor([[1.0, 1.0, 2.0, -2.0]]),)


# --- the ids the atlas meets ------------------------------------------------------------------------------


@repro("logging.Logger method not supported", tool=FULL, entry="GB0291",
       cause="Dynamo cannot put a logger call into a graph; with fullgraph=True it cannot break the graph either.")
class LoggerDebug(nn.Module):
    def forward(self, x):
        log.debug("input %s", x.shape)
        return x + 1


def reorder_debug():
    return torch._dynamo.config.patch(reorderable_logging_functions={log.debug})


@fix_of(LoggerDebug, around=reorder_debug)
class LoggerDebugReordered(nn.Module):
    """Dynamo is told to run ``log.debug`` after the graph; its arguments are constants."""

    def forward(self, x):
        log.debug("rows %d", x.shape[0])
        return x + 1


@repro("attempted to reorder a debugging function that can't actually be reordered", tool=FULL, entry="GB0296",
       around=reorder_debug,
       cause="A reordered logging call may take only tensors, constants and format strings; x.shape is none.")
class ReorderedWithShape(nn.Module):
    def forward(self, x):
        log.debug("input %s", x.shape)
        return x + 1


@fix_of(ReorderedWithShape, around=reorder_debug)
class ReorderedWithInt(nn.Module):
    def forward(self, x):
        log.debug("rows %d", x.shape[0])
        return x + 1


@repro("Unsupported python_type() call (logging.info)", tool=FULL, entry="GB4841",
       cause="The root logger's module-level functions are not traceable.")
class RootLoggingInfo(nn.Module):
    def forward(self, x):
        logging.info("forward ran")
        return x + 1


@fix_of(RootLoggingInfo, around=lambda: torch._dynamo.config.patch(reorderable_logging_functions={logging.info}))
class RootLoggingInfoReordered(nn.Module):
    def forward(self, x):
        logging.info("forward ran")
        return x + 1


@repro("Unresolved GetAttrVariable comparison (getLogger)", tool=FULL, entry="GB6215",
       cause="logging.getLogger inside forward compares a logger attribute Dynamo cannot resolve.")
class GetLoggerInForward(nn.Module):
    def forward(self, x):
        logging.getLogger("fxguide.repros").debug("forward ran")
        return x + 1


@fix_of(GetLoggerInForward)
class LoggerAtModuleLevel(nn.Module):
    """The logger is looked up once, outside forward, and not called in the graph."""

    def forward(self, x):
        return x + 1


@repro("Attempted to call function marked as skipped (time.perf_counter)", tool=FULL, entry="GB0007",
       cause="time.perf_counter is a C function Dynamo skips: it cannot run it inside a graph.")
class PerfCounter(nn.Module):
    def forward(self, x):
        start = time.perf_counter()
        return x + 1, time.perf_counter() - start > 0


@fix_of(PerfCounter)
class TimedOutside(nn.Module):
    """Time the call from outside the compiled model."""

    def forward(self, x):
        return x + 1, True


@repro("Data dependent operator (np.asarray of a tensor)", tool="compile", entry="GB0033",
       cause="Converting a tensor to NumPy reads its data, which the graph does not have.")
class NumpyAsarray(nn.Module):
    def forward(self, x):
        return x * float(np.asarray(x).mean())


@fix_of(NumpyAsarray)
class TorchInsteadOfNumpy(nn.Module):
    def forward(self, x):
        return x * x.mean()


@repro("Dynamic shape operator (boolean mask)", tool="compile", entry="GB0036", inputs=masks,
       cause="x[x > 0] has a size that depends on values; Dynamo refuses it unless told to capture such ops.")
class BooleanMask(nn.Module):
    def forward(self, x):
        return x[x > 0]


@fix_of(BooleanMask, around=dynamic_output_shapes)
class BooleanMaskCaptured(nn.Module):
    """Unchanged code, with ``capture_dynamic_output_shape_ops=True``."""

    def forward(self, x):
        return x[x > 0]


@repro("Encountered aliasing during higher order op tracing", tool=FULL, entry="GB0040",
       cause="A torch.cond branch returns its input itself; branch outputs may not alias inputs.")
class CondReturnsInput(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t, lambda t: t - 1, (x,))


@fix_of(CondReturnsInput)
class CondReturnsClone(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t.clone(), lambda t: t - 1, (x,))


@repro("Encountered input mutation during higher order op tracing", tool=FULL, entry="GB0041",
       cause="A torch.cond branch updates its input in place; branches must be functional.")
class CondMutatesInput(nn.Module):
    def forward(self, x):
        def positive(t):
            t.add_(1)
            return t.clone()
        return torch.cond(x.sum() > 0, positive, lambda t: t - 1, (x.clone(),))


@fix_of(CondMutatesInput)
class CondNewValue(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x.clone(),))


@repro("Failed to convert args/kwargs to proxy (torch.Generator)", tool=FULL, entry="GB0055",
       cause="A torch.Generator object cannot be an argument of a graph op.")
class OwnGenerator(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = torch.Generator().manual_seed(0)

    def forward(self, x):
        return x + torch.randn(x.shape, generator=self.generator)


fix_of(OwnGenerator)(randomness.GlobalGenerator)  # the atlas's: draw from the global generator


@repro("Failed to trace builtin operator (open)", tool=FULL, entry="GB0059",
       cause="A file opened in forward is I/O Dynamo does not trace.")
class WritesFile(nn.Module):
    def forward(self, x):
        with open(os.devnull, "w") as sink:
            sink.write("forward ran")
        return x + 1


@fix_of(WritesFile)
class NoFileInForward(nn.Module):
    """Write from outside the compiled model."""

    def forward(self, x):
        return x + 1


@torch.compiler.disable
def disabled_double(x):
    return x * 2


@repro("Skip calling `torch.compiler.disable()`d function", tool=FULL, entry="GB0098",
       cause="A function marked torch.compiler.disable always breaks the graph; fullgraph=True forbids that.")
class CallsDisabled(nn.Module):
    def forward(self, x):
        return disabled_double(x) + 1


@fix_of(CallsDisabled)
class CallsPlainFunction(nn.Module):
    def forward(self, x):
        return x * 2 + 1


@repro("Tensor.tolist() with non-integer tensor", tool=FULL, entry="GB0109",
       cause="tolist() turns values into Python floats, which a graph cannot hold.")
class ToList(nn.Module):
    def forward(self, x):
        return torch.tensor([v * 2 for v in x[0].tolist()])


@fix_of(ToList)
class ToListAsTensorOps(nn.Module):
    def forward(self, x):
        return x[0] * 2


@repro("Unsupported Tensor.backward() call", tool=FULL, entry="GB0123",
       cause="Calling backward() inside the compiled forward is not traced; compile the loss and call backward outside.")
class BackwardInForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))

    def forward(self, x):
        (x * self.weight).sum().backward()
        return x + 1


@fix_of(BackwardInForward)
class LossOnly(nn.Module):
    """Return the loss; the caller runs ``loss.backward()`` after the compiled call."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return (x * self.weight).sum().detach()


@repro("Unsupported Tensor.item() call with capture_scalar_outputs=False", tool="compile", entry="GB0124",
       cause=".item() makes a Python number out of a value the graph does not know.")
class ItemArithmetic(nn.Module):
    def forward(self, x):
        return x / x.max().item()


@fix_of(ItemArithmetic, around=scalar_outputs)
class ItemCaptured(nn.Module):
    """Unchanged code, with ``capture_scalar_outputs=True``."""

    def forward(self, x):
        return x / x.max().item()


@repro("Unsupported Tensor.requires_grad_() call", tool=FULL, entry="GB0125",
       cause="requires_grad_() on an input changes autograd state Dynamo cannot trace.")
class RequiresGradInput(nn.Module):
    def forward(self, x):
        x.requires_grad_()
        return (x * 2).detach()


@fix_of(RequiresGradInput)
class RequiresGradOutside(nn.Module):
    """The caller sets requires_grad on the input before the call."""

    def forward(self, x):
        return (x * 2).detach()


@repro("Unsupported method call (sys.stdout.write)", tool=FULL, entry="GB0156",
       cause="A method of a Python object Dynamo does not model (a stream) cannot be called in the graph.")
class StdoutWrite(nn.Module):
    def forward(self, x):
        import sys
        sys.stdout.write("forward ran\n")
        return x + 1


fix_of(StdoutWrite)(side_effects.PrintAsNode)  # the atlas's: a print node in the graph


@repro("Data-dependent branching", tool=FULL, entry="GB0170", inputs=signs,
       cause="An if on a tensor's value: the graph would hold one branch only.")
class BoolBranch(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


@fix_of(BoolBranch)
class BoolBranchAsWhere(nn.Module):
    def forward(self, x):
        return torch.where(x.sum() > 0, x + 1, x - 1)


class ItemBranch(nn.Module):
    """An if on .item(): registered under export and make_fx (torch.compile breaks the graph instead)."""

    def forward(self, x):
        if x.sum().item() > 0:
            return x + 1
        return x - 1


fix_of(ItemBranch)(BoolBranchAsWhere)


@repro("torch.* op returned non-Tensor (fork_rng)", tool=FULL, entry="GB0208",
       cause="torch.random.fork_rng is a context manager whose calls return Python objects, not tensors.")
class ForkRng(nn.Module):
    def forward(self, x):
        with torch.random.fork_rng():
            torch.manual_seed(0)
            return x + torch.rand(())


@fix_of(ForkRng)
class FixedNoise(nn.Module):
    """The draw made once, when the model is built, and kept as a buffer."""

    def __init__(self):
        super().__init__()
        with torch.random.fork_rng():
            torch.manual_seed(0)
            self.register_buffer("noise", torch.rand(()))

    def forward(self, x):
        return x + self.noise


@repro("Attempted to use `torch.nn.Parameter()` constructor with Dynamo", tool=FULL, entry="GB0264",
       cause="A parameter made inside forward is module state made at run time.")
class ParameterInForward(nn.Module):
    def forward(self, x):
        weight = nn.Parameter(torch.ones(4))
        return (x * weight).detach()


@fix_of(ParameterInForward)
class ParameterInInit(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return (x * self.weight).detach()


@repro("Attempted to copy.deepcopy a tensor", tool=FULL, entry="GB4198",
       cause="copy.deepcopy of a tensor is not traced; clone it.")
class DeepcopyTensor(nn.Module):
    def forward(self, x):
        return copy.deepcopy(x) + 1


@fix_of(DeepcopyTensor)
class Clone(nn.Module):
    def forward(self, x):
        return x.clone() + 1


@torch.library.custom_op("fxguide_repros::no_fake", mutates_args=())
def no_fake_op(x: torch.Tensor) -> torch.Tensor:
    return x.nonzero().float().sum() + x


@repro("RuntimeError when making fake tensor call (custom op without a fake kernel)", tool=FULL, entry="GB4315",
       cause="A custom op has no fake (meta) kernel, so Dynamo cannot know its output's shape.")
class CustomOpNoFake(nn.Module):
    def forward(self, x):
        return no_fake_op(x)


fix_of(CustomOpNoFake)(calls_out.CustomOpWithFake)  # the atlas's: the op with a fake kernel


@repro("returning intermediate with requires_grad_()", tool=FULL, entry="GB7324",
       cause="An intermediate set to require grad inside the graph and returned cannot be made by AOT Autograd.")
class RequiresGradIntermediate(nn.Module):
    def forward(self, x):
        y = x * 2
        y.requires_grad_()
        return y


@fix_of(RequiresGradIntermediate)
class RequiresGradAfterCall(nn.Module):
    """Return the value; the caller calls requires_grad_() on it."""

    def forward(self, x):
        return x * 2


@repro("using `torch.autograd.grad` with trace_autograd_ops=False", tool=FULL, entry="GB9186",
       cause="torch.autograd.grad inside forward is not traced by default.")
class AutogradGrad(nn.Module):
    def forward(self, x):
        x = x.detach().requires_grad_()
        (grad,) = torch.autograd.grad((x * x).sum(), x)
        return grad.detach()


@fix_of(AutogradGrad)
class GradByHand(nn.Module):
    """The gradient of sum(x * x) written out."""

    def forward(self, x):
        return 2 * x


# --- frequent graph breaks beyond the atlas ----------------------------------------------------------------


@repro("Call to `torch._dynamo.graph_break()`", tool=FULL, entry="GB0025",
       cause="An explicit graph break left in the code; fullgraph=True refuses every break.")
class ExplicitBreak(nn.Module):
    def forward(self, x):
        x = x + 1
        torch._dynamo.graph_break()
        return x * 2


@fix_of(ExplicitBreak)
class NoExplicitBreak(nn.Module):
    def forward(self, x):
        return (x + 1) * 2


@repro("Observed exception", tool=FULL, entry="GB0088",
       cause="forward raises a Python exception while Dynamo traces it (here a KeyError from a dict lookup).")
class RaisesKeyError(nn.Module):
    def forward(self, x):
        scales = {"a": 2.0}
        return x * scales["b"]


@fix_of(RaisesKeyError)
class DictGetDefault(nn.Module):
    def forward(self, x):
        scales = {"a": 2.0}
        return x * scales.get("b", 1.0)


@repro("Tensor.numpy() with trace_numpy=False", tool=FULL, entry="GB0105",
       around=lambda: torch._dynamo.config.patch(trace_numpy=False),
       cause="With trace_numpy off, Tensor.numpy() leaves the graph.")
class TensorNumpy(nn.Module):
    def forward(self, x):
        return torch.from_numpy(x.numpy() * 2)


@fix_of(TensorNumpy)
class TensorNumpyTraced(nn.Module):
    """Unchanged code under the default trace_numpy=True: Dynamo turns the NumPy calls into torch ops."""

    def forward(self, x):
        return torch.from_numpy(x.numpy() * 2)


@repro("setattr() on Tensor.requires_grad", tool=FULL, entry="GB0206",
       cause="Setting requires_grad by assignment inside the graph changes autograd state.")
class SetRequiresGrad(nn.Module):
    def forward(self, x):
        y = x * 2
        y.requires_grad = True
        return y.detach()


@fix_of(SetRequiresGrad)
class NoRequiresGrad(nn.Module):
    def forward(self, x):
        return (x * 2).detach()


@repro("Could not guard on data-dependent expression (bool of a tensor)", tool=FULL, entry="06c441e023",
       cause="A Python decision (which function to call) made from a tensor's value, which the graph does not know.")
class GetattrByValue(nn.Module):
    def forward(self, x):
        name = "relu" if bool(torch.ones(())) else "tanh"
        return getattr(torch, name)(x)


@fix_of(GetattrByValue)
class GetattrByConstant(nn.Module):
    def forward(self, x):
        return torch.relu(x)


LOCK = threading.Lock()


@repro("Unsupported context manager", tool=FULL, entry="GB0142",
       cause="A context manager Dynamo does not know (a threading.Lock) cannot be entered in the graph.")
class HoldsLock(nn.Module):
    def forward(self, x):
        with LOCK:
            return x + 1


@fix_of(HoldsLock)
class LockOutside(nn.Module):
    """Take the lock around the compiled call, not inside it."""

    def forward(self, x):
        return x + 1


@repro("Comparison on compile-time-only id or hash value", tool=FULL, entry="GB9316",
       cause="id() of an object made in the graph has no value at trace time.")
class IdOfTensor(nn.Module):
    def forward(self, x):
        y = x + 1
        return y, id(y) > 0


@fix_of(IdOfTensor)
class NoId(nn.Module):
    def forward(self, x):
        return x + 1, True


@repro("Tensor.uniform_ op called with `from` keyword", tool=FULL, entry="GB0110",
       cause="uniform_ takes `from` as a keyword Dynamo cannot pass on; give the bounds positionally.")
class UniformFromKeyword(nn.Module):
    def forward(self, x):
        return x + torch.empty(4).uniform_(**{"from": 0.0, "to": 1.0}) * 0


@fix_of(UniformFromKeyword)
class UniformPositional(nn.Module):
    def forward(self, x):
        return x + torch.empty(4).uniform_(0.0, 1.0) * 0


@repro("attempted to trace numpy function with config.trace_numpy=False", tool=FULL, entry="GB0293",
       around=lambda: torch._dynamo.config.patch(trace_numpy=False),
       cause="With trace_numpy off, NumPy functions are not turned into torch ops.")
class NumpyFunction(nn.Module):
    def forward(self, x):
        return x + float(np.sqrt(4.0)) + np.float32(0).item()


@fix_of(NumpyFunction)
class MathInTorch(nn.Module):
    def forward(self, x):
        return x + 2.0


@repro("Attempted to inline function marked as skipped (detect_anomaly)", tool=FULL, entry="GB0008",
       cause="torch.autograd.detect_anomaly's code lives in a module Dynamo skips.")
class DetectAnomaly(nn.Module):
    def forward(self, x):
        with torch.autograd.detect_anomaly():
            return x + 1


@fix_of(DetectAnomaly)
class AnomalyOutside(nn.Module):
    """Turn anomaly detection on around the call (or while debugging in eager mode)."""

    def forward(self, x):
        return x + 1


@repro("Argument of `as_subclass` must be a non-dispatcher-style tensor subclass", tool=FULL, entry="GB0001",
       cause="as_subclass inside the graph changes a tensor's Python class, which Dynamo does not trace.")
class AsSubclass(nn.Module):
    def forward(self, x):
        return x.as_subclass(torch.Tensor) + 1


@fix_of(AsSubclass)
class PlainTensor(nn.Module):
    def forward(self, x):
        return x + 1


@repro("requires_grad_() intermediate leaked as output", tool="compile", entry="GB8985",
       cause="An intermediate set to require grad and returned: Dynamo breaks the graph around it.")
class RequiresGradLeaked(nn.Module):
    def forward(self, x):
        y = x * 2
        y.requires_grad_()
        return y


@fix_of(RequiresGradLeaked)
class RequiresGradSetByCaller(nn.Module):
    def forward(self, x):
        return x * 2


@repro("Unhandled tensor method (round(tensor))", tool=FULL, entry="GB6270",
       cause="Python's round() on a tensor calls Tensor.__round__, which Dynamo does not handle.")
class RoundBuiltin(nn.Module):
    def forward(self, x):
        return x * round(x.sum())


@fix_of(RoundBuiltin)
class TorchRound(nn.Module):
    def forward(self, x):
        return x * torch.round(x.sum())


@repro("sort with non-constant keys", tool=FULL, entry="GB0207",
       cause="sorted() of tensors compares values the graph does not have.")
class SortedTensors(nn.Module):
    def forward(self, x):
        low, high = sorted([x.sum(), x.mean()])
        return x * low + high


@fix_of(SortedTensors)
class MinMaxTensors(nn.Module):
    def forward(self, x):
        pair = torch.stack([x.sum(), x.mean()])
        return x * pair.min() + pair.max()


@repro("repr() on tensor (str(x))", tool=FULL, entry="GB0569",
       cause="Formatting a tensor as text reads its values.")
class StrOfTensor(nn.Module):
    def forward(self, x):
        return x * len(str(x))


@fix_of(StrOfTensor)
class NoTextInForward(nn.Module):
    """Format the tensor outside forward; the graph keeps the arithmetic."""

    def forward(self, x):
        return x * 61


@repro("Attempted to call function marked as skipped (time.time)", tool=FULL, entry="GB0007",
       cause="time.time is a C function Dynamo skips.")
class TimeTime(nn.Module):
    def forward(self, x):
        return x * (time.time() > 0)


@fix_of(TimeTime)
class NoClock(nn.Module):
    def forward(self, x):
        return x * True


@repro("Unsupported method call (json.dumps)", tool=FULL, entry="GB0156",
       cause="json's encoder is C code Dynamo cannot trace.")
class JsonDumps(nn.Module):
    def forward(self, x):
        return x * len(json.dumps({"a": 1}))


@fix_of(JsonDumps)
class JsonOutside(nn.Module):
    def __init__(self):
        super().__init__()
        self.width = len(json.dumps({"a": 1}))  # computed once, when the model is built

    def forward(self, x):
        return x * self.width


@repro("Unsupported method call (inspect.signature)", tool=FULL, entry="GB0156",
       cause="inspect.signature calls into C code Dynamo does not trace; read the signature once, outside forward.")
class InspectSignature(nn.Module):
    def forward(self, x):
        return x * len(inspect.signature(nn.functional.relu).parameters)


@fix_of(InspectSignature)
class SignatureOutside(nn.Module):
    def __init__(self):
        super().__init__()
        self.count = len(inspect.signature(nn.functional.relu).parameters)

    def forward(self, x):
        return x * self.count


@repro("Observed exception (Tensor.data_ptr())", tool=FULL, entry="GB0088",
       cause="A fake tensor has no storage: data_ptr() raises while Dynamo traces.")
class DataPtr(nn.Module):
    def forward(self, x):
        return x * (x.data_ptr() > 0)


@fix_of(DataPtr)
class NoDataPtr(nn.Module):
    def forward(self, x):
        return x * True


@repro("Failed to trace builtin operator (globals())", tool=FULL, entry="GB0059",
       cause="globals() returns the module's namespace, which Dynamo does not build.")
class CallsGlobals(nn.Module):
    def forward(self, x):
        return x * ("torch" in globals())


@fix_of(CallsGlobals)
class NoGlobals(nn.Module):
    def forward(self, x):
        return x * True


@repro("Unsupported method call (contextlib.redirect_stdout)", tool=FULL, entry="GB0156",
       cause="Redirecting stdout swaps a stream object Dynamo does not model.")
class RedirectStdout(nn.Module):
    def forward(self, x):
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()):
            return x + 1


@fix_of(RedirectStdout)
class RedirectOutside(nn.Module):
    def forward(self, x):
        return x + 1


@repro("Attempted to inline function marked as skipped (torch.manual_seed)", tool=FULL, entry="GB0008",
       cause="Seeding inside forward changes global state Dynamo does not trace; seed before the call.")
class SeedsInForward(nn.Module):
    def forward(self, x):
        torch.manual_seed(0)
        return x + torch.rand(4)


@fix_of(SeedsInForward)
class SeedOutside(nn.Module):
    """The caller seeds before the call; forward only draws."""

    def forward(self, x):
        return x + torch.rand(4)


@repro("torch.Generator method", tool=FULL, entry="GB7650",
       cause="Calling a method of a torch.Generator (manual_seed) inside the graph is not traced.")
class GeneratorReseeded(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = torch.Generator()

    def forward(self, x):
        return x + torch.rand(4, generator=self.generator.manual_seed(0))


@fix_of(GeneratorReseeded)
class NoiseAsBuffer(nn.Module):
    """The seeded draw made once, when the model is built."""

    def __init__(self):
        super().__init__()
        self.register_buffer("noise", torch.rand(4, generator=torch.Generator().manual_seed(0)))

    def forward(self, x):
        return x + self.noise


@repro("Can't convert torch._check*() message closure", tool=FULL, entry="GB9158",
       cause="The message of torch._check is a closure over a tensor; Dynamo can only keep constant messages.")
class CheckWithTensorMessage(nn.Module):
    def forward(self, x):
        torch._check(x.shape[0] > 0, lambda: f"empty input {x}")
        return x + 1


@fix_of(CheckWithTensorMessage)
class CheckWithConstantMessage(nn.Module):
    def forward(self, x):
        torch._check(x.shape[0] > 0, lambda: "empty input")
        return x + 1


@repro("Attempted to wrap sparse Tensor with VariableTracker", tool=FULL, entry="GB0277",
       cause="Sparse tensors are not traced by Dynamo.")
class SparseRoundTrip(nn.Module):
    def forward(self, x):
        return x.to_sparse().to_dense() * 2


@fix_of(SparseRoundTrip)
class DenseOnly(nn.Module):
    def forward(self, x):
        return x * 2


@repro("Attempted to use `torch.nn.Parameter()` constructor with Dynamo (a layer built in forward)", tool=FULL,
       entry="GB0264", cause="nn.Linear built inside forward makes new parameters on every call.")
class LayerInForward(nn.Module):
    def forward(self, x):
        return nn.Linear(4, 4)(x).detach()


@fix_of(LayerInForward)
class LayerInInit(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return self.linear(x).detach()


@repro("Attempted to call function marked as skipped (torch.jit.script in forward)", tool=FULL, entry="GB0008",
       cause="TorchScript compilation inside forward is not Python Dynamo can trace.")
class ScriptsInForward(nn.Module):
    def forward(self, x):
        return torch.jit.script(nn.functional.relu)(x)


@fix_of(ScriptsInForward)
class PlainRelu(nn.Module):
    def forward(self, x):
        return nn.functional.relu(x)


# The atlas row's model ("a torch.jit.script submodule"), registered here as the reproduction of its message.
repro("torch.jit.script/freeze modules unsupported (a scripted submodule)", tool=FULL, entry="GB4695",
      cause="A submodule made with torch.jit.script is TorchScript: Dynamo cannot trace into it, and fullgraph "
            "forbids the break.")(calls_out.ScriptedSubmodule)


@fix_of(calls_out.ScriptedSubmodule)
class PythonSubmoduleCall(nn.Module):
    """The submodule kept a Python module while capturing."""

    def __init__(self):
        super().__init__()
        self.sub = calls_out._Doubler()

    def forward(self, x):
        return self.sub(x) + 1


class HookedLinear(nn.Module):
    def __init__(self, hook: bool = True):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        if hook:
            self.linear.register_full_backward_hook(lambda module, grad_in, grad_out: None)

    def forward(self, x):
        return self.linear(x).detach()


@repro("Module-level backwards hooks require compiled autograd.", tool=FULL, entry="GB0083",
       cause="A full backward hook on a submodule runs in the backward pass, which Dynamo alone does not capture.")
class BackwardHook(HookedLinear):
    pass


@fix_of(BackwardHook)
class HookOnTheOutside(HookedLinear):
    """Compile the layer without the hook; hook the compiled module's output tensor (register_hook) instead."""

    def __init__(self):
        super().__init__(hook=False)


@repro("Attempt to trace generator", tool="torch.compile(generator function)", entry="GB0003",
       cause="torch.compile was given a generator function; Dynamo compiles functions that return.")
def compile_generator():
    def steps(x):
        yield x + 1
        yield x + 2
    torch._dynamo.reset()
    list(torch.compile(steps, fullgraph=True, backend="aot_eager")(torch.ones(2, 4)))


@fix_of(compile_generator)
def compile_list_function():
    """Return the steps as a list (or compile the body of each step)."""
    def steps(x):
        return [x + 1, x + 2]
    torch._dynamo.reset()
    x = torch.ones(2, 4)
    return torch.compile(steps, fullgraph=True, backend="aot_eager")(x), steps(x)


@repro("Failed to mutate tensor data attribute", tool=FULL, entry="GB0056",
       cause="Assigning to .data of a tensor made inside forward swaps its storage behind autograd's back; Dynamo "
             "allows it only on tensors made outside the compiled region.")
class DataAssignment(nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x)
        out.data = x.relu()
        return out


@fix_of(DataAssignment)
class NewValueReturned(nn.Module):
    """Return the new value (or write it in place with out.copy_(...))."""

    def forward(self, x):
        return x.relu()


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.rnn = nn.LSTM(4, 3, batch_first=True)

    def forward(self, x):
        output, _ = self.rnn(x.unsqueeze(0))
        return output.detach()


@repro("Attempted to wrap RNN, GRU, or LSTM", tool=FULL, entry="GB0014",
       cause="Dynamo does not trace nn.LSTM, nn.GRU or nn.RNN by default (allow_rnn is off), and fullgraph=True "
             "forbids running them outside the graph.")
class LstmLayer(Recurrent):
    pass


@fix_of(LstmLayer, around=lambda: torch._dynamo.config.patch(allow_rnn=True))
class LstmLayerAllowed(Recurrent):
    """Unchanged code, with ``torch._dynamo.config.allow_rnn=True``."""


@repro("Invalid call to __build_class__ (a class defined in forward)", tool=FULL, entry="GB8977",
       cause="A class statement inside forward builds a new class on every call, which Dynamo does not trace.")
class ClassInForward(nn.Module):
    def forward(self, x):
        class Pair:
            def __init__(self, low, high):
                self.low, self.high = low, high

        pair = Pair(x.min(), x.max())
        return (x - pair.low) / (pair.high - pair.low)


class Pair:
    """The class of ``ClassAtModuleLevel``, defined once, at module level."""

    def __init__(self, low, high):
        self.low, self.high = low, high


@fix_of(ClassInForward)
class ClassAtModuleLevel(nn.Module):
    def forward(self, x):
        pair = Pair(x.min(), x.max())
        return (x - pair.low) / (pair.high - pair.low)


@repro("Attempted to use tensor creation function with requires_grad=True", tool=FULL, entry="GB0225",
       cause="A tensor made with requires_grad=True inside forward is a new leaf on every call: a weight to train "
             "belongs in __init__, as a parameter.")
class LeafInForward(nn.Module):
    def forward(self, x):
        scale = torch.ones(4, requires_grad=True)
        return (x * scale).detach()


fix_of(LeafInForward)(ParameterInInit)  # the same fix: a weight made once, in __init__


def labels() -> tuple[tuple, tuple]:
    """Two vectors of class labels 0 to 3, each with the largest label present."""
    return (torch.tensor([0, 2, 1, 3]),), (torch.tensor([3, 1, 0, 2]),)


@repro("Attempted to use `torch.nn.functional.one_hot` with data-dependent output shape", tool=FULL,
       entry="GB0246", inputs=labels,
       cause="one_hot without num_classes takes the number of classes from the largest label, a value the graph "
             "does not know.")
class OneHotInferred(nn.Module):
    def forward(self, x):
        return nn.functional.one_hot(x)


@fix_of(OneHotInferred)
class OneHotNumClasses(nn.Module):
    def forward(self, x):
        return nn.functional.one_hot(x, num_classes=4)


@repro("Unsupported Tensor.resize_() call", tool=FULL, entry="GB0126",
       cause="resize_() changes a tensor's size and storage in place, which Dynamo does not trace.")
class ResizeInPlace(nn.Module):
    def forward(self, x):
        flat = x.clone()
        flat.resize_(x.numel())
        return flat * 2


@fix_of(ResizeInPlace)
class ReshapeInstead(nn.Module):
    def forward(self, x):
        return x.reshape(-1) * 2


@repro("Tensor.retain_grad() with AOTDispatcher", tool=FULL, entry="GB0108",
       cause="retain_grad() asks autograd to keep an intermediate's gradient; the compiled graph's backward does "
             "not keep intermediates.")
class RetainGrad(nn.Module):
    def forward(self, x):
        hidden = x * 2
        hidden.retain_grad()
        return hidden.relu()


@fix_of(RetainGrad)
class HiddenReturned(nn.Module):
    """Return the intermediate too; the caller reads its gradient (hidden.register_hook) outside the graph."""

    def forward(self, x):
        hidden = x * 2
        return hidden.relu()
