"""The state a call can change, recorded so that it can be compared and put back.

One mechanism serves the concrete tracer's state diff (:mod:`fxguide.tracing.concrete._diff`) and
``fxguide.diagnose``'s ``Snapshot``: :mod:`~fxguide._state.contents` copies and compares what one
container or object of any kind holds, :mod:`~fxguide._state.held` walks from roots (modules, classes,
globals, inputs) recording every container with its path, and :mod:`~fxguide._state.torch_state`
records torch's and Python's global settings, hooks and random generators.
"""

from __future__ import annotations

from fxguide._state.contents import is_plain_object, kind_of, same_value
from fxguide._state.held import Held, Path, Record, text
from fxguide._state.torch_state import Generators, Settings, hooks_registered, same_rng, torch_rng

__all__ = ["Generators", "Held", "Path", "Record", "Settings", "hooks_registered", "is_plain_object", "kind_of",
           "same_rng", "same_value", "text", "torch_rng"]
