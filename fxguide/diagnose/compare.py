"""Is a capture's result the eager result? Compared by structure, then tensor by tensor, element by element.

The inputs a diagnosis compares on are made here too (:func:`like`): the
example's structure, shapes, device and dtype with other values, or another
batch size.

How two outputs are compared (:func:`compare_outputs`):

- by structure first: the same container types (a list is not a tuple, and a
  tensor is not a list), the same dict keys (in any order), the same Python
  types (``1`` is not ``True``);
- tensors element by element: in float32 and float64 within
  ``ATOL + RTOL * |eager|`` of each element (no element's size widens another's
  tolerance), NaN where eager has NaN; integers and booleans exactly;
- below float32 (bfloat16, float16), against a float64 *reference* run of the
  model when the diagnosis has one: the capture's error against the reference
  may not be much larger than eager's own (``LOW_PRECISION_FACTOR``); without a
  reference, within a tolerance from the dtype's precision;
- objects that hold tensors (a Hugging Face ``DynamicCache``) through their
  pytree registration when the library provides one, or by the tensors they
  hold otherwise; an object that cannot be compared is reported as such
  (``cannot compare ...``), never as values that differ.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch.utils import _pytree as pytree

from fxguide._checks import int_at_least, seed_value
from fxguide.tracing.concrete._objects import ObjectTemplate, Unrebuildable, rebuild_object, traced_paths

RTOL, ATOL = 1e-3, 1e-4
"""Each element of a float32 or float64 tensor must lie within ``ATOL + RTOL * |eager element|``."""

LOW_PRECISION_FACTOR = 3.0
"""How much larger than eager's own error the capture's may be, below float32, against a float64 reference
(at each element, plus one unit of the dtype's precision at that element's size; and in root-mean-square)."""

LOW_PRECISION_ULPS = 8
"""How many units of the dtype's precision (``eps * (1 + |eager element|)``) each element may be off, below
float32 when there is no float64 reference."""

Inputs = tuple[tuple[Any, ...], dict[str, Any]]
"""A model's inputs, as positional arguments and keyword arguments."""

CANNOT_COMPARE = "cannot compare"
"""How a comparison that could not be made starts (a reason follows); never a difference."""


@dataclasses.dataclass
class Comparison:
    """What :func:`compare_outputs` found: ``mismatch`` (``""``: they match) and the largest difference seen."""

    mismatch: str = ""
    largest_difference: float | None = None
    where: str = ""

    @property
    def compared(self) -> bool:
        """The outputs could be compared (they match, or they differ)."""
        return not self.mismatch.startswith(CANNOT_COMPARE)


class _Stop(Exception):
    """Ends a comparison with its mismatch text."""


def compare(actual: Any, expected: Any, reference: Any = None) -> str:
    """``""`` if ``actual`` matches ``expected``, else what differs (see the module's docstring for how).

    ``reference`` is the same model's output in float64, used to judge outputs below float32.

    >>> compare((torch.ones(2), 3), (torch.ones(2), 3))
    ''
    >>> compare(torch.tensor([1e6, 1.0]), torch.tensor([1e6, 50.0]))
    'values differ'
    >>> compare(torch.ones(2, 1), torch.ones(2))
    'shapes differ'
    >>> compare(1, True)
    'a int instead of a bool at output'
    >>> compare({"a": torch.ones(1), "b": 2}, {"b": 2, "a": torch.ones(1)})
    ''
    >>> compare(torch.tensor([float("nan"), 1.0]), torch.tensor([float("nan"), 1.0]))
    ''
    """
    return compare_outputs(actual, expected, reference).mismatch


def compare_outputs(actual: Any, expected: Any, reference: Any = None) -> Comparison:
    """:func:`compare` with the largest element-wise difference it saw and where the first mismatch is."""
    result = Comparison()
    try:
        if (found := _trace_time(actual, "output", 6, set())) is not None:
            result.where = found[0]
            raise _Stop(f"{CANNOT_COMPARE}: the capture returns trace-time objects (a {found[1]} at {found[0]}), "
                        "not values")
        _walk(actual, expected, reference, "output", result, set())
    except _Stop as stop:
        result.mismatch = str(stop)
    return result


def _type_name(value: Any) -> str:
    return "tensor" if isinstance(value, torch.Tensor) else type(value).__name__


def _walk(a: Any, b: Any, ref: Any, where: str, result: Comparison, seen: set[int]) -> None:
    if isinstance(b, torch.Tensor):
        if not isinstance(a, torch.Tensor):
            result.where = where
            if _is_trace_time(a):
                raise _Stop(f"{CANNOT_COMPARE}: the capture returns a trace-time object ({type(a).__name__}) "
                            f"at {where}, where eager returns a tensor")
            raise _Stop(f"a {_type_name(a)} instead of a tensor" + ("" if where == "output" else f" at {where}"))
        _tensors(a, b, ref if isinstance(ref, torch.Tensor) else None, where, result)
        return
    if _is_trace_time(a):
        result.where = where
        raise _Stop(f"{CANNOT_COMPARE}: the capture returns a trace-time object ({type(a).__name__}) at {where}")
    if type(a) is not type(b):
        result.where = where
        raise _Stop(f"a {_type_name(a)} instead of a {_type_name(b)} at {where}")
    if b is None or isinstance(b, (bool, int, str, bytes, torch.dtype, torch.device, type)):
        if a != b:
            result.where = where
            raise _Stop("values differ")
        return
    if isinstance(b, (float, complex)):
        if not (a == b or (a != a and b != b) or abs(a - b) <= ATOL + RTOL * abs(b)):
            result.where = where
            raise _Stop("values differ")
        return
    if id(b) in seen:  # a structure that holds itself
        return
    seen.add(id(b))
    if isinstance(b, Mapping):
        if set(a.keys()) != set(b.keys()):
            result.where = where
            missing, extra = sorted(map(repr, set(b) - set(a))), sorted(map(repr, set(a) - set(b)))
            raise _Stop(f"keys differ at {where}: " + "; ".join(
                [f"missing {', '.join(missing)}"] * bool(missing) + [f"extra {', '.join(extra)}"] * bool(extra)))
        for key in b.keys():
            _walk(a[key], b[key], _child(ref, key), f"{where}[{key!r}]", result, seen)
        return
    if isinstance(b, (list, tuple)):
        if len(a) != len(b):
            result.where = where
            raise _Stop(f"{len(a)} outputs instead of {len(b)}" if where == "output"
                        else f"{len(a)} items instead of {len(b)} at {where}")
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, _child(ref, i), f"{where}[{i}]", result, seen)
        return
    children = _children(b)
    if children is None:
        _opaque(a, b, where, result)
        return
    got = _children(a) or {}
    if list(got) != list(children):
        result.where = where
        raise _Stop(f"the {type(b).__name__} at {where} holds other parts ({list(got)} instead of {list(children)})")
    ref_children = _children(ref) if ref is not None and type(ref) is type(b) else None
    for key, value in children.items():
        _walk(got[key], value, (ref_children or {}).get(key), f"{where}.{key}", result, seen)


def _child(ref: Any, key: Any) -> Any:
    try:
        return ref[key] if ref is not None else None
    except (KeyError, IndexError, TypeError):
        return None


def _children(value: Any) -> dict[str, Any] | None:
    """An object's parts, by name: a dataclass's fields, a pytree node's children, or the tensors it holds."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    node = pytree.SUPPORTED_NODES.get(type(value))
    if node is not None:
        parts, _ = node.flatten_fn(value)
        return {str(i): part for i, part in enumerate(parts)}
    held = _held(value, depth=3, seen=set())
    return held or None


def _held(value: Any, depth: int, seen: set[int]) -> dict[str, Any]:
    """The tensors an object holds in its attributes (and their lists, dicts and objects), by attribute path."""
    found: dict[str, Any] = {}
    if depth < 0 or id(value) in seen:
        return found
    seen.add(id(value))
    try:
        attrs = vars(value)
    except TypeError:
        attrs = {name: getattr(value, name) for name in getattr(type(value), "__slots__", ()) if hasattr(value, name)}
    for name, item in sorted(attrs.items()):
        for path, tensor in _tensors_in(item, depth, seen):
            found[name + path] = tensor
    return found


def _tensors_in(item: Any, depth: int, seen: set[int]) -> list[tuple[str, Any]]:
    if isinstance(item, torch.Tensor) or _is_trace_time(item):
        return [("", item)]
    if isinstance(item, (list, tuple)):
        return [(f"[{i}]{p}", t) for i, x in enumerate(item) for p, t in _tensors_in(x, depth, seen)]
    if isinstance(item, dict):
        return [(f"[{k!r}]{p}", t) for k, x in item.items() for p, t in _tensors_in(x, depth, seen)]
    if isinstance(item, (str, bytes, int, float, bool, type(None), torch.nn.Module)) or callable(item):
        return []
    return [(f".{p}", t) for p, t in _held(item, depth - 1, seen).items()]


def _opaque(a: Any, b: Any, where: str, result: Comparison) -> None:
    """An object with no parts fxguide can read: compared by its own ``==``, if it defines one."""
    if type(b).__eq__ is object.__eq__:
        if a is b:
            return
        result.where = where
        raise _Stop(f"{CANNOT_COMPARE} a {type(b).__name__} at {where}: it defines no == and holds no tensors")
    try:
        same = bool(a == b)
    except Exception:  # noqa: BLE001 - an object whose == does not give a truth value
        result.where = where
        raise _Stop(f"{CANNOT_COMPARE} a {type(b).__name__} at {where}: its == gives no truth value") from None
    if not same:
        result.where = where
        raise _Stop("values differ")


def _trace_time(value: Any, where: str, depth: int, seen: set[int]) -> tuple[str, str] | None:
    """Where in ``value`` a tracer's stand-in sits (a cache holding proxies), and its type; ``None`` if nowhere."""
    if _is_trace_time(value):
        return where, type(value).__name__
    if isinstance(value, torch.Tensor) or depth <= 0 or id(value) in seen:
        return None
    seen.add(id(value))
    if isinstance(value, Mapping):
        items = [(f"{where}[{k!r}]", v) for k, v in value.items()]
    elif isinstance(value, (list, tuple)):
        items = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
    elif isinstance(value, (str, bytes, int, float, complex, type(None), torch.nn.Module)) or callable(value):
        return None
    else:
        try:
            attrs = vars(value)
        except TypeError:
            return None
        items = [(f"{where}.{k}", v) for k, v in attrs.items()]
    for path, item in items:
        if (found := _trace_time(item, path, depth - 1, seen)) is not None:
            return found
    return None


def _is_trace_time(value: Any) -> bool:
    """A tracer's stand-in for a value (an FX ``Proxy``, a concrete tracer's proxy), not a value."""
    return isinstance(value, torch.fx.Proxy) or type(value).__module__.startswith("fxguide.tracing")


_LOW_PRECISION = {torch.float16, torch.bfloat16}


def _tensors(a: torch.Tensor, b: torch.Tensor, ref: torch.Tensor | None, where: str, result: Comparison) -> None:
    def stop(text: str) -> None:
        result.where = where
        raise _Stop(text)

    if a.shape != b.shape:
        stop("shapes differ")
    if a.dtype != b.dtype:
        stop("dtypes differ")
    if a.device != b.device:
        stop("devices differ")
    if b.is_meta or a.is_meta:
        stop(f"{CANNOT_COMPARE}: tensors on the meta device hold no values (at {where})")
    if b.is_quantized:
        a, b = a.dequantize(), b.dequantize()
    if b.device.type == "mps":  # no float64 there: compare on the CPU
        a, b = a.cpu(), b.cpu()
    if b.layout != torch.strided:
        a, b = a.to_dense(), b.to_dense()
    a, b = a.detach(), b.detach()
    if not b.is_floating_point() and not b.is_complex():
        if not torch.equal(a, b):
            stop("values differ")
        return
    if not b.numel():
        return
    if not torch.equal(a.isnan(), b.isnan()):
        stop("values differ")
    finite = ~b.isnan()
    wide = torch.complex128 if b.is_complex() else torch.float64
    a64, b64 = a.to(wide)[finite], b.to(wide)[finite]
    inf = b64.isinf() | a64.isinf()
    if inf.any():
        if not torch.equal(a64[inf], b64[inf]):
            stop("values differ")
        a64, b64 = a64[~inf], b64[~inf]
        if ref is not None:
            ref = None  # the reference's infinities need not sit where eager's do
    difference = (a64 - b64).abs()
    largest = float(difference.max()) if difference.numel() else 0.0
    result.largest_difference = max(result.largest_difference or 0.0, largest)
    if b.dtype not in _LOW_PRECISION:
        if not bool((difference <= ATOL + RTOL * b64.abs()).all()):
            stop("values differ")
        return
    eps = torch.finfo(b.dtype).eps
    if ref is not None and ref.shape == b.shape and ref.is_floating_point():
        r = ref.detach().to(b.device, wide)[finite]
        if r.isfinite().all() and r.shape == a64.shape:
            ours, theirs = (a64 - r).abs(), (b64 - r).abs()
            rms = lambda t: float(t.pow(2).mean().sqrt()) if t.numel() else 0.0  # noqa: E731
            # element by element: each may be off by a few times eager's own error there plus one unit of the
            # dtype's precision at its own size (a large element elsewhere widens no other's tolerance)
            if (not bool((ours <= LOW_PRECISION_FACTOR * theirs + eps * (1 + r.abs())).all())
                    or rms(ours) > LOW_PRECISION_FACTOR * rms(theirs) + eps * rms(r)):
                stop("values differ")
            return
    if not bool((difference <= LOW_PRECISION_ULPS * eps * (1 + b64.abs())).all()):
        stop("values differ")


def like(inputs: Inputs, seed: int, batch: int | None = None) -> Inputs:
    """Inputs of the same structure, dtypes, devices and shapes as ``inputs``, with other values.

    Floating tensors are drawn from a normal distribution; integer tensors (token
    ids, say) from the range of the example's values, so that they stay valid
    indices; booleans keep their values (they are masks). With ``batch``, the
    first dimension of each tensor passed directly (not inside a list, tuple or
    dict, where the length is the batch, as for detection models' images)
    becomes ``batch``; tensors with no dimension stay. Each tensor is made on
    the example's device (the meta device included) in the example's dtype.

    >>> (x,), _ = like(((torch.zeros(1, 3),), {}), seed=0, batch=2)
    >>> tuple(x.shape)
    (2, 3)
    >>> ids = torch.tensor([[5, 9, 7]])
    >>> (new,), _ = like(((ids,), {}), seed=1)
    >>> bool(((new >= 5) & (new <= 9)).all()), new.dtype
    (True, torch.int64)
    """
    seed = seed_value("like", seed)
    if batch is not None:
        int_at_least("like", "batch", batch)
    args, kwargs = check_inputs("like", inputs)
    generator = torch.Generator().manual_seed(seed)

    def vary(value: Any, resize: bool = False) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        shape = list(value.shape)
        if resize and batch is not None and shape:
            shape[0] = batch
        size = math.prod(shape) * value.element_size()
        if size > _LARGEST_INPUT and not value.is_meta:
            raise ValueError(f"like: the input of shape {'x'.join(map(str, shape))} would take {size / 2**30:.0f} GiB; "
                             "diagnose makes its second input with the example's shapes, so pass a smaller example "
                             "or your own second input with examine(model, example, other=...)")
        if value.is_meta:
            return torch.empty(shape, dtype=value.dtype, device="meta")
        if value.is_floating_point() or value.is_complex():
            new = torch.randn(shape, generator=generator, dtype=value.dtype)
        elif value.dtype == torch.bool:
            new = _resize(value, shape).cpu()
        else:
            low = int(value.min()) if value.numel() else 0
            high = int(value.max()) if value.numel() else 1
            new = torch.randint(low, high + 1, shape, generator=generator, dtype=value.dtype)
        return new.to(value.device)

    def top(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return vary(value, resize=True)
        # In an object (a cache of keys and values) every tensor is per sample; in a list, the list is the batch.
        return pytree.tree_map(lambda v: vary(v) if isinstance(v, torch.Tensor)
                               else map_held(v, lambda t: vary(t, resize=True)), value)

    return tuple(top(a) for a in args), {k: top(v) for k, v in kwargs.items()}


_LARGEST_INPUT = 2**34
"""Bytes: an input :func:`like` makes larger than 16 GiB is refused with a message, not an allocator error."""


def clone(inputs: Inputs) -> Inputs:
    """The inputs with every tensor copied, so that a model that writes into its inputs cannot change them.

    A tensor whose elements share memory (``expand``) is copied with its layout: its storage, not every element.
    """
    args, kwargs = check_inputs("clone", inputs)
    def leaf(value: Any) -> Any:
        return _copy(value) if isinstance(value, torch.Tensor) else map_held(value, _copy)

    return pytree.tree_map(leaf, tuple(args)), pytree.tree_map(leaf, dict(kwargs))


def map_held(value: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    """A copy of ``value``, an object that is not a pytree container, with ``fn`` applied to each tensor it holds.

    A Hugging Face ``DynamicCache`` passed to a decode step is such an object: the model appends to it, so
    every call needs its own copy. Only the objects on the way to a tensor are copied (the concrete tracer's
    ``rebuild_object``). An object a copy cannot rebuild that way (one
    reached twice) is deep-copied instead, its tensors copied as they are, without ``fn``. Anything holding
    no tensor is returned as it is.
    """
    try:
        held = traced_paths(value, lambda v: isinstance(v, torch.Tensor))
    except Unrebuildable:
        return copy.deepcopy(value)
    if not held:
        return value
    return rebuild_object(ObjectTemplate(value, tuple(path for path, _ in held)), [fn(t) for _, t in held])


def _copy(value: Any) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    if value.is_meta or value.layout != torch.strided or value.is_quantized:
        return value.clone()
    storage = value.untyped_storage()
    if storage.nbytes() < value.numel() * value.element_size():  # overlapping elements: copy the storage
        copy = value.new_empty(0)
        copy.set_(storage.clone(), value.storage_offset(), value.size(), value.stride())
        return copy.requires_grad_(value.requires_grad) if value.is_leaf else copy
    return value.clone()


def _resize(value: torch.Tensor, shape: list[int]) -> torch.Tensor:
    """``value`` with its first dimension repeated or cut to ``shape[0]``."""
    if not shape or value.shape[0] == shape[0]:
        return value.clone()
    if value.shape[0] == 0:
        return value.new_zeros(shape)
    index = torch.arange(shape[0], device=value.device) % value.shape[0]
    return value[index].clone()


def check_inputs(caller: str, value: Any) -> Inputs:
    """``value`` as ``(args, kwargs)`` if it is a pair of a tuple (or list) and a dict; a TypeError saying so otherwise.

    >>> check_inputs("like", torch.ones(1))
    Traceback (most recent call last):
    ...
    TypeError: like: inputs must be (args, kwargs): a tuple of positional inputs and a dict of keyword inputs, got Tensor; for one tensor x pass ((x,), {})
    """
    if (not isinstance(value, tuple) or len(value) != 2 or not isinstance(value[0], (tuple, list))
            or not isinstance(value[1], dict) or not all(isinstance(k, str) for k in value[1])):
        raise TypeError(f"{caller}: inputs must be (args, kwargs): a tuple of positional inputs and a dict of "
                        f"keyword inputs, got {type(value).__name__}; for one tensor x pass ((x,), {{}})")
    return tuple(value[0]), dict(value[1])
