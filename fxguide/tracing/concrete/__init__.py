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
on the module, an autocast or ``inference_mode`` region, ``id()`` of a traced
value, ``str()`` or ``hash()`` of a whole tensor, a backward hook on a module
whose code the graph holds). Whatever else ``forward`` changes is checked by a
*state diff*: everything it can reach (the model's attributes and the
containers of any kind it holds, its classes' attributes, the globals of the
modules defining them or the traced function, the caller's inputs, torch's
settings and global module hooks, the random generators of torch, NumPy and
Python) is recorded before tracing and compared after. A change that an
operation of the graph makes again on every call is replayed (an in-place
update, ``x += 1``, a draw of ``torch.rand_like(x)``, a grad-mode switch, an
attribute set to the same value by every call); any other refuses the trace,
naming what changed (``torch.rand(2, 3)``, whose draw the graph would freeze,
is one). The model is traced as a call runs it: hooks on it and a
``__call__`` of its class are in the graph; ``torch.manual_seed`` inside
``forward`` is a graph node; a constant made in the default dtype guards
``torch.get_default_dtype()``; the training flags and hooks of the modules
whose code the graph holds are checked before every call (a hook that is an
object, or a bound method, through the attributes its code reads), so
``model.eval()`` after tracing raises :class:`GuardError`. Tracing leaves the model, its
classes, the globals, the caller's example inputs and torch's settings as they
were.

Every check is a node of the graph: the guards, ``guard_inputs`` (each input
has the kind it was traced with; a graph whose inputs are flattened flattens
them exactly) and ``guard_state`` (the training flags and hooks). So whatever
runs the graph checks as a call does: ``copy.copy``, ``copy.deepcopy``, a
``GraphModule`` built from ``gm.graph``, ``gm.forward``, an ``Interpreter``,
every fxguide transform, and pickling (which keeps the graph node for node
rather than tracing its code again). A pickled or deep-copied graph holds
copies of the model's tensors and no longer follows the model: it keeps
every check but those on the model's own modules (their flags, hooks and
attributes), which a change of the model no longer reaches, and, in a pickled
copy, those on the variables of enclosing functions (pickling cannot find a
nested function again; default arguments of a function it finds by name are
kept). Tracing a guarded graph again
(``symbolic_trace``, ``make_fx``, non-strict ``torch.export``) would answer
each check once, so it raises :class:`UnguardableError`.

What ``forward`` does outside torch is done again by the graph: its
``print`` calls, ``logging`` calls (logger methods and the root logger's),
``warnings.warn`` and writes to ``sys.stdout``/``sys.stderr`` become nodes
making the same call on every call (the functions of ``_replay``);
a file it opens is refused. What it reads outside torch is checked by
``guard_state`` on every call: the globals and the attributes (their own or
their classes') of the model's modules that its code names, leaves included
(``self.lin.in_features``), the globals of a module it names
(``helpers.SCALE``), the variables of enclosing functions that its code
reads, the default arguments of its functions, a leaf's training flag it
reads by name (``self.drop.training``), the ``os.environ`` variables it
reads (all of them, and which there are, when it iterates over them), and
torch's settings it reads as attributes
(``torch.backends.cudnn.enabled``, ``torch.backends.cuda.matmul.allow_tf32``;
those asked through functions, ``torch.get_num_threads()``, are graph nodes).
A plain value (a number,
string, dtype, a tuple of them) is compared as it is; a container or a plain
object (a dict of settings, a list of sizes, a config object, a dataclass, a
``functools.partial``, a bound method) is compared deeply, an object through
the attributes the code reads (those it names, and those it read while
traced: ``getattr(cfg, f"layer_{i}")``, ``vars(cfg)``); what the graph holds itself (a
submodule, a parameter, a buffer or tensor attribute, a function, a
``ModuleList`` it unrolled) must be the very object it was.

Not guarded: identity (``v is w``, which Python answers without asking the
value), ``type(v)`` in modules other than those defining the model's
``forward`` methods, functions imported by name (``from torch import
is_grad_enabled, zeros``, ``from os import environ``, ``from warnings import
warn``) into modules other than those (there, the name is re-pointed while
tracing, as ``torch.is_grad_enabled`` is), the stand-in's own attributes read
directly (``x.node``), a closure reached through
another object than the model's modules and the globals of its code, a
value read past 2,000 items
or six levels deep (checking it on every call would cost more than the call),
a name looked up through ``globals()``, ``sys.modules`` or a module's
``__getattr__``, torch's functions replaced after tracing (``F.gelu = ...``),
the legacy ``torch.Tensor([...])`` constructor's dtype, a
``TorchFunctionMode`` entered around a call, what the outside world answers
other than ``os.environ`` (``os.path.exists``, ``Path.read_text()``,
``torch.load`` inside forward, the clock: a file ``forward`` opens itself is
refused), state the diff does not reach (more than four levels deep or past 10,000
objects, the globals of modules the model's code neither runs in nor names,
the functions and classes of other modules than those, the inside of C
objects other than an iterator or a random generator (an ``lru_cache``),
another thread's changes), and a cache that ``forward`` fills once (traced,
since a second call changes nothing and returns what the first returned;
tracing leaves it empty, and the graph's calls do not fill it). The state
diff sees a function's attributes (``tick.n += 1``), the variables of its
closure (``nonlocal n``), the class attributes of any class of those modules
(``Stats.calls += 1``), how far an iterator has run (``next(self.schedule)``,
``itertools.count()``) and the state of a ``random.Random`` or NumPy
generator the model holds; a name the code looked up and did not find
(``hasattr(self, "extra")``, ``getattr(self, "scale", 1.0)``, a global
behind ``except NameError``) is checked to be still absent; a real tensor
whose value the code read as Python (``S.item()``, ``float(self.scales[0])``:
the graph holds the number) is checked not to have changed since (a pickled
copy no longer shares the tensor, and does not check it). What a global or an enclosing function holds that the
graph calls or holds (a module, a tensor, a function, a class) is checked as
that very object, a program's class also through the class attributes the
code names, and an object of the standard library's or NumPy's (an exact
number, a NumPy scalar, a mapping, a context variable, a logger asked for its
level) through what it holds; in a pickled copy a tensor is compared by its
contents.

The package: ``_records`` (decisions, guards, the errors), ``_frames`` (whose
code is asking), ``_proxy`` (the proxies' conversions to Python values),
``_tracer`` (the tracer and what it intercepts), ``_effects`` and ``_diff``
(the state diff), ``_inputs`` and ``_modes`` (the checks run before every
call), ``_objects_read`` (the attributes read on the model's objects while
tracing), ``_entry`` (:func:`concrete_trace` and reading decisions back) and
``questions`` (the list).

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
