"""What keeps a diagnosis safe on any model: a time limit per tool, and the model put back as it was.

A capture tool may leave things behind when it fails halfway: a module switched
to train mode, an attribute set during tracing, a cache filled, a torch function
patched. :class:`Snapshot` records the model (and the namespaces tools patch)
before a tool runs and puts every one of them back afterwards.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional
from torch import nn


class ToolTimeout(BaseException):
    """A tool ran past its time limit (a BaseException, so no model code swallows it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`ToolTimeout` in the block after ``seconds``.

    Uses ``SIGALRM``, so the limit holds in the main thread of a POSIX process;
    elsewhere (another thread, Windows) the block runs without a limit, and
    ``seconds <= 0`` means no limit.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds != seconds:
        raise ValueError(f"time_limit: seconds must be a number (0 or less: no limit), got {seconds!r}")
    if (seconds <= 0 or threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "setitimer")):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise ToolTimeout(f"took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _copy_container(value: Any) -> Any:
    return value.copy() if isinstance(value, (list, dict, set)) else None


def _same(container: Any, saved: Any) -> bool:
    """The same elements, by identity (``==`` on tensors would compare values)."""
    if len(container) != len(saved):
        return False
    if isinstance(container, list):
        return all(a is b for a, b in zip(container, saved))
    if isinstance(container, dict):
        return all(key in saved and container[key] is saved[key] for key in container)
    return {id(x) for x in container} == {id(x) for x in saved}


def _refill(target: Any, saved: Any) -> None:
    if isinstance(target, list):
        target[:] = saved
    else:
        target.clear()
        target.update(saved)


class Snapshot:
    """A model's state and torch's namespaces, recorded to be put back after a tool.

    Recorded, per module: its attribute dictionary (so attributes a tool added,
    removed or rebound are undone, hooks and the ``training`` flag included), the
    contents of its list, dict and set attributes (caches), and a copy of each
    parameter and buffer (written back if a tool changed it in place). Also the
    module-level names of ``torch``, ``torch.nn.functional``, ``torch.Tensor``,
    ``math``, ``builtins``, and of each Python module that defines one of the
    model's classes: a tool that patches a function there and fails is undone.

    >>> model = nn.Sequential(nn.Linear(2, 2))
    >>> snapshot = Snapshot(model)
    >>> _ = model.train(False)
    >>> model[0].note = "left behind"
    >>> with torch.no_grad(): _ = model[0].weight.add_(1)
    >>> snapshot.restore(); snapshot.differences()
    []
    """

    def __init__(self, model: nn.Module) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"Snapshot: model must be a torch.nn.Module, got {type(model).__name__}")
        self.model = model
        self._modules = list(model.modules())
        self._dicts = [(m, dict(vars(m))) for m in self._modules]
        self._containers = [(value, copy) for _, attrs in self._dicts for value in attrs.values()
                            if (copy := _copy_container(value)) is not None]
        self._tensors = []
        seen: set[int] = set()
        for module in self._modules:
            for tensor in (*module._parameters.values(), *module._buffers.values()):
                if isinstance(tensor, torch.Tensor) and id(tensor) not in seen:
                    seen.add(id(tensor))
                    self._tensors.append((tensor, tensor._version, tensor.detach().clone()))
        self._namespaces = [(space, dict(vars(space))) for space in self._patchable(model)]

    @staticmethod
    def _patchable(model: nn.Module) -> list[Any]:
        import builtins
        import math
        spaces: list[Any] = [torch, torch.nn.functional, torch.Tensor, math, builtins]
        for module in model.modules():
            defined_in = sys.modules.get(type(module).__module__)
            if isinstance(defined_in, ModuleType) and not defined_in.__name__.startswith("torch."):
                spaces.append(defined_in)
        unique: dict[int, Any] = {id(s): s for s in spaces}
        return list(unique.values())

    def restore(self) -> None:
        """Put back everything recorded."""
        for space, names in self._namespaces:  # names a tool added (an import's submodule) stay
            current = vars(space)
            for name, value in names.items():
                if current.get(name, _MISSING) is not value:
                    with contextlib.suppress(AttributeError, TypeError):
                        setattr(space, name, value)
        for module, attrs in self._dicts:
            state = vars(module)
            state.clear()
            state.update(attrs)
        for container, saved in self._containers:
            if not _same(container, saved):
                _refill(container, saved)
        with torch.no_grad():
            for tensor, version, saved in self._tensors:
                if tensor._version != version:
                    if tensor.shape != saved.shape:
                        tensor.data = saved.clone()
                    else:
                        tensor.copy_(saved)

    def differences(self) -> list[str]:
        """What differs from the recording now, one line each (``[]``: the model is as it was)."""
        found = []
        names = {id(m): name or "the model" for name, m in self.model.named_modules(remove_duplicate=False)}
        if list(self.model.modules()) != self._modules:
            found.append("the module tree changed")
        for module, attrs in self._dicts:
            where = names.get(id(module), type(module).__name__)
            state = vars(module)
            for key in sorted(set(attrs) ^ set(state)):
                found.append(f"{where}: attribute {key!r} {'added' if key in state else 'removed'}")
            for key in sorted(set(attrs) & set(state)):
                if state[key] is not attrs[key]:
                    found.append(f"{where}: attribute {key!r} rebound")
        for container, saved in self._containers:
            if not _same(container, saved):
                found.append(f"a {type(container).__name__} attribute's contents changed")
        for tensor, version, saved in self._tensors:
            if tensor._version != version and (tensor.shape != saved.shape or not _equal(tensor, saved)):
                found.append(f"a parameter or buffer of shape {tuple(saved.shape)} changed")
        for space, names in self._namespaces:
            current = vars(space)
            changed = [n for n in names if current.get(n, _MISSING) is not names[n]]
            found += [f"{getattr(space, '__name__', space)}.{n} changed" for n in sorted(changed)]
        return found


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    a = a.detach()
    if a.is_quantized:
        a, b = a.dequantize(), b.dequantize()
    return bool(torch.equal(a, b) or torch.allclose(a, b, rtol=0, atol=0, equal_nan=True))


_MISSING = object()
