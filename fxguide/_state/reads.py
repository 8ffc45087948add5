"""A value the model's code read while tracing, kept deeply so that a later change of it can be seen.

A graph holds what its code read from Python as constants: ``x * CFG["scale"]`` becomes ``x * 2``, a branch
on ``self.opts["act"]`` keeps one branch, ``len(self.sizes)`` becomes a number. When such a value changes
after tracing (a dict item set, a list appended to, a config object's attribute set, a class attribute
rebound), eager mode computes something else and the graph does not. :func:`freeze` records the value
deeply (numbers, strings and the like, and the containers and plain objects holding them), and
:class:`Read` compares the record with the value now. Objects of the program's own (a config, a
dataclass) are recorded through the attributes whose names the model's code uses; what is neither
plain data nor such a container (a tensor, a module, a function, the standard library's objects such as a
logger) is recorded by its type only, unless the graph holds it (``identities``): a submodule, a tensor, a
function it calls is then checked as that very object (:class:`Same` where it is the value read). A pickled
copy of the graph holds copies of those tensors: there they are compared by their contents
(:meth:`Read.detached`).

>>> cfg = {"scale": 2, "sizes": [3, 4]}
>>> read = Read.of(cfg, names=set())
>>> read.unchanged(cfg)
True
>>> cfg["sizes"].append(5)
>>> read.unchanged(cfg)
False
"""

from __future__ import annotations

import argparse
import contextvars
import decimal
import enum
import fractions
import functools
import logging
import math
import reprlib
import sys
import threading
import types
import weakref
from collections.abc import Callable, Collection, Mapping
from typing import Any

import torch
from torch import nn

from fxguide._state.contents import _ATOMS, attributes, is_torchs, kind_of

#: The most items a record holds: a larger value is not kept (reading it on every call would cost too much).
LARGEST = 2000
#: How deep a record goes into containers of containers.
DEPTH = 6

#: The standard library's objects that hold settings (its others, a logger or a lock, are not recorded).
_NAMESPACES = (types.SimpleNamespace, argparse.Namespace)
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60


class _Budget:
    def __init__(self) -> None:
        self.left = LARGEST


def _atom(value: Any) -> Any:
    if isinstance(value, (float, complex)) and math.isnan(abs(value)):
        return (type(value).__name__, "nan")  # NaN == NaN is False: kept as a marker
    return (type(value).__name__, value)


class _Identity:
    """An object inside a recorded container that the graph holds itself (a tensor in a tuple attribute):
    equal only to a record of that very object."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)

    def __deepcopy__(self, memo: dict[int, Any]) -> _Identity:
        return self


def _record(value: Any, names: Collection[str], budget: _Budget, depth: int, identities: bool | str = False) -> Any:
    budget.left -= 1
    if budget.left < 0 or depth > DEPTH:
        raise OverflowError
    if type(value) in _ATOMS or isinstance(value, enum.Enum):
        return _atom(value)
    inner = functools.partial(_record, names=names, budget=budget, depth=depth + 1, identities=identities)
    library = _library_record(value, names, inner)
    if library is not None:
        return library
    if isinstance(value, functools.partial):  # its function, and the arguments it adds
        return ("partial", inner(value.func), tuple(map(inner, value.args)),
                tuple((k, inner(v)) for k, v in sorted(value.keywords.items())))
    if isinstance(value, types.MethodType):  # a bound method: its function, and the object it reads
        return ("method", inner(value.__func__), inner(value.__self__))
    if type(value) in (tuple, frozenset):
        items = tuple(inner(v) for v in value)
        return (type(value).__name__, items if type(value) is tuple else frozenset(items))
    kind = kind_of(value)
    if kind in ("list", "deque") or (kind is None and isinstance(value, tuple)):  # a namedtuple too
        return (type(value).__qualname__, tuple(inner(v) for v in value))
    if kind == "set":
        return ("set", frozenset(inner(v) for v in value))
    if kind == "dict":
        return (type(value).__qualname__, tuple((inner(k), inner(v)) for k, v in dict.items(value)))
    if kind in ("bytearray", "array"):
        data = bytes(value) if kind == "bytearray" else value.tobytes()
        budget.left -= len(data) // 64
        return (kind, data)
    if kind == "ndarray":
        budget.left -= value.size
        if budget.left < 0:
            raise OverflowError
        return ("ndarray", value.shape, str(value.dtype), value.tobytes())
    if kind == "object" and (type(value).__module__.partition(".")[0] not in sys.stdlib_module_names
                             or isinstance(value, _NAMESPACES)):
        own = attributes(value)
        return (type(value).__qualname__,
                tuple((n, inner(own[n])) for n in sorted(own) if n in names))
    if isinstance(value, type) and not _theirs(value):  # a class of the program's: its attributes the code names
        attrs = {n: v for klass in reversed(value.__mro__) if not _theirs(klass) for n, v in vars(klass).items()
                 if n in names and not n.startswith("__")}
        return ("class", _Identity(value) if identities is True else value.__qualname__,
                tuple((n, inner(attrs[n])) for n in sorted(attrs)))
    if identities and isinstance(value, _HELD):
        return _Identity(value) if identities is True else _held(value, budget)
    return ("<" + type(value).__qualname__ + ">",)  # a tensor, a module, a function, a generator...


#: What a record holds as that very object (with ``identities``): what a graph holds or calls.
_HELD = (nn.Module, torch.Tensor, types.FunctionType, types.BuiltinFunctionType, type)


def _theirs(klass: type) -> bool:
    """A class of Python's, torch's or a library's C code (``object``, ``nn.Module``): not the program's own."""
    module = str(getattr(klass, "__module__", "") or "")
    return is_torchs(module) or module.partition(".")[0] in sys.stdlib_module_names


def _library_record(value: Any, names: Collection[str], inner: Callable[[Any], Any]) -> Any:
    """A record of a value of the standard library's or NumPy's that holds settings a forward may read: an exact
    number (``Decimal``, ``Fraction``), a NumPy scalar, a read-only or chained mapping (``MappingProxyType``,
    ``ChainMap``, ``ConfigParser``), a logger's level, a context variable's or a thread-local's value, a weak
    reference's target; ``None`` for anything else."""
    cls = type(value)
    if cls in (decimal.Decimal, fractions.Fraction):
        return (cls.__name__, str(value))
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic):
        return ("numpy", str(value.dtype), _atom(value.item()))
    if isinstance(value, logging.Logger):  # asked for its level: a logging call itself is replayed by the graph
        if not _LEVEL_READ & set(names):
            return None
        return ("Logger", value.name, value.getEffectiveLevel(), value.disabled)
    if isinstance(value, contextvars.ContextVar):
        return ("ContextVar", value.name, inner(value.get(_NOT_SET)))
    if isinstance(value, weakref.ref):
        return ("weakref", inner(value()))
    if isinstance(value, threading.local):
        return ("local", tuple((n, inner(v)) for n, v in sorted(vars(value).items()) if n in names))
    if isinstance(value, Mapping) and not isinstance(value, dict) and cls.__module__.partition(".")[0] in (
            "collections", "types", "configparser", "builtins"):
        return (cls.__qualname__, tuple((inner(k), inner(v)) for k, v in value.items()))
    return None


#: What code asks a logger that makes it decide by the logger's level.
_LEVEL_READ = frozenset({"level", "isEnabledFor", "getEffectiveLevel", "disabled"})
#: A context variable without a value.
_NOT_SET = ("<not set>",)


def _by_name(value: Any) -> bool:
    """Whether pickling finds ``value`` again by its module and name (a function or class), keeping identity."""
    found: Any = sys.modules.get(getattr(value, "__module__", None) or "")
    for part in str(getattr(value, "__qualname__", "<>")).split("."):
        found = getattr(found, part, None)
    return found is value


def _held(value: Any, budget: _Budget) -> Any:
    """An object the graph holds, recorded as a copy of the graph can still compare it (``identities="values"``):
    a tensor by its dtype, shape and contents, a function or class found by name as itself, a module by type."""
    if isinstance(value, torch.Tensor):
        budget.left -= value.numel() // 16
        if budget.left < 0:
            raise OverflowError
        try:
            data = value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        except (RuntimeError, TypeError):  # a sparse, quantized or meta tensor: by its type
            return ("<" + type(value).__qualname__ + ">",)
        return ("tensor", str(value.dtype), tuple(value.shape), data)
    if not isinstance(value, nn.Module) and _by_name(value):
        return _Identity(value)
    return ("<" + type(value).__qualname__ + ">",)


def _detach(record: Any, budget: _Budget) -> Any:
    """``record`` with each object kept by identity recorded as :func:`_held` records it."""
    if isinstance(record, _Identity):
        return _held(record.value, budget)
    if type(record) is tuple:
        return tuple(_detach(item, budget) for item in record)
    if type(record) is frozenset:
        return frozenset(_detach(item, budget) for item in record)
    return record


def freeze(value: Any, names: Collection[str], identities: bool | str = False) -> Any:
    """A deep record of ``value`` (see the module docstring); ``None`` when it is too large or too deep to keep.

    ``identities``: record a tensor, module, function or class inside it as that very object, not by its type
    only; ``"values"``: as a pickled copy of the graph can compare it (see :meth:`Read.detached`)."""
    try:
        return _record(value, names, _Budget(), 0, identities)
    except (OverflowError, RecursionError):
        return None


class Read:
    """What the model's code read from one place when traced: its record and a short text of it.

    ``names``: the attribute names the model's code uses (an object is recorded through those only).
    """

    __slots__ = ("identities", "names", "record", "text")

    def __init__(self, record: Any, names: frozenset[str], text: str, identities: bool | str = False) -> None:
        self.record, self.names, self.text, self.identities = record, names, text, identities

    @classmethod
    def of(cls, value: Any, names: Collection[str], identities: bool | str = False) -> Read | None:
        """The read of ``value``, or ``None`` when it cannot be kept (too large) or holds nothing plain
        (``identities``: see :func:`freeze`)."""
        kept = frozenset(names)
        record = freeze(value, kept, identities)
        if record is None or isinstance(record, _Identity) or (len(record) == 1 and str(record[0]).startswith("<")):
            return None
        return cls(record, kept, _SHORT.repr(value), identities)

    def unchanged(self, now: Any) -> bool:
        """Whether ``now`` holds what was read."""
        return freeze(now, self.names, self.identities) == self.record

    def detached(self) -> Read | None:
        """This read as a pickled copy of the graph checks it: the copy holds copies of the tensors the record
        kept by identity, so those are compared by their contents now (functions and classes pickling finds by
        name stay themselves); ``None`` when they are too large to keep."""
        if self.identities is not True:
            return self
        try:
            return Read(_detach(self.record, _Budget()), self.names, self.text, "values")
        except OverflowError:
            return None

    def __getstate__(self) -> tuple[Any, frozenset[str], str, bool]:
        return self.record, self.names, self.text, self.identities

    def __setstate__(self, state: tuple[Any, frozenset[str], str, bool]) -> None:
        self.record, self.names, self.text, self.identities = state

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Read) and (self.record, self.names, self.identities) == (
            other.record, other.names, other.identities)

    def __hash__(self) -> int:
        return hash((self.record, self.names))

    def __repr__(self) -> str:
        return self.text


_CONTAINERS = (nn.ModuleList, nn.Sequential, nn.ModuleDict)


def _children(module: nn.Module) -> tuple[Any, ...]:
    """A module's direct children, and the children of those that are containers (``self.blocks[0][0]``:
    the graph holds one step per module it unrolled), in order, with a marker closing each container."""
    found: list[Any] = []
    for child in module._modules.values():
        found.append(child)
        if isinstance(child, _CONTAINERS):
            found += [*_children(child), _END]
    return tuple(found)


_END = ("<end of container>",)


class Same:
    """An object the graph holds itself (a submodule, a tensor attribute, a function it calls): the model's
    code must still find that very object. For a module, its direct children too, and those of containers
    among them (a ``ModuleList`` that forward iterates: the graph holds one step per child)."""

    __slots__ = ("children", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.children = _children(value) if isinstance(value, nn.Module) else None

    def unchanged(self, now: Any) -> bool:
        if now is not self.value:
            return False
        if self.children is None:
            return True
        children = _children(now)
        return len(children) == len(self.children) and all(a is b for a, b in zip(children, self.children))

    def picklable(self) -> bool:
        """Whether pickling keeps this very object (a function or class found again by its name)."""
        return _by_name(self.value)

    def detached(self) -> Same | Read | None:
        """This check as a pickled copy of the graph makes it: itself for a function or class pickling finds by
        name, a tensor by its contents (the copy holds a copy of it), ``None`` for anything else."""
        if self.picklable():
            return self
        if isinstance(self.value, torch.Tensor):
            try:
                return Read(_held(self.value, _Budget()), frozenset(), _SHORT.repr(self.value), "values")
            except OverflowError:
                return None
        return None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Same) or other.value is not self.value:
            return False
        if self.children is None or other.children is None:
            return self.children is other.children
        return len(self.children) == len(other.children) and all(
            a is b for a, b in zip(self.children, other.children))

    def __hash__(self) -> int:
        return id(self.value)

    def __copy__(self) -> Same:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Same:  # the very object is what is checked: never copied
        return self

    def __getstate__(self) -> tuple[Any, Any]:
        return self.value, self.children

    def __setstate__(self, state: tuple[Any, Any]) -> None:
        self.value, self.children = state

    def __repr__(self) -> str:
        children = "" if not self.children else f" holding {len(self.children)} modules"
        return f"{type(self.value).__name__} at {id(self.value):#x}{children}"
