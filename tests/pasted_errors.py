"""Error messages as a reader pastes them, made by running small snippets with values of their own.

Each snippet raises the message of one entry of the error index, with names,
sizes and operators other than the site's own example. :func:`pasted` runs
them and returns what a reader would paste, in three forms:

- ``traceback``: the last line of the traceback, the exception class with its
  module path (``torch.fx.proxy.TraceError: ...``), first line of the message;
- ``explanation``: Dynamo's ``Explanation:`` line alone (graph breaks only);
- ``fragment``: six words from the middle of the message's first line.

:func:`tracebacks` gives each error's whole traceback (frames in this file and
in torch), as ``traceback.format_exception`` prints it.

Used by tests/test_catalogue.py (the shell lookup), tests/test_lookup_claims.py (a cause only for an error of
torch's capture stack) and tests/browser/test_pasted.py (the site's search).
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import os
import pickle
import re
import time
import traceback
from collections.abc import Callable

import torch
import torch.fx as fx
from torch import nn


def _trace(fn):
    return lambda: fx.symbolic_trace(fn)


class _Flag(nn.Module):
    def forward(self, x, flip):
        return -x if flip else x


class _ListHolder(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [nn.Tanh()]  # a plain list, not nn.ModuleList

    def forward(self, x):
        return self.blocks[0](x)


def _passes_on(forward):
    @functools.wraps(forward)
    def wrapper(self, *args, **kwargs):
        return forward(self, *args, **kwargs)
    return wrapper


class _Decorated(nn.Module):
    @_passes_on
    def forward(self, hidden, mask=None, **extra):
        return hidden


def _wrap_inside():
    def inner():
        fx.wrap("len")
    inner()


def _sigmoid_graph():
    return fx.symbolic_trace(lambda x: torch.sigmoid(x) * 3).graph


def _erase():
    graph = _sigmoid_graph()
    graph.erase_node(graph.find_nodes(op="call_function", target=torch.sigmoid)[0])


def _insert_before():
    graph = _sigmoid_graph()
    sig = graph.find_nodes(op="call_function", target=torch.sigmoid)[0]
    with graph.inserting_before(sig):
        graph.call_function(torch.abs, (next(iter(sig.users)),))
    graph.lint()


def _self_reader():
    gm = fx.symbolic_trace(lambda x: torch.sigmoid(x) * 3)
    sig = gm.graph.find_nodes(op="call_function", target=torch.sigmoid)[0]
    with gm.graph.inserting_after(sig):
        absolute = gm.graph.call_function(torch.abs, (sig,))
    sig.replace_all_uses_with(absolute)
    gm.recompile()
    gm(torch.ones(3))


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("gain", torch.ones(3))

    def forward(self, x):
        return x * self.gain


def _load_graph_module():
    buffer = io.BytesIO()
    torch.save(fx.symbolic_trace(nn.Conv1d(2, 2, 1)), buffer)
    buffer.seek(0)
    torch.load(buffer)


class _MaxBranch(nn.Module):
    def forward(self, x):
        return x * 2 if x.max() > 1 else x


class _SeqBranch(nn.Module):
    def forward(self, tokens):
        return tokens[:, :3] if tokens.shape[1] > 6 else tokens


class _Pair:
    def __init__(self, first, second):
        self.first, self.second = first, second


class _ReturnsPair(nn.Module):
    def forward(self, x):
        return _Pair(x, x * 2)


@torch.library.custom_op("pasted::twice", mutates_args=())
def _twice(x: torch.Tensor) -> torch.Tensor:  # no register_fake
    return x * 2


class _UsesTwice(nn.Module):
    def forward(self, x):
        return _twice(x) - 1


class _ReadsPointer(nn.Module):
    def forward(self, x):
        return x * 3 if x.data_ptr() % 64 else x


def _edit_without_meta():
    program = torch.export.export(nn.Sequential(nn.Linear(3, 3)), (torch.ones(2, 3),))
    first = next(node for node in program.graph.nodes if node.op == "call_function")
    with program.graph.inserting_after(first):
        program.graph.call_function(repr, (first,))
    program.validate()


def _compile(fn, *args):
    torch._dynamo.reset()
    return torch.compile(fn, backend="eager", fullgraph=True)(*args)


def _prints(x):
    print(3, "steps")
    return x * 2


def _pid(x):
    return x + os.getpid()


@torch.compiler.disable
def _kept_eager(x):
    return x - 1


def _calls_kept_eager(x):
    return _kept_eager(x) * 5


def _recompiles():
    torch._dynamo.reset()
    with torch._dynamo.config.patch(recompile_limit=3):
        double = torch.compile(lambda t: t * 2, backend="eager", fullgraph=True, dynamic=False)
        for length in range(2, 9):
            double(torch.ones(length, 2))


def _old_capture():
    return torch._export.capture_pre_autograd_graph


def _dim(name):
    from torch.export import Dim
    return Dim(name)


SNIPPETS: dict[str, Callable[[], object]] = {
    "error-control-flow": _trace(lambda y: y if y.mean() > 0.5 else y * 3),
    "error-proxy-iterated": _trace(lambda t: [row * 2 for row in t]),
    "error-len": _trace(lambda t: t * len(t)),
    "error-int-proxy": _trace(lambda t: t.view(int(t.shape[0] * 3), -1)),
    "error-float-proxy": _trace(lambda t: t + float(t.max())),
    "error-math-proxy": lambda: fx.Tracer(autowrap_modules=()).trace(lambda t: t * math.log(t.shape[1])),
    "error-interpreted-as-integer": _trace(lambda t: torch.stack([t for _ in range(t.shape[1])])),
    "error-cuda-array-interface": _trace(lambda t: t + torch.tensor(t.size(1))),
    "error-not-a-submodule": lambda: fx.symbolic_trace(_ListHolder()),
    "error-specialized": lambda: fx.symbolic_trace(_Flag(), concrete_args={"flip": False})(torch.ones(3), True),
    "error-decorated-forward": lambda: fx.symbolic_trace(_Decorated()),
    "error-zeros-traced-sizes": _trace(lambda t: torch.ones(t.shape[0], t.shape[1], t.shape[2])),
    "error-node-not-present": lambda: __import__(
        "torchvision.models.feature_extraction", fromlist=["x"]).create_feature_extractor(
        nn.Sequential(nn.Conv2d(3, 4, 1), nn.ReLU()), return_nodes=["encoder.block3"]),
    "error-wrap-top-level": _wrap_inside,
    "error-erase-node": _erase,
    "error-used-before-defined": _insert_before,
    "error-unbound-local": _self_reader,
    "error-no-attribute": lambda: fx.GraphModule(nn.Module(), fx.symbolic_trace(_Scaled()).graph),
    "error-weights-only": _load_graph_module,
    "error-boolean-ambiguous": lambda: bool(torch.ones(4) == torch.ones(4)),
    "error-data-dependent-guard": lambda: torch.export.export(_MaxBranch(), (torch.ones(5),)),
    "error-constraints-violated": lambda: torch.export.export(
        _SeqBranch(), (torch.ones(2, 9),), dynamic_shapes={"tokens": {1: _dim("seq")}}),
    "error-specialized-constant": lambda: torch.export.export(
        nn.Linear(6, 2), (torch.ones(1, 6),), dynamic_shapes={"input": {0: _dim("rows")}}),
    "error-dim-dynamic-specialized": lambda: torch.export.export(
        nn.Conv1d(3, 3, 1), (torch.ones(1, 3, 5),), dynamic_shapes={"input": {0: torch.export.Dim.DYNAMIC}}),
    "error-guard-failed": lambda: torch.export.export(_SeqBranch(), (torch.ones(4, 9),)).module()(torch.ones(5, 9)),
    "error-not-a-known-type": lambda: torch.export.export(_ReturnsPair(), (torch.ones(3),)),
    "error-no-fake-impl": lambda: torch.export.export(_UsesTwice(), (torch.ones(3),)),
    "error-data-pointer": lambda: torch.export.export(_ReadsPointer(), (torch.ones(3),)),
    "error-spec-violation": _edit_without_meta,
    "error-export-args-tuple": lambda: torch.export.export(nn.Conv1d(2, 2, 1), torch.ones(1, 2, 4)),
    "error-eval-not-supported": lambda: torch.export.export(nn.Tanh(), (torch.ones(3),)).module().eval(),
    "error-make-fx-value": lambda: __import__(
        "torch.fx.experimental.proxy_tensor", fromlist=["x"]).make_fx(_MaxBranch())(torch.ones(4)),
    "error-graph-break": lambda: _compile(_prints, torch.ones(3)),
    "error-skipped-function": lambda: _compile(_pid, torch.ones(3)),
    "error-compiler-disable": lambda: _compile(_calls_kept_eager, torch.ones(3)),
    "error-data-dependent-branching": lambda: _compile(_MaxBranch(), torch.ones(4)),
    "error-recompile-limit": _recompiles,
    "error-fake-tensor-call": lambda: _compile(_UsesTwice(), torch.ones(3)),
    "error-capture-pre-autograd-graph": _old_capture,
}


# messages whose first line is a summary: the reader copies the line that names the problem
LINE = {"error-specialized-constant": "You marked", "error-dim-dynamic-specialized": "Received user-specified dim hint"}


def _raised(trigger) -> BaseException | None:
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            trigger()
    except Exception as error:  # noqa: BLE001 - any error is what we want
        return error
    return None


def _as_printed(error: BaseException, pick: str = "") -> str:
    """The last line of a traceback: ``module.Class: first line``, as Python prints it (or the line holding
    ``pick``)."""
    kind = type(error)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    message = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    first = next((line.strip() for line in message.splitlines() if line.strip() and pick in line), "")
    return f"{name}: {first}"


def _fragment(line: str) -> str:
    """Six words from the middle of the message's first sentence (all of it when shorter)."""
    words = re.split(r"(?<=[.!])\s", line.split(": ", 1)[-1])[0].split()
    if len(words) <= 6:
        return " ".join(words)
    start = max(0, min(len(words) - 6, len(words) // 2 - 3))
    return " ".join(words[start:start + 6])


@functools.cache
def _errors() -> tuple[tuple[str, str, str, str], ...]:
    """``(anchor, last line, Explanation line or "", whole traceback)`` for every snippet that raised."""
    found = []
    for anchor, trigger in SNIPPETS.items():
        error = _raised(trigger)
        if error is None:
            continue
        explanation = next((text.strip() for text in str(error).splitlines()
                            if text.strip().startswith("Explanation:")), "")
        found.append((anchor, _as_printed(error, LINE.get(anchor, "")), explanation,
                      re.sub(r"\x1b\[[0-9;]*m", "", "".join(traceback.format_exception(error)))))
    torch._dynamo.reset()
    return tuple(found)


@functools.cache
def pasted() -> tuple[tuple[str, str, str], ...]:
    """``(form, text, anchor)`` for every snippet that raised; a snippet that raised nothing is left out."""
    found = []
    for anchor, line, explanation, _ in _errors():
        found.append(("traceback", line, anchor))
        found.append(("fragment", _fragment(line), anchor))
        if explanation:
            found.append(("explanation", re.sub(r"0x[0-9a-f]+", "0x7f3a9c1e2d40", explanation), anchor))
    return tuple(found)


def tracebacks() -> tuple[tuple[str, str], ...]:
    """``(anchor, whole traceback)`` for every snippet that raised: what a reader pastes who copies it all."""
    return tuple((anchor, whole) for anchor, _, _, whole in _errors())


if __name__ == "__main__":
    for form, text, anchor in pasted():
        print(f"{anchor:34} {form:12} {text[:150]}")
    print(len({anchor for _, _, anchor in pasted()}), "of", len(SNIPPETS), "snippets raised")
