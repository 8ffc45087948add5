"""Everything reachable from named roots, each container recorded one level deep: what changed, and putting it back.

:class:`Held` walks from roots (a model's modules, classes, a Python module's globals, a call's inputs) to
a few levels, through containers of every kind :mod:`fxguide._state.contents` knows and through tuples
and frozensets, recording a shallow copy of each container with the path it was reached by
(``self.encoder.cache['n']``). Tensors are handed to a callback (copying their values is the caller's
choice). :meth:`Held.changed` lists what differs now, :meth:`Held.restore` writes every copy back.
The concrete tracer's state diff and ``fxguide.diagnose``'s ``Snapshot`` both record with it.
"""

from __future__ import annotations

import collections
import types
from collections.abc import Callable, Collection
from typing import Any, NamedTuple

import torch
from torch import nn

from fxguide._state.contents import (SKIPPED, Saved, changes, children, closure, hooks, is_plain_object,
                                     is_program_code, namespace, refill, same, shallow, step)

def _NOTHING(owner: Any) -> Collection[str]:  # noqa: N802 - a constant, as a function
    return ()


#: The containers ``nn.Module`` keeps its own parts in: their items are named as the module's attributes.
_PARTS = ("_parameters", "_buffers", "_modules")


#: How a value was reached: a root's name, or (the path of what holds it, "attr" or "item", its name or key).
#: Kept as nested tuples while walking (most paths are never shown) and made text by :func:`text`.
Path = str | tuple[Any, str, Any]


def text(path: Path) -> str:
    """A path as code: ``self.encoder.cache['n']``."""
    steps = []
    while isinstance(path, tuple):
        path, style, key = path
        steps.append(step(style, key))
    return path + "".join(reversed(steps))


def _programs_object(value: Any) -> bool:
    return is_plain_object(value) and is_program_code(type(value))


class Record(NamedTuple):
    """One container as it was: the path it was reached by, the container, its copy, and how its items are named."""

    path: Path
    value: Any
    saved: Saved
    style: str


class Held:
    """The containers and tensors reachable from roots, recorded to ``depth`` levels and at most ``largest`` objects.

    ``tensor(path, tensor)`` is called once for each tensor found (:func:`text` makes its path readable); ``objects(value)`` says which objects
    without a container type are walked into (their attributes recorded); ``code(value)`` which functions and
    classes are (a function's attributes and the variables of its closure, a class's attributes).

    >>> import collections
    >>> state = {"seen": collections.deque([1])}
    >>> held = Held()
    >>> held.keep("state", state)
    >>> state["seen"].append(2)
    >>> held.changes()
    ["state['seen'] (the contents of a deque, 1 -> 2 items)"]
    >>> held.restore(); state
    {'seen': deque([1])}
    """

    DEPTH = 4
    LARGEST = 10_000

    def __init__(self, tensor: Callable[[Path, torch.Tensor], None] | None = None,
                 objects: Callable[[Any], bool] = is_plain_object,
                 code: Callable[[Any], bool] = is_program_code) -> None:
        self.records: list[Record] = []
        self.tensor = tensor
        self.objects = objects
        self.code = code
        self._seen: set[int] = set()

    def keep(self, path: Path, value: Any, depth: int = DEPTH, style: str = "item",
             objects: Callable[[Any], bool] | None = None) -> None:
        """Record ``value`` (reached by ``path``) and what it holds, ``depth`` levels down."""
        if type(value) in (types.FunctionType, type):
            wanted = objects(value) if objects is not None else self.code(value)
            if depth > 0 and id(value) not in self._seen and wanted:
                self._keep_code(path, value, depth, objects)
            return
        if type(value) in SKIPPED:
            return
        if isinstance(value, torch.Tensor):
            if self.tensor is not None and id(value) not in self._seen:
                self._seen.add(id(value))
                self.tensor(path, value)
            return
        if depth <= 0 or id(value) in self._seen or len(self._seen) > self.LARGEST or isinstance(value, nn.Module):
            return
        saved = shallow(value, objects or self.objects)
        if saved is None and not isinstance(value, (tuple, frozenset)):
            return
        self._seen.add(id(value))
        if saved is not None:
            self.records.append(Record(path, value, saved, style))
        self._children(path, value, saved, depth, objects)

    def keep_names(self, path: Path, owner: Any, depth: int = DEPTH,
                   objects: Callable[[Any], bool] | None = None, walk: bool = True) -> None:
        """Record the names ``owner`` holds (an instance's, a class's, a Python module's) and what they hold."""
        if id(owner) in self._seen:
            return
        self._seen.add(id(owner))
        saved = namespace(owner)
        self.records.append(Record(path, owner, saved, "attr"))
        if walk:
            self._children(path, owner, saved, depth, objects)

    def _keep_code(self, path: Path, value: Any, depth: int, objects: Callable[[Any], bool] | None) -> None:
        """A function's attributes (``tick.n``) and closure (``nonlocal n``), a class's attributes (``Stats.calls``)."""
        self.keep_names(path, value, depth - 1, objects)
        if isinstance(value, types.FunctionType):
            saved = closure(value)
            if saved is not None:
                self.records.append(Record(path, value, saved, "cell"))
                # the objects a closure holds: the program's own (a lock or an event of ``threading`` is not
                # state the call computes with)
                self._children(path, value, saved, depth - 1, objects or _programs_object)

    def keep_module(self, path: Path, module: nn.Module, depth: int = DEPTH) -> None:
        """Record a module's attributes; its parameters, buffers and submodules are named as its attributes, and
        its hook registries are one record."""
        self.keep_names(path, module, walk=False)
        registries = []
        for name, value in vars(module).items():
            if name in _PARTS and isinstance(value, dict):
                self.keep(path, value, depth, style="attr")
            elif "hook" in name and type(value) in (dict, collections.OrderedDict):
                registries.append(name)
            elif not isinstance(value, nn.Module):
                self.keep((path, "attr", name), value, depth)
        self.records.append(Record(path, module, hooks(module, registries), "attr"))

    def _children(self, path: Path, value: Any, saved: Saved | None, depth: int,
                  objects: Callable[[Any], bool] | None) -> None:
        for style, key, item in children(value, saved):
            self.keep((path, style, key), item, depth - 1, objects=objects)

    def changed(self, ignore: Callable[[Any], Collection[str]] = _NOTHING) -> list[Record]:
        """The recorded containers whose contents differ now (``ignore(owner)``: names of a namespace not compared)."""
        return [record for record in self.records if not same(record.value, record.saved, ignore(record.value))]

    def changes(self, ignore: Callable[[Any], Collection[str]] = _NOTHING) -> list[str]:
        """What differs now, one phrase per item, attribute or container (its path first)."""
        return [phrase for record in self.changed(ignore) for phrase in
                changes(record.value, record.saved, text(record.path), record.style, ignore(record.value))]

    def restore(self) -> None:
        """Write back every container that changed."""
        for record in reversed(self.records):  # the innermost first: an outer refill rebinds what they are held by
            if not same(record.value, record.saved):
                refill(record.value, record.saved)
