"""fxguide.display.timing: medians and spreads from repeated runs, printed in the drift guard's form."""

from __future__ import annotations

import itertools

import pytest

from fxsite.drift.normalize import normalize
from fxguide.display.timing import Speedup, Timing, compare, format_ratio, format_time, measure


def fake_clock(durations):
    """A timer whose consecutive start/stop readings are `durations` apart."""
    readings = itertools.accumulate(d for pair in ((0.0, d) for d in durations) for d in pair)
    return lambda: next(readings)


def test_measure_takes_median_min_and_max_of_the_timed_runs():
    t = measure(lambda: None, repeats=5, warmup=0, timer=fake_clock([0.003, 0.001, 0.005, 0.002, 0.004]))
    assert (t.median, t.min, t.max) == pytest.approx((0.003, 0.001, 0.005))
    assert len(t.samples) == 5


def test_warmup_calls_are_not_timed():
    calls = []
    t = measure(lambda: calls.append(1), repeats=2, warmup=3, timer=fake_clock([0.1, 0.2]))
    assert len(calls) == 5 and t.samples == pytest.approx((0.1, 0.2))


def test_compare_pairs_before_and_after_into_ratios():
    # before, after alternate: (0.004, 0.002), (0.006, 0.002), (0.003, 0.003)
    before, after, speedup = compare(lambda: None, lambda: None, repeats=3, warmup=0,
                                     timer=fake_clock([0.004, 0.002, 0.006, 0.002, 0.003, 0.003]))
    assert before.samples == pytest.approx((0.004, 0.006, 0.003))
    assert after.samples == pytest.approx((0.002, 0.002, 0.003))
    assert speedup.ratios == pytest.approx((2.0, 3.0, 1.0))
    assert (speedup.median, speedup.min, speedup.max) == pytest.approx((2.0, 1.0, 3.0))


@pytest.mark.parametrize(("seconds", "text"), [(1.5, "1.50 s"), (0.00173, "1.73 ms"), (2.5e-5, "25.00 µs"),
                                               (3e-8, "30.00 ns"), (0.0, "0.00 ns")])
def test_format_time_picks_the_unit(seconds, text):
    assert format_time(seconds) == text


def test_printed_timings_normalize_to_placeholders():
    timing, speedup = Timing((0.0012, 0.0015, 0.002)), Speedup((1.1, 1.3, 2.0))
    assert normalize(str(timing)) == "<time> (min <time>, max <time>, 3 runs)"
    assert normalize(str(speedup)) == "<ratio>x (spread <ratio>x to <ratio>x, 3 pairs)"


@pytest.mark.parametrize("bad", [-1.0, "1 ms", None])
def test_format_time_rejects_what_is_not_a_duration(bad):
    with pytest.raises(ValueError, match="non-negative number of seconds"):
        format_time(bad)


def test_format_ratio_rejects_non_positive():
    with pytest.raises(ValueError, match="positive ratio"):
        format_ratio(0)


def test_measure_rejects_bad_arguments():
    with pytest.raises(TypeError, match="expected a callable"):
        measure(42)
    with pytest.raises(ValueError, match="repeats must be a positive int"):
        measure(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="warmup must be a non-negative int"):
        measure(lambda: None, warmup=-1)


def test_empty_timings_are_refused():
    with pytest.raises(ValueError, match="at least one sample"):
        Timing(())
    with pytest.raises(ValueError, match="at least one ratio"):
        Speedup(())


def test_compare_refuses_unmeasurably_fast_calls():
    with pytest.raises(RuntimeError, match="no measurable time"):
        compare(lambda: None, lambda: None, repeats=1, warmup=0, timer=fake_clock([0.0, 0.001]))


def test_an_error_of_the_timed_function_passes_unchanged_with_a_note_naming_it():
    def broken():
        return 1 / 0

    with pytest.raises(ZeroDivisionError) as caught:
        measure(broken, repeats=2)
    assert caught.value.__notes__ == ["measure: broken raised this while being timed; the error is the function's "
                                      "own: check that it runs on these arguments before timing it"]
    with pytest.raises(ZeroDivisionError) as caught:
        compare(lambda: None, broken, repeats=2, warmup=0)
    assert caught.value.__notes__[0].startswith("compare: <lambda> or broken raised this while being timed")
