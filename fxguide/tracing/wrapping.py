"""``torch.fx.wrap`` at work: functions recorded as calls instead of traced through.

The symbolic tracer runs Python code on ``Proxy`` stand-ins. A function a
``Proxy`` cannot pass through (``len``, ``int``, a truth test) fails the trace;
*wrapping* it tells the tracer to record one ``call_function`` node instead and
to call the real function later, on real values.

``torch.fx.wrap`` has two forms, both used here:

- ``torch.fx.wrap("len")`` at the top level of a module: inside this module's
  functions, ``len`` is recorded while tracing;
- ``@torch.fx.wrap`` on a function defined at module scope.

The tracer patches the *name* in the *defining module's* globals. So code in
another module must call a wrapped helper through this module
(``wrapping.as_int(...)``): a copy imported with ``from fxguide.tracing.wrapping import
as_int`` is a different global name, is not patched, and is traced through.
"""

# No ``from __future__ import annotations`` here: FX copies the annotations of
# a traced function into its generated code, and string annotations come out
# mangled (``x : _torch_Tensor_``).
import torch
import torch.fx

__all__ = ["all_of", "as_int", "as_rounded", "divide_by_rows", "fresh_noise", "sizes_tensor"]

# Module scope: every function of this module that calls ``len`` while being
# traced records a ``len`` node instead of failing.
torch.fx.wrap("len")


def _require_tensor(x: object, caller: str, dims: int = 0) -> None:
    if not isinstance(x, (torch.Tensor, torch.fx.Proxy)):
        raise TypeError(f"{caller}: expected a tensor, got {type(x).__name__}")
    if isinstance(x, torch.Tensor) and x.dim() < dims:
        raise ValueError(f"{caller}: expected a tensor of at least {dims} dimension(s), got a {x.dim()}-d one")


def divide_by_rows(x: torch.Tensor) -> torch.Tensor:
    """Divide ``x`` by its number of rows, using ``len`` (wrapped at module scope).

    >>> divide_by_rows(torch.ones(4, 2))[0]
    tensor([0.2500, 0.2500])
    """
    _require_tensor(x, "divide_by_rows", dims=1)  # a 0-d tensor has no rows
    return x / len(x)


@torch.fx.wrap
def as_int(value: object) -> int:
    """``int(value)``, recorded as one call while tracing.

    Use it where code casts a traced size (``int(x.shape[1] / 2)``): the cast
    then happens at run time on a real number.

    >>> as_int(3.0)
    3
    """
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError) as error:
        raise TypeError(f"as_int: cannot convert {value!r} to int ({error})") from None


@torch.fx.wrap
def as_rounded(value: object) -> int:
    """``round(value)``, recorded as one call while tracing (``round(x.shape[1] * 0.5)``).

    >>> as_rounded(2.5), as_rounded(3.5)
    (2, 4)
    """
    try:
        return round(value)
    except TypeError as error:
        raise TypeError(f"as_rounded: expected a number, got {type(value).__name__}") from error


@torch.fx.wrap
def all_of(*conditions: object) -> bool:
    """``True`` when every condition is true: ``and`` for traced asserts.

    ``torch._assert(a and b, msg)`` fails to trace because ``and`` asks the
    first operand for its truth value; ``torch._assert(all_of(a, b), msg)``
    records one call and evaluates the conditions at run time.

    >>> all_of(True, 2 == 2)
    True
    >>> all_of(True, 2 == 3)
    False
    """
    if not conditions:
        raise ValueError("all_of: give at least one condition")
    for number, condition in enumerate(conditions, 1):
        if isinstance(condition, torch.Tensor) and condition.numel() != 1:
            raise ValueError(f"all_of: condition {number} is a tensor of {condition.numel()} values, which is "
                             f"neither true nor false; reduce it first with .all() or .any()")
    return all(bool(c) for c in conditions)


@torch.fx.wrap
def sizes_tensor(x: torch.Tensor) -> torch.Tensor:
    """The shape of ``x`` as a 1-D ``int64`` tensor, recorded as one call.

    ``torch.tensor(x.shape)`` cannot be traced (``torch.tensor`` probes the
    traced sizes for ``__cuda_array_interface__``, and a ``Proxy`` answers with
    another ``Proxy``: ``TypeError`` "must be a dict"); wrapped, it runs on
    the real shape.

    >>> sizes_tensor(torch.ones(2, 3))
    tensor([2, 3])
    """
    _require_tensor(x, "sizes_tensor")
    return torch.tensor(tuple(x.shape), dtype=torch.int64)


@torch.fx.wrap
def fresh_noise(size: int, seed: int | None = None) -> torch.Tensor:
    """``torch.randn(size)`` drawn anew on every call, even in a traced module.

    Traced directly, ``torch.randn(3)`` runs once at trace time and its result
    is stored in the module as a constant. A wrapped function is recorded only
    when at least one argument is a traced value: ``fresh_noise(x.shape[-1])``
    is recorded, ``fresh_noise(3)`` runs at trace time and is baked in too.
    ``seed`` makes a draw reproducible.

    >>> torch.equal(fresh_noise(3, seed=0), fresh_noise(3, seed=0))
    True
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"fresh_noise: size must be a positive int (not a bool), got {size!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"fresh_noise: seed must be a non-negative int or None, got {seed!r}")
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    return torch.randn(size, generator=generator)
