"""Which attributes of the model's plain objects (a config, a settings holder) forward read while it was traced.

``guard_state`` keeps such an object through the attributes the model's code reads. The code's names say
most of them (``self.config.hidden_size``), but not a name computed at run time
(``getattr(self.config, f"layer_{i}")``) or a read of the whole namespace (``vars(self.config)``,
``self.config.__dict__``). :class:`ObjectReads` records them as they happen: while tracing, the classes of the
objects the model's modules hold get a ``__getattribute__`` that notes each name read on those objects, then
calls the class's own. An object whose class cannot be patched (one written in C, such as
``types.SimpleNamespace``), or whose ``__dict__`` was read, is kept whole.

It notes the names the model's code looked up on a module and did not find too (``hasattr(self, "extra")``,
``getattr(self, "scale", 1.0)``: ``nn.Module.__getattr__`` raised), so that ``guard_state`` checks they are
still absent: adding one later changes what forward does.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from torch import nn
from torch.fx import _symbolic_trace

from fxguide._state.contents import attributes, is_plain_object
from fxguide.tracing.concrete._frames import _PACKAGE_DIR, _is_user_frame

_WHOLE = "__dict__"


def _held_objects(root: Any) -> list[Any]:
    """The plain objects the model's modules hold, directly or in a list, tuple or dict attribute."""
    if not isinstance(root, nn.Module):
        return []
    found: dict[int, Any] = {}
    for module in root.modules():
        for value in vars(module).values():
            items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) \
                else (value,)
            for item in items:
                if is_plain_object(item):
                    found[id(item)] = item
    return list(found.values())


class ObjectReads:
    """A context manager: while it is entered, the attribute names read on the model's plain objects are noted.

    :meth:`names` then gives every name read (each attribute of an object kept whole too), for
    :func:`~fxguide.tracing.concrete._tracer.attributes_read` to keep them.
    """

    def __init__(self, root: Any) -> None:
        objects = _held_objects(root)
        self.objects = {id(o): o for o in objects}
        self.read: dict[int, set[str]] = {}
        self.patched: list[tuple[Any, str, Any]] = []  # (class or module, name, what it was before: None if none)
        self.missed: dict[int, tuple[nn.Module, set[str]]] = {}  # id(module) -> (module, names not found)

    def __enter__(self) -> ObjectReads:
        watched, read = self.objects, self.read
        for cls in {type(o) for o in self.objects.values()}:
            own = cls.__dict__.get("__getattribute__")
            inherited = cls.__getattribute__

            def noting(obj: Any, name: str, _inherited: Any = inherited) -> Any:
                if id(obj) in watched:
                    read.setdefault(id(obj), set()).add(name)
                return _inherited(obj, name)

            try:
                cls.__getattribute__ = noting
            except TypeError:  # a class written in C: its objects are kept whole
                for key, obj in watched.items():
                    if type(obj) is cls:
                        read.setdefault(key, set()).add(_WHOLE)
                continue
            self.patched.append((cls, "__getattribute__", own))
        missed, looked_up = self.missed, nn.Module.__getattr__

        def noting_misses(module: nn.Module, name: str) -> Any:
            try:
                return looked_up(module, name)
            except AttributeError:
                caller: Any = sys._getframe(1)
                # past torch.fx's wrapper (while it traces) and this package's builtins (``hasattr``, ``getattr``)
                while caller is not None and (caller.f_code.co_name == "module_getattr_wrapper"
                                              or caller.f_code.co_filename.startswith(_PACKAGE_DIR)):
                    caller = caller.f_back
                if caller is not None and _is_user_frame(caller):
                    missed.setdefault(id(module), (module, set()))[1].add(name)
                raise

        nn.Module.__getattr__ = noting_misses  # type: ignore[method-assign]
        self.patched.append((nn.Module, "__getattr__", looked_up))
        # torch.fx's tracer looks attributes up through the one it saved when it was imported
        self.patched.append((_symbolic_trace, "_orig_module_getattr", _symbolic_trace._orig_module_getattr))
        _symbolic_trace._orig_module_getattr = noting_misses
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 where: TracebackType | None) -> None:
        for cls, method, own in reversed(self.patched):
            if own is None:
                delattr(cls, method)
            else:
                setattr(cls, method, own)
        self.patched.clear()

    def absent(self, module: nn.Module) -> set[str]:
        """The names the model's code looked up on ``module`` and did not find."""
        found = self.missed.get(id(module))
        return set(found[1]) if found is not None and found[0] is module else set()

    def names(self) -> set[str]:
        """Every attribute name read on the watched objects (all of an object's when it was read whole)."""
        found: set[str] = set()
        for key, names in self.read.items():
            found |= names
            if _WHOLE in names:
                found |= set(attributes(self.objects[key]))
        return found
