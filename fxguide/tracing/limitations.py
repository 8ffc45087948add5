"""The limitations of symbolic tracing, one small demo each: broken, then fixed.

Each :class:`Limitation` holds a function (or module) the symbolic tracer
rejects, the exception type and message it raises on the reference torch
(the one ``constraints.txt`` pins), and a fixed version that traces and computes what the broken one
computes in eager mode. The guide's pages show the sources with
:func:`show_source` and run the demos, so the message a page prints is the one
this torch raises; the tests check every demo still raises exactly what is
recorded here, and that every fix still traces and matches eager.

One entry, ``matmul_operator``, records a workaround that is no longer needed:
its "broken" code is expected to trace (``error is None``).
"""

from __future__ import annotations

import difflib
import inspect
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx
from torch import nn

from fxguide._checks import string
from fxguide.display import MarkdownTable, markdown_table
from fxguide.tracing import wrapping
from fxguide.models import seeded
from fxguide.tracing.tracers import LeafTracer, trace

__all__ = [
    "LIMITATIONS",
    "Limitation",
    "WORKAROUNDS",
    "Workaround",
    "get",
    "show_source",
    "still_needed_rows",
    "still_needed_table",
]

CONTROL_FLOW = "symbolically traced variables cannot be used as inputs to control flow"
ITERATION = (
    "Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop or as a "
    "*args or **kwargs function argument. See the torch.fx docs on pytorch.org for a more detailed "
    "explanation of what types of control flow can be traced, and check out the Proxy docstring for "
    "help troubleshooting Proxy iteration errors"
)
LEN = (
    "'len' is not supported in symbolic tracing by default. If you want this call to be recorded, "
    "please call torch.fx.wrap('len') at module scope"
)


def _inputs(*shape: int, seed: int = 0) -> Callable[[], tuple[torch.Tensor, ...]]:
    def make() -> tuple[torch.Tensor, ...]:
        return (torch.randn(*shape, generator=torch.Generator().manual_seed(seed)),)

    return make


# -- the demos ---------------------------------------------------------------------
# Each pair is written to be read on a page: short, one problem, one fix.


def relu_if_positive_sum(x):
    if x.sum() > 0:  # the branch depends on the values in x
        return torch.relu(x)
    return x


def relu_where_positive_sum(x):
    return torch.where(x.sum() > 0, torch.relu(x), x)  # both branches, chosen per call


def check_with_assert(x):
    assert x.dim() == 2, "expected a batch of vectors"
    return x * 2


def check_with_torch_assert(x):
    torch._assert(x.dim() == 2, "expected a batch of vectors")
    return x * 2


def check_two_things_with_and(x):
    torch._assert(x.dim() == 2 and x.shape[1] == 4, "expected (batch, 4)")
    return x * 2


def check_two_things_with_all_of(x):
    torch._assert(wrapping.all_of(x.dim() == 2, x.shape[1] == 4), "expected (batch, 4)")
    return x * 2


def maybe_relu(x, relu):
    if relu:  # decided by an argument, not by the data
        return torch.relu(x)
    return x


def divide_by_len(x):
    return x / len(x)


def halve_columns_with_int(x):
    return x.reshape(-1, int(x.shape[1] / 2), 2)


def halve_columns_with_as_int(x):
    return x.reshape(-1, wrapping.as_int(x.shape[1] / 2), 2)


def keep_half_with_round(x):
    return x[:, : round(x.shape[1] * 0.5)]


def keep_half_with_as_rounded(x):
    return x[:, : wrapping.as_rounded(x.shape[1] * 0.5)]


def scale_with_float(x):
    return x / float(x.abs().max())


def scale_with_tensor(x):
    return x / x.abs().max()


def sum_rows_with_range(x):
    total = torch.zeros_like(x[0])
    for i in range(x.shape[0]):
        total = total + x[i]
    return total


def sum_rows_vectorized(x):
    return x.sum(dim=0)


def sum_rows_by_iterating(x):
    total = torch.zeros_like(x[0])
    for row in x:
        total = total + row
    return total


def shape_as_tensor(x):
    return torch.tensor(x.shape)


def shape_as_tensor_wrapped(x):
    return wrapping.sizes_tensor(x)


def add_to_first_columns(x, y):
    x[:, 0:2] += y  # writes into x
    return x


def add_to_first_columns_with_cat(x, y):
    first = x[:, 0:2]
    return torch.cat([first + y.expand_as(first), x[:, 2:]], dim=1)  # a new tensor; y must fit, as for +=


def matmul_operator(a, b):
    return a @ b


def matmul_function(a, b):
    return torch.matmul(a, b)


class LayersInAList(nn.Module):
    """Two linear layers kept in a plain Python list: invisible to ``nn.Module``."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = [nn.Linear(4, 4), nn.Linear(4, 4)]

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class LayersInAModuleList(nn.Module):
    """The same two layers, registered through ``nn.ModuleList``."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class ClampIfLarge(nn.Module):
    """A block with data-dependent control flow: cannot be traced through."""

    def forward(self, x):
        if x.abs().max() > 1:
            return x.clamp(-1, 1)
        return x


class WithUntraceableBlock(nn.Module):
    """A linear layer, an untraceable block, a ReLU: traceable once the block is a leaf."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.clamp = ClampIfLarge()

    def forward(self, x):
        return torch.relu(self.clamp(self.linear(x)))


# -- the records ---------------------------------------------------------------------


@dataclass(frozen=True)
class Limitation:
    """One limitation: code that fails to trace, its exact error, and its fix.

    ``broken`` and ``fixed`` are functions or ``nn.Module`` classes (built with
    :func:`fxguide.models.seeded`). ``error``/``message`` are what tracing
    ``broken`` raises on the reference torch; ``error is None`` records code
    that is expected to trace. ``fixed_concrete_args`` and ``fixed_tracer`` say
    how the fix is traced; ``call_args`` are extra arguments given to both
    when they run eagerly (e.g. the value a ``concrete_args`` binds).
    """

    name: str
    summary: str
    broken: Callable[..., Any]
    fixed: Callable[..., Any]
    error: type[BaseException] | None
    message: str
    inputs: Callable[[], tuple[Any, ...]]
    fixed_concrete_args: Mapping[str, Any] | None = None
    fixed_tracer: Callable[[], fx.Tracer] | None = None
    call_args: tuple[Any, ...] = field(default=())

    def __post_init__(self) -> None:
        for name in ("name", "summary", "message"):
            string("Limitation", name, getattr(self, name))
        for name in ("broken", "fixed", "inputs"):
            if not callable(getattr(self, name)):
                raise TypeError(f"Limitation {self.name!r}: {name} must be a function or an nn.Module class, "
                                f"got {getattr(self, name)!r}")
        if self.error is not None and not (isinstance(self.error, type) and issubclass(self.error, BaseException)):
            raise TypeError(f"Limitation {self.name!r}: error must be an exception class (or None when the broken "
                            f"code is expected to trace), got {self.error!r}")
        if self.fixed_tracer is not None and not callable(self.fixed_tracer):
            raise TypeError(f"Limitation {self.name!r}: fixed_tracer must make a Tracer, got {self.fixed_tracer!r}")
        if not isinstance(self.call_args, tuple):
            raise TypeError(f"Limitation {self.name!r}: call_args must be a tuple, got {self.call_args!r}")

    def _build(self, code: Callable[..., Any]) -> Any:
        return seeded(code) if isinstance(code, type) and issubclass(code, nn.Module) else code

    def trace_broken(self) -> fx.GraphModule:
        """Trace the broken version with a plain ``fx.Tracer`` (raises the recorded error)."""
        return trace(self._build(self.broken))

    def trace_fixed(self) -> fx.GraphModule:
        """Trace the fixed version the way the fix says (tracer, ``concrete_args``)."""
        tracer = self.fixed_tracer() if self.fixed_tracer else None
        concrete = dict(self.fixed_concrete_args) if self.fixed_concrete_args else None
        return trace(self._build(self.fixed), tracer, concrete)

    def raised(self) -> BaseException | None:
        """The exception tracing ``broken`` raises on this torch, or ``None`` if it traces."""
        try:
            self.trace_broken()
        except Exception as error:  # noqa: BLE001 - any error is the measurement
            return error
        return None

    def fixed_matches_eager(self) -> bool:
        """Whether the traced fix computes what ``broken`` computes eagerly (on copies of the inputs)."""
        broken = self._build(self.broken)
        gm = self.trace_fixed()
        if isinstance(broken, nn.Module):
            gm.load_state_dict(broken.state_dict(), strict=False)
        inputs = self.inputs()
        expected = broken(*[t.clone() for t in inputs], *self.call_args)
        actual = gm(*[t.clone() for t in inputs], *self.call_args)
        try:
            torch.testing.assert_close(actual, expected)
        except AssertionError:
            return False
        return True


def _lim(name: str, summary: str, broken, fixed, error, message, inputs, **kwargs) -> Limitation:
    return Limitation(name, summary, broken, fixed, error, message, inputs, **kwargs)


LIMITATIONS: dict[str, Limitation] = {
    lim.name: lim
    for lim in [
        _lim("control_flow", "an `if` on a traced value", relu_if_positive_sum, relu_where_positive_sum,
             fx.proxy.TraceError, CONTROL_FLOW, _inputs(2, 3)),
        _lim("assert", "`assert` on a traced value", check_with_assert, check_with_torch_assert,
             fx.proxy.TraceError, CONTROL_FLOW, _inputs(2, 3)),
        _lim("assert_and", "`and` inside `torch._assert`", check_two_things_with_and, check_two_things_with_all_of,
             fx.proxy.TraceError, CONTROL_FLOW, _inputs(2, 4)),
        _lim("concrete_args", "a branch on a flag argument", maybe_relu, maybe_relu,
             fx.proxy.TraceError, CONTROL_FLOW, _inputs(2, 3),
             fixed_concrete_args={"relu": True}, call_args=(True,)),
        _lim("len", "`len()` of a traced value", divide_by_len, wrapping.divide_by_rows,
             RuntimeError, LEN, _inputs(4, 2)),
        _lim("int_cast", "`int()` of a traced size", halve_columns_with_int, halve_columns_with_as_int,
             TypeError, "int() argument must be a string, a bytes-like object or a real number, not 'Proxy'",
             _inputs(3, 4)),
        _lim("float_cast", "`float()` of a traced value", scale_with_float, scale_with_tensor,
             TypeError, "float() argument must be a string or a real number, not 'Proxy'", _inputs(3, 4)),
        _lim("range", "`range()` over a traced size", sum_rows_with_range, sum_rows_vectorized,
             TypeError, "'Proxy' object cannot be interpreted as an integer", _inputs(3, 4)),
        _lim("iteration", "a `for` loop over a traced tensor", sum_rows_by_iterating, sum_rows_vectorized,
             fx.proxy.TraceError, ITERATION, _inputs(3, 4)),
        _lim("tensor_of_sizes", "`torch.tensor()` of traced sizes", shape_as_tensor, shape_as_tensor_wrapped,
             TypeError, "`__cuda_array_interface__` must be a dict", _inputs(3, 4)),
        _lim("slice_update", "an in-place update of a slice", add_to_first_columns, add_to_first_columns_with_cat,
             TypeError, "'Proxy' object does not support item assignment",
             lambda: (_inputs(3, 4)()[0], torch.ones(3, 2))),
        _lim("unregistered_module", "submodules kept in a plain list", LayersInAList, LayersInAModuleList,
             NameError, "module is not installed as a submodule", _inputs(2, 4)),
        _lim("untraceable_block", "a submodule that cannot be traced through", WithUntraceableBlock,
             WithUntraceableBlock, fx.proxy.TraceError, CONTROL_FLOW, _inputs(2, 4),
             fixed_tracer=lambda: LeafTracer(leaf_types=[ClampIfLarge])),
        _lim("matmul_operator", "the `@` operator", matmul_operator, matmul_function,
             None, "", lambda: (_inputs(2, 3)()[0], _inputs(3, 2, seed=1)()[0])),
    ]
}


def get(name: str) -> Limitation:
    """The limitation called ``name``; an unknown name lists the close matches.

    >>> get("len").error.__name__
    'RuntimeError'
    >>> get("lenn")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    KeyError: "no limitation named 'lenn'; did you mean: len? Known: assert, assert_and, ..."
    """
    if string("get", "name", name) not in LIMITATIONS:
        close = difflib.get_close_matches(name, LIMITATIONS, n=3)
        hint = f"did you mean: {', '.join(close)}? " if close else ""
        known = ", ".join(sorted(LIMITATIONS))
        raise KeyError(f"no limitation named {name!r}; {hint}Known: {known}")
    return LIMITATIONS[name]


def show_source(*objects: Callable[..., Any]) -> None:
    """Print the source code of functions, methods or classes, separated by a blank line.

    Pages show the demo code this way, so the code on the page is the code
    that ran.

    >>> show_source(matmul_function)
    def matmul_function(a, b):
        return torch.matmul(a, b)
    """
    if not objects:
        raise ValueError("show_source: give at least one function or class")
    parts = []
    for obj in objects:
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            raise TypeError(f"show_source: expected a function or class, got {type(obj).__name__}")
        try:
            source = inspect.getsource(obj)
        except (OSError, TypeError) as error:
            raise ValueError(f"show_source: the source of {obj.__qualname__} cannot be found ({error}): it was not "
                             f"defined in a .py file (exec, the interactive prompt, C); put it in a module") from None
        parts.append(textwrap.dedent(source).rstrip("\n"))
    print("\n\n".join(parts))


# -- the "still needed?" table of the recipe for traceable code ----------------------


@dataclass(frozen=True)
class Workaround:
    """One step of the recipe for making model code traceable."""

    instead_of: str
    write: str
    limitation: str


WORKAROUNDS: tuple[Workaround, ...] = (
    Workaround("an untraceable submodule", "make it a leaf module", "untraceable_block"),
    Workaround("`assert cond`", "`torch._assert(cond, msg)`", "assert"),
    Workaround("`torch._assert(a and b, msg)`", "`torch._assert(wrapping.all_of(a, b), msg)`", "assert_and"),
    Workaround("`int(x.shape[1] / 2)`", "`wrapping.as_int(x.shape[1] / 2)`", "int_cast"),
    Workaround("`x[:, 0:2] += y`", "`torch.cat([x[:, 0:2] + y, x[:, 2:]], dim=1)`", "slice_update"),
    Workaround("`a @ b`", "`torch.matmul(a, b)`", "matmul_operator"),
)


def still_needed_rows() -> list[tuple[str, str, str, str]]:
    """For each recipe step, measured on this torch: does the original code trace?

    Returns rows ``(instead of, write, original traces?, workaround needed?)``.

    >>> rows = still_needed_rows()
    >>> rows[-1][0]
    '`a @ b`'
    """
    rows = []
    for step in WORKAROUNDS:
        error = get(step.limitation).raised()
        if error is None:
            traces, needed = "yes", "no"
        else:
            traces, needed = f"no: `{type(error).__name__}`", "yes"
        rows.append((step.instead_of, step.write, traces, needed))
    return rows


def still_needed_table() -> MarkdownTable:
    """:func:`still_needed_rows` as a Markdown table, for a page to display.

    The header names no version (the page says which torch built it), so the
    table drifts only when an answer changes.

    >>> print(still_needed_table().splitlines()[0])
    | Instead of | write | Does the original trace on the installed torch? | Still needed? |
    """
    return markdown_table(["Instead of", "write", "Does the original trace on the installed torch?", "Still needed?"],
                          still_needed_rows())
