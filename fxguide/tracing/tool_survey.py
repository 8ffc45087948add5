"""Call a capture on a dynamic model, try it on another input, and name what happened.

The "Concrete tracing" and "Capture tools compared" pages write one *capture* function per tool
(``capture(model, example, graphs) -> callable``: capture ``model`` on
``example``, append the FX graphs it made to ``graphs``, return what to call).
:func:`survey` does the bookkeeping around it: it calls the capture on the
case's traced input, calls the result on an input that takes another path,
and compares with eager mode. The verdict is computed from what happened,
never written by hand:

- ``fails`` - capturing raised (the exception type is kept);
- ``guards`` - the capture is specialized to the traced input, and the other
  input is refused with a guard error (fxguide's :class:`~fxguide.tracing.concrete.GuardError`,
  or torch's ``Guard failed`` assertion, whose condition is quoted);
- ``silently specializes`` - the other input runs the traced path anyway and
  gives a wrong result or fails inside the graph;
- ``recompiles`` - the other input gives the eager result, from graphs the
  capture added for it (``torch.compile``);
- ``general`` - the other input gives the eager result from the same graphs;
- ``graph break`` - the capture split the traced input's code into several
  graphs.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx
import torch.utils._pytree as pytree
from torch import nn

from fxguide._checks import collection
from fxguide.display import MarkdownTable, markdown_table  # pages import MarkdownTable from here too
from fxguide.models import Case
from fxguide.tracing.concrete import GuardError

Capture = Callable[[nn.Module, torch.Tensor, list], Callable[..., Any]]
"""``capture(model, example, graphs)``: capture, append the graphs made, return what to call."""

_TORCH_GUARD = "Guard failed: "


@dataclass
class Outcome:
    """What one tool did with one model: the capture, its graphs, and the verdict."""

    tool: str
    case: str
    error: BaseException | None = None  # raised while capturing
    graphs: list[fx.GraphModule] = field(default_factory=list)  # captured for the traced input
    other: str = ""  # what calling the capture on the other input did
    other_error: BaseException | None = None
    recompiled: int = 0  # graphs torch.compile added for the other input

    @property
    def verdict(self) -> str:
        """A short table cell, such as ``fails (TraceError)``, ``guards (x.size()[1] == 4)``, ``recompiles``.

        >>> Outcome("export", "m", other="refused by a guard",
        ...         other_error=AssertionError("Guard failed: x.size()[1] >= 4")).verdict
        'guards (x.size()[1] >= 4)'
        """
        if self.error is not None:
            return f"fails ({type(self.error).__name__})"
        parts = []
        if len(self.graphs) > 1:
            parts.append(f"graph break ({len(self.graphs)} graphs)")
        if self.other == "same as eager":
            parts.append("recompiles" if self.recompiled else "general")
        elif self.other == "refused by a guard":
            message = str(self.other_error or "")
            detail = message[len(_TORCH_GUARD):].splitlines()[0] if message.startswith(_TORCH_GUARD) else ""
            parts.append(f"guards ({detail})" if detail else "guards")
        else:
            parts.append(f"silently specializes ({self.other})")
        return ", ".join(parts)

    def report(self) -> str:
        """The verdict, then the first line of any error, as the page prints it.

        >>> print(Outcome("make_fx", "m", other_error=IndexError("index 2 out of range"),
        ...               other="IndexError inside").report())
        m: silently specializes (IndexError inside)
          other input -> IndexError: index 2 out of range
        """
        lines = [f"{self.case}: {self.verdict}"]
        if self.error is not None:
            lines.append(f"  capture -> {_first_line(self.error)}")
        if self.other_error is not None:
            lines.append(f"  other input -> {_first_line(self.other_error)}")
        return "\n".join(lines)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence what torch logs or prints while capturing (it names PIDs, paths and partial graphs)."""
    logging.disable(logging.CRITICAL)
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logging.disable(logging.NOTSET)


def _same(actual: Any, expected: Any) -> bool:
    """Whether ``actual`` is ``expected``: the same structure, each tensor of the same shape and dtype and close.

    ``torch.allclose`` alone would broadcast: a ``(1, n)`` result would pass for a ``(3, n)`` one.

    >>> _same(torch.ones(1, 2), torch.ones(3, 2)), _same((torch.ones(2), 1), (torch.ones(2), 1))
    (False, True)
    """
    got, got_spec = pytree.tree_flatten(actual)
    want, want_spec = pytree.tree_flatten(expected)
    if got_spec != want_spec:
        return False
    for a, b in zip(got, want):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if a.shape != b.shape or a.dtype != b.dtype or not torch.allclose(a, b, equal_nan=True):
                return False
        elif isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor) or a != b:
            return False
    return True


def _is_guard(error: BaseException) -> bool:
    return isinstance(error, GuardError) or str(error).startswith(_TORCH_GUARD)


def _check_arguments(tool: object, capture: object, case: object) -> None:
    if not isinstance(tool, str) or not tool:
        raise TypeError(f"survey: tool must be a non-empty str naming the capture, got {tool!r}")
    if not callable(capture):
        raise TypeError(f"survey: capture must be a function (model, example, graphs) -> callable, "
                        f"got {type(capture).__name__}")
    if not isinstance(case, Case):
        raise TypeError(f"survey: expected a fxguide.models.Case, got {type(case).__name__}")


def survey(tool: str, capture: Capture, case: Case) -> Outcome:
    """Capture ``case.model`` with ``capture`` on its traced input, then try the other input.

    >>> import torch.fx as fx
    >>> from fxguide.models import cases
    >>> def with_symbolic_trace(model, example, graphs):
    ...     graphs.append(fx.symbolic_trace(model))
    ...     return graphs[-1]
    >>> survey("symbolic_trace", with_symbolic_trace, cases()[0]).verdict
    'fails (TraceError)'
    """
    _check_arguments(tool, capture, case)
    outcome = Outcome(tool, case.name)
    try:
        with _quiet():
            try:
                captured = capture(case.model, case.traced_input, outcome.graphs)
            except Exception as error:  # the verdict records which exception
                outcome.error = error
                return outcome
            if not callable(captured):
                raise TypeError(f"survey: the {tool} capture returned {type(captured).__name__}, not a callable")
            first = len(outcome.graphs)
            try:
                result = captured(case.other_input)
            except Exception as error:
                outcome.other_error = error
                outcome.other = "refused by a guard" if _is_guard(error) else f"{type(error).__name__} inside"
            else:
                outcome.other = "same as eager" if _same(result, case.model(case.other_input)) else "wrong result"
            outcome.recompiled = len(outcome.graphs) - first  # graphs added for the other input
            del outcome.graphs[first:]
    finally:
        torch._dynamo.reset()  # forget compiled code, so each survey starts afresh
    return outcome


class Survey(dict[str, Outcome]):
    """The outcomes of one tool, keyed by model name; its ``repr`` is their reports.

    A notebook shows it as the cell's value (one message), rather than as
    printed lines (torch's capture machinery and notebook output streams do
    not mix well).
    """

    def __init__(self, outcomes: dict[str, Outcome] | None = None) -> None:
        super().__init__(outcomes or {})
        for name, outcome in self.items():
            if not isinstance(outcome, Outcome):
                raise TypeError(f"Survey: every value must be an Outcome (from survey()), got "
                                f"{type(outcome).__name__} for {name!r}")

    def __repr__(self) -> str:
        return "\n".join(outcome.report() for outcome in self.values())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def survey_all(tool: str, capture: Capture, models: Iterable[Case]) -> Survey:
    """:func:`survey` one capture on several models, keyed by model name.

    >>> import torch.fx as fx
    >>> from fxguide.models import cases
    >>> def with_symbolic_trace(model, example, graphs):
    ...     graphs.append(fx.symbolic_trace(model))
    ...     return graphs[-1]
    >>> survey_all("symbolic_trace", with_symbolic_trace, cases()[2:])
    loop over rows: fails (TypeError)
      capture -> TypeError: 'Proxy' object cannot be interpreted as an integer
    int from shape: fails (TypeError)
      capture -> TypeError: int() argument must be a string, a bytes-like object or a real number, not 'Proxy'
    """
    models = collection("survey_all", "models", models, "fxguide.models.cases()")
    if not models:
        raise ValueError("survey_all: expected at least one Case (e.g. fxguide.models.cases())")
    outcomes = [survey(tool, capture, case) for case in models]  # survey checks each case
    return Survey({outcome.case: outcome for outcome in outcomes})


def survey_table(outcomes: list[Outcome]) -> MarkdownTable:
    """A Markdown table: one row per model, one column per tool, verdicts in the cells.

    >>> print(survey_table([Outcome("make_fx", "m", other="wrong result")]))
    | model | make_fx |
    |---|---|
    | m | silently specializes (wrong result) |
    """
    if not outcomes or not all(isinstance(o, Outcome) for o in outcomes):
        raise TypeError("survey_table: expected a non-empty list of Outcome (from survey)")
    tools = list(dict.fromkeys(o.tool for o in outcomes))
    rows = list(dict.fromkeys(o.case for o in outcomes))
    cell = {(o.case, o.tool): o.verdict for o in outcomes}
    return markdown_table(["model", *tools], ([row, *(cell.get((row, tool), "") for tool in tools)] for row in rows))
