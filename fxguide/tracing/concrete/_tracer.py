"""The tracer: every node evaluated on the example as it is created, every answer recorded and guarded."""

from __future__ import annotations

import builtins
import dis
import functools
import inspect
import logging
import operator
import os
import re
import sys
import threading
import types
import warnings
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, MutableMapping
from typing import Any

import torch
import torch.backends.cuda
import torch.backends.mha
import torch.distributed
import torch.fx as fx
from torch import nn
from torch.fx.node import map_arg
from torch.fx.proxy import Attribute
from torch.utils import _pytree as pytree

from fxguide._state import same_value
from fxguide._state.contents import is_torchs, kind_of
from fxguide._state.reads import Read, Same
from fxguide.tracing.concrete import _replay
from fxguide.tracing.concrete._effects import Effects
from fxguide.tracing.concrete._frames import _TORCH_DIR, _inside_try, _is_user_frame, _user_location
from fxguide.tracing.concrete._objects import ObjectTemplate, Step, Unrebuildable, rebuild_object, template_of, \
    traced_paths
from fxguide.tracing.concrete._proxy import ConcreteAttribute, ConcreteProxy, _has_proxy
from fxguide.tracing.concrete._records import (_CONCRETE_TRACES, Decision, Kind, UnguardableError, _check_example,
                                               _holds_tensor, _pending_guard)
from fxguide.tracing.concrete.questions import _OFF

_IS_INFERENCE_MODE = torch.is_inference_mode_enabled  # bound now: tracing patches torch's for the model's code
_LOOP_LINE = re.compile(r"\bfor\b.+\bin\b")

#: Functions and tensor methods that need real sizes: called with traced sizes
#: (``torch.ones(n, d)``, ``real_tensor.expand(n, d)``), they get the example's
#: sizes, each a guarded ``int`` decision.
_FACTORIES = ("ones", "zeros", "empty", "full", "arange", "eye", "linspace", "logspace", "rand", "randn", "randint",
              "randperm", "scalar_tensor", "empty_strided", "tril_indices", "triu_indices", "tensor", "as_tensor",
              "ones_like", "zeros_like", "full_like")
_CALLS = ("call_function", "call_method", "call_module")
_TENSOR_METHODS = ("expand", "view", "reshape", "repeat", "new_zeros", "new_ones", "new_full", "new_empty",
                   "new_tensor", "narrow", "__getitem__", "masked_fill", "index_select", "to")



#: How code reads a tensor's value as Python: on a real tensor the model holds (a global's, one in a list
#: attribute), the graph keeps the answer, and ``guard_state`` checks the tensor was not changed since.
_VALUE_READS = ("item", "tolist", "__bool__", "__float__", "__int__", "__index__")
_LARGEST_READ = 10_000  # elements: a larger tensor read whole (tolist) is not kept (checking it would cost more)

#: Containers FX's own ``create_arg`` writes as they are (namedtuples too, by their ``_fields``).
_FX_CONTAINERS = (tuple, list, dict, type(None))
_LEAF = getattr(pytree, "treespec_leaf", pytree.LeafSpec)  # LeafSpec() is deprecated from torch 2.14
_BUILTIN_GETATTR = builtins.getattr


def _names_used(function: Any) -> set[str]:
    """The global and attribute names a function's code uses, nested functions included."""
    code = getattr(function, "__code__", None)
    names: set[str] = set()
    stack = [code] if code is not None else []
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return names


def forwards_of(root: Any) -> list[Any]:
    """The traced function, or the ``forward`` methods of every class of the model's modules."""
    return [root] if not isinstance(root, nn.Module) else [
        vars(cls)["forward"] for module in root.modules() for cls in type(module).__mro__
        if "forward" in vars(cls)]


_TRACE_CODE = fx.Tracer.trace.__code__

_PLAIN = (bool, int, float, complex, str, bytes, type(None), torch.dtype, torch.device)


def _plain(value: Any) -> bool:
    """A value a graph holds as a constant: a number, string, dtype, device, or a tuple of them."""
    return isinstance(value, _PLAIN) or (type(value) is tuple and all(isinstance(v, _PLAIN) for v in value))


def class_functions(classes: list[type]) -> dict[str, list[types.FunctionType]]:
    """The methods and property getters the model's classes define (torch's own left out), by name."""
    found: dict[str, list[types.FunctionType]] = {}
    for klass in {k for cls in set(classes) for k in cls.__mro__}:
        if is_torchs(klass.__module__):
            continue
        for name, attribute in vars(klass).items():
            for function in _callees(attribute.fget if isinstance(attribute, property) else attribute, 0):
                found.setdefault(name, []).append(function)
    return found


def _callees(value: Any, depth: int = 1) -> Iterator[types.FunctionType]:
    """The Python functions calling ``value`` runs: a function, a static or class method's, a bound method's,
    a wrapper's (``functools.lru_cache``, ``functools.wraps``), and (``depth`` levels down) those a dict, list
    or tuple holds (``HELPERS["scale"]()``)."""
    if isinstance(value, types.ModuleType):  # a module's __getattr__ may import: never asked
        return
    for _ in range(8):  # a wrapper of a wrapper...
        if isinstance(value, (staticmethod, classmethod, types.MethodType)):
            value = value.__func__
        elif not isinstance(value, types.FunctionType) and callable(getattr(value, "__wrapped__", None)):
            value = value.__wrapped__
        else:
            break
    if isinstance(value, types.FunctionType):
        yield value
        inner = getattr(value, "__wrapped__", None)  # a functools.wraps decorator's wrapper: the function too
        if isinstance(inner, types.FunctionType):
            yield inner
    elif depth > 0 and type(value) in (dict, list, tuple):
        for item in (value.values() if isinstance(value, dict) else value):
            yield from _callees(item, depth - 1)


def _is_theirs(namespace: Mapping[str, Any]) -> bool:
    """Torch's own code and state (its settings are guarded as settings, its functions traced as operations),
    and Python's standard library (``copy``, ``re``: what the model's code calls there is not the model's)."""
    name = str(namespace.get("__name__", ""))
    return is_torchs(name) or name.partition(".")[0] in sys.stdlib_module_names


def _modules_named(code: types.CodeType, namespace: Mapping[str, Any]) -> list[types.ModuleType]:
    """The Python modules (torch's left out) that ``code`` names as globals: ``helpers.SCALE``, ``cfg.size()``."""
    return [value for name in code.co_names if isinstance(value := namespace.get(name), types.ModuleType)
            and not _is_theirs(vars(value))]


#: How many calls deep :func:`model_code` follows the functions the model's code names.
_DEPTH = 6


def model_classes(root: Any) -> list[type]:
    """The classes whose methods the model's code may call: its modules', and those of the plain objects its
    modules hold (``self.helper.scale()``)."""
    if not isinstance(root, nn.Module):
        return []
    modules = list(root.modules())
    return [type(m) for m in modules] + [type(v) for m in modules for v in vars(m).values()
                                         if kind_of(v) == "object"]


def model_code(root: Any, running: Mapping[types.CodeType, dict[str, Any]],
               members: Mapping[str, list[types.FunctionType]] | None = None) -> dict[types.CodeType, dict[str, Any]]:
    """The code the model runs, each with the globals it reads from (torch's own left out).

    That is the ``forward`` methods (or the traced function), the functions that were running when a node
    was recorded (``running``), their nested functions, and, six calls deep, the functions of their
    module (or of a module they name, ``helpers.scale(x)``) and the methods and property getters of the
    model's classes that they name (``members``: :func:`class_functions` of them, when already found), and
    the functions the model's modules hold (``self.scale_fn = lambda: SCALE``).
    """
    if members is None:
        members = class_functions(model_classes(root))
    pending = [(f.__code__, f.__globals__, 0) for f in forwards_of(root) if isinstance(f, types.FunctionType)]
    pending += [(code, namespace, 0) for code, namespace in running.items()]
    if isinstance(root, nn.Module):
        pending += [(f.__code__, f.__globals__, 1) for m in root.modules() for v in vars(m).values()
                    if not isinstance(v, (nn.Module, torch.Tensor)) for f in _callees(v)]
    found: dict[types.CodeType, dict[str, Any]] = {}
    while pending:
        code, namespace, depth = pending.pop()
        if code in found or _is_theirs(namespace):
            continue
        found[code] = namespace
        pending.extend((c, namespace, depth) for c in code.co_consts if isinstance(c, types.CodeType))
        if depth < _DEPTH:
            spaces = [namespace, *(vars(m) for m in _modules_named(code, namespace))]
            for name in code.co_names:
                called = [f for space in spaces for f in _callees(space.get(name))]
                pending.extend((f.__code__, f.__globals__, depth + 1) for f in [*called, *members.get(name, ())])
    return found


def names_read(code: Mapping[types.CodeType, Any]) -> frozenset[str]:
    """The names ``code`` uses for globals and attributes, and the strings it could name one with
    (``getattr(self.config, "use_cache", False)``)."""
    return frozenset().union(*map(_names_in, code))


@functools.lru_cache(maxsize=4096)
def _names_in(inner: types.CodeType) -> frozenset[str]:
    """:func:`names_read` of one code object (immutable, so kept once it is read)."""
    names = set(inner.co_names)
    constants = list(inner.co_consts)
    while constants:  # strings, and those in tuples of them: for k in ("a", "b"): getattr(cfg, k)
        constant = constants.pop()
        if isinstance(constant, str) and constant.isidentifier():
            names.add(constant)
        elif isinstance(constant, (tuple, frozenset)):
            constants.extend(constant)
    return frozenset(names)


def _kept(value: Any, names: frozenset[str], held: tuple[type, ...] = (types.FunctionType, type),
          identities: bool = False) -> Any:
    """What the graph is checked against for a value the model's code read: the value itself when it is plain,
    a deep :class:`~fxguide._state.reads.Read` of a container or plain object (a ``functools.partial`` or a
    bound method too: their function and what they hold), the object itself
    (:class:`~fxguide._state.reads.Same`) for one of the ``held`` kinds the graph calls or holds, ``_MISSING``
    for anything else. ``identities``: a module's attribute, where any callable, and a tensor or module inside
    a container, is held as that very object (see :func:`~fxguide._state.reads.freeze`)."""
    if _plain(value):
        return value
    if isinstance(value, type) and not is_torchs(value.__module__) and (read := Read.of(value, names, identities)):
        return read  # a class of the program's (``Config.SCALE``): itself, and the class attributes the code names
    if isinstance(value, held):
        return Same(value)
    if isinstance(value, (types.ModuleType, types.FunctionType, type, nn.Module, torch.Tensor)):
        return _MISSING
    read = Read.of(value, names, identities)
    if read is not None:
        return read
    return Same(value) if identities and callable(value) else _MISSING


#: What a global (or a variable of an enclosing function) may hold that the graph holds itself, checked by
#: identity: a function or class it calls, a tensor (a constant of the graph; one inside a container a global
#: holds too: ``x * WEIGHTS["w"]``), a module it calls.
_HELD_IN_GLOBALS = (types.FunctionType, types.BuiltinFunctionType, type, torch.Tensor, nn.Module)


def globals_read(code: Mapping[types.CodeType, dict[str, Any]]) -> list[tuple[str, str, Any]]:
    """The module globals that ``code`` (:func:`model_code`) reads, as (module, name, what is kept: see
    :func:`_kept`), those of a module it names (``helpers.SCALE``) too: the graph holds the values they had,
    and the tensors, functions and classes they hold (:data:`_HELD_IN_GLOBALS`) as those very objects.
    A namespace that is not an imported module's is left out."""
    names = names_read(code)
    found: dict[tuple[str, str], Any] = {}
    for inner, namespace in code.items():
        spaces = [namespace, *(vars(m) for m in _modules_named(inner, namespace))]
        for space in spaces:
            module = space.get("__name__")
            if not isinstance(module, str) or vars(sys.modules.get(module, types)) is not space:
                continue
            for name in inner.co_names:
                if (module, name) in found or name.startswith("__"):
                    continue
                kept = _kept(space.get(name, _MISSING), names, _HELD_IN_GLOBALS, identities=True)
                if kept is not _MISSING:
                    found[(module, name)] = kept
            if space is namespace:  # a global the code looks up that does not exist (yet): kept as absent
                for name in _absent_globals(inner, space):
                    found.setdefault((module, name), _MISSING)
    return [(module, name, value) for (module, name), value in found.items()]


def _absent_globals(code: types.CodeType, space: Mapping[str, Any]) -> list[str]:
    """The names ``code`` loads as globals that neither its module nor the builtins define (``try: s = SCALE``
    ``except NameError: s = 1.0``): defining one later changes what the code does."""
    found = _LOADED_GLOBALS.get(code)
    if found is None:
        found = _LOADED_GLOBALS[code] = frozenset(
            instruction.argval for instruction in dis.get_instructions(code)
            if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME") and isinstance(instruction.argval, str))
    builtins = space.get("__builtins__", {})
    builtins = vars(builtins) if isinstance(builtins, types.ModuleType) else builtins
    return [name for name in sorted(found) if name not in space and name not in builtins]


_LOADED_GLOBALS: dict[types.CodeType, frozenset[str]] = {}


class _Missing:
    """What the graph holds for a name its code looked up and did not find (``hasattr(self, "extra")``,
    ``getattr(self, "scale", 1.0)``, a global behind ``except NameError``): the check is that it is still absent.
    One object, kept through copies and pickles (a check compares it by identity)."""

    def __repr__(self) -> str:
        return "absent"

    def __reduce__(self) -> str:
        return "_MISSING"

    def __copy__(self) -> _Missing:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Missing:
        return self


_MISSING: Any = _Missing()


def torch_setting(module: str, path: str) -> Any:
    """The value of torch's setting ``path`` (``"enabled"``, ``"matmul.allow_tf32"``) of the torch module named
    ``module`` (``"torch.backends.cudnn"``), read as the model's code reads it; ``_MISSING`` where it cannot be."""
    value: Any = sys.modules.get(module, _MISSING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # some are deprecated (allow_tf32): the value is what matters here
        for part in path.split("."):
            try:
                value = getattr(value, part)
            except Exception:  # noqa: BLE001 - a setting this build of torch cannot read
                return _MISSING
    return value


def _defines(module: types.ModuleType, name: str) -> bool:
    """Whether ``module`` holds ``name`` itself or through its class (torch's setting modules are instances of
    module classes with properties: ``torch.backends.cudnn.enabled``), read without running code."""
    return name in vars(module) or any(name in vars(klass) for klass in type(module).__mro__[:-2])


def settings_read(code: Mapping[types.CodeType, Any]) -> list[tuple[str, str, Any]]:
    """torch's settings that ``code`` (:func:`model_code`) reads as attributes, with their values:
    ``torch.backends.cudnn.enabled``, ``cudnn.benchmark`` after ``from torch.backends import cudnn``,
    ``torch.backends.cuda.matmul.allow_tf32``, ``torch.utils.deterministic.fill_uninitialized_memory``.
    (Those torch asks through functions, ``torch.get_num_threads()``, are graph nodes: :data:`_GLOBALS`.)

    Read as (torch module, attribute path, value): the plain values of a torch module (or of a torch object
    it holds, one level down) whose own name and attribute's name the code both uses. The graph holds what
    they were when traced, as for any global."""
    names = names_read(code)
    found = []
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("torch.") or module_name.rpartition(".")[2] not in names \
                or not isinstance(module, types.ModuleType):
            continue
        for name in sorted(names):
            if name.startswith("__") or not _defines(module, name):
                continue
            value = torch_setting(module_name, name)
            if _plain(value):
                found.append((module_name, name, value))
            elif value is not _MISSING and not isinstance(value, (types.ModuleType, type)) and not callable(value) \
                    and is_torchs(type(value).__module__):  # cuda.matmul, cudnn.conv: objects holding settings
                for inner in sorted(names):  # asked, not listed: some answer through __getattr__ (cuda.matmul)
                    if not inner.startswith("_") and _plain(setting := torch_setting(module_name, f"{name}.{inner}")):
                        found.append((module_name, f"{name}.{inner}", setting))
    return found


def _class_names(cls: type) -> frozenset[str]:
    """The names the model's own classes in ``cls``'s MRO define (torch's left out; read afresh at each trace:
    a class attribute added since the last one counts)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if is_torchs(klass.__module__):
            break
        names.update(vars(klass))
    return frozenset(names)


def _functions_held(root: Any, namespaces: Iterable[Mapping[str, Any]],
                    members: Mapping[str, list[types.FunctionType]] | None = None) -> Iterator[types.FunctionType]:
    """The functions the model can reach without running code: the traced one, the ``forward`` methods and
    methods of the model's classes, the module globals of its code, and what its modules' attributes hold
    (a function, or a list, tuple or dict of them)."""
    yield from (f for f in forwards_of(root) if isinstance(f, types.FunctionType))
    if isinstance(root, nn.Module):
        if members is None:
            members = class_functions(model_classes(root))
        yield from (f for fs in members.values() for f in fs)
    values: list[Any] = [v for space in {id(n): n for n in namespaces}.values() for v in space.values()]
    if isinstance(root, nn.Module):
        values += [v for m in root.modules() for v in vars(m).values()]
    for value in values:
        held = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else (value,)
        yield from (f for f in held if isinstance(f, types.FunctionType))


def cells_read(root: Any, code: Mapping[types.CodeType, Any],
               members: Mapping[str, list[types.FunctionType]] | None = None) -> list[tuple[Any, int, Any]]:
    """The variables of enclosing functions (``def make(k): def f(x): return x * k[0]``) that the model's
    code (:func:`model_code`) reads, as (function, index in its closure, what :func:`_kept` keeps), and the
    default arguments of those functions and of the ``forward`` methods (index -1). The
    functions are those the model holds (:func:`_functions_held`) whose code is the model's; a closure
    reached only through another object (a ``functools.partial``, an instance's bound method) is not seen.
    ``members``: :func:`class_functions` of the model's classes, when already found."""
    names = names_read(code)
    found = []
    running = {inner for inner in code if inner.co_freevars}
    functions = {id(f): f for f in _functions_held(root, code.values(), members) if f.__code__ in running}
    forwards = {id(f): f for f in forwards_of(root) if isinstance(f, types.FunctionType)}
    for function in {**functions, **forwards}.values():
        if function.__defaults__ or function.__kwdefaults__:  # what a call that leaves them out gets
            kept = _kept((function.__defaults__, function.__kwdefaults__), names)
            if kept is not _MISSING:
                found.append((function, -1, kept))
    for function in functions.values():
        for index, cell in enumerate(getattr(function, "__closure__", None) or ()):
            try:
                value = cell.cell_contents
            except ValueError:  # not yet bound
                continue
            kept = _kept(value, names, _HELD_IN_GLOBALS, identities=True)
            if kept is not _MISSING:
                found.append((function, index, kept))
    return found


#: What a module's attribute may hold that the graph holds itself, checked by identity: a submodule (a leaf the
#: graph calls, or a ModuleList it iterates), a tensor attribute (a constant of the graph), a parameter or
#: buffer, a function or class.
_HELD_ON_MODULES = (nn.Module, torch.Tensor, types.FunctionType, types.BuiltinFunctionType, type)


def lookup(module: nn.Module, name: str) -> Any:
    """``module.name`` as Python finds it without running code: the instance's attribute (a submodule, parameter
    or buffer too), else its class's (a class attribute of the model's own classes, a method, a property's
    getter or a static method's function; torch's left out), else ``_MISSING``."""
    own = vars(module)
    if name in own:
        return own[name]
    for registry in (module._modules, module._parameters, module._buffers):
        if name in registry:
            return registry[name]
    for klass in type(module).__mro__:
        if is_torchs(klass.__module__):
            break
        if name in vars(klass):
            value = vars(klass)[name]
            if isinstance(value, (staticmethod, classmethod)):
                return value.__func__  # the function the graph inlined: rebinding it changes what eager runs
            return value.fget if isinstance(value, property) else value
    return _MISSING


def _training_read_of(code: Mapping[types.CodeType, Any]) -> set[str]:
    """The attributes whose training flag ``code`` reads (``self.drop.training``: ``drop``), from its bytecode;
    ``"*"`` when it reads one through anything else (``self.layers[0].training``, ``m.training`` of an alias
    or of a loop over ``self.modules()``), which could be any module's."""
    found: set[str] = set()
    for inner in code:
        before: Any = None
        for instruction in dis.get_instructions(inner):
            if instruction.opname in ("LOAD_ATTR", "LOAD_METHOD") and instruction.argval == "training":
                if isinstance(before, str):
                    found.add(before)
                elif before is not _SELF:
                    found.add("*")
            if instruction.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                before = instruction.argval
            elif instruction.opname == "LOAD_FAST" and instruction.argval == "self":
                before = _SELF  # the module's own flag: watched where its code is inlined
            else:
                before = None
    return found


_SELF = object()
#: What nn.Module keeps on each instance for itself (its registries and hooks), never a value forward reads.
_MODULE_STATE = frozenset(vars(nn.Module())) - {"training"}


def attributes_read(modules: list[tuple[str, nn.Module]], code: Mapping[types.CodeType, Any],
                    written: set[str], flags_watched: Collection[str] = (),
                    read_names: Collection[str] = ()) -> dict[str, dict[str, Any]]:
    """The Python attributes of ``modules`` (their own or their classes') that ``code`` (:func:`model_code`)
    names, by module path, as :func:`_kept` keeps them: the graph holds the values they had. ``written``: names
    a node of the graph sets on every call (``self.grid = (n, 2)``), which change with the input and are not
    read; ``flags_watched``: the paths of the modules whose training flag is checked anyway. A leaf's flag is
    kept only where the code reads it through its name (``self.drop.training``): freezing a BatchNorm
    (``bn.eval()``) is followed by the graph, which calls the leaf. ``read_names``: the attributes read on the
    model's plain objects while tracing (:class:`~._objects_read.ObjectReads`), a name computed at run time
    included."""
    names = names_read(code) | frozenset(read_names)
    flag_owners = _training_read_of(code)
    found: dict[str, dict[str, Any]] = {}
    for path, module in modules:
        kept = {}
        own = vars(module).keys() | module._modules.keys() | module._parameters.keys() | module._buffers.keys()
        # a module whose code the graph holds: its forward too (``model.forward = other`` on the instance)
        asked = names | {"forward"} if path in flags_watched else names
        for name in asked & (own | _class_names(type(module))):
            if name in written or name.startswith("__") or name in _MODULE_STATE or (name == "training" and (
                    path in flags_watched or ("*" not in flag_owners
                                              and path.rpartition(".")[2] not in flag_owners))):
                continue
            value = lookup(module, name)
            held = _MISSING if value is _MISSING else _kept(value, names, _HELD_ON_MODULES, identities=True)
            if held is not _MISSING:
                kept[name] = held
        if kept:
            found[path] = kept
    return found


#: The name under which the environment's variable names are kept, when forward read them all.
EVERY_VARIABLE = "\0the names of the environment's variables"


def every_variable() -> str:
    """The names of ``os.environ``'s variables, as one string (kept and compared like a variable's value)."""
    return "\n".join(sorted(os.environ))


class _Environ(MutableMapping):  # type: ignore[type-arg]
    """``os.environ`` while tracing: what the model's code reads is recorded (the graph holds it)."""

    def __init__(self, environ: Any, reads: dict[str, str | None], thread: int) -> None:
        self._environ, self._reads, self._thread = environ, reads, thread

    def _record(self, key: Any) -> None:
        if isinstance(key, str) and threading.get_ident() == self._thread and _is_user_frame(sys._getframe(2)):
            self._reads.setdefault(key, self._environ.get(key))

    def __getitem__(self, key: Any) -> Any:
        self._record(key)
        return self._environ[key]

    def get(self, key: Any, default: Any = None) -> Any:
        self._record(key)
        return self._environ.get(key, default)

    def __contains__(self, key: Any) -> bool:
        self._record(key)
        return key in self._environ

    def __setitem__(self, key: Any, value: Any) -> None:
        self._environ[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._environ[key]

    def _record_all(self) -> None:
        # the whole environment read (``os.environ.items()``, ``dict(os.environ)``, ``.copy()``): every variable
        if threading.get_ident() == self._thread and _is_user_frame(sys._getframe(2)):
            for key in list(self._environ):
                self._reads.setdefault(key, self._environ.get(key))
            self._reads.setdefault(EVERY_VARIABLE, every_variable())  # and which there are: one set later counts

    def __iter__(self) -> Iterator[Any]:
        self._record_all()
        return iter(self._environ)

    def __len__(self) -> int:
        self._record_all()
        return len(self._environ)

    def items(self) -> Any:
        self._record_all()
        return self._environ.items()

    def keys(self) -> Any:
        self._record_all()
        return self._environ.keys()

    def values(self) -> Any:
        self._record_all()
        return self._environ.values()

    def copy(self) -> dict[str, str]:
        self._record_all()
        return self._environ.copy()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._environ, name)


def swap_grad_mode(mode: bool) -> bool:
    """Set grad mode to ``mode`` and return the mode it replaced (a traced ``torch.no_grad()`` region's start)."""
    before = torch.is_grad_enabled()
    torch._C._set_grad_enabled(mode)
    return before


class AttributeOwner:
    """The module an attribute set by forward belongs to, as a constant of the graph (see :func:`set_attribute`)."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module

    def __repr__(self) -> str:
        return f"AttributeOwner({type(self.module).__name__})"


@fx.node.has_side_effect
def set_attribute(owner: AttributeOwner, name: str, value: Any) -> None:
    """Set an attribute of the model's module as forward did (``self.grid = (n, 2)``): a node, run on every call."""
    setattr(owner.module, name, value)


@fx.node.has_side_effect
def reseed(seed: int) -> None:
    """Seed torch's generators (a traced ``torch.manual_seed``; marked impure, so dead-code elimination keeps it)."""
    torch.manual_seed(seed)


def rebuild_container(children: list[Any], spec: pytree.TreeSpec) -> Any:
    """The container ``spec`` describes (one level), holding ``children``: a traced ModelOutput stays one."""
    return pytree.tree_unflatten(children, spec)

class ConcreteTracer(fx.Tracer):
    """A ``Tracer`` that evaluates every node on example inputs while recording it.

    ``inputs`` maps each placeholder name of the traced callable to its
    example value. Each created node is evaluated right away (in program
    order, so in-place operations behave as in eager mode) and its value kept
    in ``values``. When the traced code turns a proxy into a Python value
    (``to_bool``, ``iter``, ``len``, ``int``, ``index``, ``float``, ``str``,
    ``hash``, ``isinstance``), the tracer answers from that value, appends a
    :class:`Decision` to ``decisions`` and adds a guard node checking it.
    Buffers are traced as graph inputs (``proxy_buffer_attributes``), so a
    branch on a buffer is guarded too. Use :func:`concrete_trace` rather than
    this class.
    """

    def __init__(self, inputs: Mapping[str, Any]) -> None:
        super().__init__()
        if not isinstance(inputs, Mapping):
            raise TypeError(f"ConcreteTracer: inputs must map parameter names to values, got {type(inputs).__name__}")
        for name, value in inputs.items():
            _check_example(name, value, "ConcreteTracer")
        self.inputs = dict(inputs)
        self.values: dict[fx.Node, Any] = {}
        self.decisions: list[Decision] = []
        self.raising: dict[fx.Node, tuple[Decision, str, Any]] = {}
        self.proxy_buffer_attributes = True
        self._evaluating = 0
        self._decided: dict[tuple[fx.Node, str], Any] = {}
        self._autocast = _autocast_state()
        self._inference = _IS_INFERENCE_MODE()
        self.effects = Effects()
        self.inlined: dict[int, nn.Module] = {}  # the modules whose forward ran inside the graph (not as a node)
        self._originals: dict[Any, Any] = {}  # a function patched while tracing -> the function it wraps

    # Every proxy the base class creates is a ConcreteProxy.
    def proxy(self, node: fx.Node) -> fx.Proxy:
        return ConcreteProxy(node, self)

    _patched_getattr: Any = None

    def _note_user_code(self, frame: Any) -> None:
        """Remember the model's functions on the way to this node: the globals they name are checked later."""
        seen = self.__dict__.setdefault("user_code", {})
        for _ in range(64):
            if frame is None or frame.f_code is _TRACE_CODE:  # what called the tracer is not the model
                break
            if frame.f_code not in seen and _is_user_frame(frame):
                seen[frame.f_code] = frame.f_globals
            frame = frame.f_back

    def create_node(self, kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                    name: str | None = None, type_expr: Any | None = None) -> fx.Node:
        if target is self._patched_getattr and target is not None:  # x.shape: FX calls `getattr`, ours while tracing
            target = _BUILTIN_GETATTR
        if kind == "call_function":
            target = self._originals.get(target, target)
        self._note_user_code(sys._getframe(1))
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        if kind != "output" and target is not _pending_guard:
            if not self._evaluating:
                self._check_modes()
            outermost = not self._evaluating
            self._evaluating += 1
            try:
                self.values[node] = self._evaluate(node, outermost)
            except Exception as error:
                if outermost and kind in _CALLS:
                    self._guard_raise(node, type(error).__name__)
                raise
            finally:
                self._evaluating -= 1
            if outermost and kind in _CALLS and _inside_try():
                self._guard_raise(node, None)  # the graph must not let an exception take another path
        return node

    def _check_modes(self) -> None:
        """Refuse a mode the graph cannot record that forward entered (autocast, inference mode)."""
        if _autocast_state() != self._autocast:
            self._refuse("an autocast region (torch.autocast) opened inside the traced code",
                         "a graph does not record autocast, so its ops would run in the caller's precision; "
                         "trace without the autocast region, or call the traced graph inside torch.autocast",
                         "autocast")
        if _IS_INFERENCE_MODE() != self._inference:
            self._refuse("an inference_mode region (torch.inference_mode) opened inside the traced code",
                         "a graph does not record inference mode, so its results would be ordinary tensors that "
                         "autograd records; use torch.no_grad() inside forward (the graph records it), or call the "
                         "traced graph inside torch.inference_mode", "inference-mode")

    def _guard_raise(self, node: fx.Node, error: str | None) -> None:
        # If the code catches exceptions here, its path depends on whether this operation raises.
        if "raises" in _OFF:
            return
        target = self.root.get_submodule(str(node.target)) if node.op == "call_module" else node.target
        decision = self._decision("raises", error)
        self.raising[node] = (decision, node.op, target)
        node.op, node.target = "call_function", _pending_guard
        node.args, node.kwargs = (node.args, node.kwargs), {}

    def _evaluate(self, node: fx.Node, outermost: bool = False) -> Any:
        if node.op == "placeholder":
            name = str(node.target).lstrip("*")
            if name in self.inputs:
                return self.inputs[name]
            if node.args:  # a parameter with a default value
                return node.args[0]
            raise TypeError(f"concrete tracing: no example value for the input {name!r}")
        args = map_arg(node.args, self.values.__getitem__)
        kwargs = map_arg(node.kwargs, self.values.__getitem__)
        if node.op == "get_attr":
            value: Any = self.root
            for part in str(node.target).split("."):
                value = getattr(value, part)
            return value
        module = self.root.get_submodule(str(node.target)) if node.op == "call_module" else None
        # What the operation changes (a tensor in place, a random draw) the graph changes again on every call.
        versions = self.effects.before(node.op, node.target, args, kwargs) if outermost else []
        try:
            if node.op == "call_function":
                return node.target(*args, **kwargs)  # type: ignore[operator]
            if node.op == "call_method":
                return getattr(args[0], str(node.target))(*args[1:], **kwargs)
            if module is not None:
                return module(*args, **kwargs)
        finally:
            if outermost:
                self.effects.after(versions, module)
        raise RuntimeError(f"concrete tracing: cannot evaluate a node of kind {node.op!r}")

    def call_module(self, m: nn.Module, forward: Callable[..., Any], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        # While tracing, every module call and module attribute read comes
        # here, including those made while evaluating a node on real values:
        # those must just run the module (or read the attribute).
        if self._evaluating:
            return forward(*args, **kwargs)
        if m is not self.root and not self.is_leaf_module(m, self.path_of_module(m)):
            self.inlined.setdefault(id(m), m)  # its code is in the graph: its training flag and hooks are guarded
            if _backward_hooks(m):
                self._refuse(f"a backward hook on {self.path_of_module(m)} (register_full_backward_hook)",
                             _BACKWARD_ADVICE, "modes")
        return super().call_module(m, forward, args, kwargs)

    def path_of_module(self, mod: nn.Module) -> str:
        try:
            return super().path_of_module(mod)
        except NameError:
            # A module the traced function uses without owning it: install it
            # in the trace's root (a copy of the function's world, never the user's model).
            name = f"_module_{len(self._installed)}"
            self._installed.append(mod)
            self.root.add_module(name, mod)
            if self.submodule_paths is not None:
                self.submodule_paths[mod] = name
            return name

    _installed: list[nn.Module]
    _objects: list[Any]
    _rebuilt: dict[int, tuple[Any, list[tuple[tuple[Step, ...], fx.Node]], fx.Node]]
    _owners: dict[int, AttributeOwner]

    def trace(self, root: Any, concrete_args: dict[str, Any] | None = None) -> fx.Graph:
        self._installed, self._objects, self._rebuilt, self._owners = [], [], {}, {}
        self.effects = Effects()
        self.inlined = {id(root): root} if isinstance(root, nn.Module) else {}
        if isinstance(root, nn.Module) and _backward_hooks(root) and "modes" not in _OFF:
            raise UnguardableError(f"concrete_trace cannot guard a backward hook on the traced model "
                                   f"({type(root).__name__}): {_BACKWARD_ADVICE}.")
        return super().trace(root, concrete_args)

    def create_arg(self, a: Any) -> Any:
        node_def = pytree.SUPPORTED_NODES.get(type(a))
        if node_def is not None and type(a) not in _FX_CONTAINERS and not hasattr(a, "_fields"):
            # A container class registered with pytree (a Hugging Face ModelOutput, a registered dataclass):
            # FX would write it as a plain dict or tuple, so the graph rebuilds it from its children.
            children, context = node_def.flatten_fn(a)
            spec = pytree.TreeSpec(type(a), context, [_LEAF() for _ in children])
            return self.create_node("call_function", rebuild_container,
                                    (self.create_arg(list(children)), self.create_arg(spec)), {})
        try:
            return super().create_arg(a)
        except NotImplementedError:
            if not isinstance(a, ObjectTemplate) and "rebuilt-object" not in _OFF:
                traced = self._traced_in(a)
                if traced:  # an object holding traced values (a cache of tensors): rebuilt by the graph
                    held = [(path, value.node) for path, value in traced]
                    seen = self._rebuilt.get(id(a))
                    if seen is not None and seen[0] is a and seen[1] == held:
                        return seen[2]  # the same object again, unchanged: the same copy, as eager shares it
                    paths = [path for path, _ in traced]
                    node = self.create_node("call_function", rebuild_object,
                                            (self.create_arg(template_of(a, paths)),
                                             self.create_arg([value for _, value in traced])), {})
                    self._rebuilt[id(a)] = (a, held, node)
                    return node
            # A Python object the graph needs as an argument (a helper object a model built
            # from traced sizes): kept as a constant attribute, as FX does for tensors.
            name = f"_object_constant{len(self._objects)}"
            self._objects.append(a)
            object.__setattr__(self.root, name, a) if not isinstance(self.root, nn.Module) \
                else self.root.__dict__.__setitem__(name, a)
            return self.create_node("get_attr", name, (), {})

    def _traced_in(self, obj: Any) -> list[tuple[tuple[Step, ...], Any]]:
        """Where ``obj`` holds this trace's values; refuses an object whose copy could not hold them faithfully."""
        try:
            return traced_paths(obj, lambda v: isinstance(v, fx.Proxy) and v.tracer is self)
        except Unrebuildable as error:
            if "rebuilt-object" in _OFF:  # switched off by the property test's mutation check
                return []
            # No source line: an output is made after forward has returned; the path says where.
            raise UnguardableError(
                f"concrete_trace cannot rebuild a {type(obj).__name__} holding traced values: {error}. The graph "
                f"builds a fresh copy of such an object on every call; return (or pass on) the tensors themselves, "
                f"or a list, tuple or dict of them") from None

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        if self._evaluating:
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def value_of(self, proxy: fx.Proxy) -> Any:
        """The value ``proxy`` has for the example inputs."""
        return self.values[proxy.node]

    def peek(self, proxy: fx.Proxy) -> Any:
        """The value of ``proxy``, without recording an attribute access that was not used yet."""
        if isinstance(proxy, Attribute) and proxy._node is None:
            return getattr(self.peek(proxy.root), proxy.attr)
        return self.values[proxy.node]

    # -- decisions ---------------------------------------------------------------

    def _decision(self, kind: Kind, value: Any) -> Decision:
        filename, lineno, code = _user_location()
        if kind == "int" and _LOOP_LINE.search(code):
            kind = "loop"
        decision = Decision(len(self.decisions), kind, value, filename, lineno, code)
        self.decisions.append(decision)
        return decision

    def _record(self, kind: Kind, source: fx.Node, value: Any, guard: str) -> None:
        """Record a decision made by ``guard`` (a key of :data:`~fxguide.tracing.concrete.questions.GUARDS`)."""
        if guard in _OFF:  # switched off by the property test's mutation check
            return
        decision = self._decision(kind, value)
        fx.Tracer.create_node(self, "call_function", _pending_guard, (source, decision.index), {},
                              name=decision.guard_name)

    def _refuse(self, what: str, advice: str, guard: str) -> None:
        if guard in _OFF:  # switched off by the property test's mutation check: carry on unguarded
            return
        filename, lineno, code = _user_location()
        raise UnguardableError(f"concrete_trace cannot guard {what} at {os.path.basename(filename)}:{lineno} "
                               f"(`{code}`): {advice}.")

    def to_bool(self, obj: fx.Proxy) -> bool:
        value = bool(self.value_of(obj))
        self._record("branch", obj.node, value, "truth")
        return value

    def iter(self, obj: fx.Proxy) -> Iterator[fx.Proxy]:
        count = self.decide_len(obj)  # a "loop" when the line is a for loop, else an "int"
        return iter([obj[i] for i in range(count)])

    def decide_len(self, obj: fx.Proxy) -> int:
        """Answer ``len(obj)`` from the example and guard the answer."""
        length = self.create_proxy("call_function", len, (obj,), {})
        value = self.value_of(length)
        self._record("int", length.node, value, "len")
        return value

    def decide_int(self, obj: fx.Proxy, convert: Callable[[Any], int]) -> int:
        """Answer ``int(obj)`` (or ``operator.index(obj)``) from the example and guard it."""
        value = convert(self.value_of(obj))
        self._record("int", obj.node, value, "int")
        return value

    def decide_scalar(self, obj: fx.Proxy, use: str, guard: str) -> bool | int | float | str:
        """Answer with the Python scalar ``obj`` holds (for ``float``, ``str``, ``hash``...), guarded exactly."""
        value = self.value_of(obj)
        if use == "float() of" and (isinstance(value, (int, bool)) or (
                isinstance(value, torch.Tensor) and value.numel() == 1)):
            value = float(value)
        if isinstance(value, bool):
            self._record("branch", obj.node, value, guard)
        elif isinstance(value, int):
            self._record("int", obj.node, value, guard)
        elif isinstance(value, float):
            self._record("float", obj.node, value, guard)
        elif isinstance(value, (str, torch.dtype, torch.device)) or (
                isinstance(value, tuple) and all(type(v) in (int, bool, float) for v in value)):
            self._record("value", obj.node, value, guard)  # a string, a dtype, a torch.Size...
        else:
            self._refuse(f"{use} a traced {type(value).__name__}",
                         "the answer depends on every element (or on the object's identity); compute with "
                         "tensor operations instead, or convert a size with int() first", "whole-value")
        return value

    def decide_text(self, obj: fx.Proxy, fn: Callable[..., str], extra: tuple[Any, ...], use: str, guard: str) -> str:
        """``str``/``repr``/``format`` of ``obj``: of a one-element tensor, a graph node whose string is guarded."""
        value = self.value_of(obj)
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            text = self.create_proxy("call_function", fn, (obj, *extra), {})
            self._record("value", text.node, self.value_of(text), guard)
            return self.value_of(text)  # type: ignore[no-any-return]
        return fn(self.decide_scalar(obj, use, guard), *extra)

    def decide_object(self, obj: fx.Proxy) -> Any:
        """Answer with the Python object ``obj`` holds (no tensors inside), guarded by equality of its fields."""
        value = self.peek(obj)
        self._record("value", obj.node, value, "object")
        return value

    def decide_attribute(self, obj: fx.Proxy, name: str) -> Any:
        """Answer ``obj.dtype`` (``device``...) with the real object; guarded once per value and attribute."""
        node = obj.node
        if (node, name) not in self._decided:
            attribute = self.create_proxy("call_function", getattr, (obj, name), {})
            value = self.value_of(attribute)
            self._record("value", attribute.node, value, "attribute")
            self._decided[(node, name)] = value
        return self._decided[(node, name)]

    def decide_default_dtype(self, getter: Callable[[], Any] | None = None) -> None:
        """Guard ``torch.get_default_dtype()`` (or ``getter``, ``torch.get_default_device()``): a factory call
        made a constant in it (once per trace)."""
        getter = getter or _GET_DEFAULT_DTYPE
        if (None, getter) in self._decided or getattr(self, "graph", None) is None:
            return
        node = self.create_proxy("call_function", getter, (), {})
        self._record("value", node.node, self.value_of(node), "default-dtype")
        self._decided[(None, getter)] = True

    def replay_attribute(self, module: nn.Module, name: str, value: Any) -> None:
        """Record ``module.name = value`` (made without traced values) as a node: the graph sets it on every call."""
        owner = self._owners.setdefault(id(module), AttributeOwner(module))
        try:
            self.create_proxy("call_function", set_attribute, (owner, name, value), {})
        except (NotImplementedError, TypeError, RuntimeError):  # a value a graph cannot hold: the state diff refuses
            return
        self.effects.attributes[(id(module), name)] = (module, value)

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        # The root is traced through even when it is a torch.nn module (its hooks or __call__ are traced).
        return m is not self.root and super().is_leaf_module(m, module_qualified_name)

    def decide_has(self, obj: fx.Proxy, name: str, has: Callable[[Any, str], bool]) -> bool:
        """Answer ``hasattr(obj, name)`` for an attribute its type does not define: a node asks again on every
        call and its answer is guarded (once per value and name)."""
        node = obj.node
        if (node, "has " + name) not in self._decided:
            answer = self.create_proxy("call_function", has, (obj, name), {})
            value = bool(self.value_of(answer))
            self._record("branch", answer.node, value, "hasattr")
            self._decided[(node, "has " + name)] = value
        return self._decided[(node, "has " + name)]  # type: ignore[no-any-return]

    def decide_type(self, obj: fx.Proxy) -> type:
        """Answer ``isinstance``'s question with the example value's type; guarded once per value."""
        node = obj.node
        if (node, "__class__") not in self._decided:
            value = type(self.value_of(obj))
            self._record("type", node, value, "type")
            self._decided[(node, "__class__")] = value
        return self._decided[(node, "__class__")]


def _backward_hooks(module: nn.Module) -> bool:
    return bool(module._backward_hooks or module._backward_pre_hooks)


_BACKWARD_ADVICE = ("the graph holds the module's forward as operations, so autograd would never call the hook; "
                    "register it on a leaf module (a torch.nn layer the graph calls), or remove it while tracing")


def _autocast_state() -> tuple[bool, ...]:
    return tuple(torch.is_autocast_enabled(device) for device in ("cpu", "cuda"))


# -- What tracing must intercept ---------------------------------------------------

_INHERITED = object()


def eager_is_fx_tracing() -> bool:
    """``is_fx_tracing()`` as the model sees it when it runs for real: False while a concrete trace evaluates it."""
    return _ORIGINAL_IS_FX_TRACING() and not _CONCRETE_TRACES


_ORIGINAL_IS_FX_TRACING = fx._symbolic_trace.is_fx_tracing
_GET_DEFAULT_DTYPE = torch.get_default_dtype
_GET_DEFAULT_DEVICE = torch.get_default_device

#: Global settings and tracing predicates the model's code may ask: (owner, name, the function
#: the graph calls to ask again, or None for the same function).
_GLOBALS: tuple[tuple[Any, str, Any], ...] = (
    (torch, "is_grad_enabled", None),
    (torch._C, "is_grad_enabled", None),
    (torch, "is_inference_mode_enabled", None),
    (torch, "are_deterministic_algorithms_enabled", None),
    (torch, "is_autocast_enabled", None),
    (torch, "get_default_dtype", None),
    (torch, "get_num_threads", None),
    (torch, "get_num_interop_threads", None),
    (torch, "is_anomaly_enabled", None),
    (torch, "is_deterministic_algorithms_warn_only_enabled", None),
    (torch, "get_float32_matmul_precision", None),
    (torch.jit, "is_scripting", None),
    (torch.jit, "is_tracing", None),
    (torch.compiler, "is_compiling", None),
    (torch.compiler, "is_dynamo_compiling", None),
    (fx._symbolic_trace, "is_fx_tracing", eager_is_fx_tracing),
    *((owner, name, None) for owner, names in (
        (torch, ("get_autocast_dtype", "get_autocast_cpu_dtype", "get_autocast_gpu_dtype", "is_autocast_cpu_enabled",
                 "is_autocast_cache_enabled", "get_default_device", "get_deterministic_debug_mode", "initial_seed",
                 "is_anomaly_check_nan_enabled", "is_warn_always_enabled")),
        (torch.autograd, ("is_multithreading_enabled", "is_view_replay_enabled")),
        (torch.backends.cuda, ("flash_sdp_enabled", "math_sdp_enabled", "mem_efficient_sdp_enabled",
                               "cudnn_sdp_enabled")),
        (torch.backends.mha, ("get_fastpath_enabled",)),
        (torch.distributed, ("is_initialized", "get_rank", "get_world_size", "get_backend")),
    ) for name in names if callable(getattr(owner, name, None))),
)


#: Compile hints of ``torch._dynamo`` (patched when it is imported, as transformers imports it): given a traced
#: tensor they mark the example's tensor instead. They change no value, so the graph has no node for them.
_HINTS = ("mark_static_address", "mark_dynamic", "mark_static", "maybe_mark_dynamic")


class _Stream:
    """``sys.stdout`` (or ``sys.stderr``) while tracing: the model's writes become graph nodes, others pass."""

    def __init__(self, stream: Any, name: str, mine: Callable[[], bool], recorded: Callable[..., None]) -> None:
        self._stream, self._name, self._mine, self._recorded = stream, name, mine, recorded

    def write(self, text: Any) -> Any:
        if self._mine():
            return self._recorded(_replay.write, (self._name, text), {})
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Interceptions:
    """What tracing patches while it runs, and puts back afterwards.

    - plain tensor attributes of modules become buffers, so reading them is traced and guarded;
    - ``nn.Module.__setattr__`` refuses to store a traced value (or a changed
      Python value) on a module, turns ``self.buf = traced`` into an
      in-place ``copy_`` the graph replays, and records a value made without
      traced values (``self.grid = (n, 2)``) as a node that sets it again
      (:func:`set_attribute`; the state diff checks a second call agrees);
    - factory functions and tensor methods given traced sizes get the example's sizes, guarded;
    - ``isinstance``, ``callable``, ``torch.is_tensor`` and ``torch.overrides.is_tensor_like`` answer for
      the example value (a guarded type), ``id()``, ``dir()`` and ``vars()`` of a traced value are refused, and ``type`` in the
      modules that define the model's ``forward`` methods answers the example value's type (guarded);
    - torch's global settings and tracing predicates (:data:`_GLOBALS`) asked by the model's code are
      answered as in eager mode and re-asked by the graph on every call;
    - ``torch.nn.functional``'s Python functions given traced sizes but no traced tensor
      (``F.interpolate(constant, size=x.shape[-2:])``) get the example's sizes, guarded, as the factories do;
    - compile hints (:data:`_HINTS`, ``torch._dynamo.mark_static_address(traced)``) mark the example's tensor
      and add nothing to the graph: they change no value.

    Each replacement answers for the model's own code only (:func:`_is_user_frame`); torch keeps
    seeing proxies.
    """

    def __init__(self, tracer: ConcreteTracer, root: Any) -> None:
        self.tracer, self.root = tracer, root
        self.patched: list[tuple[Any, str, Any]] = []
        self.injected: list[tuple[dict[str, Any], str]] = []  # `type` put in the model's module globals
        self.rebound: list[tuple[dict[str, Any], str, Any]] = []  # names imported from patched owners, re-pointed
        self.converted: set[tuple[int, str]] = set()  # plain tensor attributes made buffers for the trace
        self.converted_attributes: list[tuple[nn.Module, str]] = []

    def __enter__(self) -> _Interceptions:
        try:
            return self._enter()
        except BaseException:  # what was patched before the failure is put back
            self.__exit__(None, None, None)
            raise

    def _enter(self) -> _Interceptions:
        if isinstance(self.root, nn.Module):
            for module in self.root.modules():
                for name, value in list(vars(module).items()):
                    if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter) \
                            and not name.startswith("__"):
                        delattr(module, name)
                        module.register_buffer(name, value, persistent=False)
                        self.converted.add((id(module), name))
                        self.converted_attributes.append((module, name))
        self._patch(nn.Module, "__setattr__", self._setattr(nn.Module.__setattr__))
        self._patch(builtins, "isinstance", self._isinstance(builtins.isinstance))
        tracer, proxies = self.tracer, (ConcreteProxy, ConcreteAttribute)

        def asked(obj: Any) -> bool:  # a traced value, asked about by the model's code (two frames up)
            return type(obj) in proxies and obj.tracer is tracer and _is_user_frame(sys._getframe(2))

        original_callable, original_id = builtins.callable, builtins.id
        self._patch(builtins, "callable", lambda obj: any("__call__" in vars(k) for k in tracer.decide_type(obj)
                                                          .__mro__) if asked(obj) else original_callable(obj))

        def id_(obj: Any) -> int:
            if asked(obj):
                tracer._refuse("id() of a traced value", "its identity is the proxy's, not the tensor's, and a "
                               "graph cannot replay it; compare values instead of identities", "identity")
            return original_id(obj)

        self._patch(builtins, "id", id_)
        original_hasattr, original_getattr = builtins.hasattr, builtins.getattr

        def has(obj: Any, name: str) -> bool:
            # Answered for the example value, never by the stand-in's own attributes (a Proxy has `keys`,
            # `node`, `tracer`: a tensor has none of them). An attribute of the value's type is there for
            # every value of that type: the type is guarded. Any other (a Python attribute set on this
            # tensor, `x.scale = 3.0`) is a question about this value: its answer is guarded.
            if original_hasattr(tracer.decide_type(obj), name):
                return True
            return tracer.decide_has(obj, name, original_hasattr)

        def hasattr_(obj: Any, name: str) -> bool:
            if asked(obj) and isinstance(name, str) and "hasattr" not in _OFF:
                return has(obj, name)
            return original_hasattr(obj, name)

        def getattr_(obj: Any, name: str, *default: Any) -> Any:
            if asked(obj) and isinstance(name, str) and "hasattr" not in _OFF and not has(obj, name):
                if default:
                    return default[0]
                raise AttributeError(f"{type(tracer.peek(obj)).__name__!r} object has no attribute {name!r}")
            return original_getattr(obj, name, *default)

        self._patch(builtins, "hasattr", hasattr_)
        self._patch(builtins, "getattr", getattr_)
        tracer.values_read = []  # real tensors (a global's, a list attribute's) read as Python values
        for name in _VALUE_READS:
            self._patch(torch.Tensor, name, self._value_read(getattr(torch.Tensor, name), name))
        tracer._patched_getattr = getattr_  # FX's own getattr nodes must name the builtin (see create_node)
        for owner in (torch, torch.random):
            self._patch(owner, "manual_seed", self._reseed(owner.manual_seed))
        for name in ("dir", "vars"):
            self._patch(builtins, name, self._introspection(getattr(builtins, name), name))
        for owner, name in ((torch, "is_tensor"), (torch.overrides, "is_tensor_like")):
            original = getattr(owner, name)
            self._patch(owner, name, self._typed(original))
        for owner, name, target in _GLOBALS:
            self._patch(owner, name, self._global(getattr(owner, name), target or getattr(owner, name)))
        self._patch(torch._C, "_set_grad_enabled", self._grad_mode(torch._C._set_grad_enabled))
        self._patch(torch.autograd.Function, "apply", classmethod(self._autograd_function(
            inspect.getattr_static(torch.autograd.Function, "apply"))))
        self._inject_type()
        if "side-effects" not in _OFF:
            self._side_effects()
        _CONCRETE_TRACES.append(self.tracer)
        for name in _FACTORIES:
            self._patch(torch, name, self._recorded(getattr(torch, name), "call_function"))
        for name in _TENSOR_METHODS:
            self._patch(torch.Tensor, name, self._recorded(getattr(torch.Tensor, name), "call_method", name))
        functional = torch.nn.functional
        for name, original in list(vars(functional).items()):
            if isinstance(original, types.FunctionType) and not name.startswith("_") \
                    and original.__module__ == functional.__name__:
                wrapper = self._sized(original)
                self.tracer._originals[wrapper] = original  # F's own dispatch records the wrapper: name the original
                self._patch(functional, name, wrapper)
        dynamo = sys.modules.get("torch._dynamo")
        if dynamo is None and any("_dynamo" in names for names in map(_names_used, self._forwards())):
            import torch._dynamo as dynamo  # a forward names it: imported now (2 s), so that its hints are patched
        if dynamo is not None and "hints" not in _OFF:  # not imported, and no forward names it: never called
            for owner in (dynamo, sys.modules.get("torch._dynamo.decorators")):
                for name in _HINTS:
                    if owner is not None and callable(vars(owner).get(name)):
                        self._patch(owner, name, self._hint(vars(owner)[name]))
        self._rebind_imported_names()
        return self

    def _rebind_imported_names(self) -> None:
        """``from torch import is_grad_enabled, zeros`` (``from warnings import warn``, ``from os import
        environ``) binds the function itself in the model's module: that name gets the replacement too, in
        the modules defining the model's ``forward`` methods (put back afterwards)."""
        replaced = {id(original): getattr(owner, name) for owner, name, original in self.patched
                    if original is not _INHERITED}
        for function in self._forwards():
            namespace = getattr(function, "__globals__", None)
            code = getattr(function, "__code__", None)
            if namespace is None or code is None or code.co_filename.startswith(_TORCH_DIR) \
                    or any(namespace is n for n, _, _ in self.rebound):
                continue
            for name, value in list(namespace.items()):
                replacement = replaced.get(id(value))
                if replacement is not None and replacement is not value and not name.startswith("__"):
                    self.rebound.append((namespace, name, value))
                    namespace[name] = replacement

    def __exit__(self, *exc: Any) -> None:
        if self.tracer in _CONCRETE_TRACES:
            _CONCRETE_TRACES.remove(self.tracer)
        for module, name in self.converted_attributes:  # tensor attributes again (what forward left there)
            module._non_persistent_buffers_set.discard(name)
            if name in module._buffers:
                module.__dict__[name] = module._buffers.pop(name)
        for namespace, name in self.injected:
            del namespace[name]
        for namespace, name, value in reversed(self.rebound):
            namespace[name] = value
        self.rebound.clear()
        for owner, name, original in reversed(self.patched):
            if original is _INHERITED:
                delattr(owner, name)  # it was inherited: remove the patch, do not pin a copy
            else:
                setattr(owner, name, original)

    def _grad_mode(self, original: Callable[[bool], None]) -> Callable[[bool], None]:
        # A change of grad mode inside forward (torch.no_grad(), enable_grad(), set_grad_enabled, the
        # @torch.no_grad() decorator): the graph makes the same change on every call. A change back to the mode
        # in force before the last one is a restore: the graph restores the mode it found at run time, so a
        # graph traced with grad on and called under no_grad leaves the caller's mode as eager mode does.
        tracer = self.tracer
        opened: list[tuple[bool, fx.Node]] = []  # (mode before the change, the node that returns it at run time)

        def set_grad_enabled(mode: bool) -> None:
            before = torch.is_grad_enabled()
            original(mode)
            if tracer._evaluating or "grad-mode" in _OFF or getattr(tracer, "graph", None) is None:
                return
            # Recorded even when it changes nothing now: traced under no_grad, a `with torch.no_grad():` region
            # must still switch grad off when the graph is called with grad on (and enable_grad the reverse).
            if opened and bool(mode) == opened[-1][0]:
                _, previous = opened.pop()
                fx.Tracer.create_node(tracer, "call_function", original, (previous,), {})
            else:
                opened.append((before, fx.Tracer.create_node(tracer, "call_function", swap_grad_mode,
                                                             (bool(mode),), {})))
            tracer.effects.grad_mode = bool(mode)

        return set_grad_enabled

    def _reseed(self, original: Callable[[int], Any]) -> Callable[[int], Any]:
        # torch.manual_seed inside forward: a graph node seeds again on every call, as eager mode does.
        tracer = self.tracer

        def manual_seed(seed: Any) -> Any:
            if tracer._evaluating or "rng" in _OFF or getattr(tracer, "graph", None) is None \
                    or not _is_user_frame(sys._getframe(1)):
                return original(seed)
            if isinstance(seed, fx.Proxy):
                seed = operator.index(seed)  # a guarded int decision
            fx.Tracer.create_node(tracer, "call_function", reseed, (seed,), {})  # evaluated: seeds now too
            return torch.default_generator

        return manual_seed

    def _autograd_function(self, original: Any) -> Callable[..., Any]:
        # A custom torch.autograd.Function called on traced values: the graph would hold its forward's
        # operations and lose its backward, so a gradient through the graph would differ from eager's.
        tracer, proxies = self.tracer, (ConcreteProxy, ConcreteAttribute)

        def guarded_apply(cls: Any, *args: Any, **kwargs: Any) -> Any:
            if not tracer._evaluating and any(type(a) in proxies and a.tracer is tracer
                                              for a in pytree.tree_leaves((args, kwargs))):
                tracer._refuse(f"a custom torch.autograd.Function ({cls.__name__}.apply)",
                               "the graph would record the operations of its forward and lose its backward, so "
                               "gradients through the graph would differ from eager mode's; trace the code around "
                               "it, or make its module a leaf of a custom tracer", "autograd-function")
            return original.__get__(None, cls)(*args, **kwargs)

        return guarded_apply

    def _side_effects(self) -> None:
        """The model's ``print``, ``logging`` calls, ``warnings.warn``, ``sys.stdout``/``sys.stderr`` writes
        become nodes that do them again on every call (:mod:`._replay`); a file it opens is refused."""
        tracer = self.tracer

        def recorded(target: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            tracer.create_proxy("call_function", target, args, kwargs)

        thread = threading.get_ident()

        def mine() -> bool:
            # Called by the model's code (two frames up: the caller of the patched function), in the thread
            # that traces: the patches are the process's, and another thread (a docs build's executor, say)
            # logs and prints through them meanwhile.
            return threading.get_ident() == thread and not tracer._evaluating \
                and getattr(tracer, "graph", None) is not None and _is_user_frame(sys._getframe(2))

        original_print = builtins.print

        def print_(*args: Any, **kwargs: Any) -> None:
            if mine():
                return recorded(_replay.print_, args, kwargs)
            return original_print(*args, **kwargs)

        self._patch(builtins, "print", print_)
        for method in ("debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"):
            self._patch(logging.Logger, method, self._logged(getattr(logging.Logger, method), method, mine, recorded))
        original_warn = warnings.warn

        def warn(message: Any, category: Any = None, stacklevel: int = 1, **kwargs: Any) -> None:
            if mine():
                return recorded(_replay.warn, (message, category, stacklevel), kwargs)
            return original_warn(message, category, stacklevel + 1, **kwargs)

        self._patch(warnings, "warn", warn)
        for stream in ("stdout", "stderr"):
            self._patch(sys, stream, _Stream(getattr(sys, stream), stream, mine, recorded))
        original_open = builtins.open

        def open_(*args: Any, **kwargs: Any) -> Any:
            if mine():
                self.tracer._refuse("a file opened in forward", "the graph would not open, read or write it "
                                    "again on its calls; read the file before tracing and pass what it holds, "
                                    "or write outside the traced code", "side-effects")
            return original_open(*args, **kwargs)

        self._patch(builtins, "open", open_)
        tracer.environ_reads = {}  # os.environ variables the model's code read: guard_state checks them
        self._patch(os, "environ", _Environ(os.environ, tracer.environ_reads, thread))

    @staticmethod
    def _logged(original: Callable[..., Any], method: str, mine: Callable[[], bool],
                recorded: Callable[..., None]) -> Callable[..., Any]:
        def call(logger: logging.Logger, *args: Any, **kwargs: Any) -> Any:
            if mine():
                name = None if logger is logging.getLogger() else logger.name
                return recorded(_replay.log, (name, method, *args), kwargs)
            return original(logger, *args, **kwargs)

        return call

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        self.patched.append((owner, name, vars(owner).get(name, _INHERITED)))
        setattr(owner, name, replacement)

    def _introspection(self, original: Callable[..., Any], name: str) -> Callable[..., Any]:
        # dir(v) and vars(v) list the proxy's attributes, not the tensor's: refused.
        tracer, proxies = self.tracer, (ConcreteProxy, ConcreteAttribute)

        def introspect(*args: Any) -> Any:
            if not args:  # dir() and vars() without an argument describe the caller's scope, not this one's
                scope = sys._getframe(1).f_locals
                return sorted(scope) if name == "dir" else scope
            obj = args[0]
            if type(obj) in proxies and obj.tracer is tracer and _is_user_frame(sys._getframe(1)):
                tracer._refuse(f"{name}() of a traced value", "it would list the stand-in's attributes, not the "
                               "tensor's; test for one attribute with hasattr() instead", "introspection")
            return original(*args)

        return introspect

    def _typed(self, original: Callable[[Any], bool]) -> Callable[[Any], bool]:
        # torch.is_tensor(v) and is_tensor_like(v): answered for the example value's type.
        tracer, proxies = self.tracer, (ConcreteProxy, ConcreteAttribute)

        def typed(obj: Any) -> bool:
            if type(obj) in proxies and obj.tracer is tracer and _is_user_frame(sys._getframe(1)):
                kind = tracer.decide_type(obj)
                return issubclass(kind, torch.Tensor) or (original is not torch.is_tensor and hasattr(
                    kind, "__torch_function__"))
            return original(obj)

        return typed

    def _global(self, original: Callable[..., Any], target: Callable[..., Any]) -> Callable[..., Any]:
        # A global setting asked by the model's code: a graph node asks it again on every call.
        tracer = self.tracer

        def predicate(*args: Any, **kwargs: Any) -> Any:
            if tracer._evaluating or not _is_user_frame(sys._getframe(1)):
                return original(*args, **kwargs)
            node = tracer.create_proxy("call_function", target, args, kwargs)
            value = tracer.value_of(node)
            tracer._record("branch" if isinstance(value, bool) else "value", node.node, value, "global")
            return value

        return predicate

    def _forwards(self) -> list[Any]:
        """The traced function, or the ``forward`` methods of every class of the model's modules."""
        return forwards_of(self.root)

    def _inject_type(self) -> None:
        # `type` cannot be replaced in builtins (torch's own code and every metaclass use it), so
        # the modules defining the model's forward methods get a `type` that answers for the example.
        functions = self._forwards()
        tracer, proxies = self.tracer, (ConcreteProxy, ConcreteAttribute)

        class _TypeMeta(type):
            def __instancecheck__(cls, obj: Any) -> bool:
                return isinstance(obj, type)

            def __subclasscheck__(cls, sub: Any) -> bool:
                return issubclass(sub, type)

            def __call__(cls, *args: Any, **kwargs: Any) -> Any:
                if len(args) == 1 and not kwargs and type(args[0]) in proxies and args[0].tracer is tracer:
                    return tracer.decide_type(args[0])
                return type(*args, **kwargs)

            def __getattr__(cls, name: str) -> Any:
                return getattr(type, name)

        answering_type = _TypeMeta("type", (), {})
        for function in functions:
            namespace = getattr(function, "__globals__", None)
            code = getattr(function, "__code__", None)
            if namespace is None or code is None or code.co_filename.startswith(_TORCH_DIR) \
                    or "type" in namespace or any(namespace is n for n, _ in self.injected):
                continue
            namespace["type"] = answering_type
            self.injected.append((namespace, "type"))

    def _size(self, a: Any) -> Any:
        """A traced size (an int, a ``torch.Size``) as the example's value, each int a guarded decision."""
        if type(a) in (ConcreteProxy, ConcreteAttribute) and a.tracer is self.tracer:
            value = self.tracer.peek(a)
            if isinstance(value, int) and not isinstance(value, bool):
                return operator.index(a)  # a guarded int decision
            if isinstance(value, torch.Size):
                return tuple(operator.index(v) for v in a)
        return a

    def _sized(self, original: Callable[..., Any]) -> Callable[..., Any]:
        # A function of torch.nn.functional written in Python dispatches on its tensor arguments only: given
        # traced sizes and real tensors (F.interpolate(constant, size=x.shape[-2:])) it would take its Python
        # path on a proxy. Its sizes become the example's, guarded. With a traced tensor, it records itself.
        tracer, size = self.tracer, self._size

        def call(*args: Any, **kwargs: Any) -> Any:
            if not tracer._evaluating and _has_proxy((args, kwargs)) \
                    and not any(isinstance(a, fx.Proxy) and _holds_tensor(tracer.peek(a))
                                for a in pytree.tree_leaves((args, kwargs))):
                args, kwargs = pytree.tree_map(size, (args, kwargs))
            return original(*args, **kwargs)

        functools.update_wrapper(call, original)
        return call

    def _hint(self, original: Callable[..., Any]) -> Callable[..., Any]:
        tracer = self.tracer

        def hint(t: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(t, fx.Proxy) and t.tracer is tracer:
                t = tracer.peek(t)  # the example's tensor gets the mark; the graph needs no node
            return original(t, *args, **kwargs)

        functools.update_wrapper(hint, original)
        return hint

    def _value_read(self, original: Callable[..., Any], method: str) -> Callable[..., Any]:
        """``Tensor.item`` (and the like) on a real tensor the model's code holds: the graph keeps the number it
        gave, so the tensor, the method, its version and the answer are kept for ``guard_state`` to check."""
        tracer = self.tracer

        def read(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            value = original(tensor, *args, **kwargs)
            if not tracer._evaluating and not args and not kwargs and type(tensor) in (torch.Tensor, nn.Parameter) \
                    and not tensor.is_meta and tensor.numel() <= _LARGEST_READ and _is_user_frame(sys._getframe(1)):
                key = (id(tensor), method)
                if all((id(ref()), name) != key for ref, _, name, _, _ in tracer.values_read):
                    try:
                        ref = weakref.ref(tensor)
                    except TypeError:
                        return value
                    tracer.values_read.append((ref, tensor._version, method, value, _user_location()))
            return value

        return read

    def _recorded(self, original: Callable[..., Any], op: str, method: str = "") -> Callable[..., Any]:
        tracer, size = self.tracer, self._size

        def call(*args: Any, **kwargs: Any) -> Any:
            if tracer._evaluating:
                return original(*args, **kwargs)
            if _has_proxy((args, kwargs)):
                args, kwargs = pytree.tree_map(size, (args, kwargs))
                if _has_proxy((args, kwargs)):  # a traced tensor among the arguments: one recorded call
                    return tracer.create_proxy(op, method or original, args, kwargs)
            result = original(*args, **kwargs)
            if op == "call_function" and isinstance(result, torch.Tensor) and _is_user_frame(sys._getframe(1)):
                if kwargs.get("dtype") is None and (result.is_floating_point() or result.is_complex()):
                    tracer.decide_default_dtype()  # a constant made in the default dtype: the graph keeps this one
                if kwargs.get("device") is None:  # and on the default device (torch.set_default_device, a
                    tracer.decide_default_dtype(_GET_DEFAULT_DEVICE)  # `with torch.device(...)` block)
            return result

        return call

    def _isinstance(self, original: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
        # isinstance(proxy, torch.Tensor) in the model's code answers for the example's
        # value (guarded by its type); torch's own code keeps seeing a Proxy.
        tracer, proxies = self.tracer, (ConcreteProxy, ConcreteAttribute)

        def isinstance_(obj: Any, classes: Any) -> bool:
            if type(obj) in proxies and obj.tracer is tracer and _is_user_frame(sys._getframe(1)):
                return issubclass(tracer.decide_type(obj), classes)
            return original(obj, classes)

        return isinstance_

    def _setattr(self, original: Callable[..., None]) -> Callable[..., None]:
        tracer, converted = self.tracer, self.converted

        def setattr_(module: nn.Module, name: str, value: Any) -> None:
            if tracer._evaluating:
                return original(module, name, value)
            old = module.__dict__.get("_buffers", {}).get(name, module.__dict__.get(name))
            if _has_proxy(value):
                real = tracer.value_of(value) if isinstance(value, fx.Proxy) else None
                if isinstance(old, torch.Tensor) and isinstance(real, torch.Tensor) \
                        and name in module._buffers and (id(module), name) not in converted \
                        and real.shape == old.shape and real.dtype == old.dtype:
                    path = next(p for p, m in tracer.root.named_modules() if m is module)
                    buffer = tracer.create_proxy("get_attr", f"{path}.{name}" if path else name, (), {})
                    tracer.create_proxy("call_method", "copy_", (buffer, value), {})
                    return None
                leaves = [leaf for leaf in pytree.tree_leaves(value) if isinstance(leaf, fx.Proxy)]
                if not any(_holds_tensor(tracer.peek(leaf)) for leaf in leaves):
                    # Python values computed from traced sizes (a lazily set-up scale): stored as
                    # their example values, each a guarded decision.
                    value = pytree.tree_map(
                        lambda a: tracer.decide_object(a) if isinstance(a, fx.Proxy) else a, value)
                else:
                    tracer._refuse(f"storing a traced value on the module (self.{name} = ...)",
                                   "the model would keep a proxy and the graph would not replay the update; "
                                   f"update a registered buffer of the same shape in place (self.{name}.copy_(...)) "
                                   "or return the value from forward", "store")
            if isinstance(value, (bool, int, float, str)) and name in module.__dict__ and old != value:
                tracer._refuse(f"a change of the Python attribute self.{name} ({old!r} -> {value!r})",
                               "a graph cannot replay Python state that changes between calls; keep it in a "
                               "buffer updated in place, or trace a model that does not change it",
                               "python-attribute")
            # A value made without traced values (a tuple of decided sizes, a flag, a constant tensor): the graph
            # sets it on every call too, if a second call sets it to the same (see _diff.unsettled).
            held = module._buffers if name in module._buffers else module.__dict__
            constant = isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter) \
                or not (isinstance(value, nn.Module) or _holds_tensor(value))
            if constant and "python-state" not in _OFF and _is_user_frame(sys._getframe(1)) \
                    and name not in module._parameters and name not in module._modules \
                    and (name not in held or not same_value(held[name], value)):
                tracer.replay_attribute(module, name, value)
            return original(module, name, value)

        return setattr_


