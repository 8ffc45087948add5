"""Diagnose your own model: every capture tool on it, checked against eager, each failure linked to its fix.

>>> import torch
>>> from fxguide.models import TinyMLP
>>> result = diagnose(TinyMLP(), torch.randn(2, 4))
>>> result.ok, [r.verdict for r in result.results][:2]
(True, ['matches eager', 'matches eager'])

:func:`diagnose` takes the model and its example inputs, as you would call the
model. For each tool (:data:`TOOLS`) it captures the model on the example,
calls the capture on a second input that it makes (the same shapes with other
values; another batch size for the dynamic-batch export), and compares with
eager. A failure gets its first error (type, message, and the line of model
code it came from), a cause class and the guide section that explains the fix
(:mod:`fxguide.diagnose.causes`).

A diagnosis leaves the model as it was (:class:`~fxguide.diagnose.safety.Snapshot`
puts it back after every tool), gives each tool a time limit, and goes on to the
next tool whatever one tool raises. The package is callable:
``fxguide.diagnose(model, x)`` is ``fxguide.diagnose.diagnose(model, x)``.
From a shell: ``python -m fxguide.diagnose package.module:factory --input 1x3x224x224``.

The model-zoo survey of the guide runs through :func:`examine`, with its own
inputs, so the survey and a reader's diagnosis cannot disagree.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import io
import logging
import random
import sys
import time
import types
import warnings
from pathlib import Path
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from fxguide._checks import finite_number
from fxguide.diagnose import captures
from fxguide.diagnose.compare import Inputs, check_inputs, clone, compare_outputs, like
from fxguide.diagnose.compare import compare as _compare
from fxguide.diagnose.messages import describe, frames, origin
from fxguide.diagnose.result import FROZE_RANDOM, FROZE_STATE, NONDETERMINISTIC, TITLES, Diagnosis, ToolResult
from fxguide.diagnose.safety import CallerState, Snapshot, ToolTimeout, time_limit

TOOLS = ("symbolic_trace", "concrete_trace", "export_strict", "export", "export_dynamic_batch",
         "compile_fullgraph", "library_route")
"""Every tool, in the order a diagnosis runs them (``library_route`` only for timm and torchvision models)."""

CAPTURES: dict[str, captures.Capture] = {
    "symbolic_trace": captures.symbolic_trace,
    "concrete_trace": captures.concrete_trace,
    "export_strict": captures.export_strict,
    "export": captures.export,
    "export_dynamic_batch": captures.export_dynamic_batch,
    "compile_fullgraph": captures.compile_fullgraph,
}
TIMEOUT = 300.0
"""Seconds one tool may take on one model (capture and second call together)."""

_NOT_GIVEN = object()

EXAMPLE_SEED, OTHER_SEED = 0, 1
SEEDS = (0, 1, 2, 3)
"""The seeds a diagnosis runs the model under (torch's, Python's ``random`` and NumPy's, all three): the first for
every comparison, the others to tell a model whose output depends on random draws, and a capture that froze one."""



def seed_everything(seed: int) -> None:
    """Seed torch (every device), Python's ``random`` and NumPy's global generator (when NumPy is imported)."""
    torch.manual_seed(seed)
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)


def call(module: Callable[..., Any], inputs: Inputs, seed: int = 0) -> Any:
    """``module(*args, **kwargs)`` on a copy of the inputs, without gradients, every random generator seeded.

    The copy keeps a model that writes into its inputs from changing them for the next call.
    """
    if not callable(module):
        raise TypeError(f"call: module must be callable, got {type(module).__name__}")
    args, kwargs = clone(inputs)
    seed_everything(seed)
    with torch.no_grad():
        return module(*args, **kwargs)


@dataclasses.dataclass
class Reference:
    """Eager's outputs on one input, from the model's state before any tool ran, and what they show.

    ``outputs[seed]`` is eager's output under ``seed`` (:data:`SEEDS`); ``second`` its output when called a
    second time in a row (seed ``SEEDS[0]``); ``float64`` the output of the model run in float64 (only for
    outputs below float32; ``None`` otherwise or when the model cannot run in float64). ``random``: eager's
    output changes with the seed; ``history``: it changes from one call to the next; ``unstable``: it changes
    with neither (randomness no seed controls).
    """

    outputs: dict[int, Any]
    second: Any = None
    float64: Any = None
    random: bool = False
    history: bool = False
    unstable: bool = False

    @property
    def first(self) -> Any:
        return self.outputs[SEEDS[0]]

    def kinds(self) -> list[str]:
        """What the eager runs showed, in words (``[]``: a deterministic model)."""
        return (["eager depends on the random seed"] * self.random + ["eager depends on earlier calls"] * self.history
                + ["eager gives other outputs for the same input, seed and state"] * self.unstable)


def reference(model: nn.Module, inputs: Inputs, reset: Callable[[], None], checks: bool = True,
              first: Any = _NOT_GIVEN) -> Reference:
    """Eager on ``inputs``: under every seed, twice in a row, and in float64 when the output is below float32.

    ``reset()`` puts the model back between runs. Without ``checks``, only the first seed's output.
    """
    reset()
    out = call(model, inputs, SEEDS[0]) if first is _NOT_GIVEN else first
    ref = Reference({SEEDS[0]: out})
    if checks:
        ref.second = call(model, inputs, SEEDS[0])  # no reset: the state the first call left
        reset()
        ref.unstable = _differ(call(model, inputs, SEEDS[0]), out)
        ref.history = _differ(ref.second, out)
        for seed in SEEDS[1:]:
            reset()
            ref.outputs[seed] = call(model, inputs, seed)
        ref.random = any(_differ(o, out) for o in ref.outputs.values())
    reset()
    if _low_precision(out):
        ref.float64 = _in_float64(model, inputs)
        reset()
    return ref


def _differ(a: Any, b: Any) -> bool:
    comparison = compare_outputs(a, b)
    return bool(comparison.mismatch) and comparison.compared


def _low_precision(output: Any) -> bool:
    return any(isinstance(leaf, torch.Tensor) and leaf.dtype in (torch.float16, torch.bfloat16)
               for leaf in pytree.tree_leaves(output))


def _in_float64(model: nn.Module, inputs: Inputs) -> Any:
    """The model's output with its floating parameters, buffers and inputs in float64, or ``None`` if it fails.

    A float64 copy of a bfloat16 model is four times its weights: a 7 B model's would not fit beside it. So each
    module's own floating tensors become float64 only while that module runs (a forward pre-hook swaps each
    one's ``.data`` for a float64 copy, a forward hook swaps it back: the same storage, unchanged), and at most
    one module's copies exist at a time beyond those of the modules it runs inside. A model that uses a tensor
    outside its module's forward can fail that way (a float64 input meets a bfloat16 weight): it is then run
    with every tensor swapped at once.
    """
    args, kwargs = inputs
    to64 = lambda v: v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v  # noqa: E731
    wide = (pytree.tree_map(to64, tuple(args)), pytree.tree_map(to64, dict(kwargs)))
    try:
        with _float64_while_running(model):
            return call(model, wide, SEEDS[0])
    except Exception:  # noqa: BLE001 - a tensor used outside its module's forward: swap them all at once
        pass
    try:
        with _swapped_to_float64([(id(t), t) for t in (*model.parameters(), *model.buffers())]):
            return call(model, wide, SEEDS[0])
    except Exception:  # noqa: BLE001 - a model that cannot run in float64 is judged by the dtype's tolerance
        return None


@contextlib.contextmanager
def _swapped_to_float64(tensors: list[tuple[int, torch.Tensor]]) -> Iterator[None]:
    """Each floating tensor's ``.data`` swapped for a float64 copy, and back on the way out."""
    floating = {key: t for key, t in tensors if t.is_floating_point() and t.dtype != torch.float64}
    saved = {key: t.data for key, t in floating.items()}
    try:
        for key, t in floating.items():
            t.data = saved[key].double()
        yield
    finally:
        for key, t in floating.items():
            t.data = saved[key]


@contextlib.contextmanager
def _float64_while_running(model: nn.Module) -> Iterator[None]:
    """Each module's own floating parameters and buffers in float64 while its forward runs (see :func:`_in_float64`)."""
    open_swaps: dict[int, list[Any]] = {}  # id(module) -> [depth, the swap's context]

    def enter(module: nn.Module, _args: Any) -> None:
        entry = open_swaps.setdefault(id(module), [0, None])
        if entry[0] == 0:
            own = [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]
            entry[1] = _swapped_to_float64([(id(t), t) for _, t in own if t is not None])
            entry[1].__enter__()
        entry[0] += 1

    def leave(module: nn.Module, _args: Any, _output: Any) -> None:
        entry = open_swaps[id(module)]
        entry[0] -= 1
        if entry[0] == 0:
            entry[1].__exit__(None, None, None)

    owners = [m for m in model.modules()
              if any(t is not None and t.is_floating_point()
                     for t in (*m.parameters(recurse=False), *m.buffers(recurse=False)))]
    handles = [h for m in owners for h in (m.register_forward_pre_hook(enter),
                                           m.register_forward_hook(leave, always_call=True))]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
        for depth_and_swap in open_swaps.values():  # an exception between a pre-hook and its hook
            if depth_and_swap[0] > 0:
                depth_and_swap[1].__exit__(None, None, None)


def judge(captured: Callable[..., Any], inputs: Inputs, ref: Reference, reset: Callable[[], None],
          result: ToolResult) -> None:
    """Call ``captured`` as eager was called for ``ref`` and set ``result``'s ``matches`` and ``mismatch``.

    A mismatch on another seed, where the capture's output stays the same, is ``"froze a random draw"``;
    on a second call in a row, where it stays the same, ``"froze state from the first call"``.
    """
    if ref.unstable:
        result.matches, result.mismatch = False, f"{NONDETERMINISTIC}: " + "; ".join(ref.kinds())
        return
    reset()
    got = call(captured, inputs, SEEDS[0])
    comparison = compare_outputs(got, ref.first, ref.float64)
    result.largest_difference = comparison.largest_difference
    mismatch = comparison.mismatch
    if ref.history and not mismatch:
        again = call(captured, inputs, SEEDS[0])
        if _compare(again, ref.second):
            mismatch = FROZE_STATE if not _differ(again, got) else "values differ on a second call"
    if ref.random and comparison.compared:
        outputs = {SEEDS[0]: got}
        for seed in SEEDS[1:]:
            reset()
            outputs[seed] = call(captured, inputs, seed)
        wrong = [s for s in SEEDS if _compare(outputs[s], ref.outputs[s], ref.float64 if s == SEEDS[0] else None)]
        if wrong:
            frozen = not any(_differ(outputs[s], got) for s in SEEDS)
            mismatch = FROZE_RANDOM if frozen else (mismatch or f"values differ under seed {wrong[0]}")
    reset()
    result.matches, result.mismatch = not mismatch, mismatch


def run_tool(tool: str, model: nn.Module, example: Inputs, other: Inputs, eager_other: Any,
             timeout: float = TIMEOUT, capture: captures.Capture | None = None,
             reset: Callable[[], None] | None = None, more: Sequence[tuple[int, Inputs, Any]] = ()) -> ToolResult:
    """Capture ``model`` with ``tool`` (or ``capture``) on ``example``; compare on ``other`` with ``eager_other``.

    ``eager_other`` is eager's output on ``other``, or a :class:`~fxguide.diagnose.Reference` (which also
    tells frozen random draws and frozen state). ``reset()`` puts the model back as it was before the capture (the state eager's
    reference started from); ``more`` lists further ``(batch size, inputs, eager output or Reference)`` checked when the
    capture admits that batch size (the dynamic-batch export). Never raises for what the tool or the capture
    does: the result says it.
    """
    if capture is None and tool not in CAPTURES:
        raise ValueError(f"run_tool: unknown tool {tool!r}; choose from {sorted(CAPTURES)}, or pass capture=")
    if not isinstance(model, nn.Module) and not callable(model):
        raise TypeError(f"run_tool: model must be an nn.Module or a function, got {type(model).__name__}; "
                        "pass the model itself (an instance), e.g. run_tool('symbolic_trace', MyModel(), ...)")
    if capture is not None and not callable(capture):
        raise TypeError(f"run_tool: capture must be callable as capture(model, args, kwargs), got {capture!r}")
    if reset is not None and not callable(reset):
        raise TypeError(f"run_tool: reset must be a function of no arguments, got {reset!r}")
    timeout = finite_number("run_tool", "timeout", timeout, positive=True)
    example, other = check_inputs("run_tool", example), check_inputs("run_tool", other)
    ref = eager_other if isinstance(eager_other, Reference) else Reference({SEEDS[0]: eager_other})
    reset = reset or (lambda: None)
    result = ToolResult(tool)
    start = time.perf_counter()
    captured = None
    try:
        with time_limit(timeout), warnings.catch_warnings(), _quiet():
            warnings.simplefilter("ignore")
            seed_everything(SEEDS[0])
            try:
                captured, nodes = (capture or CAPTURES[tool])(model, *clone(example))
            except Exception as exc:
                result.error_type, result.error = describe(exc)
                result.where, result.frames = origin(exc), frames(exc)
                return result
            result.captured, result.nodes = True, nodes
            result.note = _decisions(captured) if tool == "concrete_trace" else ""
            try:
                judge(captured, other, ref, reset, result)
            except Exception as exc:
                result.matches = False
                result.mismatch = "{}: {}".format(*describe(exc))
                result.where, result.frames = origin(exc), frames(exc)
                return result
            admitted = getattr(captured, "fxguide_batch_range", None)
            for size, inputs, eager in more if result.matches else ():
                if admitted is None or size > admitted[1]:  # below the lowest: torch's 0/1 assumption, unchecked
                    continue
                try:
                    extra = ToolResult(tool)
                    judge(captured, inputs, eager if isinstance(eager, Reference) else Reference({SEEDS[0]: eager}),
                          reset, extra)
                except Exception as exc:  # noqa: BLE001 - the range admits the size: an error is a failure
                    extra.matches, extra.mismatch = False, "{}: {}".format(*describe(exc))
                if not extra.matches:
                    result.matches, result.mismatch = False, f"{extra.mismatch} on a batch of {size}"
                    result.largest_difference = extra.largest_difference
                    break
            return result
    except ToolTimeout as exc:
        if result.captured:
            result.matches, result.mismatch = False, f"Timeout: {exc}"
        else:
            result.error_type, result.error = "Timeout", str(exc)
        return result
    finally:
        del captured
        if tool == "compile_fullgraph":
            torch._dynamo.reset()
        result.seconds = round(time.perf_counter() - start, 2)


def _decisions(captured: Any) -> str:
    """The decisions a concrete trace took, as the row's note: the inputs its graph holds for."""
    from fxguide.tracing.concrete import decisions
    try:
        taken = [d for d in decisions(captured) if d.kind in ("branch", "loop", "int", "float")]
    except TypeError:
        return ""
    if not taken:
        return ""
    shown = "; ".join(f"{Path(d.filename).name}:{d.lineno} {d.kind} {d.code.strip()!r} -> {d.value!r}"
                      for d in taken[:3])
    more = f" and {len(taken) - 3} more" if len(taken) > 3 else ""
    return (f"guarded: holds only for inputs that give the same answers to the {len(taken)} decision(s) it took "
            f"on traced sizes and data (it raises GuardError on others): {shown}{more}")


@contextlib.contextmanager
def _quiet() -> Any:
    """Keep what the tools print (torch logs a failing graph, and warnings) out of the reader's output."""
    logger = logging.getLogger("torch")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)


def examine(model: nn.Module, example: Inputs, other: Inputs | None = None,
            batch: Callable[[int, int], Inputs] | None = None, tools: Sequence[str] = TOOLS,
            timeout: float = TIMEOUT, eager_other: Any = None) -> Diagnosis:
    """:func:`diagnose` with every choice open: the tools, the time limit, and the inputs.

    ``other`` is the second input (by default :func:`~fxguide.diagnose.compare.like`
    the example); ``batch(size, seed)`` makes the dynamic-batch export's inputs
    (by default the example's shapes with ``size`` as the first dimension). The
    dynamic-batch export captures on a batch of 2 and compares on a batch of 3,
    and on a batch of 1 when the exported program's range admits it.
    ``eager_other``, when given, is taken as eager's output on ``other``
    under the first seed. ``timeout`` limits each tool, and each group of
    eager reference calls (a :class:`TimeoutError` when those run past it).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"diagnose: model must be a torch.nn.Module, got {type(model).__name__}; "
                        "wrap a function in a Module whose forward calls it")
    unknown = [t for t in tools if t not in TOOLS] if isinstance(tools, (list, tuple)) else None
    if unknown is None or unknown or not tools:
        raise ValueError(f"diagnose: tools must be a non-empty list or tuple of {list(TOOLS)}, got {tools!r}")
    if list(tools) == ["library_route"] and captures.library_of(model) is None:
        raise ValueError(f"diagnose: tools=['library_route'], but {type(model).__name__} comes from neither timm nor "
                         f"torchvision ({type(model).__module__}), so there is no library route to run; "
                         "choose other tools")
    timeout = finite_number("diagnose", "timeout", timeout, positive=True)
    lazy = [name for name, p in model.named_parameters() if isinstance(p, nn.parameter.UninitializedParameter)]
    if lazy:
        raise ValueError(f"diagnose: {type(model).__name__} has lazy parameters not yet initialized ({lazy[0]}"
                         f"{' and others' if len(lazy) > 1 else ''}); call the model once on an example to "
                         "initialize them, then diagnose it")
    if batch is not None and not callable(batch):
        raise TypeError(f"diagnose: batch must be a function batch(size, seed) -> (args, kwargs), got {batch!r}")
    args, kwargs = check_inputs("diagnose", example)
    other = check_inputs("diagnose", other) if other is not None else like((args, kwargs), OTHER_SEED)
    batch = batch or (lambda size, seed: like((args, kwargs), seed, batch=size))
    with CallerState():
        snapshot = Snapshot(model)
        ref = _eager_reference(model, (args, kwargs), other, snapshot.restore, timeout, eager_other)
        diagnosis = Diagnosis(type(model).__name__, describe_inputs((args, kwargs)), eager=ref.kinds())
        for tool in tools:
            capture = None
            inputs: tuple[Inputs, Inputs, Any] = ((args, kwargs), other, ref)
            more: list[tuple[int, Inputs, Any]] = []
            if tool == "library_route":
                library = captures.library_of(model)
                if library is None:
                    continue
                capture = captures.LIBRARY_ROUTES[library]
            if tool == "export_dynamic_batch":
                try:
                    with time_limit(timeout):
                        batch_other = batch(3, OTHER_SEED)
                        checks = ref.random or ref.history or ref.unstable
                        inputs = (batch(2, EXAMPLE_SEED), batch_other,
                                  reference(model, batch_other, snapshot.restore, checks))
                        more = _batch_of_one(model, batch, snapshot.restore)
                except (Exception, ToolTimeout) as exc:
                    snapshot.restore()
                    diagnosis.results.append(ToolResult(tool, captured=None, error="eager fails on a batch of 3: "
                                                        "{}: {}".format(*describe(exc))))
                    continue
            diagnosis.results.append(run_tool(tool, model, *inputs, timeout, capture, snapshot.restore, more))
            snapshot.restore()
            gc.collect()
        diagnosis.unchanged = not (left := snapshot.differences())
        diagnosis.left_changed = left
    return diagnosis


def _eager_reference(model: nn.Module, example: Inputs, other: Inputs, reset: Callable[[], None], timeout: float,
                     eager_other: Any) -> Reference:
    """Eager on the example (it must run) and :func:`reference` on the second input, within ``timeout``."""
    for inputs, which in ((example, "the example inputs"), (other, "the second input diagnose made")):
        try:
            with time_limit(timeout):
                if inputs is example:
                    call(model, inputs)
                    continue
                return reference(model, inputs, reset, first=_NOT_GIVEN if eager_other is None else eager_other)
        except ToolTimeout:
            reset()
            raise TimeoutError(f"diagnose: the model's eager run on {which} took longer than the time limit "
                               f"({timeout:g} s), so no capture can be compared with it; pass a larger timeout= "
                               "(--timeout), or smaller inputs") from None
        except Exception as exc:
            exc.add_note(f"fxguide.diagnose: the model raises this in eager mode on {which}, so no capture "
                         "can be compared with it; check the inputs"
                         + (", or pass your own with examine(model, example, other=...)"
                            if inputs is other else ""))
            raise
        finally:
            reset()
    raise AssertionError("unreachable")


def _batch_of_one(model: nn.Module, batch: Callable[[int, int], Inputs], reset: Callable[[], None]
                  ) -> list[tuple[int, Inputs, Reference]]:
    """``[(1, inputs, eager's reference)]`` for the dynamic-batch row, or ``[]`` when eager cannot run a batch of 1.

    The reference holds eager's float64 run too when the output is below float32, so that a batch of 1 is
    judged as the other inputs are, not by a fixed tolerance that rounding alone exceeds.
    """
    try:
        ones = batch(1, OTHER_SEED)
        return [(1, ones, reference(model, ones, reset, checks=False))]
    except Exception:  # noqa: BLE001 - a model that cannot take a batch of 1 (batch norm in train mode)
        return []
    finally:
        reset()


def diagnose(model: nn.Module, *example_args: Any, **example_kwargs: Any) -> Diagnosis:
    """Run every capture tool on ``model`` called as ``model(*example_args, **example_kwargs)``.

    Returns a :class:`~fxguide.diagnose.result.Diagnosis`: print it for a table,
    or use ``to_json()`` and ``to_markdown()``. For other tools, inputs or time
    limits, call :func:`examine`.
    """
    return examine(model, (example_args, example_kwargs))


def describe_inputs(inputs: Inputs) -> str:
    """The inputs' shapes, as ``x 1x3x224x224`` style text.

    >>> describe_inputs(((torch.zeros(1, 3),), {"mask": torch.ones(1, 3, dtype=torch.bool)}))
    '1x3 float32, mask=1x3 bool'
    """
    def one(value: Any) -> str:
        if isinstance(value, torch.Tensor):
            return "x".join(map(str, value.shape)) + " " + str(value.dtype).removeprefix("torch.")
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(one(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k}: {one(v)}" for k, v in value.items()) + "}"
        return repr(value) if len(repr(value)) <= 20 else type(value).__name__
    args, kwargs = check_inputs("describe_inputs", inputs)
    return ", ".join([*(one(a) for a in args), *(f"{k}={one(v)}" for k, v in kwargs.items())]) or "no inputs"


class _CallableModule(types.ModuleType):
    """The package itself is callable: ``fxguide.diagnose(model, x)``."""

    def __call__(self, model: nn.Module, *example_args: Any, **example_kwargs: Any) -> Diagnosis:
        return diagnose(model, *example_args, **example_kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["CAPTURES", "SEEDS", "TIMEOUT", "TITLES", "TOOLS", "Diagnosis", "Reference", "ToolResult", "call",
           "diagnose", "describe_inputs", "examine", "judge", "reference", "run_tool", "seed_everything"]
