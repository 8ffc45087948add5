"""Which Python state changes a trace may keep: a cache filled once, and attributes the graph sets again.

The state diff (:mod:`._diff`) refuses a change to the model's Python state that no operation of the graph
makes again, with two exceptions, both checked by calling forward once more, in eager mode, on the example:

- a *cache* that forward fills once (items added, attributes set from ``None``): the second call changes
  nothing more. The graph holds what the first call computed; tracing leaves the cache empty.
- an attribute forward sets to a value made without traced values (``self.grid = (n, 2)``, a constant
  table): the tracer recorded a node that sets it again on every call (``_tracer.set_attribute``), which is
  right only if the second call sets it to the same value.

A counter, a history, a deletion or a value that differs on the second call is refused.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx
from torch.utils import _pytree as pytree

from fxguide._state import Generators
from fxguide._state.contents import grew
from fxguide.tracing.concrete._diff import Before, Change, bookkeeping
from fxguide.tracing.concrete._effects import Effects
from fxguide.tracing.concrete._records import _holds_tensor


def unsettled(root: Any, before: Before, changes: list[Change], effects: Effects, peek: Callable[[Any], Any],
              args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Change]:
    """What makes the trace unfit: ``changes``, unless they are a cache, filled once; and the attributes the graph
    sets (``self.grid = (n, 2)``), when a second call would set them to something else.

    Called again in eager mode on the example, a forward that filled a cache (items added, attributes set from
    ``None``) or set an attribute to what every call sets changes nothing more; a counter, a history or a
    deletion does. Only Python state can be either.
    """
    if not changes and not effects.attributes:
        return []
    replayed = effects.replayed()
    if any(change.kind != "python" for change in changes) or not all(
            grew(record.value, record.saved, replayed(record.value)) for record in before.python.changed(replayed)):
        return changes
    for record in before.python.changed(replayed):
        contents = vars(record.value) if record.saved.kind in ("namespace", "object") else record.value
        if not isinstance(contents, (dict, list, set)):
            continue
        items = contents.items() if isinstance(contents, dict) else contents
        if any(isinstance(v, fx.Proxy) and _holds_tensor(peek(v)) for v in pytree.tree_leaves(list(items))):
            return changes  # a traced tensor kept by the model: eager mode would reuse it, the graph recompute it
        _concretize(contents, peek)
    again = before.record_python()
    generators = Generators()
    try:
        with torch.no_grad():
            root(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    except Exception:  # noqa: BLE001 - a forward that cannot run twice is not a cache
        return changes or [Change("the model's attributes (a second call in eager mode fails)", "python")]
    finally:
        generators.restore()
    moved = [what for what in again.changes() if not bookkeeping(what) and not _buffer_rebound(root, what)]
    if not moved:
        return []
    return changes or [Change(f"{what} (a second call changes it again)", "python") for what in moved]


def _buffer_rebound(root: Any, what: str) -> bool:
    """``self.count = self.count * 2`` on a registered buffer: eager mode rebinds it, the graph updates it in
    place on every call (a ``copy_`` node), so the second call's rebinding is replayed, not left behind."""
    found = re.fullmatch(r"self((?:\.\w+)*)\.(\w+) rebound", what)
    if found is None or not isinstance(root, torch.nn.Module):
        return False
    try:
        module = root.get_submodule(found.group(1).lstrip("."))
    except AttributeError:
        return False
    return found.group(2) in module._buffers


def _concretize(contents: dict[Any, Any] | list[Any] | set[Any], peek: Callable[[Any], Any]) -> None:
    """Replace the proxies a container holds with their example values (a size used as a key: ``self.cache[n]``)."""
    def concrete(v: Any) -> Any:
        if isinstance(v, fx.Proxy):
            return peek(v)
        if any(isinstance(leaf, fx.Proxy) for leaf in pytree.tree_leaves(v)):
            return pytree.tree_map(lambda leaf: peek(leaf) if isinstance(leaf, fx.Proxy) else leaf, v)
        return v  # the same object: a container held here stays the one other records hold

    if isinstance(contents, dict):
        items = [(concrete(k), concrete(v)) for k, v in contents.items()]
        if any(k is not a or v is not b for (k, v), (a, b) in zip(items, contents.items())):
            contents.clear()
            contents.update(items)
    elif isinstance(contents, list):
        contents[:] = [concrete(v) for v in contents]
    else:
        values = [concrete(v) for v in contents]
        contents.clear()
        contents.update(values)
