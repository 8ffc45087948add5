"""Diagnose your own model: every capture tool on it, checked against eager, each failure linked to its fix.

>>> import torch
>>> from fxguide.models import TinyMLP
>>> result = diagnose(TinyMLP(), torch.randn(2, 4))
>>> result.ok, [r.verdict for r in result.results][:2]
(True, ['matches eager', 'matches eager'])

:func:`diagnose` takes the model and its example inputs, as you would call the
model. For each tool (:data:`TOOLS`) it captures the model on the example,
calls the capture on a second input that it makes (the same shapes with other
values; another batch size for the dynamic-batch export), and compares with
eager. A failure gets its first error (type, message, and the line of model
code it came from), a cause class and the guide section that explains the fix
(:mod:`fxguide.diagnose.causes`).

A diagnosis leaves the model as it was (:class:`~fxguide.diagnose.safety.Snapshot`
puts it back after every tool), gives each tool a time limit, and goes on to the
next tool whatever one tool raises. The package is callable:
``fxguide.diagnose(model, x)`` is ``fxguide.diagnose.diagnose(model, x)``.
From a shell: ``python -m fxguide.diagnose package.module:factory --input 1x3x224x224``.

The model-zoo survey of the guide runs through :func:`examine`, with its own
inputs, so the survey and a reader's diagnosis cannot disagree.
"""

from __future__ import annotations

import contextlib
import gc
import io
import logging
import sys
import time
import types
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from fxguide._checks import finite_number
from fxguide.diagnose import captures
from fxguide.diagnose.compare import Inputs, check_inputs, clone, compare, like
from fxguide.diagnose.messages import describe, origin
from fxguide.diagnose.result import TITLES, Diagnosis, ToolResult
from fxguide.diagnose.safety import Snapshot, ToolTimeout, time_limit

TOOLS = ("symbolic_trace", "concrete_trace", "export_strict", "export", "export_dynamic_batch",
         "compile_fullgraph", "library_route")
"""Every tool, in the order a diagnosis runs them (``library_route`` only for timm and torchvision models)."""

CAPTURES: dict[str, captures.Capture] = {
    "symbolic_trace": captures.symbolic_trace,
    "concrete_trace": captures.concrete_trace,
    "export_strict": captures.export_strict,
    "export": captures.export,
    "export_dynamic_batch": captures.export_dynamic_batch,
    "compile_fullgraph": captures.compile_fullgraph,
}
TIMEOUT = 300.0
"""Seconds one tool may take on one model (capture and second call together)."""

EXAMPLE_SEED, OTHER_SEED = 0, 1


def call(module: Callable[..., Any], inputs: Inputs) -> Any:
    """``module(*args, **kwargs)`` on a copy of the inputs, without gradients, torch's global seed fixed.

    The copy keeps a model that writes into its inputs from changing them for the next call.
    """
    if not callable(module):
        raise TypeError(f"call: module must be callable, got {type(module).__name__}")
    args, kwargs = clone(inputs)
    torch.manual_seed(0)
    with torch.no_grad():
        return module(*args, **kwargs)


def run_tool(tool: str, model: nn.Module, example: Inputs, other: Inputs, eager_other: Any,
             timeout: float = TIMEOUT, capture: captures.Capture | None = None) -> ToolResult:
    """Capture ``model`` with ``tool`` (or ``capture``) on ``example``; compare on ``other`` with ``eager_other``.

    Never raises for what the tool or the capture does: the result says it.
    """
    if capture is None and tool not in CAPTURES:
        raise ValueError(f"run_tool: unknown tool {tool!r}; choose from {sorted(CAPTURES)}, or pass capture=")
    if capture is not None and not callable(capture):
        raise TypeError(f"run_tool: capture must be callable as capture(model, args, kwargs), got {capture!r}")
    timeout = finite_number("run_tool", "timeout", timeout, positive=True)
    result = ToolResult(tool)
    start = time.perf_counter()
    try:
        with time_limit(timeout), warnings.catch_warnings(), _quiet():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            try:
                captured, nodes = (capture or CAPTURES[tool])(model, *clone(example))
            except Exception as exc:
                result.error_type, result.error = describe(exc)
                result.where = origin(exc)
                return result
            result.captured, result.nodes = True, nodes
            try:
                got = call(captured, other)
            except Exception as exc:
                result.matches = False
                result.mismatch = "{}: {}".format(*describe(exc))
                result.where = origin(exc)
                return result
            try:
                result.mismatch = compare(got, eager_other)
            except Exception as exc:  # noqa: BLE001 - an output compare() cannot read is a failed comparison
                result.mismatch = "cannot compare the outputs: {}: {}".format(*describe(exc))
            result.matches = not result.mismatch
            return result
    except ToolTimeout as exc:
        if result.captured:
            result.matches, result.mismatch = False, f"Timeout: {exc}"
        else:
            result.error_type, result.error = "Timeout", str(exc)
        return result
    finally:
        if tool == "compile_fullgraph":
            torch._dynamo.reset()
        result.seconds = round(time.perf_counter() - start, 2)


@contextlib.contextmanager
def _quiet() -> Any:
    """Keep what the tools print (torch logs a failing graph, and warnings) out of the reader's output."""
    logger = logging.getLogger("torch")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)


def examine(model: nn.Module, example: Inputs, other: Inputs | None = None,
            batch: Callable[[int, int], Inputs] | None = None, tools: Sequence[str] = TOOLS,
            timeout: float = TIMEOUT, eager_other: Any = None) -> Diagnosis:
    """:func:`diagnose` with every choice open: the tools, the time limit, and the inputs.

    ``other`` is the second input (by default :func:`~fxguide.diagnose.compare.like`
    the example); ``batch(size, seed)`` makes the dynamic-batch export's inputs
    (by default the example's shapes with ``size`` as the first dimension). The
    dynamic-batch export captures on a batch of 2 and compares on a batch of 3.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"diagnose: model must be a torch.nn.Module, got {type(model).__name__}; "
                        "wrap a function in a Module whose forward calls it")
    unknown = [t for t in tools if t not in TOOLS]
    if isinstance(tools, str) or unknown or not tools:
        raise ValueError(f"diagnose: tools must be a non-empty sequence of {list(TOOLS)}, got {tools!r}")
    timeout = finite_number("diagnose", "timeout", timeout, positive=True)
    if batch is not None and not callable(batch):
        raise TypeError(f"diagnose: batch must be a function batch(size, seed) -> (args, kwargs), got {batch!r}")
    args, kwargs = check_inputs("diagnose", example)
    other = check_inputs("diagnose", other) if other is not None else like((args, kwargs), OTHER_SEED)
    batch = batch or (lambda size, seed: like((args, kwargs), seed, batch=size))
    snapshot = Snapshot(model)
    if eager_other is None:
        for inputs, which in (((args, kwargs), "the example inputs"), (other, "the second input diagnose made")):
            try:
                eager_other = call(model, inputs)
            except Exception as exc:
                exc.add_note(f"fxguide.diagnose: the model raises this in eager mode on {which}, so no capture "
                             "can be compared with it; check the inputs"
                             + (", or pass your own with examine(model, example, other=...)"
                                if inputs is other else ""))
                raise
            finally:
                snapshot.restore()
    diagnosis = Diagnosis(type(model).__name__, describe_inputs((args, kwargs)))
    for tool in tools:
        capture = None
        inputs: tuple[Inputs, Inputs, Any] = ((args, kwargs), other, eager_other)
        if tool == "library_route":
            library = captures.library_of(model)
            if library is None:
                continue
            capture = captures.LIBRARY_ROUTES[library]
        if tool == "export_dynamic_batch":
            try:
                with time_limit(timeout):
                    batch_other = batch(3, OTHER_SEED)
                    inputs = (batch(2, EXAMPLE_SEED), batch_other, call(model, batch_other))
            except (Exception, ToolTimeout) as exc:
                snapshot.restore()
                diagnosis.results.append(ToolResult(tool, captured=None,
                                                    error="eager fails on a batch of 3: {}: {}".format(*describe(exc))))
                continue
        diagnosis.results.append(run_tool(tool, model, *inputs, timeout, capture))
        snapshot.restore()
        gc.collect()
    diagnosis.unchanged = not snapshot.differences()
    return diagnosis


def diagnose(model: nn.Module, *example_args: Any, **example_kwargs: Any) -> Diagnosis:
    """Run every capture tool on ``model`` called as ``model(*example_args, **example_kwargs)``.

    Returns a :class:`~fxguide.diagnose.result.Diagnosis`: print it for a table,
    or use ``to_json()`` and ``to_markdown()``. For other tools, inputs or time
    limits, call :func:`examine`.
    """
    return examine(model, (example_args, example_kwargs))


def describe_inputs(inputs: Inputs) -> str:
    """The inputs' shapes, as ``x 1x3x224x224`` style text.

    >>> describe_inputs(((torch.zeros(1, 3),), {"mask": torch.ones(1, 3, dtype=torch.bool)}))
    '1x3 float32, mask=1x3 bool'
    """
    def one(value: Any) -> str:
        if isinstance(value, torch.Tensor):
            return "x".join(map(str, value.shape)) + " " + str(value.dtype).removeprefix("torch.")
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(one(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k}: {one(v)}" for k, v in value.items()) + "}"
        return repr(value) if len(repr(value)) <= 20 else type(value).__name__
    args, kwargs = inputs
    return ", ".join([*(one(a) for a in args), *(f"{k}={one(v)}" for k, v in kwargs.items())]) or "no inputs"


class _CallableModule(types.ModuleType):
    """The package itself is callable: ``fxguide.diagnose(model, x)``."""

    def __call__(self, model: nn.Module, *example_args: Any, **example_kwargs: Any) -> Diagnosis:
        return diagnose(model, *example_args, **example_kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["CAPTURES", "TIMEOUT", "TITLES", "TOOLS", "Diagnosis", "ToolResult", "call", "diagnose",
           "describe_inputs", "examine", "run_tool"]
