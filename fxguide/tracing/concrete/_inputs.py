"""The structure of a call's inputs is part of what a trace guards.

A graph traced on a list of two tensors has two placeholders for it; called
with a list of three it would compute with the first two and drop the third.
:class:`InputGuard` runs before the graph on every call: it binds the call to
the traced function's signature and compares, input by input, what was traced
(a tensor, an int, a list of 2 tensors, a dict with keys 'a', 'b', ...) with
what is given, raising :class:`GuardError` at the first difference.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
import torch.fx as fx
from torch import nn

from fxguide.tracing.concrete._records import Decision, GuardError
from fxguide.tracing.concrete.questions import _OFF

_NO_DEFAULT = inspect.Parameter.empty


def structure(value: Any) -> Any:
    """What a trace depends on in an input: its kind, and for a container its type, length or keys and items."""
    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(structure(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, structure(v)) for k, v in value.items()))
    return type(value).__name__  # bool, int, float (the values themselves are placeholders)


def describe(shape: Any) -> str:
    """``structure``'s result in words: "a tensor", "a list of 2 tensors", "a dict with keys 'a', 'b'"."""
    if shape == "tensor":
        return "a tensor"
    if isinstance(shape, str):
        return f"{'an' if shape[0] in 'aeiou' else 'a'} {shape}"
    kind, items = shape
    if kind == "dict":
        keys = ", ".join(repr(k) for k, _ in items)
        return f"a dict with keys {keys}" if items else "an empty dict"
    if items and all(item == "tensor" for item in items):
        return f"a {kind} of {len(items)} tensor{'s' * (len(items) != 1)}"
    return f"a {kind} of {len(items)} item{'s' * (len(items) != 1)}"


def _given(value: Any) -> str:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return repr(value)
    return describe(structure(value))


def _first_difference(path: str, traced: Any, new: Any) -> tuple[str, str, str] | None:
    if traced == new:
        return None
    if isinstance(traced, tuple) and isinstance(new, tuple) and traced[0] == new[0]:
        if traced[0] == "dict" and [k for k, _ in traced[1]] == [k for k, _ in new[1]]:
            for (key, a), (_, b) in zip(traced[1], new[1]):
                if found := _first_difference(f"{path}[{key!r}]", a, b):
                    return found
        elif traced[0] != "dict" and len(traced[1]) == len(new[1]):
            for i, (a, b) in enumerate(zip(traced[1], new[1])):
                if found := _first_difference(f"{path}[{i}]", a, b):
                    return found
    return path, describe(traced), describe(new)


class InputGuard(nn.Module):
    """Checks, before the graph runs, that a call's inputs have the structure the trace was made with.

    ``signature`` is the traced function's, ``traced`` the example inputs it
    was bound to (name -> value). A call is bound to the same signature; an
    input given now but not when traced (or the reverse), a container of
    another length, keys or item kinds, or a tensor replaced by a Python
    number raises :class:`GuardError` naming the input. A parameter left at
    its default when traced may be passed again with that same default.
    """

    def __init__(self, signature: inspect.Signature, traced: dict[str, Any], where: tuple[str, int]) -> None:
        super().__init__()
        self.signature = signature
        self.traced = {name: structure(value) for name, value in traced.items()}
        self.where = where
        # The common call, positional inputs only, exactly as traced, is checked without binding.
        leading = list(signature.parameters.values())[:len(traced)]
        simple = [p.name for p in leading if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._positional = tuple(self.traced.values()) if simple == list(self.traced) else None

    def _error(self, path: str, traced: str, new: str) -> GuardError:
        filename, lineno = self.where
        return GuardError(Decision(-1, "input", traced, filename, lineno, path), new)

    def forward(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if not kwargs and self._positional is not None and len(args) == len(self._positional) \
                and all(structure(a) == s for a, s in zip(args, self._positional)):
            return args, kwargs
        try:
            call = self.signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"the traced graph takes the inputs of {self.signature}: {error}") from None
        for name, parameter in self.signature.parameters.items():
            given = name in call.arguments
            label = {parameter.VAR_POSITIONAL: "*", parameter.VAR_KEYWORD: "**"}.get(parameter.kind, "") + name
            if name not in self.traced:
                empty = parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD) and not call.arguments.get(name)
                if not given or empty:
                    continue
                value = call.arguments[name]
                if type(value) is type(parameter.default) and not isinstance(value, torch.Tensor) \
                        and value == parameter.default:  # the traced default, passed again
                    kwargs = {k: v for k, v in kwargs.items() if k != name}
                    continue
                raise self._error(label, f"left at its default ({parameter.default!r})" if parameter.default
                                  is not _NO_DEFAULT else "not given", _given(value))
            if not given:
                raise self._error(label, describe(self.traced[name]), "not given")
            if found := _first_difference(label, self.traced[name], structure(call.arguments[name])):
                raise self._error(*found)
        return args, kwargs

    def extra_repr(self) -> str:
        return ", ".join(f"{name}: {describe(shape)}" for name, shape in self.traced.items())

    def check_call(self, owner: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
        """The check run before ``owner``'s graph (:func:`install_check`'s protocol)."""
        return self(args, kwargs)  # type: ignore[no-any-return]


#: The submodules checking a call before the graph runs: what the graph inlined (``_modes``), then the inputs.
_CALL_GUARDS = ("guard_state", "guard_inputs")


def _check_inputs(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    for name in _CALL_GUARDS:
        guard = module._modules.get(name)
        if guard is not None:
            args, kwargs = guard.check_call(module, args, kwargs)
    return args, kwargs


def _reinstall(copy: fx.GraphModule) -> None:
    copy.register_forward_pre_hook(_check_inputs, with_kwargs=True)
    type(copy).__reduce__ = _reduce  # type: ignore[method-assign]  # each GraphModule has a class of its own


def _reduce(gm: fx.GraphModule) -> tuple[Any, ...]:
    # Pickling a GraphModule keeps its code and rebuilds it by tracing that code: the checks of a call
    # (submodules the code does not call, and a pre-hook) must be given back afterwards.
    rebuild, args = fx.GraphModule.__reduce__(gm)
    return _unpickle, (rebuild, args, {name: gm._modules[name] for name in _CALL_GUARDS if name in gm._modules})


def _unpickle(rebuild: Any, args: tuple[Any, ...], guards: Any) -> fx.GraphModule:
    gm = rebuild(*args)
    if isinstance(guards, InputGuard):  # pickled before the training-flag check existed
        guards = {"guard_inputs": guards}
    for name, guard in (guards or {}).items():
        _attach(gm, name, guard)
    return gm  # type: ignore[no-any-return]


def _attach(gm: fx.GraphModule, name: str, guard: nn.Module) -> None:
    gm.add_submodule(name, guard)
    if not any(hook is _check_inputs for hook in gm._forward_pre_hooks.values()):
        gm.register_forward_pre_hook(_check_inputs, with_kwargs=True)
        gm._register_deepcopy_hook(_reinstall)
    type(gm).__reduce__ = _reduce  # type: ignore[method-assign]


def install(gm: fx.GraphModule, signature: inspect.Signature, traced: dict[str, Any], where: tuple[str, int]) -> None:
    """Make ``gm`` check every call's inputs against ``traced`` before running (a forward pre-hook, kept by
    deepcopy and pickling)."""
    if "inputs" in _OFF:  # switched off by the property test's mutation check
        return
    _attach(gm, "guard_inputs", InputGuard(signature, traced, where))


def install_check(gm: fx.GraphModule, name: str, guard: nn.Module) -> None:
    """Make ``gm`` run ``guard.check_call`` before every call, as it runs the input check (``name``: its submodule)."""
    if name not in _CALL_GUARDS:
        raise ValueError(f"install_check: name must be one of {_CALL_GUARDS}, got {name!r}")
    _attach(gm, name, guard)


def carry(source: nn.Module, result: fx.GraphModule) -> fx.GraphModule:
    """Give ``result`` the checks of a call that ``source`` (a graph the concrete tracer made) has.

    Every fxguide transform that builds a new GraphModule from a traced one calls this, so that no transform
    drops the promise that a call with inputs of another structure (or after ``model.eval()``) raises instead
    of computing something else.
    """
    for name in _CALL_GUARDS:
        guard = getattr(source, "_modules", {}).get(name)
        if guard is not None and name not in result._modules:
            _attach(result, name, guard)
    return result


def check(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> None:
    """Run ``module``'s checks of a call on a call that does not go through its ``forward`` (an Interpreter's run)."""
    if any(name in getattr(module, "_modules", {}) for name in _CALL_GUARDS):
        _check_inputs(module, tuple(args), dict(kwargs or {}))
