"""What a graph inlined from the model and must find unchanged at each call: training flags and hooks.

The graph holds the code of the modules it traced through (the root, and every submodule that is not a
leaf): a branch on ``self.training``, ``F.dropout(x, self.p, self.training)``, the hooks those modules had.
Their leaf submodules are called by the graph and read their own flags, so after ``model.eval()`` a graph
traced in train mode would mix the two modes. :class:`StateGuard` runs before the graph on every call (a
pre-hook, carried like the input check) and raises :class:`~fxguide.tracing.concrete.GuardError` when the
traced module's training flag, the flag or the hooks of a module whose code it inlined, or torch's global
module hooks (which the graph's own modules would run too) differ from when it was traced.
"""

from __future__ import annotations

import os
import sys
import weakref
from typing import Any

from torch import nn

from fxguide._state import hooks_registered, same_value
from fxguide.tracing.concrete._records import Decision, GuardError, _refuse_retrace

_ADVICE = ('Trace again after the change (concrete_trace(..., on_mismatch="retrace") does so by itself), or '
           "undo it before calling the graph.")


def _hooks(module: nn.Module) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(getattr(module, name)) for name in
                 ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks"))


_UNSET = object()


class StateGuard(nn.Module):
    """Checks, before the graph runs, the training flags and hooks it was traced with (see the module docstring).

    ``training`` is the traced module's flag (``None`` for a traced function), ``inlined`` the modules whose
    code the graph holds, by path; they are watched through weak references, which a copy or a pickle of the
    graph does not keep (those no longer share the model's modules).
    """

    def __init__(self, training: bool | None, inlined: list[tuple[str, nn.Module]], where: tuple[str, int],
                 globals_read: list[tuple[str, str, Any]] | None = None,
                 environ_read: dict[str, str | None] | None = None,
                 attributes_read: dict[str, dict[str, Any]] | None = None) -> None:
        super().__init__()
        self.traced_training = training
        self.watched = [(path, weakref.ref(m), m.training, _hooks(m)) for path, m in inlined]
        # path -> {name: value}: the plain Python attributes of those modules that their code names
        self.attributes_read = dict(attributes_read or {})
        self.where = where
        self.globals_read = list(globals_read or [])  # (module name, global name, value when traced)
        self.environ_read = dict(environ_read or {})  # variable -> its value when traced (None: unset)

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
            for name, value in getattr(self, "attributes_read", {}).get(path, {}).items():
                now = vars(module).get(name, _UNSET)
                if not same_value(value, now):
                    raise self._error(f"the attribute {path}.{name} (read by forward; the graph holds its value)",
                                      repr(value), "deleted" if now is _UNSET else repr(now))
        for module_name, name, value in getattr(self, "globals_read", ()):
            namespace = vars(sys.modules[module_name]) if module_name in sys.modules else {}
            now = namespace.get(name, _UNSET)
            if not same_value(value, now):
                raise self._error(f"the global {name} of {module_name} (read by forward; the graph holds its "
                                  f"value)", repr(value), "unset" if now is _UNSET else repr(now))
        for variable, value in getattr(self, "environ_read", {}).items():
            now = os.environ.get(variable)
            if now != value:
                raise self._error(f"os.environ[{variable!r}] (read by forward; the graph holds what it read)",
                                  repr(value), repr(now))
        registered = hooks_registered()
        if registered:
            raise self._error(f"torch's global module hooks ({', '.join(registered)})", "none registered",
                              "some registered")
        return args, kwargs

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["watched"] = []  # weak references to the model's modules: a pickled graph no longer shares them
        return state

    def extra_repr(self) -> str:
        return f"{len(self.watched)} modules watched"
