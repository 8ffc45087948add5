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
model returns in eager mode or raises :class:`GuardError`. Every Python-level
question the model's code can ask a traced value (its truth, its int, its
length, its string, its hash, its type, ``callable``, ``hasattr``, ``id``,
``torch.is_tensor``, global settings such as ``torch.is_grad_enabled()``, a
tensor's ``dtype`` or ``grad_fn``, an exception caught by ``try``/``except``,
the structure of the call's inputs, ...) is listed in
:mod:`fxguide.tracing.concrete.questions`, with what is done with it: guarded
(re-asked on every call), or refused while tracing with
:class:`UnguardableError` when a graph cannot replay it (a traced value stored
on the module, a Python attribute or the contents of a list, dict or object
that ``forward`` changes, an autocast region, ``id()`` of a traced value,
``str()`` or ``hash()`` of a whole tensor). The model is traced as a call runs
it: hooks on it and a ``__call__`` of its class are in the graph;
``torch.manual_seed`` inside ``forward`` is a graph node; a constant made in
the default dtype guards ``torch.get_default_dtype()``. Tracing leaves the
model exactly as it was (parameters, buffers, attributes and the containers
it holds are restored), and the caller's example inputs too.

Not guarded: identity (``v is w``, which Python answers without asking the
value), ``type(v)`` in modules other than those defining the model's
``forward`` methods, functions imported by name (``from torch import
is_grad_enabled, manual_seed, zeros``) rather than called through their
module, the stand-in's own attributes read directly (``x.node``), a change to
the contents of an input list or dict (the graph changes its own copy, not
the caller's), changes to the model after tracing (a hook added later), and
state outside the model (global variables, Python's and NumPy's random
generators, and the draws of torch's random factory functions,
``torch.rand(x.shape)`` or ``torch.randn(2, 4)``, made once while tracing and
constants of the graph; ``torch.rand_like(x)`` is a node and draws on every call).

The package: ``_records`` (decisions, guards, the errors), ``_frames`` (whose
code is asking), ``_proxy`` (the proxies' conversions to Python values),
``_tracer`` (the tracer and what it intercepts), ``_inputs`` (the input
structure guard), ``_entry`` (:func:`concrete_trace` and reading decisions
back) and ``questions`` (the list).

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

from typing import Any  # noqa: F401 - see Kind below

import torch  # noqa: F401 - the examples in these docstrings use it
from torch import nn  # noqa: F401 - for the annotations of ConcreteTracer (see Kind below)

from fxguide.tracing.concrete import questions
from fxguide.tracing.concrete._entry import GuardedPaths, concrete_trace, decisions, show_decisions
from fxguide.tracing.concrete._proxy import ConcreteAttribute, ConcreteProxy
from fxguide.tracing.concrete._records import Decision, Guard, GuardError, Kind, RaisesGuard, UnguardableError
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
    "questions",
    "show_decisions",
]

# Kind and Any are imported (not exported) for the annotations of Decision, which the API reference resolves here.

# Readers import these from here: tracebacks, doctests and the API reference name them so.
for _name in (*(n for n in __all__ if n != "questions"), "ConcreteProxy", "ConcreteAttribute"):
    globals()[_name].__module__ = __name__
del _name
