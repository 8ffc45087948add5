"""Python objects that hold traced values: the graph builds a fresh copy holding each call's values.

A model may return, or pass to a recorded call, an object FX cannot write
into a graph: a Hugging Face ``DynamicCache`` whose layers hold the traced key
and value tensors, a dataclass not registered with pytree. Kept as a constant
of the graph, such an object would hold the *tracer's* proxies, the same ones
on every call. Instead the graph holds a template (the object with each traced
value taken out) and :func:`rebuild_object` makes, on every call, a copy of
the objects on the way to each traced value, with that call's values put in.
Everything else the object holds (its config, its flags, tensors that were
not traced) is shared with the template, as it was shared with the model.

An object the copy cannot make faithfully is refused while tracing: a traced
value inside a set, or an object holding traced values that is reached twice
(shared, or in a cycle), since copies would break that sharing.
"""

from __future__ import annotations

import copy
import enum
import types
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx
from torch import nn

#: A step from an object to what it holds: ("item", key or index) or ("attr", name).
Step = tuple[str, Any]

_ATOMS = (str, bytes, int, float, complex, bool, type(None), torch.Tensor, nn.Module, type, enum.Enum, torch.dtype,
          torch.device, torch.Size, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
          types.ModuleType, fx.Graph, fx.Node, fx.Tracer, range, slice)


class Unrebuildable(TypeError):
    """An object holds traced values where a copy cannot put them (the message names where)."""


class ObjectTemplate:
    """An object with each traced value taken out (``None`` in its place), and where each one goes back.

    Not a dataclass: FX would write a dataclass into the graph field by field, and this is one constant.
    """

    def __init__(self, template: Any, paths: tuple[tuple[Step, ...], ...]) -> None:
        self.template, self.paths = template, paths

    def __repr__(self) -> str:
        return f"ObjectTemplate({type(self.template).__name__}, {len(self.paths)} traced values)"


def rebuild_object(template: ObjectTemplate, values: list[Any]) -> Any:
    """A copy of ``template.template`` holding ``values`` at ``template.paths`` (a graph node, run on every call)."""
    tree: dict[Step, Any] = {}
    for index, path in enumerate(template.paths):
        node = tree
        for step in path[:-1]:
            node = node.setdefault(step, {})
        node[path[-1]] = index
    return _filled(template.template, tree, values)


def _filled(obj: Any, tree: dict[Step, Any], values: list[Any]) -> Any:
    new = {step: values[sub] if isinstance(sub, int) else _filled(_child(obj, step), sub, values)
           for step, sub in tree.items()}
    if isinstance(obj, tuple):
        items = list(obj)
        for (_, index), value in new.items():
            items[index] = value
        if hasattr(obj, "_fields"):
            return type(obj)(*items)
        return tuple(items) if type(obj) is tuple else type(obj)(items)
    copied = copy.copy(obj)
    for (kind, key), value in new.items():
        if kind == "item":
            copied[key] = value
        elif key in getattr(copied, "__dict__", {}):
            copied.__dict__[key] = value
        else:
            object.__setattr__(copied, key, value)  # a __slots__ attribute
    return copied


def _child(obj: Any, step: Step) -> Any:
    kind, key = step
    return obj[key] if kind == "item" else object.__getattribute__(obj, key)


def _slots(obj: Any) -> list[str]:
    names: list[str] = []
    for cls in type(obj).__mro__:
        slots = vars(cls).get("__slots__", ())
        names += [slots] if isinstance(slots, str) else [s for s in slots if s not in ("__dict__", "__weakref__")]
    return names


def traced_paths(obj: Any, traced: Callable[[Any], bool]) -> list[tuple[tuple[Step, ...], Any]]:
    """Where ``obj`` holds values for which ``traced`` is true, in a stable order; raises :class:`Unrebuildable`."""
    found: list[tuple[tuple[Step, ...], Any]] = []
    holds: dict[int, bool] = {}  # id of each object walked -> whether it holds a traced value
    reached_again: list[tuple[int, tuple[Step, ...]]] = []

    def walk(value: Any, path: tuple[Step, ...]) -> bool:
        if traced(value):
            found.append((path, value))
            return True
        if isinstance(value, _ATOMS):
            return False
        if id(value) in holds:
            reached_again.append((id(value), path))
            return False
        holds[id(value)] = False
        if isinstance(value, (set, frozenset)):
            inside = any(walk(item, path + (("item", "?"),)) for item in list(value))
            if inside:
                raise Unrebuildable(f"a traced value is inside a {type(value).__name__}, at {_where(path)}")
            return False
        if isinstance(value, (list, tuple)):
            steps = [("item", i) for i in range(len(value))]
        elif isinstance(value, dict):
            steps = [("item", key) for key in list(value)]
        else:
            steps = [("attr", name) for name in (list(vars(value)) if hasattr(value, "__dict__") else [])]
            steps += [("attr", name) for name in _slots(value) if hasattr(value, name)]
        inside = False
        for step in steps:
            inside = walk(_child(value, step), path + (step,)) or inside
        holds[id(value)] = inside
        return inside

    walk(obj, ())
    for key, path in reached_again:
        if holds.get(key):
            raise Unrebuildable(f"one object on the way to them is reached twice (shared, or in a cycle), at "
                                f"{_where(path)}, and copies would not share it as the original does")
    return found


def _where(path: tuple[Step, ...]) -> str:
    text = ""
    for kind, key in path:
        text += f"[{key!r}]" if kind == "item" else f".{key}"
    return text or "the object itself"


def template_of(obj: Any, paths: list[tuple[Step, ...]]) -> ObjectTemplate:
    """``obj`` with the values at ``paths`` replaced by ``None`` (copies only the objects on those paths)."""
    return ObjectTemplate(rebuild_object(ObjectTemplate(obj, tuple(paths)), [None] * len(paths)), tuple(paths))
