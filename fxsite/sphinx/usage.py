"""Which ``torch.fx`` names each executed example uses: the reference's "used in" links.

The reference page lists, under every ``torch.fx`` entry, the pages and gallery
scripts whose code uses it. This module finds those uses by reading the code
(Python's ``ast`` module), with a small type inference so that ``gm.recompile()`` is
credited to ``GraphModule.recompile`` but ``items.append(x)`` is not credited to
``Node.append``:

- names reached through imports: ``fx.symbolic_trace``, ``torch.fx.Graph``,
  ``from torch.fx import Interpreter``, and a name's home module when ``torch.fx``
  re-exports it (``fx.node.map_arg`` is ``fx.map_arg``);
- classes and functions imported from ``fxguide`` or ``torch``, looked up in the
  installed code: ``SwapOps(gm).run(x)`` uses ``Interpreter.run`` because ``SwapOps``
  derives from ``Interpreter``, ``ModulePathTracer.call_module`` is ``Tracer.call_module``
  overridden, and a function's return annotation tells what its result is;
- values whose class is known: results of ``symbolic_trace`` and
  ``GraphModule(...)`` (a ``GraphModule``), ``gm.graph`` and ``Graph()`` (a
  ``Graph``), nodes of a graph (loops over ``graph.nodes``, ``graph.call_function(...)``,
  …), instances and subclasses of ``Tracer``, ``Interpreter`` and ``Transformer``,
  parameters annotated with one of those classes;
- methods overridden in a subclass (``def run_node`` in an ``Interpreter`` subclass),
  and ``super().call_module(...)`` inside one.

A method called on a value of unknown class is credited only when exactly one of
the documented classes has it and its name is not a common one (``append``,
``args``, ``run``, …). Missing a use is possible; crediting a wrong one is not meant to be.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import typing
from collections.abc import Iterable

import torch.fx as fx

#: The classes whose public methods the reference documents, in the order shown.
CLASSES: tuple[type, ...] = (fx.Graph, fx.Node, fx.GraphModule, fx.Tracer, fx.Interpreter, fx.Transformer)

# Attribute names too common in ordinary Python to credit without knowing the receiver.
_COMMON = frozenset({
    "append", "prepend", "args", "kwargs", "next", "prev", "run", "output", "code", "graph", "nodes",
    "trace", "getattr", "transform", "placeholder", "get_attr", "call_function", "call_method",
    "call_module", "lint", "create_node", "create_arg", "boxed_run", "format_node",
    # annotated attributes of Node and Tracer with everyday names
    "name", "op", "target", "type", "meta", "users", "scope", "iter", "keys", "proxy",
})
# Where an imported name is looked up in the installed code to learn its class.
_LIVE_PACKAGES = ("fxguide", "torch")


def _defining_classes(cls: type) -> list[type]:
    """``cls`` and its bases that belong to ``torch.fx``, not counting another documented class."""
    own = [cls]
    for base in cls.__mro__[1:]:
        if base in CLASSES or not base.__module__.startswith("torch.fx"):
            continue
        own.append(base)
    return own


def public_members(cls: type) -> list[str]:
    """The public methods, properties and annotated attributes of ``cls`` that the reference
    documents, in source order (a class's annotated attributes first, as its body declares them).

    Inherited members count when they come from a ``torch.fx`` helper base
    (``Tracer`` inherits ``create_proxy`` from ``TracerBase``), not from another
    documented class (``Transformer`` lists only what it adds to ``Interpreter``)
    nor from ``nn.Module``.

    >>> public_members(fx.GraphModule)[:3]
    ['graph', 'to_folder', 'add_submodule']
    >>> "record_stack_traces" in public_members(fx.Tracer)  # ``record_stack_traces: bool`` in TracerBase
    True
    """
    if cls not in CLASSES:
        raise ValueError(f"public_members: expected one of {[c.__name__ for c in CLASSES]}, got {cls!r}")
    names: list[str] = []
    for owner in _defining_classes(cls):
        for name in vars(owner).get("__annotations__", {}):
            if not name.startswith("_") and name not in names:
                names.append(name)
        for name, value in vars(owner).items():
            if name.startswith("_") or name in names:
                continue
            if inspect.isfunction(value) or isinstance(value, (property, staticmethod, classmethod)) or \
                    inspect.isfunction(getattr(value, "__wrapped__", None)):
                names.append(name)
    return names


def documented_names() -> list[str]:
    """Every name the reference documents: ``torch.fx.__all__`` plus the classes' public members.

    The usage coverage of the guide is how many of these :func:`uses_in_code` finds.

    >>> "torch.fx.Graph.print_tabular" in documented_names()
    True
    """
    names = [f"torch.fx.{name}" for name in fx.__all__]
    for cls in CLASSES:
        names += [f"torch.fx.{cls.__name__}.{member}" for member in public_members(cls)]
    return names


def canonical_names() -> dict[str, str]:
    """Each documented class member under the name of its class's defining module -> its documented name.

    The reference documents ``torch.fx.GraphModule.recompile``; tools that follow
    Python's objects (sphinx-codeautolink, autodoc's signatures) name it
    ``torch.fx.graph_module.GraphModule.recompile``.

    >>> canonical_names()["torch.fx.graph_module.GraphModule.recompile"]
    'torch.fx.GraphModule.recompile'
    """
    names = {}
    for cls in CLASSES:
        home = f"{cls.__module__}.{cls.__qualname__}"
        if home != f"torch.fx.{cls.__name__}":
            for member in public_members(cls):
                names[f"{home}.{member}"] = f"torch.fx.{cls.__name__}.{member}"
    return names


_MEMBERS = {cls.__name__: set(public_members(cls)) for cls in CLASSES}
_OWNERS: dict[str, list[str]] = {}
for _cls, _names in _MEMBERS.items():
    for _name in _names:
        _OWNERS.setdefault(_name, []).append(_cls)
# What calling a method returns, where the reference's classes are concerned.
_RETURNS = {
    ("Graph", name): "Node" for name in (
        "create_node", "placeholder", "get_attr", "call_module", "call_method", "call_function", "output",
        "node_copy", "output_node", "find_nodes",
    )
} | {("Tracer", "trace"): "Graph", ("Transformer", "transform"): "GraphModule", ("Graph", "graph_copy"): "Graph"}
_ATTRS = {("GraphModule", "graph"): "Graph", ("Graph", "nodes"): "Node*", ("Node", "next"): "Node",
          ("Node", "prev"): "Node", ("Node", "all_input_nodes"): "Node*", ("Graph", "find_nodes"): "Node*"}


@functools.lru_cache(maxsize=None)
def _live(dotted: str):
    """The object ``dotted`` names in the installed code (``fxguide.transforms.replace.SwapOps``), or None.

    Only names under :data:`_LIVE_PACKAGES` are imported: the pages' other imports
    (transformers, timm, ...) would cost seconds and hold none of torch.fx's classes.
    """
    if not dotted.startswith(tuple(f"{p}." for p in _LIVE_PACKAGES)):
        return None
    module, _, attr = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except Exception:  # noqa: BLE001 (a name the installed code lacks: nothing to learn from it)
        try:
            return importlib.import_module(dotted)
        except Exception:  # noqa: BLE001
            return None


@functools.lru_cache(maxsize=None)
def _canonical(dotted: str) -> str:
    """``dotted``, or the ``torch.fx.<name>`` that re-exports the same object.

    >>> _canonical("torch.fx.node.map_arg"), _canonical("torch.fx.passes.shape_prop.ShapeProp")
    ('torch.fx.map_arg', 'torch.fx.passes.shape_prop.ShapeProp')
    """
    last = dotted.rsplit(".", 1)[-1]
    if dotted.startswith("torch.fx.") and dotted.count(".") > 2 and last in fx.__all__:
        if _live(dotted) is getattr(fx, last):
            return f"torch.fx.{last}"
    return dotted


def _documented_class(obj) -> str | None:
    """The documented class ``obj`` is or derives from (``SwapOps`` -> ``"Interpreter"``), if any."""
    if inspect.isclass(obj):
        for base in obj.__mro__:
            if base in CLASSES:
                return base.__name__
    return None


def _returned_class(func) -> str | None:
    """The documented class a function's return annotation names (``-> fx.GraphModule``), if any."""
    if not callable(func) or inspect.isclass(func):
        return None
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # noqa: BLE001 (unresolvable annotations: nothing to learn)
        return None
    return _documented_class(hints.get("return"))


class _Uses(ast.NodeVisitor):
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}  # local name -> dotted torch name it stands for
        self.types: dict[str, str] = {}  # variable -> class name among CLASSES (or "Node*": an iterable of nodes)
        self.classes: dict[str, str] = {}  # user class -> the documented class it derives from
        self.returns: dict[str, str] = {}  # imported function -> the documented class it returns
        self.used: set[str] = set()
        self._self_class: list[str | None] = [None]

    # -- names ------------------------------------------------------------------
    def dotted(self, node: ast.AST) -> str | None:
        """The torch name an expression stands for (``fx.Graph`` -> ``torch.fx.Graph``), if any."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return _canonical(f"{base}.{node.attr}") if base else None
        return None

    def fx_name(self, node: ast.AST) -> str | None:
        name = self.dotted(node)
        if name and name.startswith("torch.fx.") and name.count(".") == 2:
            return name
        return None

    def class_of(self, node: ast.AST) -> str | None:
        """The documented class of the value ``node`` evaluates to, when it can be told."""
        if isinstance(node, ast.Name):
            if node.id == "self":
                return self._self_class[-1]
            return self.types.get(node.id)
        if isinstance(node, ast.Attribute):
            owner = self.class_of(node.value)
            return _ATTRS.get((owner, node.attr)) if owner else None
        if isinstance(node, ast.Call):
            func = node.func
            name = self.fx_name(func)
            if name == "torch.fx.symbolic_trace":
                return "GraphModule"
            if name and name.rsplit(".", 1)[1] in _MEMBERS:
                return name.rsplit(".", 1)[1]
            if isinstance(func, ast.Name) and func.id in self.classes:
                return self.classes[func.id]
            if isinstance(func, ast.Name) and func.id in self.returns:
                return self.returns[func.id]
            if isinstance(func, ast.Name) and func.id == "super" and not node.args:
                return self._self_class[-1]  # super().call_module(...) in a Tracer subclass
            if isinstance(func, ast.Name) and func.id in {"list", "reversed", "tuple"} and node.args:
                inner = self.class_of(node.args[0])
                return inner if inner == "Node*" else None
            if isinstance(func, ast.Attribute):
                owner = self.class_of(func.value)
                if owner:
                    return _RETURNS.get((owner, func.attr))
        return None

    def credit(self, cls: str, member: str) -> None:
        if member in _MEMBERS.get(cls, ()):
            self.used.add(f"torch.fx.{cls}.{member}")

    # -- statements ---------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                self.aliases[top] = top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if node.module and alias.name != "*":
                local, name = alias.asname or alias.name, _canonical(f"{node.module}.{alias.name}")
                self.aliases[local] = name
                if name.startswith("torch.fx."):
                    self.used.add(name)
                obj = _live(name)
                if _documented_class(obj):  # from fxguide.transforms.replace import SwapOps
                    self.classes[local] = _documented_class(obj)
                elif _returned_class(obj):  # from fxguide.tracing.tracers import trace
                    self.returns[local] = _returned_class(obj)

    def _bind(self, target: ast.AST, cls: str | None) -> None:
        if isinstance(target, ast.Name):
            if cls:
                self.types[target.id] = cls
            else:
                self.types.pop(target.id, None)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        cls = self.class_of(node.value)
        for target in node.targets:
            self._bind(target, cls)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        self._bind(node.target, self._annotation(node.annotation) or (self.class_of(node.value) if node.value else None))

    def _iterate(self, target: ast.AST, iterable: ast.AST) -> None:
        if self.class_of(iterable) == "Node*":
            self._bind(target, "Node")

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self._iterate(node.target, node.iter)
        for child in node.body + node.orelse:
            self.visit(child)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.visit(node.iter)
        self._iterate(node.target, node.iter)
        for condition in node.ifs:
            self.visit(condition)

    def _comprehension(self, node) -> None:
        for generator in node.generators:
            self.visit(generator)
        for field in ("elt", "key", "value"):
            if getattr(node, field, None) is not None:
                self.visit(getattr(node, field))

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def _annotation(self, node: ast.AST | None) -> str | None:
        if node is None:
            return None
        name = self.fx_name(node)
        if name and name.rsplit(".", 1)[1] in _MEMBERS:
            return name.rsplit(".", 1)[1]
        return None

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for decorator in node.decorator_list:  # @torch.fx.wrap
            self.visit(decorator)
        saved = dict(self.types)
        for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            self._bind(ast.Name(arg.arg), self._annotation(arg.annotation))
            if arg.annotation is not None:
                self.visit(arg.annotation)
        for child in node.body:
            self.visit(child)
        self.types = saved

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        base = None
        for expr in node.bases:
            self.visit(expr)
            name = self.fx_name(expr)
            if name and name.rsplit(".", 1)[1] in _MEMBERS:
                base = name.rsplit(".", 1)[1]
            elif isinstance(expr, ast.Name) and expr.id in self.classes:
                base = self.classes[expr.id]
        if base:
            self.classes[node.name] = base
            for child in node.body:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for cls in (base, "Interpreter") if base == "Transformer" else (base,):
                        self.credit(cls, child.name)  # an override uses the hook it overrides
        self._self_class.append(base)
        for child in node.body:
            self.visit(child)
        self._self_class.pop()

    # -- expressions ----------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        name = self.aliases.get(node.id)
        if name and name.startswith("torch.fx."):
            self.used.add(name)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = self.fx_name(node)
        if name:
            self.used.add(name)
            return
        dotted = self.dotted(node)
        if dotted and dotted.startswith("torch.fx."):  # deeper: torch.fx.passes.shape_prop.ShapeProp
            self.used.add(dotted)
        owner = self.class_of(node.value)
        if owner is None and isinstance(node.value, ast.Name) and node.value.id in self.classes:
            owner = self.classes[node.value.id]  # ModulePathTracer.call_module: the class itself
        if owner in _MEMBERS:
            if owner == "Transformer" and node.attr not in _MEMBERS["Transformer"]:
                owner = "Interpreter"
            self.credit(owner, node.attr)
        elif owner is None and node.attr not in _COMMON and len(_OWNERS.get(node.attr, [])) == 1:
            self.credit(_OWNERS[node.attr][0], node.attr)
        self.visit(node.value)


def uses_in_code(blocks: Iterable[str]) -> set[str]:
    """The ``torch.fx`` names used by a sequence of code blocks run in order.

    Names of the reference (:func:`documented_names`) and names deeper in
    ``torch.fx`` that a page imports or spells out (``torch.fx.passes.shape_prop.ShapeProp``),
    which the reference page may add to its list.

    Blocks that are not valid Python (for example IPython magics) are skipped.

    >>> sorted(uses_in_code([
    ...     "import torch.fx as fx",
    ...     "gm = fx.symbolic_trace(lambda x: x + 1)",
    ...     "for node in gm.graph.nodes:\\n    print(node.op)\\nresult = []\\nresult.append(1)",
    ...     "gm.recompile()",
    ... ]))
    ['torch.fx.Graph.nodes', 'torch.fx.GraphModule.graph', 'torch.fx.GraphModule.recompile', 'torch.fx.Node.op',
     'torch.fx.symbolic_trace']
    """
    if isinstance(blocks, str):
        raise TypeError("uses_in_code: pass a list of code blocks, not one string (wrap it: [code])")
    visitor = _Uses()
    documented = set(documented_names())
    for block in blocks:
        try:
            tree = ast.parse(block)
        except SyntaxError:
            continue
        visitor.visit(tree)
    members = {name for name in documented if name.count(".") == 3}  # torch.fx.<Class>.<member>
    deeper = {name for name in visitor.used if name.count(".") >= 3 and name not in members
              and name.rsplit(".", 1)[0] not in {n.rsplit(".", 1)[0] for n in members}}
    return (visitor.used & documented) | deeper
