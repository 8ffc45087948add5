"""The public entry points: binding example inputs, tracing, retracing, and reading the decisions back."""

from __future__ import annotations

import inspect
import types
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.fx as fx
from torch import nn
from torch.nn.modules import module as _module_globals
from torch.utils import _pytree as pytree

from fxguide._state import hooks_registered
from fxguide._state.reads import _SHORT, Same
from fxguide.tracing.concrete._diff import Before, refusal
from fxguide.tracing.concrete._inputs import install as install_input_guard
from fxguide.tracing.concrete._inputs import insert_check, install_check
from fxguide.tracing.concrete._modes import StateGuard
from fxguide.tracing.concrete._objects_read import ObjectReads
from fxguide.tracing.concrete._records import (Decision, Guard, GuardError, RaisesGuard, UnguardableError,
                                               _check_example, _pending_guard)
from fxguide.tracing.concrete._settled import NO_RESULT, unsettled
from fxguide.tracing.concrete._tracer import (_MISSING, ConcreteTracer, _Interceptions, _plain, attributes_read,
                                              cells_read, class_functions, globals_read, lookup, model_classes,
                                              model_code, names_read, set_attribute, settings_read)
from fxguide.tracing.concrete.questions import _OFF

_UNKNOWN = object()


# -- The public entry points -------------------------------------------------------


def _bind(root: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> inspect.BoundArguments:
    fn = root.forward if isinstance(root, nn.Module) else root
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as error:
        raise TypeError(f"concrete_trace: cannot read the signature of {fn!r}: {error}") from None
    required = [p.name for p in signature.parameters.values() if p.default is inspect.Parameter.empty
                and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    if required and not args and not kwargs:
        raise TypeError(
            f"concrete_trace needs example inputs: {_name(root)}{signature} requires "
            f"{', '.join(required)}. Pass them as concrete_trace(root, (x, ...)) or kwargs={{...}}"
        )
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as error:
        raise TypeError(
            f"concrete_trace: the example inputs do not fit {_name(root)}{signature}: {error}"
        ) from None
    for name, value in bound.arguments.items():
        _check_example(name, value)
    return bound


def _name(root: Callable[..., Any]) -> str:
    if isinstance(root, nn.Module):
        return f"{type(root).__name__}.forward"
    return getattr(root, "__name__", type(root).__name__)


@dataclass
class _Plan:
    """How the example inputs become placeholders: names, values, and the function actually traced."""

    inputs: dict[str, Any]
    concrete_args: dict[str, Any]
    forward: Callable[..., Any] | None  # a stand-in with named parameters when the signature has *args/**kwargs
    given: dict[str, Any]  # each parameter of what is traced (the stand-in's, when there is one): its example value


def _through_call(root: Any) -> bool:
    """Whether calling ``root`` runs more than ``type(root).forward``: hooks, a ``__call__`` override, a forward of its own."""
    if not isinstance(root, nn.Module) or "root-call" in _OFF:
        return False
    hooks = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
    return (type(root).__call__ is not nn.Module.__call__ or "forward" in vars(root)
            or any(getattr(root, name, None) for name in hooks)
            or any(getattr(_module_globals, f"_global{name}", None) for name in hooks))


def _call_root(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
    """Call ``module`` as eager mode does: its hooks, its ``__call__``, its own ``forward``."""
    return type(module).__call__(module, *args, **kwargs)


def _plan(root: Any, bound: inspect.BoundArguments, receive: Callable[..., None] | None = None) -> _Plan:
    signature = bound.signature
    params = signature.parameters
    # A stand-in forward with only the given inputs as parameters is traced when the
    # signature has *args/**kwargs, an input is a container (FX flattens it), or calling
    # the model runs more than its class's forward (hooks, a __call__ override).
    through_call = _through_call(root)
    variadic = through_call or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values()) or any(
        isinstance(v, (list, tuple, dict)) for v in bound.arguments.values())
    leading: set[str] = set()  # the inputs a call can pass by position (no parameter skipped before them)
    for name, p in params.items():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or name not in bound.arguments:
            break
        leading.add(name)
    given: dict[str, Any] = {}  # placeholder name -> example value (or container of them)
    if not variadic:
        given = dict(bound.arguments)
        # Parameters left at their default are constants of the trace (FX's concrete_args).
        concrete = {name: p.default for name, p in params.items()
                    if name not in bound.arguments and p.default is not inspect.Parameter.empty}
        for name, default in concrete.items():
            if not _plain(default):
                raise UnguardableError(
                    f"concrete_trace: the parameter {name} is left at its default, {_SHORT.repr(default)} (a "
                    f"{type(default).__name__}); a graph keeps a default only as a plain value (a number, string, "
                    f"dtype, None, or a tuple of them), not as a tensor or a container forward could change. Pass "
                    f"it in the call (concrete_trace(model, args, {{{name!r}: ...}})), or default it to None and "
                    f"make the value inside forward")
        forward = None
    else:
        concrete, positional, keyword = {}, [], []
        varargs = any(p.kind == p.VAR_POSITIONAL and bound.arguments.get(name) for name, p in params.items())
        for name, value in bound.arguments.items():
            kind = params[name].kind
            if kind == inspect.Parameter.VAR_POSITIONAL:
                for i, item in enumerate(value):
                    given[f"{name}_{i}"] = item
                    positional.append(f"{name}_{i}")
            elif kind == inspect.Parameter.VAR_KEYWORD:
                for key, item in value.items():
                    if not key.isidentifier() or key in params:
                        raise TypeError(f"concrete_trace: the keyword input {key!r} cannot be a parameter name "
                                        f"of the traced graph; pass it under another name")
                    given[key] = item
                    keyword.append(f"{key}={key}")
            else:
                given[name] = value
                if kind == inspect.Parameter.POSITIONAL_ONLY or (varargs and kind == inspect.Parameter.POSITIONAL_OR_KEYWORD) \
                        or (through_call and name in leading):
                    positional.append(name)
                else:
                    keyword.append(f"{name}={name}")
        names = list(given)
        is_module = isinstance(root, nn.Module)
        original = (_call_root if through_call else type(root).forward) if is_module else root
        head = ["self"] if is_module else []
        # The containers forward receives are the tracer's own (holding proxies): the state diff compares them.
        containers = [name for name, value in given.items() if isinstance(value, (list, tuple, dict))]
        source = (f"def forward({', '.join(head + names)}):\n"
                  + (f"    _receive({', '.join(f'{n}={n}' for n in containers)})\n" if containers and receive else "")
                  + f"    return _original({', '.join(head + positional + keyword)})\n")
        namespace: dict[str, Any] = {"_original": original, "_receive": receive}
        exec(compile(source, f"<concrete_trace of {_name(root)}>", "exec"), namespace)  # noqa: S102
        forward = namespace["forward"]
    inputs: dict[str, Any] = {}
    for name, value in given.items():
        if isinstance(value, (list, tuple, dict)):  # one placeholder per tensor, FX's pytree inputs
            concrete[name] = pytree.tree_map(lambda _: fx.PH, value)
            inputs.update({f"{name}_{i}": leaf for i, leaf in enumerate(pytree.tree_leaves(value), start=1)})
        else:
            inputs[name] = value
    return _Plan(inputs, concrete, forward, given)


class _PlannedTracer(ConcreteTracer):
    """A :class:`ConcreteTracer` that traces the plan's stand-in ``forward`` when there is one."""

    def __init__(self, plan: _Plan) -> None:
        super().__init__(plan.inputs)
        self.plan = plan

    def create_args_for_root(self, root_fn: Any, is_module: bool, concrete_args: Any = None) -> Any:
        return super().create_args_for_root(self.plan.forward or root_fn, is_module, concrete_args)


def _with_absent(kept: dict[str, dict[str, Any]], modules: list[tuple[str, nn.Module]], reads: ObjectReads,
                 written: set[str]) -> dict[str, dict[str, Any]]:
    """``kept`` (:func:`attributes_read`) and, for each module, the names its code looked up and did not find,
    kept as absent (``hasattr(self, "extra")``): adding one later changes what forward does."""
    for path, module in modules:
        for name in sorted(reads.absent(module) - written):
            if lookup(module, name) is _MISSING:
                kept.setdefault(path, {}).setdefault(name, _MISSING)
    return kept


def _traced_result(graph: fx.Graph, tracer: fx.Tracer) -> Any:
    """What the traced call returned: the example's values of the graph's outputs (``NO_RESULT`` where the tracer
    did not keep one)."""
    values = getattr(tracer, "values", {})
    output = next((node for node in reversed(graph.nodes) if node.op == "output"), None)
    if output is None:
        return NO_RESULT
    missing = []
    result = fx.node.map_arg(output.args[0], lambda n: values[n] if n in values else missing.append(n))
    return NO_RESULT if missing else result


def _trace(root: nn.Module | Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> fx.GraphModule:
    bound = _bind(root, args, kwargs)
    before = Before(root, dict(bound.arguments))  # everything forward could change: the state diff
    plan = _plan(root, bound, before.receive)
    tracer = _PlannedTracer(plan)
    name = type(root).__name__ if isinstance(root, nn.Module) else getattr(root, "__name__", "function")
    accepted = False
    try:
        if hooks_registered() and "modes" not in _OFF:
            raise UnguardableError(
                f"concrete_trace cannot trace while torch's global module hooks are registered "
                f"({', '.join(hooks_registered())}): the traced graph is a module too, so they would run on its "
                f"calls as well as on the modules inside it. Remove them while tracing (handle.remove()); a graph "
                f"refuses to run while they are registered")
        with _Interceptions(tracer, root), ObjectReads(root) as objects_read:
            graph = tracer.trace(root, concrete_args=plan.concrete_args or None)
        changes = before.changes(tracer.effects)
        if "python-state" not in _OFF:
            changes = unsettled(root, before, changes, tracer.effects, tracer.peek, bound.args, bound.kwargs,
                                _traced_result(graph, tracer))
            if changes:
                raise refusal(changes)
        gm = fx.GraphModule(tracer.root, graph, name if name.isidentifier() else "function")
        accepted = True
    finally:  # the traced model, the caller's inputs and torch's settings are left as they were
        before.restore(inputs="example-inputs" not in _OFF, generators=not accepted)
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is _pending_guard:
            decision = tracer.decisions[node.args[1]] if len(node.args) == 2 and isinstance(node.args[1], int) \
                else None
            if node in tracer.raising:
                decision, op, target = tracer.raising[node]
                guard: Guard = RaisesGuard(decision, op, target)
                node.args, node.kwargs = node.args[0], node.args[1]
            else:
                assert decision is not None
                guard = Guard(decision)
                node.args = (node.args[0],)
            gm.add_submodule(decision.guard_name, guard)
            node.op, node.target = "call_module", decision.guard_name
    code = getattr(root.forward if isinstance(root, nn.Module) else root, "__code__", None)
    where = (code.co_filename, code.co_firstlineno) if code else ("<unknown>", 0)
    install_input_guard(gm, bound.signature, dict(bound.arguments), where, plan.inputs, plan.given)
    if "modes" not in _OFF:  # the training flags and hooks of what the graph inlined, checked on every call
        reads = "reads" not in _OFF
        members = class_functions(model_classes(root))
        code = model_code(root, getattr(tracer, "user_code", {}), members) if reads else {}
        written = {node.args[1] for node in gm.graph.nodes if node.target is set_attribute and len(node.args) > 1}
        held_globals = globals_read(code)
        # a module a global holds (``x * HOLD.scale``, ``ENCODER(x)``): its attributes are read as the model's,
        # and it is named by the global (a traced function's graph holds it as ``self._module_0``)
        held_modules = [(name, kept.value) for _, name, kept in held_globals
                        if isinstance(kept, Same) and isinstance(kept.value, nn.Module)]
        paths = {id(m): "self" + (f".{n}" if n else "") for n, m in tracer.root.named_modules()}
        paths.update({id(m): name + (f".{n}" if n else "") for name, module in held_modules
                      for n, m in module.named_modules()})
        inlined = [(paths.get(key, type(m).__name__), m) for key, m in tracer.inlined.items()]
        # what the model's code reads of any module: a leaf's too (``self.lin.in_features``, ``self.lin.weight``)
        seen = set(tracer.inlined)
        every = inlined + [(paths[id(m)], m) for m in [*tracer.root.modules(), *(m for _, held in held_modules
                                                                                 for m in held.modules())]
                           if id(m) in paths and id(m) not in seen and not seen.add(id(m))]
        state = StateGuard(root.training if isinstance(root, nn.Module) else None, inlined, where,
                           held_globals, getattr(tracer, "environ_reads", {}) if reads else {},
                           _with_absent(attributes_read(every, code, written, {path for path, _ in inlined},
                                                        objects_read.names()), every, objects_read, written),
                           cells_read(root, code, members) if reads else [],
                           every[len(inlined):], settings_read(code) if reads else [],
                           getattr(tracer, "values_read", []) if reads else [],
                           names_read(code) | frozenset(objects_read.names()) if reads else frozenset())
        state.train(gm.training)
        install_check(gm, "guard_state", state)
        insert_check(gm, "guard_state", ())
    gm.graph.lint()
    gm.recompile()  # the checks of a call are in the graph now
    gm._tracer_cls = None  # unpickling re-traces the code with a plain Tracer (ours needs the example inputs)
    _TRACED_FROM[gm] = root
    return gm


#: The model or function each concretely traced graph was traced from (GuardedPaths checks it).
_TRACED_FROM: weakref.WeakKeyDictionary[fx.GraphModule, Any] = weakref.WeakKeyDictionary()


def _same_root(a: Any, b: Any) -> bool:
    return a is b or (isinstance(a, types.MethodType) and a == b)


def _as_args(args: Any) -> tuple[Any, ...]:
    if isinstance(args, torch.Tensor):
        return (args,)
    if isinstance(args, (tuple, list)):
        return tuple(args)
    raise TypeError(
        f"concrete_trace: args must be a tuple of example inputs (or a single tensor), got {type(args).__name__}"
    )


def concrete_trace(
    root: nn.Module | Callable[..., Any],
    args: Sequence[Any] | torch.Tensor = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    on_mismatch: Literal["raise", "retrace"] = "raise",
    max_paths: int = 8,
) -> fx.GraphModule | GuardedPaths:
    """Trace ``root`` by running it on example inputs; guard every decision it makes.

    ``root`` is an ``nn.Module`` or a plain function; ``args`` and ``kwargs``
    are example inputs for it (tensors or bool/int/float, alone or in lists,
    tuples and dicts), bound to its parameters as in a call, ``*args`` and
    ``**kwargs`` included. Parameters not given keep their default as a
    constant. Tracing leaves ``root`` exactly as it was; code the tracer can
    neither answer with a guard nor replay raises :class:`UnguardableError`.

    With ``on_mismatch="raise"`` (the default) the result is a
    ``GraphModule`` of the example's path, with one ``guard_N`` submodule per
    decision; calling it with an input that decides differently raises
    :class:`GuardError`. With ``on_mismatch="retrace"`` the result is a
    :class:`GuardedPaths` module that traces again for such an input and keeps
    up to ``max_paths`` graphs.

    >>> def head(x):
    ...     n = int(x.shape[-1]) // 2
    ...     return x[..., :n] * x[..., n:]
    >>> gm = concrete_trace(head, (torch.arange(4.0),))
    >>> gm(torch.arange(4.0))
    tensor([0., 3.])
    >>> gm(torch.arange(6.0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fxguide.tracing.concrete.GuardError: guard_0: the int at <doctest fxguide.tracing.concrete.concrete_trace[0]>:2 (`n = int(x.shape[-1]) // 2`) was 4 when traced and is 6 ...
    >>> paths = concrete_trace(head, (torch.arange(4.0),), on_mismatch="retrace")
    >>> paths(torch.arange(6.0))
    tensor([ 0.,  4., 10.])
    >>> len(paths.paths)
    2
    """
    if isinstance(root, type):
        raise TypeError(f"concrete_trace: root is the class {root.__name__}, not a model; pass an instance, "
                        f"e.g. concrete_trace({root.__name__}(), (x,))")
    if not (isinstance(root, nn.Module) or callable(root)):
        raise TypeError(f"concrete_trace: root must be an nn.Module or a function, got {type(root).__name__}")
    if isinstance(root, fx.GraphModule) and any(isinstance(m, Guard) for m in root.modules()):
        raise TypeError("concrete_trace: root is already a concretely traced GraphModule; trace the original")
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(f"concrete_trace: kwargs must be a dict of example inputs, got {type(kwargs).__name__}")
    if on_mismatch not in ("raise", "retrace"):
        raise ValueError(f'concrete_trace: on_mismatch must be "raise" or "retrace", got {on_mismatch!r}')
    if not isinstance(max_paths, int) or isinstance(max_paths, bool) or max_paths < 1:
        raise ValueError(f"concrete_trace: max_paths must be a positive int, got {max_paths!r}")
    args_, kwargs_ = _as_args(args), dict(kwargs or {})
    gm = _trace(root, args_, kwargs_)
    if on_mismatch == "raise":
        return gm
    return GuardedPaths(root, gm, max_paths=max_paths)


class GuardedPaths(nn.Module):
    """One guarded graph per path taken so far; traces a new one when no guard agrees.

    Calling it tries each graph in the order they were traced; a graph whose
    guard fails raises :class:`GuardError` at that guard, so only the work
    before it is repeated, and an input that work updated in place is put back
    first (its values are copied before each attempt). When no graph
    fits, ``root`` is traced again on the call's inputs, up to ``max_paths``
    graphs. Build it with ``concrete_trace(..., on_mismatch="retrace")``.
    """

    def __init__(self, root: nn.Module | Callable[..., Any], first: fx.GraphModule, *, max_paths: int = 8) -> None:
        super().__init__()
        if not isinstance(first, fx.GraphModule):
            raise TypeError(f"GuardedPaths: first must be a GraphModule from concrete_trace, got {type(first).__name__}")
        if isinstance(max_paths, bool) or not isinstance(max_paths, int) or max_paths < 1:
            raise ValueError(f"GuardedPaths: max_paths must be a positive int, got {max_paths!r}")
        traced_from = _TRACED_FROM.get(first, _UNKNOWN)
        if traced_from is _UNKNOWN or not _same_root(traced_from, root):
            raise TypeError(
                "GuardedPaths: first must be the graph concrete_trace traced from root" + (
                    f" (it was traced from {_name(traced_from)}, not {_name(root)})" if traced_from is not _UNKNOWN
                    else " (this GraphModule is not one concrete_trace made, or a copy of one)")
                + '; build both with concrete_trace(root, args, on_mismatch="retrace")')
        self._root = (root,)  # a tuple: the original is not registered as a submodule twice
        self.paths = nn.ModuleList([first])
        self.max_paths = max_paths

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        errors: list[GuardError] = []
        for gm in self.paths:
            # A graph runs up to the guard that refuses the input: an in-place update of an input before it
            # (``x.add_(1)``) would stay done, and the next graph would start from the updated input.
            kept = _keep_tensors((args, kwargs))
            try:
                return gm(*args, **kwargs)
            except GuardError as error:
                _put_back(kept)
                errors.append(error)
        if len(self.paths) >= self.max_paths:
            last = errors[-1]
            raise GuardError(last.decision, last.new, advice=(
                f"All {len(self.paths)} traced paths refuse this input and max_paths={self.max_paths} "
                f"is reached: pass a larger max_paths to concrete_trace, or trace this input on its own."
            ))
        gm = _trace(self._root[0], tuple(args), dict(kwargs))
        self.paths.append(gm)
        return gm(*args, **kwargs)

    def decisions(self) -> list[list[Decision]]:
        """The decisions of each traced path, in the order the paths were traced."""
        return [decisions(gm) for gm in self.paths]


def _keep_tensors(inputs: Any) -> list[tuple[torch.Tensor, int, torch.Tensor]]:
    """Each tensor in ``inputs`` (nested in lists, tuples, dicts), its version counter and a copy of its values."""
    leaves = [t for t in torch.utils._pytree.tree_leaves(inputs) if isinstance(t, torch.Tensor)]
    return [(t, t._version, t.detach().clone()) for t in leaves]


def _put_back(kept: list[tuple[torch.Tensor, int, torch.Tensor]]) -> None:
    """Write back the values of every kept tensor that was updated in place since it was kept."""
    with torch.no_grad():
        for tensor, version, values in kept:
            if tensor._version != version:
                tensor.copy_(values)


def decisions(traced: fx.GraphModule | GuardedPaths) -> list[Decision]:
    """The decisions a concretely traced graph was specialized on, in program order.

    For a :class:`GuardedPaths`, the decisions of all its paths, path after path.

    >>> gm = concrete_trace(lambda x: x if x.sum() > 0 else -x, (torch.ones(2),))
    >>> [(d.kind, d.value) for d in decisions(gm)]
    [('branch', True)]
    """
    if isinstance(traced, GuardedPaths):
        return [d for path in traced.decisions() for d in path]
    if not isinstance(traced, fx.GraphModule):
        raise TypeError(f"decisions: expected a GraphModule from concrete_trace, got {type(traced).__name__}")
    return [traced.get_submodule(node.target).decision for node in traced.graph.nodes
            if node.op == "call_module" and isinstance(traced.get_submodule(node.target), Guard)]


def show_decisions(traced: fx.GraphModule | GuardedPaths) -> None:
    """Print one line per decision: guard node, kind, ``file:line``, source, traced value.

    A :class:`GuardedPaths` prints each path under a ``path N:`` heading.
    """
    if isinstance(traced, GuardedPaths):
        for number, path in enumerate(traced.decisions()):
            print(f"path {number}:")
            for decision in path:
                print(f"  {decision}")
            if not path:
                print("  (no decisions)")
        return
    found = decisions(traced)
    for decision in found:
        print(decision)
    if not found:
        print("(no decisions)")
