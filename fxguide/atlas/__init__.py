"""The behaviour atlas: what each capture tool does with each thing a model's code does.

A *case* is a small module whose ``forward`` does one thing (prints, logs, reads
a tensor's value, draws a random number, mutates a buffer...). The atlas runs
every case through every tool of :data:`fxguide.atlas.tools.TOOLS` and compares
the capture with eager mode on a second input (:func:`fxguide.atlas.judge.run`).
The cases live one family a module in :mod:`fxguide.atlas.cases`; the atlas
pages in the guide run them and show the tables.

>>> from fxguide.atlas import family_names
>>> "side_effects" in family_names()
True
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import inspect
import pkgutil
import re
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ContextManager

import torch
from torch import nn


def default_state(model: nn.Module) -> dict[str, Any]:
    """What a case compares unless it says otherwise: buffers, parameters and plain attributes, copied.

    Plain attributes are the numbers, strings, lists, dicts and tuples in the
    ``__dict__`` of the model and its submodules (a forward may set or grow them).
    """
    state: dict[str, Any] = {name: buffer for name, buffer in model.named_buffers()}
    state.update({f"param:{name}": p for name, p in model.named_parameters()})
    state.update({f"grad:{name}": p.grad for name, p in model.named_parameters() if p.grad is not None})
    for prefix, module in model.named_modules():
        for key, value in vars(module).items():
            if not key.startswith("_") and key != "training" and isinstance(
                    value, (int, float, str, bool, list, tuple, dict, type(None), torch.Tensor)):
                state[f"{prefix}.{key}" if prefix else key] = value
    return {key: _copied(value) for key, value in state.items()}


def _copied(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - an attribute that does not copy is compared as it is
        return value


def two_inputs() -> tuple[tuple, tuple]:
    """The default inputs: two ``(2, 4)`` tensors of different values (seeded)."""
    generator = torch.Generator().manual_seed(0)
    return (torch.randn(2, 4, generator=generator),), (torch.randn(2, 4, generator=generator),)


def no_change(run: Any) -> ContextManager[Any]:
    """The default :attr:`Case.context`: the second call runs as the first did."""
    return contextlib.nullcontext()


@contextlib.contextmanager
def in_mode(run: Any, mode: str) -> Iterator[None]:
    """Call ``run.train()`` or ``run.eval()`` before the call (as a reader does after capturing), and undo it."""
    getattr(run, mode)()
    try:
        yield
    finally:
        run.train()


@dataclass(frozen=True)
class Case:
    """One row of the atlas: a construct, the module that does it, and what to do about it."""

    title: str
    family: str
    model: type[nn.Module]
    fix: str
    inputs: Callable[[], tuple[tuple, tuple]] = two_inputs
    observe: Callable[[nn.Module], Any] = default_state
    note: str = ""
    context: Callable[[Any], ContextManager[Any]] = no_change
    """What changes around the call on the second input, given what is called (a mode set, a variable set)."""
    around: Callable[[], ContextManager[Any]] = contextlib.nullcontext
    """What holds around every call and capture of the row (a fix's setting, such as a Dynamo config)."""

    @property
    def fixed(self) -> Case | None:
        """The row's fix as a row of its own (its code, run like any row), or ``None`` when it has none."""
        found = _FIXES.get(self.model)
        if found is None:
            return None
        model, around = found
        # A fix keeps its state where torch can see it (buffers), so the default observation reads it.
        return Case(f"{self.title}, fixed", self.family, model, self.fix, self.inputs, default_state, self.note,
                    self.context, around)

    @property
    def anchor(self) -> str:
        """The row's HTML id, made from its title (``logger.warning(...)`` gives ``atlas-logger-warning``)."""
        return "atlas-" + re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")

    def build(self) -> nn.Module:
        """A fresh model, its weights seeded so every build is the same."""
        torch.manual_seed(0)
        return self.model()

    @property
    def code(self) -> str:
        """The case's source, as the page shows it."""
        return textwrap.dedent(inspect.getsource(self.model)).strip()


_CASES: dict[str, list[Case]] = {}
_FIXES: dict[type, tuple[type, Callable[[], ContextManager[Any]]]] = {}


def case(title: str, *, fix: str, inputs: Callable[[], tuple[tuple, tuple]] = two_inputs,
         observe: Callable[[nn.Module], Any] = default_state, note: str = "",
         context: Callable[[Any], ContextManager[Any]] = no_change) -> Callable[[type], type]:
    """Register the decorated module class as a row of its module's family."""
    def register(cls: type[nn.Module]) -> type[nn.Module]:
        family = cls.__module__.rsplit(".", 1)[-1]
        _CASES.setdefault(family, []).append(Case(title, family, cls, fix, inputs, observe, note, context))
        return cls
    return register


def fix_for(row: type[nn.Module], *, around: Callable[[], ContextManager[Any]] = contextlib.nullcontext
            ) -> Callable[[type], type]:
    """Register the decorated module class as the fix of the row whose class is ``row``.

    ``around`` is a setting the fix needs around capture and calls (for example
    ``lambda: torch._dynamo.config.patch(capture_scalar_outputs=True)``).
    """
    def register(cls: type[nn.Module]) -> type[nn.Module]:
        _FIXES[row] = (cls, around)
        return cls
    return register


def family_names() -> list[str]:
    """The case families, one module each in :mod:`fxguide.atlas.cases`."""
    from fxguide.atlas import cases
    return [info.name for info in pkgutil.iter_modules(cases.__path__)]


def family(name: str) -> list[Case]:
    """The rows of family ``name``, in the order its module defines them."""
    if not isinstance(name, str) or name not in family_names():
        raise ValueError(f"family: unknown family {name!r}; choose one of {family_names()}")
    importlib.import_module(f"fxguide.atlas.cases.{name}")
    return list(_CASES.get(name, []))


def all_cases() -> list[Case]:
    """Every row of every family."""
    return [row for name in family_names() for row in family(name)]


__all__ = ["Case", "all_cases", "case", "default_state", "family", "family_names", "fix_for", "in_mode",
           "no_change", "two_inputs"]
