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

The rule: the traced graph, called on any input, either returns what the
model returns in eager mode or raises :class:`GuardError`. Besides ``if``,
loops and ``int()``, the answers Python gets through ``float()``, ``str()``
and f-strings, ``hash()`` (dict and set lookups), ``isinstance``,
``hasattr``, ``x.dtype``/``x.device``, and an exception caught by
``try``/``except`` are guarded too; branches on the model's buffers and
tensor attributes are guarded like branches on inputs. What cannot be
replayed is refused while tracing with :class:`UnguardableError` (a traced
value stored on the module, a Python attribute that ``forward`` changes, an
autocast region, ``str()`` or ``hash()`` of a whole tensor). Tracing leaves the
model exactly as it was: parameters, buffers and attributes are restored.

What remains unguardable, because Python answers without asking the value:
``x is y`` and ``type(x)`` on traced values, ``id()``, ``repr()`` of a traced
tensor, and state outside the model (global variables, random draws made at
trace time).

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

import builtins
import copy
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
from torch.utils import _pytree as pytree

__all__ = [
    "ConcreteTracer",
    "Decision",
    "Guard",
    "GuardError",
    "GuardedPaths",
    "RaisesGuard",
    "UnguardableError",
    "concrete_trace",
    "decisions",
    "show_decisions",
]

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_THIS_FILE = os.path.abspath(__file__)
_SCALARS = (bool, int, float)
_LOOP_LINE = re.compile(r"\bfor\b.+\bin\b")


# -- What is recorded -----------------------------------------------------------

Kind = Literal["branch", "loop", "int", "float", "value", "type", "raises"]


@dataclass(frozen=True)
class Decision:
    """One question the traced code asked about its input, and the answer it got.

    ``kind`` is ``"branch"`` (a traced value used as a bool: ``if``, ``while``,
    ``and``/``or``, ``assert``), ``"loop"`` (a trip count: iterating over a
    traced value, or an int taken on a ``for`` line such as
    ``for i in range(x.shape[0])``), ``"int"`` (any other traced value turned
    into a Python int: ``int(...)``, ``len(...)``, an index, a dict key, an
    f-string), ``"float"`` (``float(...)``), ``"value"`` (a tensor's ``dtype``
    or ``device`` read as a Python object), ``"type"`` (``isinstance`` on a
    traced value) or ``"raises"`` (an operation that raised an exception the
    code caught). ``value`` is the answer for the example input; the graph is
    only valid for inputs that give the same answer.

    >>> d = Decision(0, "branch", True, "/src/model.py", 12, "if x.shape[1] > 3:")
    >>> print(d)
    guard_0  branch  model.py:12  if x.shape[1] > 3:  -> True
    """

    index: int
    kind: Kind
    value: Any
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

    def __init__(self, decision: Decision, new: Any, advice: str | None = None) -> None:
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


class UnguardableError(TypeError):
    """Raised while tracing: the code does something a graph cannot replay or guard.

    The message names the construct, the source line, and what to write instead.
    """


def _same(kind: str, new: Any, expected: Any) -> bool:
    if kind == "float" and new != new and expected != expected:  # NaN decided like NaN
        return True
    if kind == "type":
        return new is expected
    return _equal(new, expected) if kind == "value" else new == expected


def _equal(a: Any, b: Any) -> bool:
    """Equality of plain Python values, field by field for objects without their own ``__eq__``."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if type(a).__eq__ is object.__eq__ and hasattr(a, "__dict__"):
        return _equal(vars(a), vars(b))
    return bool(a == b)


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, (torch.Tensor, nn.Module)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor(v) for v in value.values())
    return hasattr(value, "__dict__") and _holds_tensor(vars(value))


_CONVERT: dict[str, Callable[[Any], Any]] = {
    "branch": bool, "loop": int, "int": int, "float": float, "value": lambda v: v, "type": type,
}


class Guard(nn.Module):
    """The submodule a ``guard_N`` node calls: re-asks one decision's question.

    It receives the value the decision was made from (a bool-like for a
    branch, an int-like for a loop or int, ...) and raises :class:`GuardError`
    if the answer differs from the traced one. It returns nothing, and declares
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
            raise TypeError(f"Guard: decision must be a Decision, got {type(decision).__name__}; "
                            f"guards are made by concrete_trace")
        if decision.kind not in _CONVERT:
            raise ValueError(f"Guard: a {decision.kind!r} decision is checked by RaisesGuard, not Guard")
        self.decision = decision
        self._expected = decision.value
        self._convert = _CONVERT[decision.kind]

    def forward(self, value: Any) -> None:
        new = self._convert(value)
        if not _same(self.decision.kind, new, self._expected):
            raise GuardError(self.decision, new)

    def extra_repr(self) -> str:
        return str(self.decision)


class RaisesGuard(Guard):
    """Runs an operation the traced code guarded with ``try``; the path holds only if it raises the same way.

    Traced code that catches an exception (``try: ... except``) takes a path
    that depends on whether an operation raises. This guard stands in for that
    operation: it runs it on the new input, returns its result when it did not
    raise when traced either (``decision.value`` is None), returns None when it
    raises the traced exception type again, and raises :class:`GuardError`
    otherwise.
    """

    def __init__(self, decision: Decision, op: str, target: Any) -> None:
        nn.Module.__init__(self)
        if not isinstance(decision, Decision) or decision.kind != "raises":
            raise TypeError("RaisesGuard: decision must be a 'raises' Decision made by concrete_trace")
        if op not in ("call_function", "call_method", "call_module"):
            raise ValueError(f"RaisesGuard: op must name a call opcode, got {op!r}")
        self.decision, self._expected = decision, decision.value
        self._op, self._target = op, (target,)  # a tuple: a module target is not registered twice

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        target = self._target[0]
        try:
            if self._op == "call_method":
                result = getattr(args[0], target)(*args[1:], **kwargs)
            else:
                result = target(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - which exception is the decision
            if type(error).__name__ != self._expected:
                raise GuardError(self.decision, type(error).__name__) from error
            return None
        if self._expected is not None:
            raise GuardError(self.decision, None)
        return result


def _catching_handler(code: Any, offset: int) -> bool:
    """Whether the instruction at ``offset`` of ``code`` runs under an ``except`` clause.

    A ``with`` block's handler re-raises unless its context manager
    suppresses the exception (``contextlib.suppress``): it is followed outward.
    """
    entries = _exception_entries(code)
    for _ in range(16):
        entry = next((e for e in entries if e[0] <= offset < e[1]), None)
        if entry is None:
            return False
        start, _end, target, first, second, catches = entry
        if catches:
            return True
        offset = target  # a cleanup or finally handler re-raises: look at what covers it
    return False


_ENTRIES: dict[Any, list[tuple[int, int, int, str, str, bool]]] = {}


def _exception_entries(code: Any) -> list[tuple[int, int, int, str, str, bool]]:
    if code not in _ENTRIES:
        import dis

        bytecode = dis.Bytecode(code)
        ops = {i.offset: i.opname for i in bytecode}
        offsets = sorted(ops)
        found = []
        for entry in getattr(bytecode, "exception_entries", []):
            after = [ops[o] for o in offsets if o >= entry.target][:8]
            first, second = (after + ["", ""])[:2]
            catches = first == "PUSH_EXC_INFO" and (
                "CHECK_EXC_MATCH" in after or second == "POP_TOP")
            found.append((entry.start, entry.end, entry.target, first, second, catches))
        _ENTRIES[code] = found
    return _ENTRIES[code]


def _inside_try() -> bool:
    """Whether the traced code is running inside a ``try``/``except`` of the traced model."""
    frame = sys._getframe(2)
    trace_code = fx.Tracer.trace.__code__
    while frame is not None and frame.f_code is not trace_code:
        if _is_user_frame(frame) and _catching_handler(frame.f_code, frame.f_lasti):
            return True
        frame = frame.f_back
    return False


# -- The tracer -------------------------------------------------------------------


def _pending_guard(value: Any, index: int) -> None:
    """Stand-in target of a guard node while tracing; replaced by a ``Guard`` call."""
    raise RuntimeError("internal: a guard node was not turned into a Guard call")


def _is_user_frame(frame: Any) -> bool:
    filename = frame.f_code.co_filename
    return not (filename.startswith(_TORCH_DIR) or os.path.abspath(filename) == _THIS_FILE)


#: Tensor attributes answered with their real value (and guarded): they depend on
#: the input's dtype and device only, and code passes them to functions that
#: need real objects (``torch.finfo(x.dtype)``, ``torch.autocast(x.device.type)``).
_CONCRETE_ATTRIBUTES = frozenset({"dtype", "device", "layout", "is_cuda", "is_sparse", "is_quantized", "is_meta"})


class _ConcreteMixin:
    """Conversions to Python values, answered from the example's value and recorded."""

    tracer: ConcreteTracer

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = self.tracer.peek(self)  # type: ignore[arg-type]
        if not hasattr(value, name):  # a typo fails as in eager mode; hasattr() gets the real answer
            raise AttributeError(f"{type(value).__name__!r} object has no attribute {name!r}")
        if name in _CONCRETE_ATTRIBUTES and isinstance(value, torch.Tensor):
            return self.tracer.decide_attribute(self, name)  # type: ignore[arg-type]
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

    def __float__(self) -> float:
        return self.tracer.decide_scalar(self, "float() of")  # type: ignore[arg-type]

    def __str__(self) -> str:
        if not _is_user_frame(sys._getframe(1)):
            return repr(self)
        return str(self.tracer.decide_scalar(self, "str() of"))  # type: ignore[arg-type]

    def __format__(self, spec: str) -> str:
        if not _is_user_frame(sys._getframe(1)):
            return format(repr(self), spec)
        return format(self.tracer.decide_scalar(self, "an f-string or format() of"), spec)  # type: ignore[arg-type]

    def __hash__(self) -> int:
        if not _is_user_frame(sys._getframe(1)):
            return id(self)
        return hash(self.tracer.decide_scalar(self, "a dict key, set member or hash() of"))  # type: ignore[arg-type]

    def __contains__(self, item: Any) -> bool:
        # `item in x` asks the value (Tensor.__contains__ and friends), as a guarded branch.
        found = self.tracer.create_proxy("call_function", operator.contains, (self, item), {})
        return self.tracer.to_bool(found)

    def __setitem__(self, key: Any, value: Any) -> None:
        # x[i] = v: recorded as operator.setitem, applied in place as in eager mode.
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


class ConcreteProxy(_ConcreteMixin, fx.Proxy):
    """A ``Proxy`` whose tracer knows the value it has for the example input."""

    def __repr__(self) -> str:
        return f"ConcreteProxy({self.node.name})"


class ConcreteAttribute(_ConcreteMixin, Attribute):
    """An attribute access (``x.shape``) on a :class:`ConcreteProxy`."""

    def __repr__(self) -> str:
        return f"ConcreteAttribute({self.attr})"


def _has_proxy(tree: Any) -> bool:
    return any(isinstance(leaf, fx.Proxy) for leaf in pytree.tree_leaves(tree))


#: Functions and tensor methods that need real sizes: called with traced sizes
#: (``torch.ones(n, d)``, ``real_tensor.expand(n, d)``), they get the example's
#: sizes, each a guarded ``int`` decision.
_FACTORIES = ("ones", "zeros", "empty", "full", "arange", "eye", "linspace", "rand", "randn", "randint",
              "tensor", "as_tensor", "ones_like", "zeros_like", "full_like")
_CALLS = ("call_function", "call_method", "call_module")
_TENSOR_METHODS = ("expand", "view", "reshape", "repeat", "new_zeros", "new_ones", "new_full", "new_empty",
                   "new_tensor", "narrow", "__getitem__", "masked_fill", "index_select", "to")


class ConcreteTracer(fx.Tracer):
    """A ``Tracer`` that evaluates every node on example inputs while recording it.

    ``inputs`` maps each placeholder name of the traced callable to its
    example value. Each created node is evaluated right away (in program
    order, so in-place operations behave as in eager mode) and its value kept
    in ``values``. When the traced code turns a proxy into a Python value
    (``to_bool``, ``iter``, ``len``, ``int``, ``index``, ``float``, ``str``,
    ``hash``, ``isinstance``), the tracer answers from that value, appends a
    :class:`Decision` to ``decisions`` and adds a guard node checking it.
    Buffers are traced as graph inputs (``proxy_buffer_attributes``), so a
    branch on a buffer is guarded too. Use :func:`concrete_trace` rather than
    this class.
    """

    def __init__(self, inputs: Mapping[str, Any]) -> None:
        super().__init__()
        if not isinstance(inputs, Mapping):
            raise TypeError(f"ConcreteTracer: inputs must map parameter names to values, got {type(inputs).__name__}")
        self.inputs = dict(inputs)
        self.values: dict[fx.Node, Any] = {}
        self.decisions: list[Decision] = []
        self.raising: dict[fx.Node, tuple[Decision, str, Any]] = {}
        self.proxy_buffer_attributes = True
        self._evaluating = 0
        self._decided: dict[tuple[fx.Node, str], Any] = {}
        self._autocast = _autocast_state()

    # Every proxy the base class creates is a ConcreteProxy.
    def proxy(self, node: fx.Node) -> fx.Proxy:
        return ConcreteProxy(node, self)

    def create_node(self, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                    name: str | None = None, type_expr: Any | None = None) -> fx.Node:
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        if kind != "output" and target is not _pending_guard:
            if not self._evaluating and _autocast_state() != self._autocast:
                self._refuse("an autocast region (torch.autocast) opened inside the traced code",
                             "a graph does not record autocast, so its ops would run in the caller's precision; "
                             "trace without the autocast region, or call the traced graph inside torch.autocast")
            outermost = not self._evaluating
            self._evaluating += 1
            try:
                self.values[node] = self._evaluate(node)
            except Exception as error:
                if outermost and kind in _CALLS:
                    self._guard_raise(node, type(error).__name__)
                raise
            finally:
                self._evaluating -= 1
            if outermost and kind in _CALLS and _inside_try():
                self._guard_raise(node, None)  # the graph must not let an exception take another path
        return node

    def _guard_raise(self, node: fx.Node, error: str | None) -> None:
        # If the code catches exceptions here, its path depends on whether this operation raises.
        target = self.root.get_submodule(str(node.target)) if node.op == "call_module" else node.target
        decision = self._decision("raises", error)
        self.raising[node] = (decision, node.op, target)
        node.op, node.target = "call_function", _pending_guard
        node.args, node.kwargs = (node.args, node.kwargs), {}

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

    def path_of_module(self, mod: nn.Module) -> str:
        try:
            return super().path_of_module(mod)
        except NameError:
            # A module the traced function uses without owning it: install it
            # in the trace's root (a copy of the function's world, never the user's model).
            name = f"_module_{len(self._installed)}"
            self._installed.append(mod)
            self.root.add_module(name, mod)
            if self.submodule_paths is not None:
                self.submodule_paths[mod] = name
            return name

    _installed: list[nn.Module]
    _objects: list[Any]

    def trace(self, root: Any, concrete_args: dict[str, Any] | None = None) -> fx.Graph:
        self._installed, self._objects = [], []
        return super().trace(root, concrete_args)

    def create_arg(self, a: Any) -> Any:
        try:
            return super().create_arg(a)
        except NotImplementedError:
            # A Python object the graph needs as an argument (a helper object a model built
            # from traced sizes): kept as a constant attribute, as FX does for tensors.
            name = f"_object_constant{len(self._objects)}"
            self._objects.append(a)
            object.__setattr__(self.root, name, a) if not isinstance(self.root, nn.Module) \
                else self.root.__dict__.__setitem__(name, a)
            return self.create_node("get_attr", name, (), {})

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        if self._evaluating:
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def value_of(self, proxy: fx.Proxy) -> Any:
        """The value ``proxy`` has for the example inputs."""
        return self.values[proxy.node]

    def peek(self, proxy: fx.Proxy) -> Any:
        """The value of ``proxy``, without recording an attribute access that was not used yet."""
        if isinstance(proxy, Attribute) and proxy._node is None:
            return getattr(self.peek(proxy.root), proxy.attr)
        return self.values[proxy.node]

    # -- decisions ---------------------------------------------------------------

    def _decision(self, kind: Kind, value: Any) -> Decision:
        filename, lineno, code = _user_location()
        if kind == "int" and _LOOP_LINE.search(code):
            kind = "loop"
        decision = Decision(len(self.decisions), kind, value, filename, lineno, code)
        self.decisions.append(decision)
        return decision

    def _record(self, kind: Kind, source: fx.Node, value: Any) -> None:
        decision = self._decision(kind, value)
        fx.Tracer.create_node(self, "call_function", _pending_guard, (source, decision.index), {},
                              name=decision.guard_name)

    def _refuse(self, what: str, advice: str) -> None:
        filename, lineno, code = _user_location()
        raise UnguardableError(f"concrete_trace cannot guard {what} at {os.path.basename(filename)}:{lineno} "
                               f"(`{code}`): {advice}.")

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

    def decide_scalar(self, obj: fx.Proxy, use: str) -> bool | int | float | str:
        """Answer with the Python scalar ``obj`` holds (for ``float``, ``str``, ``hash``...), guarded exactly."""
        value = self.value_of(obj)
        if use == "float() of" and (isinstance(value, (int, bool)) or (
                isinstance(value, torch.Tensor) and value.numel() == 1)):
            value = float(value)
        if isinstance(value, bool):
            self._record("branch", obj.node, value)
        elif isinstance(value, int):
            self._record("int", obj.node, value)
        elif isinstance(value, float):
            self._record("float", obj.node, value)
        elif isinstance(value, (str, torch.dtype, torch.device)) or (
                isinstance(value, tuple) and all(type(v) in (int, bool, float) for v in value)):
            self._record("value", obj.node, value)  # a string, a dtype, a torch.Size...
        else:
            self._refuse(f"{use} a traced {type(value).__name__}",
                         "the answer depends on every element (or on the object's identity); compute with "
                         "tensor operations instead, or convert a size with int() first")
        return value

    def decide_object(self, obj: fx.Proxy) -> Any:
        """Answer with the Python object ``obj`` holds (no tensors inside), guarded by equality of its fields."""
        value = self.peek(obj)
        self._record("value", obj.node, value)
        return value

    def decide_attribute(self, obj: fx.Proxy, name: str) -> Any:
        """Answer ``obj.dtype`` (``device``...) with the real object; guarded once per value and attribute."""
        node = obj.node
        if (node, name) not in self._decided:
            attribute = self.create_proxy("call_function", getattr, (obj, name), {})
            value = self.value_of(attribute)
            self._record("value", attribute.node, value)
            self._decided[(node, name)] = value
        return self._decided[(node, name)]

    def decide_type(self, obj: fx.Proxy) -> type:
        """Answer ``isinstance``'s question with the example value's type; guarded once per value."""
        node = obj.node
        if (node, "__class__") not in self._decided:
            value = type(self.value_of(obj))
            self._record("type", node, value)
            self._decided[(node, "__class__")] = value
        return self._decided[(node, "__class__")]


def _autocast_state() -> tuple[bool, ...]:
    return tuple(torch.is_autocast_enabled(device) for device in ("cpu", "cuda"))


def _user_location() -> tuple[str, int, str]:
    """File, line and source text of the innermost frame outside torch and this module."""
    frame = sys._getframe(1)
    while frame is not None:
        if _is_user_frame(frame):
            filename, lineno = frame.f_code.co_filename, frame.f_lineno
            return filename, lineno, linecache.getline(filename, lineno, frame.f_globals).strip()
        frame = frame.f_back
    return "<unknown>", 0, ""


# -- Leaving the model as it was, and what tracing must intercept --------------------


class _ModelState:
    """A snapshot of every module's attributes and tensors, restored after tracing.

    Tracing runs ``forward`` for real: batch norms in training mode update their
    statistics, caches fill with proxies. Restoring puts back every tensor's
    values (in place, so a traced graph sharing them sees the same), every
    attribute, and the contents of every dict, list and set a module holds.
    """

    def __init__(self, root: Any) -> None:
        modules = list(root.modules()) if isinstance(root, nn.Module) else []
        self.attributes = [(m, dict(m.__dict__)) for m in modules]
        self.containers: list[tuple[Any, Any]] = []
        self.tensors: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        for _, attributes in self.attributes:
            for value in attributes.values():
                if isinstance(value, (dict, list, set)):
                    self.containers.append((value, copy.copy(value)))
                    inner = value.values() if isinstance(value, dict) else value
                    tensors = [v for v in inner if isinstance(v, torch.Tensor)]
                else:
                    tensors = [value] if isinstance(value, torch.Tensor) else []
                for tensor in tensors:
                    self.tensors.setdefault(id(tensor), (tensor, tensor.detach().clone()))

    def restore(self) -> None:
        for container, saved in self.containers:
            container.clear()
            container.update(saved) if not isinstance(container, list) else container.extend(saved)
        for module, saved in self.attributes:
            module.__dict__.clear()
            module.__dict__.update(saved)
        with torch.no_grad():
            for tensor, saved in self.tensors.values():
                if tensor.shape != saved.shape or tensor.dtype != saved.dtype:
                    tensor.data = saved
                elif not torch.equal(tensor, saved):
                    tensor.copy_(saved)


_INHERITED = object()


class _Interceptions:
    """What tracing patches while it runs, and puts back afterwards.

    - plain tensor attributes of modules become buffers, so reading them is traced and guarded;
    - ``nn.Module.__setattr__`` refuses to store a traced value (or a changed
      Python value) on a module, and turns ``self.buf = traced`` into an
      in-place ``copy_`` the graph replays;
    - factory functions and tensor methods given traced sizes get the example's sizes, guarded.
    """

    def __init__(self, tracer: ConcreteTracer, root: Any) -> None:
        self.tracer, self.root = tracer, root
        self.patched: list[tuple[Any, str, Any]] = []
        self.converted: set[tuple[int, str]] = set()  # plain tensor attributes made buffers for the trace

    def __enter__(self) -> _Interceptions:
        if isinstance(self.root, nn.Module):
            for module in self.root.modules():
                for name, value in list(vars(module).items()):
                    if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter) \
                            and not name.startswith("__"):
                        delattr(module, name)
                        module.register_buffer(name, value, persistent=False)
                        self.converted.add((id(module), name))
        self._patch(nn.Module, "__setattr__", self._setattr(nn.Module.__setattr__))
        self._patch(builtins, "isinstance", self._isinstance(builtins.isinstance))
        for name in _FACTORIES:
            self._patch(torch, name, self._recorded(getattr(torch, name), "call_function"))
        for name in _TENSOR_METHODS:
            self._patch(torch.Tensor, name, self._recorded(getattr(torch.Tensor, name), "call_method", name))
        return self

    def __exit__(self, *exc: Any) -> None:
        for owner, name, original in reversed(self.patched):
            if original is _INHERITED:
                delattr(owner, name)  # it was inherited: remove the patch, do not pin a copy
            else:
                setattr(owner, name, original)

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        self.patched.append((owner, name, vars(owner).get(name, _INHERITED)))
        setattr(owner, name, replacement)

    def _recorded(self, original: Callable[..., Any], op: str, method: str = "") -> Callable[..., Any]:
        tracer = self.tracer

        def size(a: Any) -> Any:
            if type(a) in (ConcreteProxy, ConcreteAttribute):
                value = tracer.peek(a)
                if isinstance(value, int) and not isinstance(value, bool):
                    return operator.index(a)  # a guarded int decision
                if isinstance(value, torch.Size):
                    return tuple(operator.index(v) for v in a)
            return a

        def call(*args: Any, **kwargs: Any) -> Any:
            if tracer._evaluating or not _has_proxy((args, kwargs)):
                return original(*args, **kwargs)
            args, kwargs = pytree.tree_map(size, (args, kwargs))
            if _has_proxy((args, kwargs)):  # a traced tensor among the arguments: one recorded call
                return tracer.create_proxy(op, method or original, args, kwargs)
            return original(*args, **kwargs)

        return call

    def _isinstance(self, original: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
        # isinstance(proxy, torch.Tensor) in the model's code answers for the example's
        # value (guarded by its type); torch's own code keeps seeing a Proxy.
        tracer, proxies = self.tracer, (ConcreteProxy, ConcreteAttribute)

        def isinstance_(obj: Any, classes: Any) -> bool:
            if type(obj) in proxies and obj.tracer is tracer and _is_user_frame(sys._getframe(1)):
                return issubclass(tracer.decide_type(obj), classes)
            return original(obj, classes)

        return isinstance_

    def _setattr(self, original: Callable[..., None]) -> Callable[..., None]:
        tracer, converted = self.tracer, self.converted

        def setattr_(module: nn.Module, name: str, value: Any) -> None:
            if tracer._evaluating:
                return original(module, name, value)
            old = module.__dict__.get("_buffers", {}).get(name, module.__dict__.get(name))
            if _has_proxy(value):
                real = tracer.value_of(value) if isinstance(value, fx.Proxy) else None
                if isinstance(old, torch.Tensor) and isinstance(real, torch.Tensor) \
                        and name in module._buffers and (id(module), name) not in converted \
                        and real.shape == old.shape and real.dtype == old.dtype:
                    path = next(p for p, m in tracer.root.named_modules() if m is module)
                    buffer = tracer.create_proxy("get_attr", f"{path}.{name}" if path else name, (), {})
                    tracer.create_proxy("call_method", "copy_", (buffer, value), {})
                    return None
                leaves = [leaf for leaf in pytree.tree_leaves(value) if isinstance(leaf, fx.Proxy)]
                if not any(_holds_tensor(tracer.peek(leaf)) for leaf in leaves):
                    # Python values computed from traced sizes (a lazily set-up scale): stored as
                    # their example values, each a guarded decision.
                    value = pytree.tree_map(
                        lambda a: tracer.decide_object(a) if isinstance(a, fx.Proxy) else a, value)
                else:
                    tracer._refuse(f"storing a traced value on the module (self.{name} = ...)",
                                   "the model would keep a proxy and the graph would not replay the update; "
                                   f"update a registered buffer of the same shape in place (self.{name}.copy_(...)) "
                                   "or return the value from forward")
            if isinstance(value, (bool, int, float, str)) and name in module.__dict__ and old != value:
                tracer._refuse(f"a change of the Python attribute self.{name} ({old!r} -> {value!r})",
                               "a graph cannot replay Python state that changes between calls; keep it in a "
                               "buffer updated in place, or trace a model that does not change it")
            return original(module, name, value)

        return setattr_


# -- The public entry points -------------------------------------------------------


def _check_example(name: str, value: Any) -> None:
    for leaf in pytree.tree_leaves(value):
        if not isinstance(leaf, (torch.Tensor, *_SCALARS)):
            raise TypeError(
                f"concrete_trace: the example input {name!r} is (or holds) a {type(leaf).__name__}; traced inputs "
                f"must be torch.Tensor or bool/int/float, alone or in lists, tuples and dicts. Bind other values "
                f"before tracing, e.g. with functools.partial or a default argument"
            )


def _bind(root: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> inspect.BoundArguments:
    fn = root.forward if isinstance(root, nn.Module) else root
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as error:
        raise TypeError(f"concrete_trace: cannot read the signature of {fn!r}: {error}") from None
    required = [p.name for p in signature.parameters.values() if p.default is inspect.Parameter.empty
                and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
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
        _check_example(name, value)
    return bound


def _name(root: Callable[..., Any]) -> str:
    if isinstance(root, nn.Module):
        return f"{type(root).__name__}.forward"
    return getattr(root, "__name__", type(root).__name__)


@dataclass
class _Plan:
    """How the example inputs become placeholders: names, values, and the function actually traced."""

    inputs: dict[str, Any]
    concrete_args: dict[str, Any]
    forward: Callable[..., Any] | None  # a stand-in with named parameters when the signature has *args/**kwargs


def _plan(root: Any, bound: inspect.BoundArguments) -> _Plan:
    signature = bound.signature
    params = signature.parameters
    # A stand-in forward with only the given inputs as parameters is traced when the
    # signature has *args/**kwargs, or an input is a container (FX flattens it).
    variadic = any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values()) or any(
        isinstance(v, (list, tuple, dict)) for v in bound.arguments.values())
    given: dict[str, Any] = {}  # placeholder name -> example value (or container of them)
    if not variadic:
        given = dict(bound.arguments)
        # Parameters left at their default are constants of the trace (FX's concrete_args).
        concrete = {name: p.default for name, p in params.items()
                    if name not in bound.arguments and p.default is not inspect.Parameter.empty}
        forward = None
    else:
        concrete, positional, keyword = {}, [], []
        varargs = any(p.kind == p.VAR_POSITIONAL and bound.arguments.get(name) for name, p in params.items())
        for name, value in bound.arguments.items():
            kind = params[name].kind
            if kind == inspect.Parameter.VAR_POSITIONAL:
                for i, item in enumerate(value):
                    given[f"{name}_{i}"] = item
                    positional.append(f"{name}_{i}")
            elif kind == inspect.Parameter.VAR_KEYWORD:
                for key, item in value.items():
                    if not key.isidentifier() or key in params:
                        raise TypeError(f"concrete_trace: the keyword input {key!r} cannot be a parameter name "
                                        f"of the traced graph; pass it under another name")
                    given[key] = item
                    keyword.append(f"{key}={key}")
            else:
                given[name] = value
                if kind == inspect.Parameter.POSITIONAL_ONLY or (varargs and kind == inspect.Parameter.POSITIONAL_OR_KEYWORD):
                    positional.append(name)
                else:
                    keyword.append(f"{name}={name}")
        names = list(given)
        is_module = isinstance(root, nn.Module)
        original = type(root).forward if is_module else root
        head = ["self"] if is_module else []
        source = (f"def forward({', '.join(head + names)}):\n"
                  f"    return _original({', '.join(head + positional + keyword)})\n")
        namespace: dict[str, Any] = {"_original": original}
        exec(compile(source, f"<concrete_trace of {_name(root)}>", "exec"), namespace)  # noqa: S102
        forward = namespace["forward"]
    inputs: dict[str, Any] = {}
    for name, value in given.items():
        if isinstance(value, (list, tuple, dict)):  # one placeholder per tensor, FX's pytree inputs
            concrete[name] = pytree.tree_map(lambda _: fx.PH, value)
            inputs.update({f"{name}_{i}": leaf for i, leaf in enumerate(pytree.tree_leaves(value), start=1)})
        else:
            inputs[name] = value
    return _Plan(inputs, concrete, forward)


class _PlannedTracer(ConcreteTracer):
    """A :class:`ConcreteTracer` that traces the plan's stand-in ``forward`` when there is one."""

    def __init__(self, plan: _Plan) -> None:
        super().__init__(plan.inputs)
        self.plan = plan

    def create_args_for_root(self, root_fn: Any, is_module: bool, concrete_args: Any = None) -> Any:
        return super().create_args_for_root(self.plan.forward or root_fn, is_module, concrete_args)


def _trace(root: nn.Module | Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> fx.GraphModule:
    plan = _plan(root, _bind(root, args, kwargs))
    tracer = _PlannedTracer(plan)
    name = type(root).__name__ if isinstance(root, nn.Module) else getattr(root, "__name__", "function")
    state = _ModelState(root)
    try:
        with _Interceptions(tracer, root):
            graph = tracer.trace(root, concrete_args=plan.concrete_args or None)
        gm = fx.GraphModule(tracer.root, graph, name if name.isidentifier() else "function")
    finally:
        state.restore()  # the traced model is left exactly as it was
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is _pending_guard:
            decision = tracer.decisions[node.args[1]] if len(node.args) == 2 and isinstance(node.args[1], int) \
                else None
            if node in tracer.raising:
                decision, op, target = tracer.raising[node]
                guard: Guard = RaisesGuard(decision, op, target)
                node.args, node.kwargs = node.args[0], node.args[1]
            else:
                assert decision is not None
                guard = Guard(decision)
                node.args = (node.args[0],)
            gm.add_submodule(decision.guard_name, guard)
            node.op, node.target = "call_module", decision.guard_name
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
    are example inputs for it (tensors or bool/int/float, alone or in lists,
    tuples and dicts), bound to its parameters as in a call, ``*args`` and
    ``**kwargs`` included. Parameters not given keep their default as a
    constant. Tracing leaves ``root`` exactly as it was; code the tracer can
    neither answer with a guard nor replay raises :class:`UnguardableError`.

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
    if isinstance(root, type):
        raise TypeError(f"concrete_trace: root is the class {root.__name__}, not a model; pass an instance, "
                        f"e.g. concrete_trace({root.__name__}(), (x,))")
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
        if isinstance(max_paths, bool) or not isinstance(max_paths, int) or max_paths < 1:
            raise ValueError(f"GuardedPaths: max_paths must be a positive int, got {max_paths!r}")
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
