"""Honest timings: the median of repeated runs, with the spread (min and max) beside it.

One timing of a millisecond-long call says little on a shared CPU; the median of
many says more, and the spread says how much to trust it. Everything here prints
numbers in the form the drift guard normalizes (``1.73 ms``, ``2.41x``), so a page
can show timings without making its recorded output change from run to run.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from fxguide._checks import int_at_least

MAX_REPEATS = 10_000
"""The most timed runs (and warm-up runs) one call of :func:`measure` or :func:`compare` makes."""

_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def format_time(seconds: float) -> str:
    """Format a duration with two decimals and a unit (``s``, ``ms``, ``µs``, ``ns``).

    >>> format_time(0.00173)
    '1.73 ms'
    >>> format_time(2.5e-5)
    '25.00 µs'
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
            or seconds < 0:
        raise ValueError(f"format_time: expected a non-negative number of seconds (finite, not a bool), "
                         f"got {seconds!r}")
    for scale, unit in _UNITS:
        if seconds >= scale:
            return f"{seconds / scale:.2f} {unit}"
    return f"{seconds / 1e-9:.2f} ns"


def format_ratio(ratio: float) -> str:
    """Format a speedup ratio as ``2.41x``.

    >>> format_ratio(2.4137)
    '2.41x'
    """
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not math.isfinite(ratio) or ratio <= 0:
        raise ValueError(f"format_ratio: expected a positive ratio (finite, not a bool), got {ratio!r}")
    return f"{ratio:.2f}x"


class _Spread:
    """Median, min and max of a dataclass's one tuple of numbers."""

    def _values(self) -> tuple[float, ...]:
        raise NotImplementedError

    def __post_init__(self) -> None:
        if not self._values():
            raise ValueError(f"{type(self).__name__}: needs at least one {self._what}")

    @property
    def median(self) -> float:
        return statistics.median(self._values())

    @property
    def min(self) -> float:
        return min(self._values())

    @property
    def max(self) -> float:
        return max(self._values())


@dataclass(frozen=True)
class Timing(_Spread):
    """Repeated measurements of one call, in seconds."""

    samples: tuple[float, ...]
    _what = "sample"

    def _values(self) -> tuple[float, ...]:
        return self.samples

    def __str__(self) -> str:
        return (f"{format_time(self.median)} (min {format_time(self.min)}, "
                f"max {format_time(self.max)}, {len(self.samples)} runs)")


@dataclass(frozen=True)
class Speedup(_Spread):
    """How many times faster ``after`` ran than ``before``, from paired runs."""

    ratios: tuple[float, ...]
    _what = "ratio"

    def _values(self) -> tuple[float, ...]:
        return self.ratios

    def __str__(self) -> str:
        return (f"{format_ratio(self.median)} (spread {format_ratio(self.min)} "
                f"to {format_ratio(self.max)}, {len(self.ratios)} pairs)")


def _check(fn: object, repeats: object, warmup: object, caller: str, timer: object = time.perf_counter) -> None:
    if not callable(fn):
        raise TypeError(f"{caller}: expected a callable to time, got {type(fn).__name__}")
    if not callable(timer):
        raise TypeError(f"{caller}: timer must be a clock function such as time.perf_counter, got {timer!r}")
    int_at_least(caller, "repeats", repeats, maximum=MAX_REPEATS)
    int_at_least(caller, "warmup", warmup, minimum=0, maximum=MAX_REPEATS)


def _once(fn: Callable[..., object], args: Sequence[object], timer: Callable[[], float]) -> float:
    start = timer()
    fn(*args)
    return timer() - start


@contextlib.contextmanager
def _noting(caller: str, *fns: Callable[..., object]) -> Iterator[None]:
    """Let an error of the timed function through unchanged, with a note saying it was not the timing's."""
    try:
        yield
    except Exception as error:
        names = " or ".join(getattr(f, "__name__", type(f).__name__) for f in fns)
        error.add_note(f"{caller}: {names} raised this while being timed; the error is the function's own: "
                       f"check that it runs on these arguments before timing it")
        raise


def measure(fn: Callable[..., object], *args: object, repeats: int = 20, warmup: int = 2,
            timer: Callable[[], float] = time.perf_counter) -> Timing:
    """Call ``fn(*args)`` ``warmup`` times untimed, then ``repeats`` times timed.

    ``timer`` is the clock (``time.perf_counter`` unless a test passes its own).

    >>> t = measure(sum, [1, 2, 3], repeats=5)
    >>> len(t.samples), t.min <= t.median <= t.max
    (5, True)
    """
    _check(fn, repeats, warmup, "measure", timer)
    with _noting("measure", fn):
        for _ in range(warmup):
            fn(*args)
        return Timing(tuple(_once(fn, args, timer) for _ in range(repeats)))


def compare(before: Callable[..., object], after: Callable[..., object], *args: object,
            repeats: int = 20, warmup: int = 2,
            timer: Callable[[], float] = time.perf_counter) -> tuple[Timing, Timing, Speedup]:
    """Time ``before`` and ``after`` alternately on the same arguments.

    Alternating the two calls exposes both to the same load on a shared
    machine; each pair gives one ratio ``before / after`` (above 1 means
    ``after`` is faster), so the spread of the speedup is measured, not guessed.

    >>> slow, fast, speedup = compare(sum, sum, range(100), repeats=5)
    >>> len(speedup.ratios)
    5
    """
    _check(before, repeats, warmup, "compare", timer)
    _check(after, repeats, warmup, "compare")
    with _noting("compare", before, after):
        for _ in range(warmup):
            before(*args)
            after(*args)
        pairs = [(_once(before, args, timer), _once(after, args, timer)) for _ in range(repeats)]
    if any(b <= 0 or a <= 0 for b, a in pairs):
        raise RuntimeError("compare: a call took no measurable time; time a bigger workload")
    return (Timing(tuple(b for b, _ in pairs)), Timing(tuple(a for _, a in pairs)),
            Speedup(tuple(b / a for b, a in pairs)))
