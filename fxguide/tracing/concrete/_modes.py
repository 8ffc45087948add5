"""What a graph inlined from the model and must find unchanged at each call: training flags, hooks, and what
the model's code read outside torch.

The graph holds the code of the modules it traced through (the root, and every submodule that is not a
leaf): a branch on ``self.training``, ``F.dropout(x, self.p, self.training)``, the hooks those modules had.
Their leaf submodules are called by the graph and read their own flags, so after ``model.eval()`` a graph
traced in train mode would mix the two modes. :class:`StateGuard` runs before the graph on every call (a
pre-hook, carried like the input check) and raises :class:`~fxguide.tracing.concrete.GuardError` when the
traced module's training flag, the flag or the hooks of a module whose code it inlined, or torch's global
module hooks (which the graph's own modules would run too) differ from when it was traced, and when a value
the model's code read and the graph holds as a constant (a module's attribute, a global, an enclosing
function's variable or a default argument, an environment variable, a setting of torch read as an attribute,
``torch.backends.cudnn.enabled``) or an object the graph holds itself
(a submodule, a parameter, a tensor attribute) is no longer what it was.
"""

from __future__ import annotations

import copy
import os
import sys
import types
import weakref
from typing import Any

import torch
from torch import nn

from fxguide._state import hooks_registered, same_value
from fxguide._state.contents import attributes
from fxguide._state.reads import _SHORT, Read, Same, freeze
from fxguide.tracing.concrete._records import Decision, GuardError, _refuse_retrace
from fxguide.tracing.concrete._tracer import _MISSING, EVERY_VARIABLE, every_variable, lookup, torch_setting

_ADVICE = ('Trace again after the change (concrete_trace(..., on_mismatch="retrace") does so by itself), or '
           "undo it before calling the graph.")


_HOOK_REGISTRIES = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


def _hooks(module: nn.Module) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(getattr(module, name)) for name in _HOOK_REGISTRIES)


def _hook_states(module: nn.Module, names: frozenset[str]) -> list[tuple[str, int, Read, str]]:
    """The hooks of ``module`` that hold state (a callable object, a bound method's object, a ``partial``), each
    kept through the attribute names ``names`` (those the model's code and its hooks read)."""
    found = []
    for registry in _HOOK_REGISTRIES:
        for key, hook in getattr(module, registry).items():
            if isinstance(hook, types.FunctionType):
                continue  # a plain function: the hook's identity, checked by its key, is all it holds
            read = Read.of(hook, names, identities=True)
            if read is not None:
                found.append((registry, key, read, _hook_text(hook, names)))
    return found


def _hook_text(hook: Any, names: frozenset[str]) -> str:
    """What a hook holds that its code reads, short (``{'k': 2.0}``), for an error."""
    owner = getattr(hook, "__self__", hook)  # a bound method: its object
    held = {name: value for name, value in attributes(owner).items() if name in names} if not isinstance(
        owner, type) else {}
    return _SHORT.repr(held) if held else type(hook).__name__


def _for_a_copy(kept: Any) -> Any:
    """What a deep copy of the graph checks instead of ``kept``: a tensor the original holds by identity by its
    contents (the copy holds a copy of it); functions, classes and plain values as they are."""
    if isinstance(kept, Same):
        return kept.detached() if isinstance(kept.value, torch.Tensor) else kept
    return kept.detached() if isinstance(kept, Read) else kept


#: What a deep copy of a StateGuard shares with the original: weak references to the model's functions and to
#: the tensors whose values forward read as Python, and what was kept of the code's state (Same and Read
#: records: the objects they hold by identity stay those).
_SHARED = frozenset({"cells_read", "globals_read", "values_read"})


def _unchanged(kept: Any, now: Any, memo: dict[tuple[int, int, bool], Any]) -> bool:
    """Whether a value the model's code read when traced still holds what the graph holds (a plain value is
    kept as it was, a container or object as a deep :class:`~fxguide._state.reads.Read`, an object the graph
    holds as :class:`~fxguide._state.reads.Same`). ``memo``: the records made during this check (a config
    object every layer holds is recorded once)."""
    if isinstance(kept, Read):
        key = (id(now), id(kept.names), kept.identities)
        if key not in memo:
            memo[key] = freeze(now, kept.names, kept.identities)
        return bool(memo[key] == kept.record)
    return kept.unchanged(now) if isinstance(kept, Same) else same_value(kept, now)


class StateGuard(nn.Module):
    """Checks, before the graph runs, the training flags and hooks it was traced with (see the module docstring),
    and what the model's code read outside torch: module attributes, globals, enclosing functions' variables and
    default arguments, environment variables (kept as :func:`~fxguide.tracing.concrete._tracer._kept` says).

    ``training`` is the traced module's flag (``None`` for a traced function), ``inlined`` the modules whose
    code the graph holds, by path; they are watched through weak references, which a copy or a pickle of the
    graph does not keep (those no longer share the model's modules).
    """

    def __init__(self, training: bool | None, inlined: list[tuple[str, nn.Module]], where: tuple[str, int],
                 globals_read: list[tuple[str, str, Any]] | None = None,
                 environ_read: dict[str, str | None] | None = None,
                 attributes_read: dict[str, dict[str, Any]] | None = None,
                 cells_read: list[tuple[Any, int, Any]] | None = None,
                 read_from: list[tuple[str, nn.Module]] | None = None,
                 settings_read: list[tuple[str, str, Any]] | None = None,
                 values_read: list[tuple[Any, int, str, Any, tuple[str, int, str]]] | None = None,
                 hook_names: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.traced_training = training
        # path -> {name: what is kept}: the attributes of the model's modules that its code names
        self.attributes_read = dict(attributes_read or {})
        self.watched = [(path, weakref.ref(m), m.training, _hooks(m)) for path, m in inlined]
        # path -> [(registry, key, what is kept, it in words)]: the hooks the graph inlined that hold state of their
        # own (a callable object's attributes, a bound method's object), compared through the names the code reads
        self.hooks_read = {path: held for path, m in inlined if (held := _hook_states(m, hook_names))}
        # the other modules whose attributes the model's code reads (a leaf's ``in_features``, ``weight``)
        self.read_from = [(path, weakref.ref(m)) for path, m in read_from or () if path in self.attributes_read]
        self.where = where
        self.globals_read = list(globals_read or [])  # (module name, global name, value when traced)
        self.environ_read = dict(environ_read or {})  # variable -> its value when traced (None: unset)
        # (function, index, value when traced): the enclosing functions' variables that forward reads
        self.cells_read = [(weakref.ref(f), index, value) for f, index, value in cells_read or ()]
        # (torch module, attribute path, value when traced): torch's settings read as attributes
        self.settings_read = list(settings_read or [])
        # (weak reference, version, method, answer, where): real tensors whose value forward read as Python
        self.values_read = list(values_read or [])

    _is_impure = True  # read by torch.fx.Node.is_impure: dead-code elimination keeps the check

    def forward(self) -> None:
        """The check the graph itself runs, so that every way of running it runs the check (``gm.forward``,
        an ``Interpreter``, a ``GraphModule`` built from ``gm.graph``). The traced module's flag is read on
        this submodule, which ``.train()`` and ``.eval()`` of whatever module holds it set alike."""
        _refuse_retrace("guard_state", "the training flags and hooks the graph was traced with")
        self.check_call(self, (), {})

    def _error(self, what: str, traced: Any, now: Any) -> GuardError:
        filename, lineno = self.where
        return GuardError(Decision(-1, "state", traced, filename, lineno, what), now, advice=_ADVICE)

    def check_call(self, owner: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
        memo: dict[tuple[int, int, bool], Any] = {}
        if self.traced_training is not None and owner.training != self.traced_training:
            raise self._error("the training flag of the traced graph (.train()/.eval())", self.traced_training,
                              owner.training)
        for path, ref, training, hooks in self.watched:
            module = ref()
            if module is None:
                continue
            if module.training != training:
                raise self._error(f"the training flag of {path} (.train()/.eval())", training, module.training)
            if _hooks(module) != hooks:
                raise self._error(f"the hooks of {path} (a hook added or removed)", f"{sum(map(len, hooks))} hooks",
                                  f"{sum(map(len, _hooks(module)))} hooks")
            for registry, key, kept, text in getattr(self, "hooks_read", {}).get(path, ()):
                hook = getattr(module, registry).get(key)
                if hook is not None and not kept.unchanged(hook):
                    raise self._error(f"the state of a hook of {path} ({type(hook).__name__} in {registry}; the graph "
                                      f"holds what it read)", text, _hook_text(hook, kept.names))
            self._check_attributes(path, module, memo)
        for path, ref in getattr(self, "read_from", ()):
            module = ref()
            if module is not None:
                self._check_attributes(path, module, memo)
        for module_name, name, value in getattr(self, "globals_read", ()):
            namespace = vars(sys.modules[module_name]) if module_name in sys.modules else {}
            now = namespace.get(name, _MISSING)
            if not _unchanged(value, now, memo):
                raise self._error(f"the global {name} of {module_name} (read by forward; the graph holds "
                                  f"{'the object it was' if isinstance(value, Same) else 'its value'})",
                                  repr(value), "unset" if now is _MISSING else _SHORT.repr(now))
        for ref, index, value in getattr(self, "cells_read", ()):
            function = ref()
            if function is None:
                continue
            if index < 0:
                now = (function.__defaults__, function.__kwdefaults__)
                if not _unchanged(value, now, memo):
                    raise self._error(f"the default arguments of {function.__qualname__} (the graph holds what "
                                      f"they were)", repr(value), _SHORT.repr(now))
                continue
            cell = function.__closure__[index]
            now = cell.cell_contents
            if not _unchanged(value, now, memo):
                name = function.__code__.co_freevars[index]
                raise self._error(f"the variable {name} that {function.__qualname__} reads from the function "
                                  f"around it (the graph holds its value)", repr(value), _SHORT.repr(now))
        for module_name, path, value in getattr(self, "settings_read", ()):
            now = torch_setting(module_name, path)
            if now is _MISSING or not same_value(value, now):
                raise self._error(f"torch's setting {module_name}.{path} (read by forward; the graph holds what it "
                                  f"was)", repr(value), "unreadable" if now is _MISSING else _SHORT.repr(now))
        for variable, value in getattr(self, "environ_read", {}).items():
            if variable == EVERY_VARIABLE:  # forward read the whole environment: which variables there are
                now = every_variable()
                if now != value:
                    added = sorted(set(now.split("\n")) - set(value.split("\n")))
                    raise self._error("the variables of os.environ (forward read them all; the graph holds what it "
                                      "read)", f"{value.count(chr(10)) + 1} variables",
                                      f"{now.count(chr(10)) + 1}" + (f", {', '.join(added[:3])} added" if added else ""))
                continue
            now = os.environ.get(variable)
            if now != value:
                raise self._error(f"os.environ[{variable!r}] (read by forward; the graph holds what it read)",
                                  repr(value), repr(now))
        for ref, version, method, value, (filename, lineno, code) in getattr(self, "values_read", ()):
            tensor = ref()
            if tensor is None or tensor._version == version:
                continue
            now = getattr(tensor, method)()
            if not same_value(value, now) and now != value:
                raise self._error(f"a tensor's value that forward read as Python ({method}) at "
                                  f"{filename.rsplit('/', 1)[-1]}:{lineno} (`{code}`; the graph holds the answer)",
                                  _SHORT.repr(value), _SHORT.repr(now))
        registered = hooks_registered()
        if registered:
            raise self._error(f"torch's global module hooks ({', '.join(registered)})", "none registered",
                              "some registered")
        return args, kwargs

    def _check_attributes(self, path: str, module: nn.Module, memo: dict[tuple[int, int, bool], Any]) -> None:
        for name, value in getattr(self, "attributes_read", {}).get(path, {}).items():
            now = lookup(module, name)
            if not _unchanged(value, now, memo):
                raise self._error(f"the attribute {path}.{name} (read by forward; the graph holds "
                                  f"{'the object it was' if isinstance(value, Same) else 'its value'})",
                                  repr(value), "absent" if now is _MISSING else _SHORT.repr(now))

    def __deepcopy__(self, memo: dict[int, Any]) -> StateGuard:
        """A deep copy of the graph holds copies of the model's tensors, as a pickled one does, but runs in this
        process: the checks of the code's own state (globals, enclosing functions' variables, default
        arguments) are kept, weak references and all, a tensor held by identity compared by its contents
        (:func:`_for_a_copy`)."""
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        state = self.__getstate__()
        # the copy holds copies of the tensors the graph held by identity: those are compared by their contents
        state["cells_read"] = [(ref, index, kept) for ref, index, value in self.cells_read
                               if (kept := _for_a_copy(value)) is not None]
        state["globals_read"] = [(m, n, kept) for m, n, value in self.globals_read
                                 if (kept := _for_a_copy(value)) is not None]
        state["values_read"] = list(getattr(self, "values_read", ()))  # the same tensors, in this process
        for key, value in state.items():
            new.__dict__[key] = value if key in _SHARED else copy.deepcopy(value, memo)
        return new

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        # weak references to the model's modules and functions: a pickled graph no longer shares them (nor
        # the attributes of those modules); a global is kept unless it is an object pickling cannot find again,
        # and so are the default arguments of a function pickling finds by name
        state["watched"], state["read_from"], state["attributes_read"], state["hooks_read"] = [], [], {}, {}
        state["values_read"] = []  # weak references to the tensors: a pickled graph no longer shares them
        state["cells_read"] = [(function, index, value) for ref, index, value in self.cells_read
                               if index < 0 and (function := ref()) is not None and Same(function).picklable()]
        # a tensor the graph held by identity is compared by its contents in the copy, which holds a copy of it
        state["globals_read"] = [(m, n, kept) for m, n, v in self.globals_read
                                 if (kept := v.detached() if isinstance(v, (Read, Same)) else v) is not None]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state["cells_read"] = [(weakref.ref(f) if not isinstance(f, weakref.ref) else f, index, value)
                               for f, index, value in state.get("cells_read", ())]
        super().__setstate__(state)

    def extra_repr(self) -> str:
        return f"{len(self.watched)} modules watched"
