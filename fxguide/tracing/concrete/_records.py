"""What a trace records: decisions, the guards that re-check them, and the two errors."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.fx as fx
from torch import nn
from torch.utils import _pytree as pytree

_PUBLIC = "fxguide.tracing.concrete"  # where readers import these from; shown in tracebacks

# -- What is recorded -----------------------------------------------------------

Kind = Literal["branch", "loop", "int", "float", "value", "type", "raises", "input", "state"]


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
        return {"input": "guard_inputs", "state": "guard_state"}.get(self.kind, f"guard_{self.index}")

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
        if not isinstance(decision, Decision):
            raise TypeError(f"GuardError: decision must be the Decision that differs, got {type(decision).__name__}; "
                            "guard errors are raised by the guards concrete_trace places")
        self.decision = decision
        self.traced = decision.value
        self.new = new
        if advice is None:
            advice = ("Trace again with this input, or trace with "
                      'concrete_trace(..., on_mismatch="retrace") to keep one graph per path.')
        if decision.kind == "state":  # what the graph inlined from the model: a training flag, hooks
            super().__init__(
                f"{decision.guard_name}: {decision.code} was {decision.value} when traced and is {new} now, so the "
                f"graph (of the code at {decision.where}) does not hold this call's path. {advice}")
            return
        if decision.kind == "input":  # the structure of the inputs: value and new describe it in words
            super().__init__(
                f"{decision.guard_name}: the input {decision.code} (of the function at {decision.where}) was "
                f"{decision.value} when traced and is {new} in this call, so the graph was not traced for "
                f"these inputs. {advice}")
            return
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


def _check_example(name: str, value: Any, caller: str = "concrete_trace") -> None:
    for leaf in pytree.tree_leaves(value):
        if not isinstance(leaf, (torch.Tensor, bool, int, float)):
            advice = ("Pass the tensors it holds (a list or dict of them) and build the object inside the function "
                      "you trace, so that the graph builds it on every call" if _holds_tensor(leaf) else
                      "Bind other values before tracing, e.g. with functools.partial or a default argument")
            raise TypeError(
                f"{caller}: the example input {name!r} is (or holds) a {type(leaf).__name__}; traced inputs "
                f"must be torch.Tensor or bool/int/float, alone or in lists, tuples and dicts. {advice}"
            )


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, (torch.Tensor, nn.Module)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor(v) for v in value.values())
    return hasattr(value, "__dict__") and _holds_tensor(vars(value))


def _as_is(value: Any) -> Any:
    """A "value" decision's answer as it is (a named function: a pickled guard must name it)."""
    return value


_CONVERT: dict[str, Callable[[Any], Any]] = {
    "branch": bool, "loop": int, "int": int, "float": float, "value": _as_is, "type": type,
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
        _refuse_retrace(self.decision.guard_name, self.decision)
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
        _refuse_retrace(self.decision.guard_name, self.decision)
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



_CONCRETE_TRACES: list[Any] = []  # the concrete tracers running now (is_fx_tracing() is True for them)
_READ_FX_TRACING = getattr(fx._symbolic_trace, "_get_is_fx_tracing", None)


def _fx_tracing() -> bool:
    """Whether an FX tracer (``symbolic_trace``, ``make_fx``, non-strict export) is running, read without
    ``is_fx_tracing()``'s one-time warning (torch 2.14 keeps the flag in ``_get_is_fx_tracing``)."""
    if _READ_FX_TRACING is not None:
        return bool(_READ_FX_TRACING())
    return bool(getattr(fx._symbolic_trace, "_is_fx_tracing_flag", False))


def _refuse_retrace(name: str, what: Decision | str) -> None:
    """Refuse to be traced again: a tracer answers a check's question once and keeps no check of it.

    ``torch.fx.symbolic_trace(gm)`` or ``make_fx(gm)`` on a graph with guards would run each check on the
    value tracing sees (``torch.is_grad_enabled()`` at tracing time, or a stand-in) and leave a graph that
    checks nothing. A concrete trace of code that calls a guarded graph guards its questions again.
    ``name`` is the check's node, ``what`` what it checks (a decision, or words). Every call of a guarded
    graph passes here: the flag is read first, the rest only while a tracer runs.
    """
    if not _fx_tracing():
        return
    if not _CONCRETE_TRACES:
        asked = what if isinstance(what, str) else f"the {what.kind} at {what.where} (`{what.code}`)"
        raise UnguardableError(
            f"{name} checks {asked} on every call; tracing the guarded graph again would answer it once and "
            "drop the check. Edit the graph in place (gm.graph, then gm.recompile()) or a copy.deepcopy(gm), "
            "or trace the original model again (concrete_trace keeps the guards)")


def _pending_guard(value: Any, index: int) -> None:
    """Stand-in target of a guard node while tracing; replaced by a ``Guard`` call."""
    raise RuntimeError("internal: a guard node was not turned into a Guard call")

