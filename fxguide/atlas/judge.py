"""One atlas cell: run a case in eager mode and through one tool, and say what differs.

The reference is eager mode on a fresh model: called on the case's first input,
then on its second. The tool gets another fresh model, captures it on the first
input and runs the capture on the second. Both calls on the second input are
watched the same way — the value returned, what was printed, logged and warned,
and the state the case observes afterwards — and every random generator is
seeded alike before each call, so a value drawn at run time matches and a value
frozen at capture time does not.
"""

from __future__ import annotations

import contextlib
import io
import logging
import random
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.utils._pytree as pytree

from fxguide.atlas.tools import TOOLS, gb_ids

CAPTURE_SEED, CALL_SEED = 1, 2


@dataclass
class Effects:
    """What one call did besides returning: text printed, messages logged and warned."""

    printed: str = ""
    logged: list[str] = field(default_factory=list)
    warned: list[str] = field(default_factory=list)

    def differences(self, other: Effects) -> list[str]:
        """The kinds of effect that differ from ``other``'s, e.g. ``["print"]``."""
        pairs = [("print", self.printed, other.printed), ("log", self.logged, other.logged),
                 ("warning", self.warned, other.warned)]
        return [name for name, mine, theirs in pairs if mine != theirs]


class _Records(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.split(".")[0] == "torch":  # torch's notes about the capture, not the model's effects
            return
        self.into.append(f"{record.levelname}:{record.name}:{record.getMessage()}")


@contextlib.contextmanager
def watched(seed: int) -> Iterator[Effects]:
    """Seed every generator with ``seed`` and record what runs inside the block prints, logs and warns."""
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    effects = Effects()
    root, torch_log = logging.getLogger(), logging.getLogger("torch")
    handler, level, torch_level = _Records(effects.logged), root.level, torch_log.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    torch_log.setLevel(logging.ERROR)  # Dynamo's graph-break warnings would print on the page
    out, err = io.StringIO(), io.StringIO()
    try:
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            warnings.simplefilter("always")
            yield effects
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        torch_log.setLevel(torch_level)
        effects.printed = out.getvalue()
    effects.warned = [str(w.message) for w in caught if not _torch_noise(w)]


def _torch_noise(warning: warnings.WarningMessage) -> bool:
    # torch's own warnings about the capture (deprecations, "not supported" notes) are not the model's effects
    return "/torch/" in warning.filename.replace("\\", "/")


def same(a: Any, b: Any) -> bool:
    """Whether two results hold the same structure and values (tensors to float32 rounding)."""
    leaves_a, spec_a = pytree.tree_flatten(a)
    leaves_b, spec_b = pytree.tree_flatten(b)
    if spec_a != spec_b:
        return False
    for x, y in zip(leaves_a, leaves_b):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if _fake(x) or _fake(y):
                return False  # a tool that hands back a fake tensor returned no value at all
            if x.shape != y.shape or x.dtype != y.dtype or not torch.allclose(
                    x.detach().double(), y.detach().double(), rtol=1e-5, atol=1e-6, equal_nan=True):
                return False
        elif isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            return False
        elif type(x) is type(y) and hasattr(x, "__dict__") and not isinstance(x, type):
            if not same(vars(x), vars(y)):  # an object pytree does not open (a dataclass not registered)
                return False
        elif x != y:
            return False
    return True


def _fake(tensor: torch.Tensor) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor
    return isinstance(tensor, FakeTensor)


@dataclass
class Cell:
    """The outcome of one case through one tool.

    ``kind`` is ``"same"`` (equal to eager on the second input, effects and state
    included), ``"differs"`` (captured, but something differs: ``differs`` names
    what), ``"refused"`` (captured, but the call on the second input raised),
    ``"error"`` (capturing raised) or ``"runs"`` (the tool runs a case that eager
    mode refuses).
    """

    tool: str
    kind: str
    differs: list[str] = field(default_factory=list)
    error: str = ""  # "Type: first line of the message"
    graphs: int = 0
    breaks: list[str] = field(default_factory=list)

    @property
    def short(self) -> str:
        """The table cell, such as ``same``, ``same, 2 graphs (GB0291)``, ``DIFFERS: log`` or ``error: Unsupported GB0291``."""
        ids = sorted(set(self.breaks))
        if self.kind == "same":
            extra = f", {self.graphs} graphs" if self.graphs > 1 else ""
            return f"same{extra}" + (f" ({', '.join(ids)})" if ids else "")
        if self.kind == "differs":
            return "DIFFERS: " + ", ".join(self.differs)
        if self.kind == "runs":
            return f"runs ({self.error})"
        name = self.error.split(":", 1)[0]
        return f"{'refused' if self.kind == 'refused' else 'error'}: {name}" + (f" {ids[0]}" if ids else "")


def first_line(error: BaseException) -> str:
    """``Type: message``, the message cut at its first line and stripped of addresses."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    text = re.sub(r" at 0x[0-9a-f]+", "", text)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def run(case: Any, tool: str) -> Cell:
    """Run ``case`` (an :class:`fxguide.atlas.Case`) through ``tool`` (a key of :data:`~fxguide.atlas.tools.TOOLS`).

    Eager mode calls a fresh model on the first input, then on the second. The
    tool captures another fresh model on the first input; the capture is called
    on the first input, then on the second, so both sides have run once before
    the call that is compared.
    """
    if tool not in TOOLS and tool != "eager":
        raise ValueError(f"run: unknown tool {tool!r}; choose eager or one of {list(TOOLS)}")
    with case.around():
        return _run(case, tool)


def _run(case: Any, tool: str) -> Cell:
    first, second = case.inputs()
    eager = case.build()
    try:
        with watched(CAPTURE_SEED):
            eager(*first)
    except Exception as error:  # noqa: BLE001 - a construct may fail in eager mode too (print in torch.cond)
        return _eager_fails(case, tool, first, error)
    if tool == "eager":
        return Cell("eager", "same")
    before = case.observe(eager)
    expected: Any = None
    raised: BaseException | None = None  # a case may raise on its second input, as a check should
    with watched(CALL_SEED) as eager_effects, case.context(eager):
        try:
            expected = eager(*second)
        except Exception as error:  # noqa: BLE001
            raised = error
    eager_second = second
    expected_change = changes(before, case.observe(eager))

    model = case.build()
    first, second = case.inputs()  # fresh inputs: eager mode may have changed its own in place
    captured = None
    try:
        with watched(CAPTURE_SEED):
            captured = TOOLS[tool](model, first)
            captured.run(*first)
    except Exception as error:  # noqa: BLE001 - every failure is an outcome to show
        breaks = captured.breaks() if captured else []
        return Cell(tool, "error", error=first_line(error), breaks=breaks + gb_ids(str(error)))
    holder = captured.run if captured.holds_state else model
    before = observe(case, holder, model)
    try:
        with watched(CALL_SEED) as effects, case.context(captured.run):
            got = captured.run(*second)
    except Exception as error:  # noqa: BLE001
        if raised is not None and type(error) is type(raised):
            return Cell(tool, "same", graphs=captured.graphs(), breaks=captured.breaks())
        return Cell(tool, "refused", error=first_line(error), graphs=captured.graphs(),
                    breaks=captured.breaks() + gb_ids(str(error)))
    if raised is not None:
        return Cell(tool, "differs", differs=[f"no {type(raised).__name__}"], graphs=captured.graphs(),
                    breaks=captured.breaks())
    differs = [] if same(got, expected) else ["output"]
    if not same(second, eager_second):
        differs.append("input")  # an in-place update of an input, made by one side only
    differs += effects.differences(eager_effects)
    if not _same_state(changes(before, observe(case, holder, model)), expected_change):
        differs.append("state")
    return Cell(tool, "differs" if differs else "same", differs=differs, graphs=captured.graphs(),
                breaks=captured.breaks())


def _eager_fails(case: Any, tool: str, first: tuple, error: BaseException) -> Cell:
    """When eager mode raises on the first input, a tool is judged on whether it raises too."""
    if tool == "eager":
        return Cell("eager", "error", error=first_line(error), breaks=gb_ids(str(error)))
    try:
        with watched(CAPTURE_SEED):
            captured = TOOLS[tool](case.build(), first)
            captured.run(*first)
    except Exception as tool_error:  # noqa: BLE001
        return Cell(tool, "error", error=first_line(tool_error), breaks=gb_ids(str(tool_error)))
    return Cell(tool, "runs", error=f"eager raises {type(error).__name__}", graphs=captured.graphs(),
                breaks=captured.breaks())


def observe(case: Any, holder: Any, model: Any) -> Any:
    """What ``case`` observes on the object that holds the state, or on the model when that one lacks it."""
    try:
        return case.observe(holder)
    except AttributeError:
        return case.observe(model)


def changes(before: Any, after: Any) -> Any:
    """What changed between two observations: for dicts, the entries that differ (a deleted one as
    ``"<deleted>"``); otherwise the new value, or ``"<unchanged>"``."""
    if isinstance(before, dict) and isinstance(after, dict):
        return {key: changes(before[key], after[key]) if key in before and key in after
                else after.get(key, "<deleted>") for key in sorted(before.keys() | after.keys())
                if key not in before or key not in after or not _same_state(before[key], after[key])}
    if _same_state(before, after):
        return "<unchanged>"
    if _number(before) and _number(after):
        return ("by", after - before)  # a counter shared by both runs (a global) is compared by its step
    return after


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same_state(a: Any, b: Any) -> bool:
    try:
        return same(a, b)
    except Exception:  # noqa: BLE001 - structures that do not flatten alike are not the same
        return False
