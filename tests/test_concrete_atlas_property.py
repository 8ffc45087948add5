"""The concrete tracer's rule on models made of atlas rows: equal to eager mode, or refuse, never differ.

Every row of the behaviour atlas (:mod:`fxguide.atlas.cases`) is a small module doing one thing a model's
code does. A drawn model holds two or three rows of any families as submodules, each called on its own
inputs, and returns their outputs. :func:`fxguide.atlas.judge.run` judges it as it judges a row: eager mode
and the captured graph each run on a second input, and the output, the inputs, what was printed, logged and
warned, and the state every row observes (buffers, attributes, generators...) are compared.

Rows that pass alone can still fail together: one row's input container beside another's plain input, one
row's random draw after another's reseeding. The draws are seeded, so a failure names the same rows on every
run.
"""

from __future__ import annotations

import contextlib
import functools
import random
from collections.abc import Iterator

import pytest
from torch import nn

from fxguide.atlas import Case, all_cases, judge
from fxguide.tracing.concrete import questions

pytestmark = pytest.mark.long

ROWS = all_cases()
DRAWS = [random.Random(seed).sample(ROWS, random.Random(-seed).randint(2, 3)) for seed in range(250)]


def composed(rows: list[Case]) -> Case:
    """A row whose model holds ``rows`` as submodules ``p0``, ``p1``... and calls each on its own inputs."""
    arity = [len(row.inputs()[0]) for row in rows]

    def __init__(self) -> None:
        nn.Module.__init__(self)
        for i, row in enumerate(rows):
            self.add_module(f"p{i}", row.model())

    def forward(self, *args):
        outputs, at = [], 0
        for i, count in enumerate(arity):
            outputs.append(getattr(self, f"p{i}")(*args[at:at + count]))
            at += count
        return tuple(outputs)

    def inputs() -> tuple[tuple, tuple]:
        pairs = [row.inputs() for row in rows]
        return tuple(a for first, _ in pairs for a in first), tuple(a for _, second in pairs for a in second)

    def observe(root: nn.Module) -> dict:
        return {f"p{i}": row.observe(getattr(root, f"p{i}")) for i, row in enumerate(rows)}

    @contextlib.contextmanager
    def context(run) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for row in rows:
                stack.enter_context(row.context(run))
            yield

    model = type("Composed", (nn.Module,), {"__init__": __init__, "forward": forward})
    return Case(" + ".join(row.title for row in rows), "composed", model, "", inputs, observe, "", context)


@functools.cache
def alone(row: Case) -> str:
    return judge.run(row, "concrete_trace").kind


@functools.cache
def judged(state_diff: bool = True) -> list[tuple[list[str], str, str]]:
    """(titles, outcome, what differs or the error) for every draw, the state diff on or off."""
    found = []
    if not state_diff:
        questions._OFF.add("python-state")
    try:
        for rows in DRAWS:
            cell = judge.run(composed(rows), "concrete_trace")
            found.append(([row.title for row in rows], cell.kind, ", ".join(cell.differs) or cell.error[:160]))
    finally:
        questions._OFF.discard("python-state")
    return found


def test_a_model_made_of_atlas_rows_runs_as_eager_mode_does_or_raises():
    found = judged()
    silent = [(titles, kind, what) for titles, kind, what in found if kind in ("differs", "runs")]
    assert not silent, silent
    assert {kind for _, kind, _ in found} >= {"same", "refused", "error"}  # the draws reach every outcome


def test_rows_that_run_as_eager_mode_alone_run_as_eager_mode_together():
    """No false refusal from composing: found a ``*args`` forward given a dict beside a tensor, and a dataclass
    input beside a dict, both refused (fixed in the input check)."""
    together = [(titles, kind, what) for (titles, kind, what), rows in zip(judged(), DRAWS)
                if all(alone(row) == "same" for row in rows)]
    print(f"{len(together)} drawn models are made of rows that each run as eager mode does")
    assert len(together) >= 40, len(together)
    assert all(kind == "same" for _, kind, _ in together), [t for t in together if t[1] != "same"]


def test_switching_the_state_diff_off_breaks_models_made_of_atlas_rows():
    found = judged(state_diff=False)
    broken = [(titles, what) for titles, kind, what in found if kind in ("differs", "runs")]
    print(f"with the state diff off, {len(broken)} of {len(found)} drawn models differ from eager mode")
    assert len(broken) >= 5, broken
