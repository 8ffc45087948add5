"""Is a capture's result the eager result? Compared leaf by leaf, within a tolerance.

The inputs a diagnosis compares on are made here too (:func:`like`): the
example's structure and shapes with other values, or another batch size.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch
from torch.utils import _pytree as pytree

from fxguide._checks import int_at_least, seed_value

RTOL, ATOL = 1e-3, 1e-4  # atol is scaled by the largest magnitude of the eager output

Inputs = tuple[tuple[Any, ...], dict[str, Any]]
"""A model's inputs, as positional arguments and keyword arguments."""


def compare(actual: Any, expected: Any) -> str:
    """``""`` if ``actual`` matches ``expected`` within the tolerance, else what differs.

    Outputs are compared leaf by leaf (``ModelOutput``, dicts, lists, tuples);
    tensors within ``RTOL`` and ``ATOL`` times the largest eager magnitude.

    >>> compare((torch.ones(2), 3), [torch.ones(2), 3])
    ''
    >>> compare(torch.ones(2), torch.zeros(2))
    'values differ'
    >>> compare(torch.ones(2, 1), torch.ones(2))
    'shapes differ'
    """
    got, want = _leaves(actual), _leaves(expected)
    if len(got) != len(want):
        return f"{len(got)} outputs instead of {len(want)}"
    for a, b in zip(got, want):
        if isinstance(b, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                return f"a {type(a).__name__} instead of a tensor"
            if a.shape != b.shape:
                return "shapes differ"
            if a.dtype != b.dtype:
                return "dtypes differ"
            if b.is_quantized:
                a, b = a.dequantize(), b.dequantize()
            if not b.is_floating_point() and not b.is_complex():
                if not torch.equal(a, b):
                    return "values differ"
                continue
            scale = float(b.abs().max()) if b.numel() else 0.0
            if not torch.allclose(a, b, rtol=RTOL, atol=ATOL * max(scale, 1.0), equal_nan=True):
                return "values differ"
        elif isinstance(a, float) and isinstance(b, float):
            if not math.isclose(a, b, rel_tol=RTOL) and not (math.isnan(a) and math.isnan(b)):
                return "values differ"
        else:
            try:
                same = bool(a == b)
            except Exception:  # noqa: BLE001 - an object whose == does not give a truth value
                return f"cannot compare a {type(b).__name__} output"
            if not same:
                return "values differ"
    return ""


def _leaves(tree: Any) -> list[Any]:
    # ModelOutput is a pytree node (transformers registers it); dicts of the same keys in another
    # order (a GraphModule's output) are sorted alike by pytree; a dataclass is its fields.
    if hasattr(tree, "to_tuple") and not isinstance(tree, torch.Tensor):
        tree = dict(tree.items())
    leaves = []
    for leaf in pytree.tree_leaves(tree):
        if dataclasses.is_dataclass(leaf) and not isinstance(leaf, type):
            leaves += _leaves({f.name: getattr(leaf, f.name) for f in dataclasses.fields(leaf)})
        else:
            leaves.append(leaf)
    return leaves


def like(inputs: Inputs, seed: int, batch: int | None = None) -> Inputs:
    """Inputs of the same structure, dtypes and shapes as ``inputs``, with other values.

    Floating tensors are drawn from a normal distribution; integer tensors (token
    ids, say) from the range of the example's values, so that they stay valid
    indices; booleans keep their values (they are masks). With ``batch``, the
    first dimension of each tensor passed directly (not inside a list, tuple or
    dict, where the length is the batch, as for detection models' images)
    becomes ``batch``; tensors with no dimension stay.

    >>> (x,), _ = like(((torch.zeros(1, 3),), {}), seed=0, batch=2)
    >>> tuple(x.shape)
    (2, 3)
    >>> ids = torch.tensor([[5, 9, 7]])
    >>> (new,), _ = like(((ids,), {}), seed=1)
    >>> bool(((new >= 5) & (new <= 9)).all()), new.dtype
    (True, torch.int64)
    """
    generator = torch.Generator().manual_seed(seed_value("like", seed))
    if batch is not None:
        int_at_least("like", "batch", batch)
    args, kwargs = check_inputs("like", inputs)

    def vary(value: Any, resize: bool = False) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        shape = list(value.shape)
        if resize and batch is not None and shape:
            shape[0] = batch
        if value.is_floating_point() or value.is_complex():
            new = torch.randn(shape, generator=generator, dtype=value.dtype)
        elif value.dtype == torch.bool:
            new = _resize(value, shape)
        else:
            low = int(value.min()) if value.numel() else 0
            high = int(value.max()) if value.numel() else 1
            new = torch.randint(low, high + 1, shape, generator=generator, dtype=value.dtype)
        return new.to(value.device)

    def top(value: Any) -> Any:
        return vary(value, resize=True) if isinstance(value, torch.Tensor) else pytree.tree_map(vary, value)

    return tuple(top(a) for a in args), {k: top(v) for k, v in kwargs.items()}


def clone(inputs: Inputs) -> Inputs:
    """The inputs with every tensor copied, so that a model that writes into its inputs cannot change them."""
    args, kwargs = check_inputs("clone", inputs)
    copy = lambda value: value.clone() if isinstance(value, torch.Tensor) else value  # noqa: E731
    return pytree.tree_map(copy, tuple(args)), pytree.tree_map(copy, dict(kwargs))


def _resize(value: torch.Tensor, shape: list[int]) -> torch.Tensor:
    """``value`` with its first dimension repeated or cut to ``shape[0]``."""
    if not shape or value.shape[0] == shape[0]:
        return value.clone()
    if value.shape[0] == 0:
        return value.new_zeros(shape)
    index = torch.arange(shape[0]) % value.shape[0]
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
