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
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx
import torch.fx._pytree as fx_pytree
from torch import nn
from torch.fx.graph import _PyTreeCodeGen
from torch.utils import _pytree as pytree

from fxguide.tracing.concrete._records import (Decision, GuardError, UnguardableError, _fx_tracing,
                                               _refuse_retrace)
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
        self.leaves: list[tuple[str, Any]] = []  # each placeholder: its label and traced structure (install sets)
        self.skip_self = 0  # 1 when the flattened inputs start with the module itself (a module's pytree code)

    def _error(self, path: str, traced: str, new: str) -> GuardError:
        filename, lineno = self.where
        return GuardError(Decision(-1, "input", traced, filename, lineno, path), new)

    _is_impure = True  # read by torch.fx.Node.is_impure: dead-code elimination keeps the check

    def forward(self, *values: Any) -> None:
        """The check the graph itself runs, on its placeholders' values: each has the kind it was traced with.

        It is a node of the graph, so every way of running the graph runs it: a call, ``gm.forward``, an
        ``Interpreter``, a ``GraphModule`` built from ``gm.graph`` (``copy.copy`` is one).
        """
        _refuse_retrace("guard_inputs", "the structure of the inputs")
        for (label, traced), value in zip(self.leaves, values):
            if traced is not None and structure(value) != traced:
                raise self._error(label, describe(traced), _given(value))

    def flatten(self, given: Any, spec: Any) -> list[Any]:
        """``fx_pytree.tree_flatten_spec`` made exact: the graph's code flattens its inputs with this.

        torch's flattening reads the traced structure out of the inputs and ignores the rest (a third item
        of a list traced with two, a dict's extra key); here a call whose structure differs raises.
        """
        if _fx_tracing():  # unpickling traces the code once; the pickled graph then replaces what it makes
            return fx_pytree.tree_flatten_spec(given, spec)  # type: ignore[no-any-return]
        flat, real = pytree.tree_flatten(_as_spec_type(given, spec), is_leaf=_whole_inputs(given))
        if real != spec:
            args, kwargs = (tuple(given[0]), dict(given[1])) if isinstance(given, tuple) else (tuple(given), {})
            self.check_bound(args[self.skip_self:], kwargs)  # names the input that differs
            filename, lineno = self.where
            raise GuardError(Decision(-1, "input", str(spec), filename, lineno, "structure"), str(real))
        return flat

    def check_bound(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The check of a call before the graph runs: the call is bound to the traced signature and compared."""
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
        return self.check_bound(args, kwargs)


def _whole_inputs(given: Any) -> Callable[[Any], bool]:
    """What a flattening of the inputs ``given`` keeps whole: each input that is not a list, tuple or dict.

    ``given`` is what the graph's code passes: a list of the positional inputs, or a tuple of that list
    and a dict of the keyword ones. The tracer gives such an input one placeholder, even when pytree could
    open it (a dataclass or a class registered with ``register_pytree_node``); inside a list, tuple or dict,
    pytree opens everything.
    """
    tops = [*given[0], *given[1].values()] if isinstance(given, tuple) else list(given)
    whole = {id(v) for v in tops if not isinstance(v, (list, tuple, dict))}
    return lambda value: id(value) in whole


def _leaves(name: str, value: Any) -> list[tuple[str, Any]]:
    """Each placeholder the tracer makes for the input ``name``: its label and example value."""
    if not isinstance(value, (list, tuple, dict)):
        return [(name, value)]
    try:
        return [(name + pytree.keystr(path), leaf) for path, leaf in pytree.tree_flatten_with_path(value)[0]]
    except ValueError:  # a class registered without flatten_with_keys_fn inside: label the leaves by position
        return [(f"{name}<leaf {i}>", leaf) for i, leaf in enumerate(pytree.tree_leaves(value))]


def _as_spec_type(given: Any, spec: Any) -> Any:
    """The generated code passes positional inputs as a list where the traced spec holds a tuple."""
    if spec.type is tuple and isinstance(given, list):
        return tuple(given)
    if spec.type is tuple and isinstance(given, tuple) and len(given) == 2 and isinstance(given[0], list):
        return (tuple(given[0]), given[1])
    return given


class CheckedPyTreeCodeGen(_PyTreeCodeGen):
    """The code generator of a concretely traced graph whose inputs are flattened: it flattens them exactly.

    The generated ``forward`` calls ``self.guard_inputs.flatten`` where torch's calls
    ``fx_pytree.tree_flatten_spec``, and an ``Interpreter`` (which reads inputs through
    :meth:`process_inputs`) gets the same check.
    """

    def __init__(self, pytree_info: Any, guard: InputGuard) -> None:
        super().__init__(pytree_info)
        self.guard = guard

    def gen_var_bindings(self, fn_args: list[str], free_vars: list[str], expanded_def: bool) -> str:
        code = super().gen_var_bindings(fn_args, free_vars, expanded_def)
        return code.replace("fx_pytree.tree_flatten_spec(", "self.guard_inputs.flatten(")

    def process_inputs(self, *inputs: Any) -> Any:
        if self.guard.skip_self:  # the spec holds the module as its first leaf; a run passes none
            return self.guard.flatten([_NOT_PASSED, *inputs], self.pytree_info.in_spec)[1:]
        return self.guard.flatten(list(inputs), self.pytree_info.in_spec)


_NOT_PASSED = object()  # stands for ``self`` where an Interpreter flattens a module graph's inputs


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
    # (submodules the code does not call, and a pre-hook) must be given back afterwards. And tracing the
    # code again would answer the graph's questions of torch's settings once, at load time
    # (``is_grad_enabled = torch.is_grad_enabled()`` becomes ``self.guard_0(True)``): the graph itself
    # travels too, node by node, and replaces the re-traced one.
    rebuild, args = fx.GraphModule.__reduce__(gm)
    return _unpickle, (rebuild, args, {name: gm._modules[name] for name in _CALL_GUARDS if name in gm._modules},
                       graph_spec(gm.graph))


def _unpickle(rebuild: Any, args: tuple[Any, ...], guards: Any, spec: Any = None) -> fx.GraphModule:
    gm = rebuild(*args)
    if spec is not None:  # pickled before the graph travelled with the code: the re-traced graph stays
        gm.graph = graph_from_spec(spec, gm)
    if isinstance(guards, InputGuard):  # pickled before the training-flag check existed
        guards = {"guard_inputs": guards}
    for name, guard in (guards or {}).items():
        _attach(gm, name, guard)
    return gm  # type: ignore[no-any-return]


class _Ref:
    """A node named in a pickled graph's arguments (a plain class: ``map_aggregate`` walks into tuples)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self) -> tuple[Any, ...]:
        return _Ref, (self.name,)


def graph_spec(graph: fx.Graph) -> tuple[list[tuple[Any, ...]], Any]:
    """``graph`` as picklable data: each node's opcode, name, target, arguments (nodes by name) and type,
    and the graph's code generator (a pytree one holds how inputs and outputs are flattened)."""
    def ref(node: fx.Node) -> _Ref:
        return _Ref(node.name)

    nodes = [(node.op, node.name, node.target, fx.node.map_arg(node.args, ref), fx.node.map_arg(node.kwargs, ref),
              node.type) for node in graph.nodes]
    return nodes, graph._codegen


def graph_from_spec(spec: tuple[list[tuple[Any, ...]], Any], owner: fx.GraphModule) -> fx.Graph:
    """The graph :func:`graph_spec` described, node for node, owned by ``owner``."""
    nodes, codegen = spec
    graph = fx.Graph(owning_module=owner)
    made: dict[str, fx.Node] = {}

    def fetch(value: Any) -> Any:
        return fx.node.map_aggregate(value, lambda v: made[v.name] if isinstance(v, _Ref) else v)

    for op, name, target, args, kwargs, type_expr in nodes:
        made[name] = graph.create_node(op, target, fetch(args), fetch(kwargs), name=name, type_expr=type_expr)
    graph._codegen = codegen
    graph.lint()
    return graph


def _attach(gm: fx.GraphModule, name: str, guard: nn.Module) -> None:
    gm.add_submodule(name, guard)
    if not any(hook is _check_inputs for hook in gm._forward_pre_hooks.values()):
        gm.register_forward_pre_hook(_check_inputs, with_kwargs=True)
        gm._register_deepcopy_hook(_reinstall)
    type(gm).__reduce__ = _reduce  # type: ignore[method-assign]


def install(gm: fx.GraphModule, signature: inspect.Signature, traced: dict[str, Any], where: tuple[str, int],
            example: dict[str, Any], parameters: dict[str, Any] | None = None) -> None:
    """Make ``gm`` check every call's inputs against ``traced`` (``example``: each placeholder's example value;
    ``parameters``: each parameter of the traced code's own signature, when a stand-in for a ``*args`` or
    ``**kwargs`` signature was traced: ``args_0``, ``args_1``... where ``traced`` has ``args``).

    A call is bound and checked before the graph runs (a forward pre-hook, kept by deepcopy and pickling),
    and the graph checks them itself, so that what runs it without calling ``gm`` checks them too: a
    ``guard_inputs`` node right after the placeholders checks each one's kind, and a graph whose inputs
    are flattened flattens them exactly (:class:`CheckedPyTreeCodeGen`).
    """
    if "inputs" in _OFF:  # switched off by the property test's mutation check
        return
    guard = InputGuard(signature, traced, where)
    guard.train(gm.training)
    _attach(gm, "guard_inputs", guard)
    placeholders = gm.graph.find_nodes(op="placeholder")
    codegen = gm.graph._codegen
    info = getattr(codegen, "pytree_info", None)
    if type(codegen) is _PyTreeCodeGen and info is not None and info.in_spec is not None:
        # The spec flattens the positional inputs, then the keyword ones, each in the order of orig_args.
        keyed = [leaf for name in info.orig_args if name != "self"
                 for leaf in _leaves(name, (parameters or traced).get(name))]
        labels, leaves = [label for label, _ in keyed], [leaf for _, leaf in keyed]
        guard.skip_self = int(bool(info.orig_args) and info.orig_args[0] == "self")  # a module's code passes self
        gm.graph._codegen = CheckedPyTreeCodeGen(info, guard)
    else:  # placeholders by name; one for a parameter left at its default is torch's to check (an assert)
        labels = [str(p.target) for p in placeholders]
        leaves = [example.get(label, _NOT_PASSED) for label in labels]
    if len(leaves) != len(placeholders):
        raise UnguardableError(f"concrete_trace: the graph has {len(placeholders)} inputs where the call has "
                               f"{len(leaves)}; a graph that cannot check its inputs on every call is not returned")
    guard.leaves = [(label, None if leaf is _NOT_PASSED else structure(leaf)) for label, leaf in zip(labels, leaves)]
    insert_check(gm, "guard_inputs", tuple(placeholders))


def insert_check(gm: fx.GraphModule, name: str, args: tuple[Any, ...]) -> None:
    """Put a call of the check ``name`` (a submodule of ``gm``) right after the placeholders (the caller
    recompiles ``gm``, once for all its checks)."""
    anchor = None  # after the placeholders and the checks already there: the inputs are checked first
    for node in gm.graph.nodes:
        if node.op != "placeholder" and not (node.op == "call_module" and node.target in _CALL_GUARDS):
            break
        anchor = node
    with (gm.graph.inserting_after(anchor) if anchor is not None else gm.graph.inserting_before()):
        gm.graph.call_module(name, args)


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
