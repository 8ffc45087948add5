"""A concrete-value tracer whose graphs check the decisions they were traced with.

``torch.fx.symbolic_trace`` runs ``forward`` on stand-ins (``Proxy`` objects)
that carry no values, so code that asks a question about its input
(``if x.shape[1] > 3``, ``for i in range(x.shape[0])``, ``int(x.shape[-1])``,
``if x.sum() > 0``) cannot be traced. :func:`concrete_trace` runs real example
inputs alongside the proxies: every node of the growing graph also gets the
value it has for the example, so each such question gets an answer.

Each answer is a *decision*: the graph holds only the path the example took.
Rather than letting a later input that would take another path run silently
into wrong results, every decision is recorded (kind, source line, traced
value) and checked by a ``guard_N`` node placed in the graph right where the
decision was made. An input that would decide differently raises
:class:`GuardError`, naming the decision, its traced value and its new value.
With ``on_mismatch="retrace"`` the result instead traces again for the new
input and keeps one graph per path (:class:`GuardedPaths`).

What it does not see: tracing runs the model once on the example, with the
effects of a normal call (a ``BatchNorm`` in training mode updates its running
statistics). Questions Python answers about the proxy itself rather than its
value, such as ``isinstance(x, torch.Tensor)`` or ``x is None``, are neither
answered from the example nor recorded, as in symbolic tracing; and
``float(x)`` is not supported (compare tensors instead).

>>> import torch
>>> def f(x):
...     if x.shape[0] > 2:
...         return x * 2
...     return x - 1
>>> gm = concrete_trace(f, (torch.ones(3),))
>>> gm(torch.ones(3))
tensor([2., 2., 2.])
>>> show_decisions(gm)
guard_0  branch  <doctest fxguide.tracing.concrete[1]>:2  if x.shape[0] > 2:  -> True
"""

from __future__ import annotations

import inspect
import linecache
import operator
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.fx as fx
from torch import nn
from torch.fx.node import map_arg
from torch.fx.proxy import Attribute

__all__ = [
    "ConcreteTracer",
    "Decision",
    "Guard",
    "GuardError",
    "GuardedPaths",
    "concrete_trace",
    "decisions",
    "show_decisions",
]

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_THIS_FILE = os.path.abspath(__file__)
_SCALARS = (bool, int, float)
_LOOP_LINE = re.compile(r"\bfor\b.+\bin\b")


# -- What is recorded -----------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """One question the traced code asked about its input, and the answer it got.

    ``kind`` is ``"branch"`` (a traced value used as a bool: ``if``, ``while``,
    ``and``/``or``, ``assert``), ``"loop"`` (a trip count: iterating over a
    traced value, or an int taken on a ``for`` line such as
    ``for i in range(x.shape[0])``) or ``"int"`` (any other traced value turned
    into a Python int: ``int(...)``, ``len(...)``, an index). ``value`` is the
    answer for the example input; the graph is only valid for inputs that
    give the same answer.

    >>> d = Decision(0, "branch", True, "/src/model.py", 12, "if x.shape[1] > 3:")
    >>> print(d)
    guard_0  branch  model.py:12  if x.shape[1] > 3:  -> True
    """

    index: int
    kind: Literal["branch", "loop", "int"]
    value: bool | int
    filename: str
    lineno: int
    code: str

    @property
    def guard_name(self) -> str:
        """The name of the graph node (and submodule) that checks this decision."""
        return f"guard_{self.index}"

    @property
    def where(self) -> str:
        """``file:line`` of the decision, with the file's base name only."""
        return f"{os.path.basename(self.filename)}:{self.lineno}"

    def __str__(self) -> str:
        return f"{self.guard_name}  {self.kind}  {self.where}  {self.code}  -> {self.value!r}"


class GuardError(RuntimeError):
    """An input would take another path through the code than the traced input took.

    ``decision`` is the :class:`Decision` that differs, ``traced`` its value when
    traced and ``new`` its value for the offending input.
    """

    def __init__(self, decision: Decision, new: bool | int, advice: str | None = None) -> None:
        self.decision = decision
        self.traced = decision.value
        self.new = new
        if advice is None:
            advice = ("Trace again with this input, or trace with "
                      'concrete_trace(..., on_mismatch="retrace") to keep one graph per path.')
        super().__init__(
            f"{decision.guard_name}: the {decision.kind} at {decision.where} (`{decision.code}`) "
            f"was {decision.value!r} when traced and is {new!r} for this input, so the graph "
            f"does not hold this input's path. {advice}"
        )


class Guard(nn.Module):
    """The submodule a ``guard_N`` node calls: re-asks one decision's question.

    It receives the value the decision was made from (a bool-like for a
    branch, an int-like for a loop or int) and raises :class:`GuardError` if
    the answer differs from the traced one. It returns nothing, and declares
    itself impure so that ``graph.eliminate_dead_code()`` keeps it.

    >>> guard = Guard(Decision(0, "int", 4, "m.py", 3, "n = int(x.shape[-1])"))
    >>> guard(4) is None
    True
    >>> guard(6)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fxguide.tracing.concrete.GuardError: guard_0: the int at m.py:3 (`n = int(x.shape[-1])`) was 4 when traced and is 6 ...
    """

    _is_impure = True  # read by torch.fx.Node.is_impure

    def __init__(self, decision: Decision) -> None:
        super().__init__()
        if not isinstance(decision, Decision):
            raise TypeError(f"Guard: expected a Decision, got {type(decision).__name__}")
        self.decision = decision
        self._expected = decision.value
        self._convert: Callable[[Any], Any] = bool if decision.kind == "branch" else int

    def forward(self, value: Any) -> None:
        new = self._convert(value)
        if new != self._expected:
            raise GuardError(self.decision, new)

    def extra_repr(self) -> str:
        return str(self.decision)


# -- The tracer -------------------------------------------------------------------


def _pending_guard(value: Any, index: int) -> None:
    """Stand-in target of a guard node while tracing; replaced by a ``Guard`` call."""
    raise RuntimeError("internal: a guard node was not turned into a Guard call")


class _ConcreteMixin:
    """Conversions to Python values, answered from the example's value and recorded."""

    tracer: ConcreteTracer

    def __getattr__(self, name: str) -> ConcreteAttribute:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return ConcreteAttribute(self, name)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self.tracer.decide_len(self)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[fx.Proxy]:
        # Also for unpacking (a, b = x.shape): the element count is checked too.
        return self.tracer.iter(self)  # type: ignore[arg-type]

    def __index__(self) -> int:
        return self.tracer.decide_int(self, operator.index)  # type: ignore[arg-type]

    def __int__(self) -> int:
        return self.tracer.decide_int(self, int)  # type: ignore[arg-type]


class ConcreteProxy(_ConcreteMixin, fx.Proxy):
    """A ``Proxy`` whose tracer knows the value it has for the example input."""

    def __repr__(self) -> str:
        return f"ConcreteProxy({self.node.name})"


class ConcreteAttribute(_ConcreteMixin, Attribute):
    """An attribute access (``x.shape``) on a :class:`ConcreteProxy`."""


class ConcreteTracer(fx.Tracer):
    """A ``Tracer`` that evaluates every node on example inputs while recording it.

    ``inputs`` maps each parameter name of the traced callable to its example
    value. Each created node is evaluated right away (in program order, so
    in-place operations behave as in eager mode) and its value kept in
    ``values``. When the traced code turns a proxy into a Python value
    (``to_bool``, ``iter``, ``len``, ``int``, ``index``), the tracer answers
    from that value, appends a :class:`Decision` to ``decisions`` and adds a
    guard node checking it. Use :func:`concrete_trace` rather than this class.
    """

    def __init__(self, inputs: Mapping[str, Any]) -> None:
        super().__init__()
        if not isinstance(inputs, Mapping):
            raise TypeError(f"ConcreteTracer: inputs must map parameter names to values, got {type(inputs).__name__}")
        self.inputs = dict(inputs)
        self.values: dict[fx.Node, Any] = {}
        self.decisions: list[Decision] = []
        self._evaluating = 0

    # Every proxy the base class creates is a ConcreteProxy.
    def proxy(self, node: fx.Node) -> fx.Proxy:
        return ConcreteProxy(node, self)

    def create_node(self, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                    name: str | None = None, type_expr: Any | None = None) -> fx.Node:
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        if kind != "output" and target is not _pending_guard:
            self._evaluating += 1
            try:
                self.values[node] = self._evaluate(node)
            finally:
                self._evaluating -= 1
        return node

    def _evaluate(self, node: fx.Node) -> Any:
        if node.op == "placeholder":
            name = str(node.target).lstrip("*")
            if name in self.inputs:
                return self.inputs[name]
            if node.args:  # a parameter with a default value
                return node.args[0]
            raise TypeError(f"concrete tracing: no example value for the input {name!r}")
        args = map_arg(node.args, self.values.__getitem__)
        kwargs = map_arg(node.kwargs, self.values.__getitem__)
        if node.op == "get_attr":
            value: Any = self.root
            for part in str(node.target).split("."):
                value = getattr(value, part)
            return value
        if node.op == "call_function":
            return node.target(*args, **kwargs)  # type: ignore[operator]
        if node.op == "call_method":
            return getattr(args[0], str(node.target))(*args[1:], **kwargs)
        if node.op == "call_module":
            return self.root.get_submodule(str(node.target))(*args, **kwargs)
        raise RuntimeError(f"concrete tracing: cannot evaluate a node of kind {node.op!r}")

    def call_module(self, m: nn.Module, forward: Callable[..., Any], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        # While tracing, every module call and module attribute read comes
        # here, including those made while evaluating a node on real values:
        # those must just run the module (or read the attribute).
        if self._evaluating:
            return forward(*args, **kwargs)
        return super().call_module(m, forward, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        if self._evaluating:
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def value_of(self, proxy: fx.Proxy) -> Any:
        """The value ``proxy`` has for the example inputs."""
        return self.values[proxy.node]

    # -- decisions ---------------------------------------------------------------

    def _record(self, kind: Literal["branch", "loop", "int"], source: fx.Node, value: bool | int) -> None:
        filename, lineno, code = _user_location()
        if kind == "int" and _LOOP_LINE.search(code):
            kind = "loop"
        decision = Decision(len(self.decisions), kind, value, filename, lineno, code)
        self.decisions.append(decision)
        fx.Tracer.create_node(self, "call_function", _pending_guard, (source, decision.index), {},
                              name=decision.guard_name)

    def to_bool(self, obj: fx.Proxy) -> bool:
        value = bool(self.value_of(obj))
        self._record("branch", obj.node, value)
        return value

    def iter(self, obj: fx.Proxy) -> Iterator[fx.Proxy]:
        count = self.decide_len(obj)  # a "loop" when the line is a for loop, else an "int"
        return iter([obj[i] for i in range(count)])

    def decide_len(self, obj: fx.Proxy) -> int:
        """Answer ``len(obj)`` from the example and guard the answer."""
        length = self.create_proxy("call_function", len, (obj,), {})
        value = self.value_of(length)
        self._record("int", length.node, value)
        return value

    def decide_int(self, obj: fx.Proxy, convert: Callable[[Any], int]) -> int:
        """Answer ``int(obj)`` (or ``operator.index(obj)``) from the example and guard it."""
        value = convert(self.value_of(obj))
        self._record("int", obj.node, value)
        return value


def _user_location() -> tuple[str, int, str]:
    """File, line and source text of the innermost frame outside torch and this module."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith(_TORCH_DIR) or os.path.abspath(filename) == _THIS_FILE):
            lineno = frame.f_lineno
            return filename, lineno, linecache.getline(filename, lineno, frame.f_globals).strip()
        frame = frame.f_back
    return "<unknown>", 0, ""


# -- The public entry points -------------------------------------------------------


def _bind(root: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> inspect.BoundArguments:
    fn = root.forward if isinstance(root, nn.Module) else root
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as error:
        raise TypeError(f"concrete_trace: cannot read the signature of {fn!r}: {error}") from None
    variadic = [p.name for p in signature.parameters.values()
                if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    if variadic:
        raise TypeError(
            f"concrete_trace: {_name(root)}{signature} takes *args/**kwargs ({', '.join(variadic)}); "
            f"trace a function with named parameters instead (e.g. lambda x, y: f(x, y))"
        )
    required = [p.name for p in signature.parameters.values() if p.default is inspect.Parameter.empty]
    if required and not args and not kwargs:
        raise TypeError(
            f"concrete_trace needs example inputs: {_name(root)}{signature} requires "
            f"{', '.join(required)}. Pass them as concrete_trace(root, (x, ...)) or kwargs={{...}}"
        )
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as error:
        raise TypeError(
            f"concrete_trace: the example inputs do not fit {_name(root)}{signature}: {error}"
        ) from None
    for name, value in bound.arguments.items():
        if not isinstance(value, (torch.Tensor, *_SCALARS)):
            raise TypeError(
                f"concrete_trace: the example input {name!r} is a {type(value).__name__}; traced inputs "
                f"must be torch.Tensor (or bool/int/float). Bind other values before tracing, "
                f"e.g. with functools.partial or a default argument"
            )
    return bound


def _name(root: Callable[..., Any]) -> str:
    if isinstance(root, nn.Module):
        return f"{type(root).__name__}.forward"
    return getattr(root, "__name__", type(root).__name__)


def _trace(root: nn.Module | Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> fx.GraphModule:
    bound = _bind(root, args, kwargs)
    signature = bound.signature
    # Parameters left at their default are constants of the trace (FX's concrete_args).
    constants = {name: p.default for name, p in signature.parameters.items()
                 if name not in bound.arguments and p.default is not inspect.Parameter.empty}
    tracer = ConcreteTracer(bound.arguments)
    graph = tracer.trace(root, concrete_args=constants or None)
    name = type(root).__name__ if isinstance(root, nn.Module) else getattr(root, "__name__", "function")
    gm = fx.GraphModule(tracer.root, graph, name if name.isidentifier() else "function")
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is _pending_guard:
            decision = tracer.decisions[node.args[1]]
            gm.add_submodule(decision.guard_name, Guard(decision))
            node.op, node.target, node.args = "call_module", decision.guard_name, (node.args[0],)
    gm.graph.lint()
    gm.recompile()
    return gm


def _as_args(args: Any) -> tuple[Any, ...]:
    if isinstance(args, torch.Tensor):
        return (args,)
    if isinstance(args, (tuple, list)):
        return tuple(args)
    raise TypeError(
        f"concrete_trace: args must be a tuple of example inputs (or a single tensor), got {type(args).__name__}"
    )


def concrete_trace(
    root: nn.Module | Callable[..., Any],
    args: Sequence[Any] | torch.Tensor = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    on_mismatch: Literal["raise", "retrace"] = "raise",
    max_paths: int = 8,
) -> fx.GraphModule | GuardedPaths:
    """Trace ``root`` by running it on example inputs; guard every decision it makes.

    ``root`` is an ``nn.Module`` or a plain function; ``args`` and ``kwargs``
    are example inputs for it (tensors, or bool/int/float), bound to its
    parameters as in a call. Parameters not given keep their default as a
    constant.

    With ``on_mismatch="raise"`` (the default) the result is a
    ``GraphModule`` of the example's path, with one ``guard_N`` submodule per
    decision; calling it with an input that decides differently raises
    :class:`GuardError`. With ``on_mismatch="retrace"`` the result is a
    :class:`GuardedPaths` module that traces again for such an input and keeps
    up to ``max_paths`` graphs.

    >>> def head(x):
    ...     n = int(x.shape[-1]) // 2
    ...     return x[..., :n] * x[..., n:]
    >>> gm = concrete_trace(head, (torch.arange(4.0),))
    >>> gm(torch.arange(4.0))
    tensor([0., 3.])
    >>> gm(torch.arange(6.0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fxguide.tracing.concrete.GuardError: guard_0: the int at <doctest fxguide.tracing.concrete.concrete_trace[0]>:2 (`n = int(x.shape[-1]) // 2`) was 4 when traced and is 6 ...
    >>> paths = concrete_trace(head, (torch.arange(4.0),), on_mismatch="retrace")
    >>> paths(torch.arange(6.0))
    tensor([ 0.,  4., 10.])
    >>> len(paths.paths)
    2
    """
    if not (isinstance(root, nn.Module) or callable(root)):
        raise TypeError(f"concrete_trace: root must be an nn.Module or a function, got {type(root).__name__}")
    if isinstance(root, fx.GraphModule) and any(isinstance(m, Guard) for m in root.modules()):
        raise TypeError("concrete_trace: root is already a concretely traced GraphModule; trace the original")
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"concrete_trace: kwargs must be a dict of example inputs, got {type(kwargs).__name__}")
    if on_mismatch not in ("raise", "retrace"):
        raise ValueError(f'concrete_trace: on_mismatch must be "raise" or "retrace", got {on_mismatch!r}')
    if not isinstance(max_paths, int) or isinstance(max_paths, bool) or max_paths < 1:
        raise ValueError(f"concrete_trace: max_paths must be a positive int, got {max_paths!r}")
    args_, kwargs_ = _as_args(args), dict(kwargs or {})
    gm = _trace(root, args_, kwargs_)
    if on_mismatch == "raise":
        return gm
    return GuardedPaths(root, gm, max_paths=max_paths)


class GuardedPaths(nn.Module):
    """One guarded graph per path taken so far; traces a new one when no guard agrees.

    Calling it tries each graph in the order they were traced; a graph whose
    guard fails raises :class:`GuardError` at that guard, so only the work
    before it is repeated (graphs must not mutate their inputs). When no graph
    fits, ``root`` is traced again on the call's inputs, up to ``max_paths``
    graphs. Build it with ``concrete_trace(..., on_mismatch="retrace")``.
    """

    def __init__(self, root: nn.Module | Callable[..., Any], first: fx.GraphModule, *, max_paths: int = 8) -> None:
        super().__init__()
        if not isinstance(first, fx.GraphModule):
            raise TypeError(f"GuardedPaths: first must be a GraphModule from concrete_trace, got {type(first).__name__}")
        self._root = (root,)  # a tuple: the original is not registered as a submodule twice
        self.paths = nn.ModuleList([first])
        self.max_paths = max_paths

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        errors: list[GuardError] = []
        for gm in self.paths:
            try:
                return gm(*args, **kwargs)
            except GuardError as error:
                errors.append(error)
        if len(self.paths) >= self.max_paths:
            last = errors[-1]
            raise GuardError(last.decision, last.new, advice=(
                f"All {len(self.paths)} traced paths refuse this input and max_paths={self.max_paths} "
                f"is reached: pass a larger max_paths to concrete_trace, or trace this input on its own."
            ))
        gm = _trace(self._root[0], tuple(args), dict(kwargs))
        self.paths.append(gm)
        return gm(*args, **kwargs)

    def decisions(self) -> list[list[Decision]]:
        """The decisions of each traced path, in the order the paths were traced."""
        return [decisions(gm) for gm in self.paths]


def decisions(traced: fx.GraphModule | GuardedPaths) -> list[Decision]:
    """The decisions a concretely traced graph was specialized on, in program order.

    For a :class:`GuardedPaths`, the decisions of all its paths, path after path.

    >>> gm = concrete_trace(lambda x: x if x.sum() > 0 else -x, (torch.ones(2),))
    >>> [(d.kind, d.value) for d in decisions(gm)]
    [('branch', True)]
    """
    if isinstance(traced, GuardedPaths):
        return [d for path in traced.decisions() for d in path]
    if not isinstance(traced, fx.GraphModule):
        raise TypeError(f"decisions: expected a GraphModule from concrete_trace, got {type(traced).__name__}")
    return [traced.get_submodule(node.target).decision for node in traced.graph.nodes
            if node.op == "call_module" and isinstance(traced.get_submodule(node.target), Guard)]


def show_decisions(traced: fx.GraphModule | GuardedPaths) -> None:
    """Print one line per decision: guard node, kind, ``file:line``, source, traced value.

    A :class:`GuardedPaths` prints each path under a ``path N:`` heading.
    """
    if isinstance(traced, GuardedPaths):
        for number, path in enumerate(traced.decisions()):
            print(f"path {number}:")
            for decision in path:
                print(f"  {decision}")
            if not path:
                print("  (no decisions)")
        return
    found = decisions(traced)
    for decision in found:
        print(decision)
    if not found:
        print("(no decisions)")
