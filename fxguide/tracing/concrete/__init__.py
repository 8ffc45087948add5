"""A concrete-value tracer whose graphs check the decisions they were traced with.

``torch.fx.symbolic_trace`` runs ``forward`` on stand-ins (``Proxy`` objects)
that carry no values, so code that asks a question about its input
(``if x.shape[1] > 3``, ``for i in range(x.shape[0])``, ``int(x.shape[-1])``,
``if x.sum() > 0``) cannot be traced. :func:`concrete_trace` runs real example
inputs alongside the proxies: every node of the growing graph also gets the
value it has for the example, so each such question gets an answer.

Each answer is a *decision*: the graph holds only the path the example took.
Rather than letting a later input that would take another path run silently
into wrong results, every decision is recorded (kind, source line, traced
value) and checked by a ``guard_N`` node placed in the graph right where the
decision was made. An input that would decide differently raises
:class:`GuardError`, naming the decision, its traced value and its new value.
With ``on_mismatch="retrace"`` the result instead traces again for the new
input and keeps one graph per path (:class:`GuardedPaths`).

The rule: the traced graph, called on any input, either returns what the
model returns in eager mode or raises :class:`GuardError`. Besides ``if``,
loops and ``int()``, the answers Python gets through ``float()``, ``str()``
and f-strings, ``hash()`` (dict and set lookups), ``isinstance``,
``hasattr``, ``x.dtype``/``x.device``, and an exception caught by
``try``/``except`` are guarded too; branches on the model's buffers and
tensor attributes are guarded like branches on inputs. What cannot be
replayed is refused while tracing with :class:`UnguardableError` (a traced
value stored on the module, a Python attribute that ``forward`` changes, an
autocast region, ``str()`` or ``hash()`` of a whole tensor). Tracing leaves the
model exactly as it was: parameters, buffers and attributes are restored.

What remains unguardable, because Python answers without asking the value:
``x is y`` and ``type(x)`` on traced values, ``id()``, ``repr()`` of a traced
tensor, and state outside the model (global variables, random draws made at
trace time).

>>> import torch
>>> def f(x):
...     if x.shape[0] > 2:
...         return x * 2
...     return x - 1
>>> gm = concrete_trace(f, (torch.ones(3),))
>>> gm(torch.ones(3))
tensor([2., 2., 2.])
>>> show_decisions(gm)
guard_0  branch  <doctest fxguide.tracing.concrete[1]>:2  if x.shape[0] > 2:  -> True
"""

from __future__ import annotations

import torch  # noqa: F401 - the examples in these docstrings use it

from fxguide.tracing.concrete._entry import GuardedPaths, concrete_trace, decisions, show_decisions
from fxguide.tracing.concrete._proxy import ConcreteAttribute, ConcreteProxy
from fxguide.tracing.concrete._records import Decision, Guard, GuardError, RaisesGuard, UnguardableError
from fxguide.tracing.concrete._tracer import ConcreteTracer

__all__ = [
    "ConcreteTracer",
    "Decision",
    "Guard",
    "GuardError",
    "GuardedPaths",
    "RaisesGuard",
    "UnguardableError",
    "concrete_trace",
    "decisions",
    "show_decisions",
]

# Readers import these from here: tracebacks, doctests and the API reference name them so.
for _name in (*__all__, "ConcreteProxy", "ConcreteAttribute"):
    globals()[_name].__module__ = __name__
del _name
