"""What one Python container or object holds, one level deep: copied, compared, named and put back, for any kind.

A forward can change state in anything a model holds, not only lists and dicts: a deque, a ``Counter``,
an ``OrderedDict``, a NumPy array, an ``array.array``, a ``bytearray``, a plain object's attributes (in its
``__dict__`` or its ``__slots__``), the state of a ``torch.Generator``, the names of a namespace (an
instance's, a class's, a Python module's), the variables a function's closure holds, the state of a
``random.Random`` or a NumPy generator, how far a builtin iterator or a generator has run.
:func:`shallow` copies what one such value holds (its items, bytes or attributes, not the items' own
contents), :func:`same` compares the value with the copy (items by identity, immutable values by equality),
:func:`changes` names what differs and :func:`refill` writes the copy back in place. Tensors and modules are left to the caller: copying a tensor is costly, and each
module is recorded as a namespace of its own.
"""

from __future__ import annotations

import array
import collections
import math
import pickle
import random
import sys
import types
import warnings
from collections.abc import Callable, Collection
from typing import Any, NamedTuple

import torch
import torch.fx as fx
from torch import nn

_ATOMS = (int, float, bool, complex, str, bytes, type(None), torch.dtype, torch.device, torch.layout,
          torch.memory_format, range, slice)
_NOT_OBJECTS = (nn.Module, torch.Tensor, type, types.ModuleType, types.FunctionType, types.MethodType,
                types.BuiltinFunctionType, types.CodeType, fx.Proxy, fx.Node, fx.Graph, fx.Tracer)


class Saved(NamedTuple):
    """A shallow copy: the kind of value, what it held, and its own attributes (``None`` when it has none)."""

    kind: str
    contents: Any
    attributes: dict[str, Any] | None


def is_torchs(module: str) -> bool:
    """Whether a module name is torch's own or Python's builtins (``torchvision``, ``torchaudio`` are not:
    they are model code like any other library's)."""
    return module in ("torch", "builtins") or module.startswith("torch.")


def is_plain_object(value: Any) -> bool:
    """An object of the program's own (a config, a state holder) whose attributes code may change."""
    cls = type(value)
    plain = _PLAIN.get(cls)
    if plain is None:
        plain = _PLAIN[cls] = ((cls.__dictoffset__ != 0 or bool(_slots(cls))) and not issubclass(cls, _NOT_OBJECTS)
                               and not is_torchs(cls.__module__))
    return plain


_PLAIN: dict[type, bool] = {}
_KINDS: dict[type, str | None] = {}
#: Types that hold nothing a call could change (skipped at once while walking).
SKIPPED = frozenset({*_ATOMS, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType,
                     type, property, staticmethod, classmethod, types.MethodDescriptorType,
                     types.WrapperDescriptorType, types.GetSetDescriptorType, types.MemberDescriptorType})


def _container_kind(cls: type) -> str | None:
    numpy = sys.modules.get("numpy")
    rngs = (numpy.random.Generator, numpy.random.RandomState) if numpy is not None else None
    for kind, base in (("generator", torch.Generator), ("random", random.Random), ("numpy-random", rngs),
                       ("bytearray", bytearray), ("array", array.array),
                       ("ndarray", numpy.ndarray if numpy is not None else None), ("deque", collections.deque),
                       ("dict", dict), ("list", list), ("set", set), ("iterator", types.GeneratorType)):
        if base is not None and issubclass(cls, base):
            return kind
    if cls.__module__ in ("builtins", "itertools") and hasattr(cls, "__next__"):
        return "iterator"  # a list's, a range's, a zip's iterator, itertools.count(): how far it has run
    return None


def _random_state(value: Any) -> bytes:
    """The state of a ``random.Random`` or a NumPy generator, as bytes (NumPy's hold arrays: compared as bytes)."""
    if isinstance(value, random.Random):
        return pickle.dumps(value.getstate())
    state = value.get_state(legacy=False) if hasattr(value, "get_state") else value.bit_generator.state
    return pickle.dumps(state)


def _put_random_state(value: Any, state: bytes) -> None:
    if isinstance(value, random.Random):
        value.setstate(pickle.loads(state))
    elif hasattr(value, "set_state"):
        value.set_state(pickle.loads(state))
    else:
        value.bit_generator.state = pickle.loads(state)


def _progress(value: Any) -> Any:
    """How far an iterator has run: a generator's frame position, else what ``__reduce__`` says (the sequence
    and the index of a list's iterator, the next number of ``itertools.count()``); ``None`` when it says nothing."""
    if isinstance(value, types.GeneratorType):
        frame = value.gi_frame
        return ("generator", None if frame is None else frame.f_lasti)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # itertools' pickling is deprecated (3.12): still read, never pickled
            return value.__reduce__()
    except (TypeError, AttributeError, pickle.PicklingError):
        return None


def is_program_code(value: Any) -> bool:
    """A function or a class of the program's (not torch's, Python's standard library's or NumPy's), whose
    attributes, closure or class attributes code may change (``tick.n += 1``, ``Stats.calls += 1``)."""
    module = getattr(value, "__module__", None)
    if not isinstance(module, str):
        return False
    top = module.partition(".")[0]
    # (pytest's own functions and classes hold its bookkeeping, not the program's: a test's module is walked)
    return not is_torchs(module) and top not in sys.stdlib_module_names and top not in ("numpy", "_pytest", "pytest")


def kind_of(value: Any, objects: Callable[[Any], bool] = is_plain_object) -> str | None:
    """Which kind of container ``value`` is (``None``: an atom, a tuple, a tensor, a module, a function...)."""
    cls = type(value)
    try:
        kind = _KINDS[cls]
    except KeyError:
        kind = _KINDS[cls] = _container_kind(cls)
    if kind is not None:
        return kind
    return "object" if cls not in SKIPPED and objects(value) else None


def same_value(a: Any, b: Any) -> bool:
    """Whether ``b`` is still ``a``: the same object, or an equal immutable value (a number, a tuple of them)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, _ATOMS):
        return bool(a == b) or (isinstance(a, (float, complex)) and math.isnan(abs(a)) and math.isnan(abs(b)))
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, frozenset):
        return all(isinstance(x, _ATOMS) for x in a) and a == b
    return False


def _slots(cls: type) -> list[str]:
    names = _SLOTS.get(cls)
    if names is None:
        names = []
        for klass in cls.__mro__:
            slots = vars(klass).get("__slots__", ())
            names += [slots] if isinstance(slots, str) else [s for s in slots if s not in ("__dict__", "__weakref__")]
        _SLOTS[cls] = names
    return names


_SLOTS: dict[type, list[str]] = {}


def attributes(value: Any) -> dict[str, Any]:
    """An object's attributes: its ``__dict__`` (a class's or module's names too) and its filled ``__slots__``."""
    found = dict(vars(value)) if hasattr(value, "__dict__") else {}
    for name in _slots(type(value)):
        try:
            found[name] = object.__getattribute__(value, name)
        except AttributeError:
            pass
    return found


def shallow(value: Any, objects: Callable[[Any], bool] = is_plain_object) -> Saved | None:
    """A copy of what ``value`` holds, one level deep; ``None`` when it is no container (see :func:`kind_of`)."""
    kind = kind_of(value, objects)
    if kind is None:
        return None
    own = attributes(value) if kind == "object" or type(value).__module__ != "builtins" else None
    if kind == "object":
        return Saved(kind, None, own)
    copies: dict[str, Callable[[Any], Any]] = {
        "generator": lambda v: v.get_state(), "random": _random_state, "numpy-random": _random_state,
        "iterator": _progress, "bytearray": bytes, "array": lambda v: v.tobytes(),
        "ndarray": lambda v: v.copy(), "deque": list, "list": list, "set": set,
        "dict": lambda v: list(dict.items(v)),
    }
    contents = copies[kind](value)
    if kind == "iterator" and contents is None:
        return None  # an iterator that does not say how far it ran: not seen
    return Saved(kind, contents, own or None)


#: What a closure's cell holds when it holds nothing yet (a variable assigned later in the enclosing function).
_EMPTY = object()


def closure(function: types.FunctionType) -> Saved | None:
    """A copy of the variables a function reads from the functions around it (``nonlocal n``), by name."""
    cells = function.__closure__
    if not cells:
        return None
    held = {}
    for name, cell in zip(function.__code__.co_freevars, cells):
        try:
            held[name] = cell.cell_contents
        except ValueError:
            held[name] = _EMPTY
    return Saved("closure", held, None)


def hooks(module: Any, names: list[str]) -> Saved:
    """A copy of a module's hook registries (``_forward_hooks`` and the like), compared by their handles' keys."""
    return Saved("hooks", {name: dict(vars(module)[name]) for name in names}, None)


def namespace(owner: Any) -> Saved:
    """A copy of the names an instance, a class or a Python module holds (:func:`refill` puts back those changed)."""
    return Saved("namespace", dict(vars(owner)), None)


def _same_items(now: Any, saved: list[tuple[Any, Any]] | dict[Any, Any], ordered: bool) -> bool:
    pairs = saved.items() if isinstance(saved, dict) else saved
    if len(now) != len(pairs):
        return False
    get = now.get if not isinstance(now, dict) else dict.get.__get__(now)  # a class's names: a mappingproxy
    for key, item in pairs:
        current = get(key, _MISSING)
        if current is not item and (current is _MISSING or not same_value(current, item)):
            return False
    return not ordered or list(now) == [key for key, _ in pairs]


_MISSING = object()


def _names(owner: Any, saved: dict[str, Any], ignore: Collection[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A namespace's names now and as saved, without those in ``ignore``."""
    now = dict(vars(owner))
    if not ignore:
        return now, saved
    return ({k: v for k, v in now.items() if k not in ignore}, {k: v for k, v in saved.items() if k not in ignore})


def same(value: Any, saved: Saved, ignore: Collection[str] = ()) -> bool:
    """Whether ``value`` holds what ``saved`` recorded (items by identity; numbers, bytes and arrays by value).

    ``ignore``: names of a namespace, or keys of a dict, not compared (set again by the graph on every call).
    """
    kind, contents, own = saved
    if own is not None and not _same_items(attributes(value), own, ordered=False):
        return False
    if kind == "namespace":
        return _same_items(*_names(value, contents, ignore), ordered=False) if ignore else \
            _same_items(vars(value), contents, ordered=False)
    if kind == "hooks":  # a handle's key is never reused: the same keys, the same hooks
        held = vars(value)
        return all(tuple(held.get(name, ())) == tuple(saved) for name, saved in contents.items())
    if kind == "generator":
        return bool(torch.equal(value.get_state(), contents))
    if kind in ("random", "numpy-random"):
        return _random_state(value) == contents
    if kind == "iterator":
        return same_value(_progress(value), contents)
    if kind == "closure":
        return _same_items(_cells(value), contents, ordered=False)
    if kind == "bytearray":
        return bytes(value) == contents
    if kind == "array":
        return value.tobytes() == contents
    if kind == "ndarray":
        return value.shape == contents.shape and value.dtype == contents.dtype and value.tobytes() == contents.tobytes()
    if kind in ("list", "deque"):
        return len(value) == len(contents) and all(same_value(a, b) for a, b in zip(value, contents))
    if kind == "set":
        return len(value) == len(contents) and all(item in contents for item in value)
    if kind == "dict":
        now, then = _items(value, contents, ignore)
        return _same_items(now, then, ordered=isinstance(value, collections.OrderedDict))
    return True  # an object: its attributes, compared above


def _cells(function: types.FunctionType) -> dict[str, Any]:
    saved = closure(function)
    return saved.contents if saved is not None else {}


def _items(value: Any, contents: list[tuple[Any, Any]], ignore: Collection[Any]) -> tuple[Any, list[tuple[Any, Any]]]:
    """A dict's items now and as saved, without the keys in ``ignore``."""
    if not ignore:
        return value, contents
    return ({k: v for k, v in dict.items(value) if k not in ignore}, [(k, v) for k, v in contents if k not in ignore])


def grew(value: Any, saved: Saved, ignore: Collection[str] = ()) -> bool:
    """Whether ``value`` only gained what ``saved`` lacked (items added, attributes created or set from ``None``):
    what filling a cache does, as opposed to a count, a history kept short, or a deletion."""
    kind, contents, own = saved
    if own is not None and not _gained(attributes(value), own):
        return False
    if kind == "namespace":
        return _gained(*_names(value, contents, ignore))
    if kind == "closure":
        return _gained(_cells(value), {k: None if v is _EMPTY else v for k, v in contents.items()})
    if kind == "dict":
        now, then = _items(value, contents, ignore)
        return _gained(dict(dict.items(now)), dict(then))
    if kind in ("list", "deque"):
        return len(value) >= len(contents) and all(same_value(a, b) for a, b in zip(value, contents))
    if kind == "set":
        return all(item in value for item in contents)
    return kind == "object"  # its attributes, compared above


def _gained(now: dict[Any, Any], saved: dict[Any, Any]) -> bool:
    return all(key in now and (saved[key] is None or same_value(now[key], saved[key])) for key in saved)


def _step(key: Any, style: str) -> str:
    return f".{key}" if style == "attr" else f"[{key!r}]"


def _named(now: dict[Any, Any], saved: dict[Any, Any], path: str, style: str) -> list[str]:
    added, removed, rebound = ("created", "deleted", "rebound") if style == "attr" else ("added", "removed", "changed")
    found = [f"{path}{_step(key, style)} {added}" for key in now if key not in saved]
    found += [f"{path}{_step(key, style)} {removed}" for key in saved if key not in now]
    found += [f"{path}{_step(key, style)} {rebound}" for key in now
              if key in saved and not same_value(now[key], saved[key])]
    return found or [f"{path} (the order of its items)"]


def changes(value: Any, saved: Saved, path: str, style: str = "item", ignore: Collection[str] = ()) -> list[str]:
    """What differs between ``value`` and ``saved``, one phrase each, starting with ``path``."""
    kind, contents, own = saved
    found: list[str] = []
    if own is not None and not _same_items(attributes(value), own, ordered=False):
        found += _named(attributes(value), own, path, "attr")
    if kind == "namespace" and not same(value, saved, ignore):
        found += _named(*_names(value, contents, ignore), path, "attr")
    elif kind == "hooks":
        found += [f"{path}.{name} (a hook added or removed)" for name, saved_hooks in contents.items()
                  if tuple(vars(value).get(name, ())) != tuple(saved_hooks)]
    elif kind == "dict" and not same(value, saved._replace(attributes=None), ignore):
        now, then = _items(value, contents, ignore)
        found += _named(dict(dict.items(now)), dict(then), path, style)
    elif kind == "generator" and not same(value, saved._replace(attributes=None)):
        found.append(f"{path} (the state of a torch.Generator)")
    elif kind in ("random", "numpy-random") and not same(value, saved._replace(attributes=None)):
        library = type(value).__module__.partition(".")[0]
        found.append(f"{path} (the state of a random generator, a {library}.{type(value).__name__})")
    elif kind == "iterator" and not same(value, saved._replace(attributes=None)):
        back = "" if _can_rewind(value) else "; it cannot be put back"
        found.append(f"{path} (an iterator, {type(value).__name__}, moved on{back})")
    elif kind == "closure" and not same(value, saved):
        now = _cells(value)
        found += [f"{path} (the variable {name} of its closure, rebound)" for name, held in contents.items()
                  if not (now.get(name, _EMPTY) is held or same_value(now.get(name, _EMPTY), held))]
    elif kind in ("bytearray", "array", "ndarray") and not same(value, saved._replace(attributes=None)):
        found.append(f"{path} (the contents of {'an' if kind[0] == 'a' else 'a'} {type(value).__name__})")
    elif kind in ("list", "deque", "set") and not same(value, saved._replace(attributes=None)):
        count = "" if len(value) == len(contents) else f", {len(contents)} -> {len(value)} items"
        found.append(f"{path} (the contents of a {type(value).__name__}{count})")
    return found


def _can_rewind(value: Any) -> bool:
    """Whether an iterator can be put back where it was (a list's, tuple's or range's: ``__setstate__``)."""
    return hasattr(value, "__setstate__") and not isinstance(value, types.GeneratorType)


def refill(value: Any, saved: Saved) -> None:
    """Write ``saved`` back into ``value``, in place (a namespace: only the names that differ; an iterator only
    where it can be rewound)."""
    kind, contents, own = saved
    if kind == "namespace":
        _put_names(value, contents)
    elif kind in ("random", "numpy-random"):
        _put_random_state(value, contents)
    elif kind == "iterator":
        if _can_rewind(value) and isinstance(contents, tuple) and len(contents) == 3:
            value.__setstate__(contents[2])
    elif kind == "closure":
        for name, cell in zip(value.__code__.co_freevars, value.__closure__ or ()):
            if name in contents:
                if contents[name] is _EMPTY:
                    try:
                        del cell.cell_contents
                    except ValueError:
                        pass
                else:
                    cell.cell_contents = contents[name]
    elif kind == "hooks":
        for name, saved_hooks in contents.items():
            registry = vars(value).get(name)
            if isinstance(registry, dict) and tuple(registry) != tuple(saved_hooks):
                registry.clear()
                registry.update(saved_hooks)
    elif kind == "generator":
        value.set_state(contents)
    elif kind == "bytearray":
        value[:] = contents
    elif kind == "array":
        del value[:]
        value.frombytes(contents)
    elif kind == "ndarray":
        if value.shape != contents.shape:
            value.resize(contents.shape, refcheck=False)
        value[...] = contents
    elif kind in ("list", "deque", "set"):
        if kind == "list":
            value[:] = contents
        else:
            value.clear()
            (value.extend if kind == "deque" else value.update)(contents)
    elif kind == "dict":
        value.clear()
        put = dict.__setitem__ if isinstance(value, collections.Counter) else type(value).__setitem__
        for key, item in contents:
            put(value, key, item)
    if own is not None:
        _put_attributes(value, own)


def _put_names(owner: Any, names: dict[str, Any]) -> None:
    current = vars(owner)
    writable = isinstance(current, dict)  # an instance's or a module's names; a class's are a mappingproxy
    for name in [n for n in current if n not in names]:
        if writable:
            del current[name]
        else:
            delattr(owner, name)
    for name, value in names.items():
        if name not in current or not same_value(current[name], value):
            if writable:
                current[name] = value
            else:
                setattr(owner, name, value)


def _put_attributes(value: Any, own: dict[str, Any]) -> None:
    slots = set(_slots(type(value)))
    if hasattr(value, "__dict__"):
        _put_names(value, {k: v for k, v in own.items() if k not in slots})
    for name in slots:
        if name in own:
            object.__setattr__(value, name, own[name])
        else:
            try:
                object.__delattr__(value, name)
            except AttributeError:
                pass


def children(value: Any, saved: Saved | None) -> list[tuple[str, str, Any]]:
    """What ``value`` holds that may hold more: (step style, key, item) for items and attributes."""
    kind = saved.kind if saved is not None else None
    found: list[tuple[str, str, Any]] = []
    if kind == "namespace":
        found += [("attr", key, item) for key, item in saved.contents.items()]  # type: ignore[union-attr]
    elif kind == "closure":
        found += [("cell", key, item) for key, item in saved.contents.items()  # type: ignore[union-attr]
                  if item is not _EMPTY]
    elif kind == "dict":
        found += [("item", key, item) for key, item in saved.contents]  # type: ignore[union-attr]
    elif kind in ("list", "deque") or isinstance(value, tuple):
        found += [("item", index, item) for index, item in enumerate(saved.contents if saved else value)]
    elif kind == "set" or isinstance(value, frozenset):
        found += [("item", "...", item) for item in (saved.contents if saved else value)]
    if saved is not None and saved.attributes:
        found += [("attr", key, item) for key, item in saved.attributes.items()]
    return found


def step(style: str, key: Any) -> str:
    """A path step: ``.name`` for an attribute, ``[key]`` for an item (``{...}`` for a set member), ``'s n`` for
    a closure's variable (``tick's n``)."""
    if style == "cell":
        return f"'s {key}"
    return "{...}" if key == "..." and style == "item" else _step(key, style)
