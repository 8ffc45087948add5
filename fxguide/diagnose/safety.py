"""What keeps a diagnosis safe on any model: a time limit per tool, and the model put back as it was.

A capture tool may leave things behind when it fails halfway: a module switched
to train mode, an attribute set during tracing, a cache filled, a torch function
patched. :class:`Snapshot` records the model (and the namespaces tools patch)
before a tool runs and puts every one of them back afterwards.
:class:`CallerState` keeps the caller's random generators as they were, and
:func:`time_limit` keeps a ``SIGALRM`` timer the caller had pending.

What a diagnosis does not keep: Dynamo's caches. The ``torch.compile`` row
starts from ``torch._dynamo.reset()`` and resets again after it (a diagnosis
that compiled the model leaves no compiled code behind, and a second diagnosis
of the same model is not refused by Dynamo's recompile limit), so a function
the caller compiled before is compiled again on its next call: slower once,
with the same results.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional
from torch import nn

from fxguide._state import Generators, Held, kind_of
from fxguide._state.contents import is_torchs


class ToolTimeout(BaseException):
    """A tool ran past its time limit (a BaseException, so no model code swallows it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`ToolTimeout` in the block after ``seconds``.

    Uses ``SIGALRM``, so the limit holds in the main thread of a POSIX process;
    elsewhere (another thread, Windows) the block runs without a limit, and
    ``seconds <= 0`` means no limit. A timer the caller had pending is kept: if
    it falls due within the block, the caller's handler runs then; otherwise it
    is set again on the way out with the time it had left.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds != seconds:
        raise ValueError(f"time_limit: seconds must be a number (0 or less: no limit), got {seconds!r}")
    if (seconds <= 0 or threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "setitimer")):
        yield
        return
    start = time.monotonic()
    ours = start + seconds
    previous = signal.getsignal(signal.SIGALRM)
    pending, interval = signal.getitimer(signal.ITIMER_REAL)
    theirs = [start + pending if pending > 0 else None]  # the caller's next deadline

    def arm() -> None:
        due = min(d for d in (ours, theirs[0]) if d is not None)
        signal.setitimer(signal.ITIMER_REAL, max(due - time.monotonic(), 1e-4))

    def expire(signum: int, frame: Any) -> None:
        now = time.monotonic()
        if theirs[0] is not None and now >= theirs[0] - 1e-3 and (theirs[0] <= ours or now < ours - 1e-3):
            theirs[0] = now + interval if interval > 0 else None
            arm()
            if callable(previous):
                previous(signum, frame)
            return
        raise ToolTimeout(f"took longer than {seconds:g} s")

    signal.signal(signal.SIGALRM, expire)
    arm()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if theirs[0] is not None:
            signal.setitimer(signal.ITIMER_REAL, max(theirs[0] - time.monotonic(), 1e-4), interval)


class CallerState:
    """The caller's random generators (torch's on every initialized device, Python's, NumPy's), put back on exit.

    A diagnosis seeds them all to make its runs repeatable; ``with CallerState():`` keeps the caller's streams.
    """

    def __enter__(self) -> CallerState:
        self.generators = Generators()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.generators.restore()


class _Values:
    """Copies of tensors' values, kept in a temporary file (off the model's device, outside the process's memory).

    Quantized and sparse tensors, which have no plain bytes, are kept as clones.
    """

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self._where: dict[int, tuple[int, int] | torch.Tensor] = {}

    def keep(self, tensor: torch.Tensor) -> None:
        key = id(tensor)
        if key in self._where or tensor.is_meta:
            return
        data = tensor.detach()
        if data.is_quantized or data.layout != torch.strided or data.is_complex() or not data.numel():
            self._where[key] = data.clone()
            return
        flat = data.contiguous().reshape(-1).cpu().view(torch.uint8).numpy()
        offset = self._file.seek(0, os.SEEK_END)
        self._file.write(memoryview(flat))
        self._where[key] = (offset, flat.nbytes)

    def value(self, tensor: torch.Tensor) -> torch.Tensor | None:
        """The kept value, shaped like ``tensor`` on its device; ``None`` if none was kept."""
        where = self._where.get(id(tensor))
        if where is None or isinstance(where, torch.Tensor):
            return where
        offset, size = where
        self._file.seek(offset)
        raw = bytearray(self._file.read(size))
        return torch.frombuffer(raw, dtype=torch.uint8).view(tensor.dtype).reshape(tensor.shape).to(tensor.device)


def _layout(tensor: torch.Tensor) -> tuple[Any, ...]:
    """Which memory a tensor's ``.data`` is: its storage, offset, shape, strides, dtype and device."""
    ptr = 0 if tensor.is_meta else tensor.untyped_storage().data_ptr()
    return ptr, tensor.storage_offset(), tuple(tensor.shape), tensor.stride(), tensor.dtype, tensor.device


class Snapshot:
    """A model's state and torch's namespaces, recorded to be put back after a tool.

    Recorded, per module: its attribute dictionary (so attributes a tool added,
    removed or rebound are undone, hooks and the ``training`` flag included); the
    contents of the containers of any kind (lists, dicts, sets, deques, NumPy arrays, ...) and plain
    Python objects (a config, a state holder) it holds, to any depth up to ``Snapshot.DEPTH``
    (recorded by ``fxguide._state.Held``, as the concrete tracer's state diff records them); and for
    every tensor it holds (parameters, buffers, tensors in attributes and
    containers) the memory its ``.data`` is, its ``requires_grad`` flag and a copy
    of its values, kept in a temporary file rather than in memory. A tensor
    whose ``_version`` moved is compared with its copy and written back, and so
    is every buffer (batch norm writes its running statistics without moving
    ``_version``); a rebound ``.data`` is bound back. Also the module-level names of ``torch``,
    ``torch.nn.functional``, ``torch.Tensor``, ``math``, ``builtins``, of
    each Python module that defines one of the model's classes and of those classes
    (class attributes, and the containers they hold), the state of every
    ``torch.Generator`` the model holds, and of each module
    and class whose functions ``torch.fx.wrap`` registered (tracing patches them
    while it runs): a tool that patches a function there and fails is undone.

    :meth:`differences` compares everything with the recording afresh (every
    tensor's values with its copy, whatever its ``_version`` says), so what
    :meth:`restore` could not put back is reported.

    >>> model = nn.Sequential(nn.Linear(2, 2))
    >>> snapshot = Snapshot(model)
    >>> _ = model.train(False)
    >>> model[0].note = "left behind"
    >>> with torch.no_grad(): _ = model[0].weight.add_(1)
    >>> model[0].bias.requires_grad_(False).data = torch.zeros(3)
    >>> snapshot.restore(); snapshot.differences()
    []
    """

    DEPTH = 4
    LARGEST = 10_000  # objects recorded at most: a model holding a whole tokenizer is recorded in part

    def __init__(self, model: nn.Module) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"Snapshot: model must be a torch.nn.Module, got {type(model).__name__}")
        self.model = model
        self._modules = list(model.modules())
        self._dicts = [(m, dict(vars(m))) for m in self._modules]
        self._tensors: list[list[Any]] = []  # [tensor, _version, .data, layout, requires_grad]
        self._values = _Values()
        seen: set[int] = set()
        # The containers of any kind, plain objects and generators the model and its classes hold.
        self._held = Held(tensor=lambda _, tensor: self._tensor(tensor, seen))
        for module in self._modules:
            for tensor in (*module._parameters.values(), *module._buffers.values()):
                self._tensor(tensor, seen)
        # Buffers are compared by value on every restore: batch norm's running statistics are written in
        # place by an operator that does not move their _version (torch's schema does not mark them mutated).
        buffers = {id(t) for m in self._modules for t in m._buffers.values() if isinstance(t, torch.Tensor)}
        self._unversioned = [record for record in self._tensors if id(record[0]) in buffers]
        for _, attrs in self._dicts:
            for value in attrs.values():
                self._held.keep("", value, self.DEPTH)
        self._namespaces = [(space, dict(vars(space))) for space in self._patchable(model)]
        for space, names in self._namespaces:  # containers held as class attributes (a registry, a counter)
            if isinstance(space, type) and space not in (torch.Tensor,):
                for value in names.values():
                    if kind_of(value) is not None:
                        self._held.keep("", value, self.DEPTH)

    def _tensor(self, tensor: Any, seen: set[int]) -> None:
        if not isinstance(tensor, torch.Tensor) or id(tensor) in seen:
            return
        seen.add(id(tensor))
        try:
            layout = _layout(tensor)
        except (RuntimeError, NotImplementedError, ValueError):  # an uninitialized lazy parameter, a subclass
            return
        self._values.keep(tensor)
        self._tensors.append([tensor, tensor._version, tensor.data, layout, tensor.requires_grad])

    @staticmethod
    def _patchable(model: nn.Module) -> list[Any]:
        import builtins
        import math
        spaces: list[Any] = [torch, torch.nn.functional, torch.Tensor, math, builtins]
        for module in model.modules():
            defined_in = sys.modules.get(type(module).__module__)
            if isinstance(defined_in, ModuleType) and not defined_in.__name__.startswith("torch."):
                spaces.append(defined_in)
            # the model's own classes: a forward may set a class attribute (a counter, a cache, a flag)
            spaces += [cls for cls in type(module).__mro__
                       if cls not in (object, nn.Module) and not is_torchs(cls.__module__)]
        # What torch.fx.wrap registered, which symbolic tracing (and export through it) patches while it runs:
        # a tool stopped by the time limit half-way must not leave a wrapped function in its module.
        from torch.fx import _symbolic_trace as fx_trace
        for namespace in getattr(fx_trace, "_wrapped_fns_to_patch", {}).values():
            module = sys.modules.get(namespace.get("__name__", "")) if isinstance(namespace, dict) else None
            if isinstance(module, ModuleType) and vars(module) is namespace:
                spaces.append(module)
        spaces += [cls for cls, _ in getattr(fx_trace, "_wrapped_methods_to_patch", []) if isinstance(cls, type)]
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
        self._held.restore()
        with torch.no_grad():
            for record in self._tensors:
                self._put_back(*record, check_values=False)
                record[1] = record[0]._version  # written back: compare again only after the next write
            for record in self._unversioned:
                self._put_back(*record, check_values=True)

    def _put_back(self, tensor: torch.Tensor, version: int, data: torch.Tensor, layout: tuple[Any, ...],
                  requires_grad: bool, check_values: bool) -> list[str]:
        """Bind back ``.data``, set ``requires_grad`` and write back changed values; what was wrong, in words."""
        wrong = []
        if _layout(tensor) != layout:
            tensor.data = data
            wrong.append("its .data was rebound")
        if tensor.requires_grad != requires_grad and tensor.is_leaf:
            tensor.requires_grad_(requires_grad)
            wrong.append("its requires_grad flag changed")
        if check_values or tensor._version != version:
            saved = self._values.value(tensor)
            if saved is not None and not _equal(tensor, saved):
                tensor.data.copy_(saved)
                wrong.append("its values changed")
        return wrong

    def differences(self) -> list[str]:
        """What differs from the recording now, one line each (``[]``: the model is as it was).

        Tensors are compared with their copies value by value (a write through ``.data`` moves no
        ``_version``); a tensor found changed is written back too, and still reported.
        """
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
        for record in self._held.changed():
            if record.saved.kind == "generator":
                record.value.set_state(record.saved.contents)
                found.append("the state of a torch.Generator the model holds changed (put back at the end)")
            else:
                found.append(f"the contents of a {type(record.value).__name__} the model holds changed")
        with torch.no_grad():
            for record in self._tensors:
                wrong = self._put_back(*record, check_values=True)
                record[1] = record[0]._version
                found += [f"a tensor of shape {record[3][2]}: {what} (written back at the end)" for what in wrong]
        for space, names in self._namespaces:
            current = vars(space)
            changed = [n for n in names if current.get(n, _MISSING) is not names[n]]
            found += [f"{getattr(space, '__name__', space)}.{n} changed" for n in sorted(changed)]
        return found


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    a = a.detach()
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_quantized:
        a, b = a.dequantize(), b.dequantize()
    return bool(torch.equal(a, b) or torch.allclose(a, b, rtol=0, atol=0, equal_nan=True))


_MISSING = object()
