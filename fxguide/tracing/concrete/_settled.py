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
from fxguide._state.contents import grew, same_value
from fxguide.tracing.concrete._diff import Before, Change, bookkeeping
from fxguide.tracing.concrete._effects import Effects
from fxguide.tracing.concrete._records import _holds_tensor


#: ``traced`` is not known: the second call's result is not compared.
NO_RESULT = object()


def unsettled(root: Any, before: Before, changes: list[Change], effects: Effects, peek: Callable[[Any], Any],
              args: tuple[Any, ...], kwargs: dict[str, Any], traced: Any = NO_RESULT) -> list[Change]:
    """What makes the trace unfit: ``changes``, unless they are a cache, filled once; and the attributes the graph
    sets (``self.grid = (n, 2)``), when a second call would set them to something else.

    Called again in eager mode on the example, a forward that filled a cache (items added, attributes set from
    ``None``) or set an attribute to what every call sets changes nothing more; a counter, a history or a
    deletion does. Only Python state can be either. And, where the traced call updated no tensor in place, the
    second call must return what the traced one returned (``traced``, the example's values of the graph's
    outputs), from the same random state: a forward that reads what the first call left
    (``y = x * 2 if self.mode is None else x * 3``) answers otherwise from then on, while the graph keeps the
    first answer.
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
        before.generators.restore()  # the draws the traced call made, made again, in the grad mode it ran in
        second = root(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    except Exception:  # noqa: BLE001 - a forward that cannot run twice is not a cache
        return changes or [Change("the model's attributes (a second call in eager mode fails)", "python")]
    finally:
        generators.restore()
    moved = [what for what in again.changes() if not bookkeeping(what) and not _buffer_rebound(root, what)]
    if moved:
        return changes or [Change(f"{what} (a second call changes it again)", "python") for what in moved]
    # (a tensor the traced call updated in place, a counter buffer, is read updated by both second calls alike)
    updated = any(record.differs or record.tensor._version != record.version for record in before.tensors.values())
    if traced is not NO_RESULT and not updated and not _same_result(traced, second):
        left = [change.what for change in changes] + [f"the attribute {name} (set by forward)"
                                                      for _, name in effects.attributes]
        where = left[0] if left else "the model's state"
        return [Change(f"{where}, which forward reads: called again in eager mode, forward returns something else "
                       f"than the traced call did: the trace computed with other values than eager mode does, so "
                       f"its graph cannot be trusted to answer as eager mode", "python")]
    return []


def _same_result(first: Any, second: Any) -> bool:
    """Whether two calls' results agree: the same structure, tensors close (the same kernels ran), numbers and
    strings equal (an object of the model's is not compared here)."""
    leaves, spec = pytree.tree_flatten(first)
    others, other_spec = pytree.tree_flatten(second)
    return spec == other_spec and all(_same_leaf(a, b) for a, b in zip(leaves, others))


def _same_leaf(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and (a.is_meta or b.is_meta or _close(a.detach(), b.detach()))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return False
    return not isinstance(a, _ATOMS) or same_value(a, b)


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
    except (RuntimeError, TypeError):  # a kind allclose cannot compare (bool, complex...)
        return bool(torch.equal(a, b))


_ATOMS = (int, float, bool, complex, str, bytes, type(None))


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
