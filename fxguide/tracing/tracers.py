"""Tracer subclasses the guide builds on: leaf control, module paths, node tags.

``torch.fx.Tracer`` is a class with hooks. Subclassing it changes *what* ends up
in the graph (which modules stay opaque, which functions are recorded as calls)
and *what each node knows* (its ``meta``). Three tracers live here:

- :class:`LeafTracer` keeps modules of chosen types opaque and records chosen
  functions as calls, without writing a subclass each time;
- :class:`ModulePathTracer` writes into every node the path of the module whose
  ``forward`` created it, and remembers which node each module call returned;
- :class:`TaggingTracer` labels nodes by the part of the model they came from.

:func:`trace` runs any of them and wraps the result in a ``GraphModule``.
"""

from __future__ import annotations

import difflib
import inspect
import math
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch.fx as fx
from torch import nn

from fxguide._checks import collection

__all__ = ["LeafTracer", "ModulePathTracer", "TaggingTracer", "trace"]


def trace(
    root: nn.Module | Callable[..., Any],
    tracer: fx.Tracer | None = None,
    concrete_args: dict[str, Any] | None = None,
) -> fx.GraphModule:
    """Trace ``root`` with ``tracer`` (a plain ``fx.Tracer`` by default) into a ``GraphModule``.

    ``fx.symbolic_trace`` does exactly this with a fresh ``fx.Tracer``; taking
    the tracer as an argument is what lets a custom one take its place.

    >>> gm = trace(nn.Sequential(nn.Linear(2, 2), nn.ReLU()), LeafTracer())
    >>> [n.op for n in gm.graph.nodes]
    ['placeholder', 'call_module', 'call_module', 'output']
    """
    if isinstance(root, type):
        raise TypeError(f"trace: root is the class {root.__name__}, not a model; pass an instance, "
                        f"e.g. trace({root.__name__}(), tracer)")
    if not (isinstance(root, nn.Module) or callable(root)):
        raise TypeError(f"trace: root must be an nn.Module or a function, got {type(root).__name__}")
    if not isinstance(root, (nn.Module, types.FunctionType)):
        raise TypeError(f"trace: root must be an nn.Module or a Python function (def or lambda); got "
                        f"{type(root).__name__}, whose code the tracer cannot run with Proxies; wrap it: "
                        f"trace(lambda x: f(x))")
    if tracer is None:
        tracer = fx.Tracer()
    if not isinstance(tracer, fx.Tracer):
        raise TypeError(f"trace: tracer must be a torch.fx.Tracer instance, got {type(tracer).__name__}")
    if concrete_args is not None and not isinstance(concrete_args, dict):
        raise TypeError(
            f"trace: concrete_args must be a dict of argument name -> value, got {type(concrete_args).__name__}"
        )
    if concrete_args:
        _check_concrete_args(root, concrete_args)
    graph = tracer.trace(root, concrete_args=concrete_args)
    name = type(root).__name__ if isinstance(root, nn.Module) else getattr(root, "__name__", "function")
    owner = root if isinstance(root, nn.Module) else tracer.root
    return fx.GraphModule(owner, graph, name)


def _check_concrete_args(root: Any, concrete_args: dict[str, Any]) -> None:
    fn = root.forward if isinstance(root, nn.Module) else root
    names = list(inspect.signature(fn).parameters)
    unknown = [name for name in concrete_args if name not in names]
    if unknown:
        raise ValueError(f"trace: concrete_args names {unknown}, which {_label(root)} does not take; "
                         f"its parameters are {names}")


def _label(root: Any) -> str:
    return f"{type(root).__name__}.forward" if isinstance(root, nn.Module) else getattr(root, "__name__", "root")


def _leaf_types(leaf_types: Iterable[type]) -> tuple[type, ...]:
    found = collection("LeafTracer", "leaf_types", leaf_types, "[MyBlock]")
    for t in found:
        if not (isinstance(t, type) and issubclass(t, nn.Module)):
            raise TypeError(f"LeafTracer: every leaf type must be an nn.Module subclass, got {t!r}")
    return found


class LeafTracer(fx.Tracer):
    """A tracer that keeps modules of ``leaf_types`` (and named paths) opaque.

    ``fx.Tracer`` treats the standard ``torch.nn`` layers as leaves and traces
    through everything else. Making your own module a leaf is the main escape
    hatch for code that cannot be traced: the module becomes one
    ``call_module`` node and its ``forward`` never meets a ``Proxy``.

    ``autowrap_functions`` are recorded as calls wherever the traced code
    refers to them by a global name; ``autowrap_modules`` (``math`` by
    default, like ``fx.Tracer``) does the same for every function of a module.

    >>> class Block(nn.Module):
    ...     def forward(self, x):
    ...         return x.relu() + 1
    >>> model = nn.Sequential(Block(), nn.Linear(2, 2))
    >>> [n.op for n in trace(model).graph.nodes]
    ['placeholder', 'call_method', 'call_function', 'call_module', 'output']
    >>> [n.op for n in trace(model, LeafTracer(leaf_types=[Block])).graph.nodes]
    ['placeholder', 'call_module', 'call_module', 'output']
    """

    def __init__(
        self,
        leaf_types: Iterable[type] = (),
        leaf_paths: Iterable[str] = (),
        autowrap_functions: Iterable[Callable[..., Any]] = (),
        autowrap_modules: Iterable[types.ModuleType] = (math,),
        param_shapes_constant: bool = False,
    ) -> None:
        self.leaf_types = _leaf_types(leaf_types)
        self.leaf_paths = frozenset(collection("LeafTracer", "leaf_paths", leaf_paths, '["encoder"]'))
        for path in self.leaf_paths:
            if not isinstance(path, str):
                raise TypeError(f"LeafTracer: leaf_paths must be module paths (str), got {path!r}")
        functions = collection("LeafTracer", "autowrap_functions", autowrap_functions, "[my_helper]")
        for f in functions:
            if not callable(f):
                raise TypeError(f"LeafTracer: autowrap_functions must be callables, got {f!r}")
        modules = collection("LeafTracer", "autowrap_modules", autowrap_modules, "[math]")
        for m in modules:
            if not isinstance(m, types.ModuleType):
                raise TypeError(f"LeafTracer: autowrap_modules must be Python modules (e.g. math), got {m!r}")
        if not isinstance(param_shapes_constant, bool):
            raise TypeError(f"LeafTracer: param_shapes_constant must be True or False, got {param_shapes_constant!r}")
        super().__init__(
            autowrap_modules=modules,
            autowrap_functions=functions,
            param_shapes_constant=param_shapes_constant,
        )

    def trace(self, root: Any, concrete_args: dict[str, Any] | None = None) -> fx.Graph:
        if self.leaf_paths:
            known = {name for name, _ in root.named_modules()} if isinstance(root, nn.Module) else set()
            unknown = sorted(self.leaf_paths - known)
            if unknown:
                close = {p: difflib.get_close_matches(p, known, n=1) for p in unknown}
                hints = "; ".join(f"{p!r} (did you mean {c[0]!r}?)" if c else repr(p) for p, c in close.items())
                raise ValueError(f"LeafTracer: leaf_paths names modules the traced model does not have: {hints}. "
                                 f"Paths are those of model.named_modules(), e.g. 'encoder.0'")
        return super().trace(root, concrete_args)

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        if isinstance(m, self.leaf_types) or module_qualified_name in self.leaf_paths:
            return True
        return super().is_leaf_module(m, module_qualified_name)


class ModulePathTracer(LeafTracer):
    """A tracer that records, for every node, the path of the module that created it.

    The path is stored in ``node.meta["module_path"]`` (``""`` for the root
    module's own code). Every module call is remembered in
    ``module_outputs``: module path -> the node holding what that call
    returned, whether the module was a leaf or traced through. A module called
    twice gets ``path`` and then ``path@1``, the way torch names calls in
    ``nn_module_stack``.

    >>> model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    >>> tracer = ModulePathTracer()
    >>> gm = trace(model, tracer)
    >>> {n.name: n.meta["module_path"] for n in gm.graph.nodes}
    {'input_1': '', '_0': '0', '_1': '1', 'output': ''}
    >>> {path: node.name for path, node in tracer.module_outputs.items()}
    {'0': '_0', '1': '_1'}
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        try:
            inspect.signature(LeafTracer.__init__).bind(self, *args, **kwargs)
        except TypeError as error:
            names = ", ".join(list(inspect.signature(LeafTracer.__init__).parameters)[1:])
            raise TypeError(f"{type(self).__name__}: {error}; it takes the arguments of LeafTracer: {names}") from None
        super().__init__(*args, **kwargs)
        self.current_path = ""
        self.module_outputs: dict[str, fx.Node] = {}

    def trace(self, root: Any, concrete_args: dict[str, Any] | None = None) -> fx.Graph:
        self.current_path = ""
        self.module_outputs = {}
        return super().trace(root, concrete_args)

    def call_module(self, m: nn.Module, forward: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        path = self.path_of_module(m)
        outer, self.current_path = self.current_path, path
        try:
            result = super().call_module(m, forward, args, kwargs)
        finally:
            self.current_path = outer
        key, calls = path, 0
        while key in self.module_outputs:
            calls += 1
            key = f"{path}@{calls}"
        if isinstance(result, fx.Proxy):
            self.module_outputs[key] = result.node
        return result

    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict, *rest: Any, **more: Any) -> fx.Node:
        node = super().create_node(kind, target, args, kwargs, *rest, **more)
        node.meta["module_path"] = self.current_path
        return node


class TaggingTracer(ModulePathTracer):
    """A tracer that labels each node with a tag chosen by module-path prefix.

    ``tags`` maps a module path prefix to a tag: ``{"features": "backbone"}``
    tags every node created inside ``model.features`` (and its children). The
    longest matching prefix wins; nodes matching none get ``default``. Tags
    end up in ``node.meta["tag"]``, where a later pass (quantize only the
    backbone, profile per stage) can read them.

    >>> model = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    >>> gm = trace(model, TaggingTracer({"0": "stem", "2": "head"}, default="body"))
    >>> [(n.name, n.meta["tag"]) for n in gm.graph.nodes]
    [('input_1', 'body'), ('_0', 'stem'), ('_1', 'body'), ('_2', 'head'), ('output', 'body')]
    """

    def __init__(self, tags: Mapping[str, str], default: str | None = None, **kwargs: Any) -> None:
        if not isinstance(tags, Mapping):
            raise TypeError(f"TaggingTracer: tags must map module path prefixes to tags, got {type(tags).__name__}")
        for prefix, tag in tags.items():
            if not isinstance(prefix, str) or not isinstance(tag, str):
                raise TypeError(f"TaggingTracer: tags must map str to str, got {prefix!r}: {tag!r}")
        if default is not None and not isinstance(default, str):
            raise TypeError(f"TaggingTracer: default must be a str tag or None, got {default!r}")
        super().__init__(**kwargs)
        self.tags = dict(tags)
        self.default = default

    def tag_for(self, path: str) -> str | None:
        """The tag of the longest prefix of ``path`` (in whole path components), or the default."""
        best = None
        for prefix in self.tags:
            if path == prefix or path.startswith(prefix + ".") or prefix == "":
                if best is None or len(prefix) > len(best):
                    best = prefix
        return self.default if best is None else self.tags[best]

    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict, *rest: Any, **more: Any) -> fx.Node:
        node = super().create_node(kind, target, args, kwargs, *rest, **more)
        node.meta["tag"] = self.tag_for(node.meta["module_path"])
        return node

