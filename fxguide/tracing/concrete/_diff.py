"""The state diff: everything Python holds that a forward could change, compared before and after tracing.

Tracing runs forward for real, so whatever a call changes, tracing changed too. :class:`Before` records,
before the trace, what a call can reach: the model and every submodule (their attributes, the containers
of any kind they hold, their tensors), the classes of the model's modules, the globals of the Python
modules those classes are defined in (and of a traced function), the caller's inputs, torch's global
settings and hook registries, and the random generators of torch, NumPy and Python. After the trace,
:meth:`Before.changes` names every difference the graph will not make again on its calls: a change made by
one of the graph's own operations (see :mod:`._effects`) is replayed, any other is returned, and
``concrete_trace`` refuses the trace with :class:`~fxguide.tracing.concrete.UnguardableError` naming it
(unless :mod:`._settled` finds it a cache, or an attribute the graph sets again).
:meth:`Before.restore` then puts everything back, so tracing leaves the model, its classes, the globals, the
inputs and torch's settings as they were (torch's generator advances by the draws of the graph's
operations, as in a call; it is put back too when the trace is refused).

The functions and classes those modules define are recorded too: a function's attributes (``tick.n``),
the variables of its closure (``nonlocal n``), a class's attributes (``Stats.calls``); and so are the state
of a ``random.Random`` or NumPy generator and how far an iterator has run, wherever they are held.

Not seen: state beyond :attr:`Held.DEPTH` levels or :attr:`Held.LARGEST` objects, globals of modules
other than the model classes' (and the traced function's), tensors of classes and globals changed through
``.data`` (compared by version, not values), anything changed by another thread, and a module's
``__warningregistry__`` (a warning forward issues is not issued by the graph).
"""

from __future__ import annotations

import copy
import re
import sys
import types
from typing import Any, NamedTuple

import torch
from torch import nn
from torch.utils import _pytree as pytree

from fxguide._state import Generators, Held, Path, Settings, is_plain_object, text
from fxguide._state.contents import is_torchs
from fxguide.tracing.concrete._effects import Effects, storage_key
from fxguide.tracing.concrete._records import UnguardableError

#: What the tracer itself adds to a model it traces while it runs (put back with the rest).
_TRACER_ARTIFACTS = re.compile(
    r"^self\.(_tensor_constant|_object_constant|_tree_spec_constant|_torchbind_obj|_opaque_obj|_module_)\d+ created$")
_GRAD_MODE = "grad mode (torch.is_grad_enabled())"
#: How :func:`fxguide._state.contents.changes` names a ``random.Random`` or a NumPy generator that moved.
_A_RANDOM_GENERATOR = "(the state of a random generator"
#: Python's own bookkeeping: the warnings a module issued, the slot names ``copy`` caches on a class (not state a
#: call computes with).
_BOOKKEEPING = re.compile(r"\.(__warningregistry__|__slotnames__)\b")


def bookkeeping(what: str) -> bool:
    """Whether a change named ``what`` is Python's bookkeeping rather than the program's state."""
    return bool(_BOOKKEEPING.search(what))

_ADVICE = {
    "python": "the graph would hold what this one call left there and never change it again. Keep such state in "
              "a registered buffer updated in place, return it from forward, or trace a model that does not "
              "change it",
    "tensor": "no operation of the graph made this update, so its calls would not repeat it. Update the tensor "
              "with an operation on a traced value (a buffer of the model, an input: self.buf.add_(...)), or "
              "leave it unchanged in forward",
    "input": "the graph changes its own copy of an input container, never the caller's. Return the new values "
             "from forward instead of changing the input",
    "setting": "a graph does not record this setting, so its calls would leave it as they found it. Set it "
               "outside the traced call (around the graph's call)",
    "random": "the graph would hold this one call's draws as constants (or leave the generator where it found "
              "it). Draw with an operation on a traced value (torch.rand_like(x), torch.randn_like(x), dropout) "
              "or pass the random values in as an input",
}


class Change(NamedTuple):
    """One thing forward changed that the graph does not replay: where, in words, and which kind of state."""

    what: str
    kind: str  # a key of _ADVICE


def refusal(changes: list[Change]) -> UnguardableError:
    """The error naming the changes (the first few), with what to do about the first one's kind."""
    listing = "; ".join(change.what for change in changes[:4])
    more = f"; and {len(changes) - 4} more" if len(changes) > 4 else ""
    error = UnguardableError(f"concrete_trace cannot guard a change forward made to {listing}{more}: "
                             f"{_ADVICE[changes[0].kind]}.")
    error.changes = [change.what for change in changes]  # type: ignore[attr-defined]
    return error


class _Tensor:
    """A tensor as it was: version, memory, ``requires_grad`` and (for the model's and the inputs') a copy."""

    def __init__(self, path: Path, tensor: torch.Tensor, keep_values: bool) -> None:
        self.path, self.tensor = path, tensor
        self.version, self.requires_grad = tensor._version, tensor.requires_grad
        self.layout = _layout(tensor)
        self.data = tensor.data
        self.key = storage_key(tensor)
        self.values: torch.Tensor | None = None
        if keep_values and not tensor.is_meta:
            try:
                self.values = tensor.detach().clone()
            except (RuntimeError, NotImplementedError, ValueError):  # an uninitialized lazy parameter
                pass
        self.differs = False

    def change(self, effects: Effects) -> str | None:
        """What changed that the graph's operations did not do, in words (``None``: nothing, or replayed)."""
        tensor, found = self.tensor, []
        if _layout(tensor) != self.layout:
            self.differs = True
            if self.key not in effects.mutated:
                found.append("its .data was rebound or resized")
        elif tensor._version != self.version or (self.values is not None and not _equal(tensor, self.values)):
            self.differs = True
            replayed = effects.mutated if tensor._version != self.version else effects.touched
            if self.key not in replayed:
                found.append("updated in place")
        if tensor.requires_grad != self.requires_grad and self.key not in effects.touched:
            found.append("its requires_grad flag changed")
        return ", ".join(found) or None

    def restore(self) -> None:
        tensor = self.tensor
        with torch.no_grad():
            if _layout(tensor) != self.layout:
                tensor.data = self.data
            if self.values is not None and (self.differs or tensor._version != self.version) \
                    and not _equal(tensor, self.values):
                tensor.data.copy_(self.values)
        if tensor.requires_grad != self.requires_grad and tensor.is_leaf:
            tensor.requires_grad_(self.requires_grad)


def _layout(tensor: torch.Tensor) -> tuple[Any, ...]:
    try:
        return storage_key(tensor), tensor.storage_offset(), tuple(tensor.shape), tensor.dtype, tensor.device
    except (RuntimeError, NotImplementedError, ValueError):
        return id(tensor), tensor.dtype


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    a = a.detach()
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    try:
        return bool(torch.equal(a, b) or torch.allclose(a, b, rtol=0, atol=0, equal_nan=True))
    except (RuntimeError, NotImplementedError, TypeError):
        return True


def _modules(root: Any) -> list[tuple[str, nn.Module]]:
    """The model's modules and their paths: the root's, a bound method's owner's, or the modules a function names."""
    owner = root.__self__ if isinstance(root, types.MethodType) else root
    if isinstance(owner, nn.Module):
        return [("self" + (f".{name}" if name else ""), m) for name, m in owner.named_modules(remove_duplicate=True)]
    named = getattr(getattr(root, "__code__", None), "co_names", ())
    space = getattr(root, "__globals__", {})
    return [(f"{name}.{sub}" if sub else name, m) for name in named if isinstance(space.get(name), nn.Module)
            for sub, m in space[name].named_modules()]


class _Globals:
    """Stands for a namespace that is no module in ``sys.modules`` (an ``exec``'s), so it can be recorded."""

    def __init__(self, names: dict[str, Any]) -> None:
        self.__dict__ = names


def _global_spaces(root: Any, classes: list[type]) -> list[tuple[str, Any]]:
    """The Python modules a forward's code runs in: those of the model's classes, and a traced function's."""
    spaces: dict[int, tuple[str, Any]] = {}
    for cls in classes:
        module = sys.modules.get(cls.__module__)
        if isinstance(module, types.ModuleType):
            spaces[id(vars(module))] = (module.__name__, module)
    function = getattr(root, "__func__", root)
    names = getattr(function, "__globals__", None)
    if isinstance(names, dict) and id(names) not in spaces:
        module = sys.modules.get(names.get("__name__", ""))
        owner = module if isinstance(module, types.ModuleType) and vars(module) is names else _Globals(names)
        spaces[id(names)] = (str(names.get("__name__", "<globals>")), owner)
    return [(name, owner) for name, owner in spaces.values() if not is_torchs(name)]


def _defined_in(value: Any, module: str) -> bool:
    """Whether a global is an object, a function or a class that the Python module named ``module`` defines
    (a counter in a function's attribute or its closure, a class attribute: ``Stats.calls += 1``)."""
    if type(value) in (types.FunctionType, type):
        return getattr(value, "__module__", None) == module
    return is_plain_object(value) and type(value).__module__ == module


class Before:
    """Everything a forward could change, recorded before tracing (see the module docstring)."""

    def __init__(self, root: Any, inputs: dict[str, Any]) -> None:
        self.root, self.inputs = root, inputs
        self.tensors: dict[int, _Tensor] = {}
        self.modules = _modules(root)
        self.classes = list({id(c): c for _, m in self.modules for c in type(m).__mro__ if c not in (object, nn.Module)
                             and not c.__module__.startswith(("torch.", "builtins"))}.values())
        self.globals = _global_spaces(root, self.classes)
        self.given = Held(tensor=lambda path, t: self._tensor(path, t, True))
        for name, value in inputs.items():
            self.given.keep(name, value)
        self.python = self.record_python(values=True)
        self.settings, self.generators = Settings(), Generators()
        self.received: list[tuple[str, Any, Any]] = []  # input containers as forward received them (see receive)

    def _tensor(self, path: Path, tensor: torch.Tensor, keep_values: bool) -> None:
        known = self.tensors.get(id(tensor))
        if known is None or (keep_values and known.values is None):  # a global first, the model's or an input next
            self.tensors[id(tensor)] = _Tensor(path, tensor, keep_values)

    def record_python(self, values: bool = False) -> Held:
        """A record of the Python state of the model, its classes and the globals (tensors too, with ``values``)."""
        def model(path: Path, t: torch.Tensor) -> None:
            if values:
                self._tensor(path, t, True)

        held = Held(tensor=model)
        for path, module in self.modules:
            held.keep_module(path, module)
        held.tensor = (lambda path, t: self._tensor(path, t, False)) if values else None
        for cls in self.classes:
            held.keep_names(cls.__qualname__, cls)
        for name, owner in self.globals:  # what the module defines: its objects, functions and classes
            held.keep_names(name, owner, depth=3, objects=lambda v, name=name: _defined_in(v, name))
        return held

    def receive(self, **values: Any) -> None:
        """Record the input containers forward receives (the tracer's copies, holding proxies), before it runs."""
        stack = list(values.items())
        while stack:
            path, value = stack.pop()
            if type(value) in (list, dict):
                self.received.append((path, value, copy.copy(value)))
            if type(value) in (list, tuple):
                stack += [(f"{path}[{i}]", item) for i, item in enumerate(value)]
            elif type(value) is dict:
                stack += [(f"{path}[{key!r}]", item) for key, item in value.items()]

    def changes(self, effects: Effects) -> list[Change]:
        """What forward changed that the graph's operations do not make again, in the order of the docstring."""
        effects.check_rng()
        found = [Change(what, "random" if _A_RANDOM_GENERATOR in what else "python")
                 for what in self.python.changes(effects.replayed()) if not bookkeeping(what)
                 and not (isinstance(self.root, nn.Module) and _TRACER_ARTIFACTS.match(what))]
        for record in self.tensors.values():
            what = record.change(effects)
            if what is not None:
                found.append(Change(f"{text(record.path)} ({what})", "tensor"))
        for path, container, saved in self.received:
            same_items = len(container) == len(saved) and (
                all(a is b for a, b in zip(container, saved)) if isinstance(container, list)
                else all(key in saved and container[key] is saved[key] for key in container))
            if not same_items:
                found.append(Change(f"the input {path} (its contents)", "input"))
        found += [Change(what, "setting") for what in self.settings.changes()
                  if not (what == _GRAD_MODE and effects.grad_mode == torch.is_grad_enabled())]
        found += [Change(what, "random") for what in self.generators.changes() if what != Generators.TORCH]
        if effects.untraced_rng is not None:  # drawn, seeded or put back outside the graph (even if back where it was)
            filename, lineno, code = effects.untraced_rng
            where = f", before `{code}` at {filename.rsplit('/', 1)[-1]}:{lineno}" if lineno else ""
            found.append(Change(f"{Generators.TORCH} (moved outside the graph's operations{where})", "random"))
        return found

    def restore(self, inputs: bool = True, generators: bool = False) -> None:
        """Put back everything recorded; the caller's inputs unless ``inputs`` is False, the generators if asked."""
        self.python.restore()
        if inputs:
            self.given.restore()
        given = {id(t) for t in pytree.tree_leaves(self.inputs) if isinstance(t, torch.Tensor)}
        for key, record in self.tensors.items():
            if inputs or key not in given:
                record.restore()
        self.settings.restore()
        if generators:
            self.generators.restore()


__all__ = ["Before", "Change", "bookkeeping", "refusal"]
