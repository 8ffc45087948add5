"""Argument checks shared by fxguide's public functions: each error names the caller, the argument and the fix.

``bool`` is a subclass of ``int`` in Python, so ``isinstance(True, int)``
holds; a size, a count or a port given as ``True`` is almost always a
mistake, and these checks refuse it.

>>> int_at_least("TinyMLP", "features", 4)
4
>>> int_at_least("TinyMLP", "features", True)
Traceback (most recent call last):
...
ValueError: TinyMLP: features must be a positive int, got True (a bool); pass a number
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any


def int_at_least(caller: str, name: str, value: Any, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` if it is an int (not a bool) of at least ``minimum`` (and at most ``maximum``, if given);
    a ``ValueError`` naming it otherwise.

    >>> int_at_least("measure", "repeats", 10**12, maximum=10_000)
    Traceback (most recent call last):
    ...
    ValueError: measure: repeats must be a positive int of at most 10000, got 1000000000000
    """
    wanted = {1: "a positive int", 0: "a non-negative int"}.get(minimum, f"an int of at least {minimum}")
    if maximum is not None:
        wanted += f" of at most {maximum}"
    if isinstance(value, bool):
        raise ValueError(f"{caller}: {name} must be {wanted}, got {value!r} (a bool); pass a number")
    if not isinstance(value, int) or value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{caller}: {name} must be {wanted}, got {value!r}")
    return value


def seed_value(caller: str, value: Any) -> int:
    """``value`` if it can seed ``torch.manual_seed``: an int, not a bool; a ``TypeError`` naming it otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{caller}: seed must be an int, got {value!r} ({type(value).__name__})")
    return value


def finite_number(caller: str, name: str, value: Any, positive: bool = False) -> float:
    """``value`` as a float if it is a finite real number (not a bool), positive if asked."""
    need = "a positive number" if positive else "a finite number"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or (positive and value <= 0):
        raise ValueError(f"{caller}: {name} must be {need} (finite, not a bool), got {value!r}")
    return float(value)


def string(caller: str, name: str, value: Any) -> str:
    """``value`` if it is a str; a ``TypeError`` naming the caller, the argument and its type otherwise."""
    if not isinstance(value, str):
        raise TypeError(f"{caller}: {name} must be a str, got {type(value).__name__}")
    return value


def collection(caller: str, name: str, value: Any, example: str) -> tuple[Any, ...]:
    """``value`` as a tuple if it is an iterable collection, not a lone str or None."""
    if value is None or isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        what = f"the str {value!r}" if isinstance(value, str) else repr(value)
        raise TypeError(f"{caller}: {name} must be a list (or tuple, set) of items, got {what}; "
                        f"write e.g. {name}={example}")
    return tuple(value)
