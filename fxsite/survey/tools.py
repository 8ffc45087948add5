"""Capture one model with each tool and record what happened.

The tools (:data:`TOOLS`):

- ``symbolic_trace``: ``torch.fx.symbolic_trace``, with every ``forward``
  parameter the example does not pass bound to its default (``concrete_args``),
  as a user would;
- ``concrete_trace``: fxguide's :func:`fxguide.tracing.concrete.concrete_trace`;
- ``library_route``: the FX route the model's own library gives its users, with
  that library's tracer settings: timm's ``create_feature_extractor`` (its
  registered leaf modules and wrapped functions), torchvision's
  ``create_feature_extractor``, each asked for the graph's last node as timm's
  own FX tests do (Hugging Face models: none; transformers 5 has no FX tracer);
- ``export``: ``torch.export.export`` on the example (static shapes);
- ``export_dynamic_batch``: ``torch.export.export`` on a batch of 2 with
  ``Dim.AUTO`` on the first dimension of every tensor input.

For each tool :func:`survey_model` records whether it captured the model, the
exception type and the first line of its message (normalized by
:func:`normalize`), the node count of the captured graph, and whether the
captured module gives the eager result on a second input: other values of the
same shape, or a batch of 3 for the dynamic-batch export.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import math
import re
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from fxsite.survey.catalogue import Entry

TOOLS = ("symbolic_trace", "library_route", "concrete_trace", "export", "export_dynamic_batch")
# The library routes run last: their extractors switch the model to train mode and back (which
# resets mode-dependent caches, LeViT's attention biases say), and one that fails midway leaves
# train mode behind; every tool also gets the modules' modes restored after it.
RUN_ORDER = ("symbolic_trace", "concrete_trace", "export", "export_dynamic_batch", "library_route")
RTOL, ATOL = 1e-3, 1e-4  # atol is scaled by the largest magnitude of the eager output
TOOL_TIMEOUT = 300  # seconds one tool may take on one model
EXAMPLE_SEED, OTHER_SEED = 0, 1

# The fields the sample test compares; timings and differences are not compared.
COMPARED = ("captured", "error_type", "error", "nodes", "matches", "mismatch")


class ToolTimeout(BaseException):
    """A tool ran past :data:`TOOL_TIMEOUT` (a BaseException, so no model code swallows it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`ToolTimeout` in the block after ``seconds`` (main thread only; elsewhere no limit)."""
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise ToolTimeout(f"took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# -- Messages ---------------------------------------------------------------------

_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
_SITE = re.compile(r"(?:/[^\s'\"():,]+)*/(?:site|dist)-packages/")
_PATH = re.compile(r"(?<![\w.>])(?:/[\w.+-]+){2,}/([\w.+-]+)")
_PLACEHOLDERS = [
    (re.compile(r"(data-dependent expression) .*"), r"\1 (…)"),
    (re.compile(r"Model \w+ is not supported yet.*"), "Model … is not supported yet, supported models: …"),
    (re.compile(r"\b\w+\.forward\b"), "….forward"),
    (re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`"), "'…'"),
    (re.compile(r"\(.*\)|\([^)]*…$"), "(…)"),  # signatures, symbolic expressions
    (re.compile(r"\b\d+(?:\.\d+)?(?:e-?\d+)?\b"), "N"),
    (re.compile(r"\[[N, ]+\]|\((?:N, )+N?\)|torch\.Size\(\[[N, ]*\]\)"), "[shape]"),
]


def normalize(message: str, limit: int = 300) -> str:
    """The first line of an exception message without memory addresses or local paths.

    >>> normalize("bad <function f at 0x7f3a> in /usr/lib/python3.11/site-packages/torch/fx/x.py:12\\nmore")
    'bad <function f at 0x…> in <site-packages>/torch/fx/x.py:12'
    >>> normalize("see /tmp/tmpab12/model.py")
    'see …/model.py'
    """
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    first = lines[0] if lines else ""
    first = _ADDRESS.sub("0x…", first)
    first = _SITE.sub("<site-packages>/", first)
    first = _PATH.sub(r"…/\1", first)
    return first if len(first) <= limit else first[: limit - 1] + "…"


def pattern(error_type: str, message: str) -> str:
    """A failure's cause: its type and message with quoted names, numbers and shapes left out.

    >>> pattern("TypeError", "'Proxy' object cannot be interpreted as an integer")
    "TypeError: '…' object cannot be interpreted as an integer"
    >>> pattern("RuntimeError", "shape '[2, 3]' is invalid for input of size 5")
    "RuntimeError: shape '…' is invalid for input of size N"
    >>> pattern("GuardOnDataDependentSymNode", "Could not guard on data-dependent expression Eq(2*u1, 2) (unhinted)")
    'GuardOnDataDependentSymNode: Could not guard on data-dependent expression (…)'
    >>> pattern("", "values differ")
    'values differ'
    """
    text = message
    for regex, replacement in _PLACEHOLDERS:
        text = regex.sub(replacement, text)
    return f"{error_type}: {text}" if error_type and text else error_type or text


def _error(exc: BaseException) -> tuple[str, str]:
    return type(exc).__name__, normalize(str(exc))


# -- Comparing with eager -------------------------------------------------------------


def compare(actual: Any, expected: Any) -> str:
    """``""`` if ``actual`` matches ``expected`` within the tolerance, else what differs.

    Outputs are compared leaf by leaf (``ModelOutput``, dicts, lists, tuples);
    tensors within ``RTOL`` and ``ATOL`` times the largest eager magnitude.

    >>> compare((torch.ones(2), 3), [torch.ones(2), 3])
    ''
    >>> compare(torch.ones(2), torch.zeros(2))
    'values differ'
    """
    got, want = _leaves(actual), _leaves(expected)
    if len(got) != len(want):
        return f"{len(got)} outputs instead of {len(want)}"
    for a, b in zip(got, want):
        if isinstance(b, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                return f"a {type(a).__name__} instead of a tensor"
            if a.shape != b.shape:
                return "shapes differ"
            if a.dtype != b.dtype:
                return "dtypes differ"
            if b.is_quantized:
                a, b = a.dequantize(), b.dequantize()
            if not b.is_floating_point() and not b.is_complex():
                if not torch.equal(a, b):
                    return "values differ"
                continue
            scale = float(b.abs().max()) if b.numel() else 0.0
            if not torch.allclose(a, b, rtol=RTOL, atol=ATOL * max(scale, 1.0), equal_nan=True):
                return "values differ"
        elif a != b and not (isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=RTOL)):
            return "values differ"
    return ""


def _leaves(tree: Any) -> list[Any]:
    # ModelOutput is a pytree node (transformers registers it); dicts of the same keys in another
    # order (a GraphModule's output) are sorted alike by pytree.
    if hasattr(tree, "to_tuple") and not isinstance(tree, torch.Tensor):
        tree = dict(tree.items())
    return pytree.tree_leaves(tree)


# -- The tools ---------------------------------------------------------------------


def _unbound_defaults(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    signature = inspect.signature(model.forward)
    bound = signature.bind_partial(*args, **kwargs)
    return {name: p.default for name, p in signature.parameters.items()
            if name not in bound.arguments and p.default is not inspect.Parameter.empty
            and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)}


def _symbolic_trace(model, args, kwargs):
    gm = torch.fx.symbolic_trace(model, concrete_args=_unbound_defaults(model, args, kwargs) or None)
    return gm, len(gm.graph.nodes)


def _last_node_extractor(model, get_graph_node_names, create_feature_extractor):
    """A library's feature extractor asked for the eval graph's last node, returning it alone."""
    last = get_graph_node_names(model)[1][-1]
    extractor = create_feature_extractor(model, return_nodes={last: "out"})
    return _ReturnOnly(extractor, "out"), len(extractor.graph.nodes)


class _ReturnOnly(nn.Module):
    """``extractor(...)[key]``: the extractor's one output, as the model itself returns it."""

    def __init__(self, extractor: nn.Module, key: str) -> None:
        super().__init__()
        self.extractor, self.key = extractor, key

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.extractor(*args, **kwargs)[self.key]


def _timm_route(model, args, kwargs):
    from timm.layers._fx import create_feature_extractor, get_graph_node_names
    return _last_node_extractor(model, get_graph_node_names, create_feature_extractor)


def _torchvision_route(model, args, kwargs):
    from torchvision.models.feature_extraction import create_feature_extractor, get_graph_node_names
    return _last_node_extractor(model, get_graph_node_names, create_feature_extractor)


LIBRARY_ROUTES: dict[str, Callable[..., tuple[Callable[..., Any], int]]] = {
    "timm": _timm_route,
    "torchvision": _torchvision_route,
}


def _concrete_trace(model, args, kwargs):
    from fxguide.tracing.concrete import concrete_trace
    gm = concrete_trace(model, args, kwargs)
    return gm, len(gm.graph.nodes)


def _export(model, args, kwargs, dynamic_shapes=None):
    program = torch.export.export(model, args, kwargs, dynamic_shapes=dynamic_shapes)
    return program.module(), len(program.graph.nodes)


def batch_dims(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``dynamic_shapes`` for export: ``Dim.AUTO`` on dimension 0 of every tensor input.

    A list of tensors (detection images) stays static: its length is the batch.
    """
    bound = inspect.signature(model.forward).bind_partial(*args, **kwargs)
    auto = torch.export.Dim.AUTO
    return {name: ({0: auto} if isinstance(value, torch.Tensor) else pytree.tree_map(lambda _: None, value))
            for name, value in bound.arguments.items()}


def _export_dynamic_batch(model, args, kwargs):
    return _export(model, args, kwargs, dynamic_shapes=batch_dims(model, args, kwargs))


CAPTURE: dict[str, Callable[..., tuple[Callable[..., Any], int]]] = {
    "symbolic_trace": _symbolic_trace,
    # "library_route": chosen by zoo from LIBRARY_ROUTES in survey_model
    "concrete_trace": _concrete_trace,
    "export": _export,
    "export_dynamic_batch": _export_dynamic_batch,
}


def _call(module: Callable[..., Any], inputs: tuple[tuple[Any, ...], dict[str, Any]]) -> Any:
    args, kwargs = inputs
    torch.manual_seed(0)
    with torch.no_grad():
        return module(*args, **kwargs)


def run_tool(tool: str, model: nn.Module, example, other, eager_other, timeout: float = TOOL_TIMEOUT,
             capture: Callable[..., tuple[Callable[..., Any], int]] | None = None) -> dict[str, Any]:
    """Capture ``model`` with ``tool`` (or ``capture``) on ``example``, then compare on ``other`` with ``eager_other``."""
    record: dict[str, Any] = {"captured": False, "error_type": "", "error": "", "nodes": None,
                              "matches": None, "mismatch": "", "seconds": 0.0}
    start = time.perf_counter()
    try:
        with time_limit(timeout), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            try:
                captured, nodes = (capture or CAPTURE[tool])(model, *example)
            except Exception as exc:
                record["error_type"], record["error"] = _error(exc)
                return record
            record.update(captured=True, nodes=nodes)
            try:
                result = _call(captured, other)
            except Exception as exc:
                record["matches"] = False
                record["mismatch"] = "{}: {}".format(*_error(exc))
                return record
            record["mismatch"] = compare(result, eager_other)
            record["matches"] = not record["mismatch"]
            return record
    except ToolTimeout as exc:
        record["error_type"] = record["error_type"] or "Timeout"
        if record["captured"]:
            record.update(matches=False, mismatch=f"Timeout: {exc}")
        else:
            record["error"] = str(exc)
        return record
    finally:
        record["seconds"] = round(time.perf_counter() - start, 2)


def survey_model(entry: Entry, timeout: float = TOOL_TIMEOUT) -> dict[str, Any]:
    """Build ``entry``'s model and run every tool on it; the record the survey stores."""
    record: dict[str, Any] = {"zoo": entry.zoo, "category": entry.category, "model": entry.name,
                              "input": entry.shape, "status": "surveyed", "reason": "", "tools": {}}
    if entry.skip:
        record.update(status="not surveyed", reason=entry.skip)
        return record
    start = time.perf_counter()
    try:
        with time_limit(timeout), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            model = entry.build().eval()
            record["params"] = sum(p.numel() for p in model.parameters())
            record["build_seconds"] = round(time.perf_counter() - start, 2)
            example, other = entry.make_inputs(1, EXAMPLE_SEED), entry.make_inputs(1, OTHER_SEED)
            t = time.perf_counter()
            _call(model, example)
            eager_other = _call(model, other)
            record["eager_seconds"] = round((time.perf_counter() - t) / 2, 3)
    except (Exception, ToolTimeout) as exc:
        record.update(status="not surveyed", reason="could not build or run eagerly: {}: {}".format(*_error(exc)))
        return record
    modes = {module: module.training for module in model.modules()}
    for tool in RUN_ORDER:
        capture, inputs = None, (example, other, eager_other)
        if tool == "library_route":
            if entry.zoo not in LIBRARY_ROUTES:
                record["tools"][tool] = None  # not applicable
                continue
            capture = LIBRARY_ROUTES[entry.zoo]
        if tool == "export_dynamic_batch":
            batch_other = entry.make_inputs(3, OTHER_SEED)
            try:
                with time_limit(timeout):
                    inputs = (entry.make_inputs(2, EXAMPLE_SEED), batch_other, _call(model, batch_other))
            except (Exception, ToolTimeout) as exc:
                record["tools"][tool] = {"captured": None, "error_type": "", "matches": None,
                                         "error": "eager fails on a batch of 3: {}: {}".format(*_error(exc))}
                continue
        record["tools"][tool] = run_tool(tool, model, *inputs, timeout, capture)
        for module, training in modes.items():  # a tool that switched modes (and failed) must not leak it
            module.training = training
        gc.collect()
    record["seconds"] = round(time.perf_counter() - start, 2)
    return record
