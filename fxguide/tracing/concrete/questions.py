"""Every way Python code can ask a traced value a question, and what the concrete tracer does with each.

A *question* is any Python-level operation whose answer is a plain Python
value (a bool, an int, a string, a type, an object) computed from a traced
value: a traced tensor, a size taken from one, a buffer or tensor attribute
of the module, or the inputs' structure. The graph cannot hold a Python
value's later use, so each question is either

- **guarded**: answered from the example's value, recorded as a decision,
  and re-asked by a guard on every call; a different answer raises
  :class:`~fxguide.tracing.concrete.GuardError`; or
- **refused**: tracing stops with
  :class:`~fxguide.tracing.concrete.UnguardableError`, naming what was asked
  and what to write instead.

Operations whose result stays a traced value (``x.shape[0] * 2``,
``abs(n)``, ``round(n)``, ``divmod(n, 3)``, ``x.dim()``, ``x.is_contiguous()``,
``torch.equal(x, y)``) are not questions yet: they become graph nodes, and
the question is asked when their result is used as a Python value (``if``,
``int()``, an index, ...).

:data:`QUESTIONS` is the list; the table below is made from it, and the
concrete tracer's property test draws its model programs from it and checks
that switching off any guard (:data:`GUARDS`) makes the traced graph differ
from eager mode.

One thing Python answers without asking the value, so it can be neither
guarded nor refused: identity, ``v is w`` and ``v is None``. A traced value is
never ``None`` and neither is its example value, and attributes whose example
value is ``None`` (``x.grad_fn`` of a leaf) are answered ``None`` and guarded,
so ``is None`` gets eager mode's answer; ``v is w`` between two traced values
compares the proxies, not the tensors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["GUARDS", "QUESTIONS", "Question", "table"]


@dataclass(frozen=True)
class Question:
    """One way of asking a traced value a question.

    ``name`` identifies it, ``asks`` shows the code that asks it, ``answer`` is
    ``"guarded"`` or ``"refused"``, ``guard`` names the mechanism that records
    (or refuses) it (a key of :data:`GUARDS`), and ``how`` says what is
    recorded, or why it is refused and what to write instead.
    """

    name: str
    asks: str
    answer: Literal["guarded", "refused"]
    guard: str
    how: str


#: The mechanisms that record or refuse questions, each with what it checks on every call.
GUARDS: dict[str, str] = {
    "truth": "a branch decision: the value used as a bool is recomputed and compared",
    "int": "an int decision: the value turned into an int (or an index) is recomputed and compared",
    "len": "an int (or loop) decision on the length",
    "float": "a float decision",
    "str": "a value decision on the string",
    "format": "a value decision on the formatted string's source value",
    "repr": "a value decision on the source value",
    "hash": "a value decision on the hashed value",
    "type": "a type decision: the value's type is recomputed and compared with `is`",
    "attribute": "a value decision on the attribute (dtype, device, ...) or on its being None",
    "global": "a decision on the global setting, re-read by the graph on every call",
    "object": "a value decision on a Python object computed from traced sizes, field by field",
    "raises": "the operation is re-run by a guard that checks it raises (or not) as when traced",
    "inputs": "guard_inputs: the call's inputs are bound and compared with the traced structure",
    "identity": "refused: id() of a traced value",
    "introspection": "refused: dir() or vars() of a traced value",
    "whole-value": "refused: str/repr/hash/format of a tensor with more than one element, or another object",
    "store": "refused: a traced value stored on the module",
    "python-attribute": "refused: a Python attribute of the module changed by forward",
    "autocast": "refused: an autocast region opened inside forward",
    "grad-mode": "each change of grad mode inside forward is a graph node that makes it again on every call",
    "autograd-function": "refused: a custom torch.autograd.Function applied to a traced value",
    "hasattr": "hasattr()/getattr() of a traced value answered for the example value: guarded by its type for an "
               "attribute of the type, by a node asking again on every call for any other",
    "python-state": "the state diff: what forward changed and no operation of the graph changes again is refused "
                    "(the model's attributes and containers of any kind, class attributes, module globals, input "
                    "containers, torch's settings and random generators); an attribute set to the same value on "
                    "every call is set by a node of the graph",
    "root-call": "the model is traced through its __call__: root hooks, a __call__ override, an instance forward",
    "rng": "torch.manual_seed inside forward is a graph node that seeds again on every call",
    "default-dtype": "a decision on torch.get_default_dtype() (torch.get_default_device()), re-read by the graph on "
                     "every call",
    "example-inputs": "the caller's example inputs are put back after tracing",
    "rebuilt-object": "an object holding traced values (a cache of tensors) is rebuilt by the graph on every call",
    "hints": "a compile hint given a traced tensor marks the example's tensor; the graph needs no node",
    "inplace": "an augmented assignment on a traced tensor (x += y) is recorded as the in-place operator",
    "inference-mode": "refused: an inference_mode region opened inside forward",
    "side-effects": "print, logging, warnings.warn and sys.stdout/sys.stderr writes in forward are graph nodes "
                    "that make the same call on every call; a file opened in forward is refused",
    "reads": "guard_state: the module globals, module attributes (their own or their classes') and enclosing "
             "functions' variables the model's code names, and the os.environ variables it reads, re-read and "
             "compared on every call: plain values as they are, containers and objects deeply, submodules, "
             "tensors and functions by identity",
    "modes": "guard_state: the training flags and hooks of the modules whose code the graph holds, and torch's "
             "global module hooks, checked before every call; backward hooks on those modules refused",
}

#: Every question, in the order of the table below.
QUESTIONS: list[Question] = [
    # -- builtins and syntax
    Question("truth", "``if v:``, ``while v:``, ``bool(v)``, ``not v``, ``v and w``, ``assert v``, ``a if v else b``",
             "guarded", "truth", "the bool of the example's value is the decision"),
    Question("comparison", "``v == w``, ``v != w``, ``v < w``, ``<=``, ``>``, ``>=`` used as a bool",
             "guarded", "truth", "the comparison is a graph node; its truth is the decision"),
    Question("min-max-sorted", "``min(v, 3)``, ``max(v, w)``, ``sorted(x.shape)`` on traced Python values",
             "guarded", "truth", "each comparison they make is a branch decision"),
    Question("contains", "``w in v`` (``Tensor.__contains__``, ``n in x.shape``)", "guarded", "truth",
             "``operator.contains`` is a graph node; its truth is the decision"),
    Question("int", "``int(v)``, ``%d`` formatting", "guarded", "int", "the int of the example's value"),
    Question("index", "``operator.index(v)``, ``seq[v]``, ``x[:v]``, ``range(v)``, ``torch.ones(v)``, "
             "``t.expand(v, w)``, ``F.interpolate(constant, size=x.shape[-2:])``", "guarded", "int", "the index of the example's value, one decision per size"),
    Question("len", "``len(v)``, ``len(x.shape)``", "guarded", "len", "``len`` is a graph node; its value is the decision"),
    Question("iter", "``for a in v:``, ``a, b = v``, ``list(v)``, ``next(iter(v))``, ``*v``, ``any(v)``",
             "guarded", "len", "the number of items is a loop decision; each item is a graph node"),
    Question("float", "``float(v)``, ``complex(v)`` (which falls back to ``float``)", "guarded", "float",
             "the float of the example's value (NaN is decided like NaN)"),
    Question("str", "``str(v)``, ``print(v)`` of a size or a one-element tensor", "guarded", "str",
             "the Python scalar the value holds"),
    Question("format", "``f'{v}'``, ``format(v, spec)``, ``'{}'.format(v)``", "guarded", "format",
             "the Python scalar the value holds, formatted"),
    Question("repr", "``repr(v)``, ``f'{v!r}'`` of a size or a one-element tensor", "guarded", "repr",
             "the Python scalar the value holds"),
    Question("hash", "``hash(v)``, ``d[v]``, ``d.get(v)``, ``v in {...}`` (a dict key or set member)",
             "guarded", "hash", "the Python scalar the value holds"),
    Question("whole-value", "``str``, ``repr``, ``hash`` or ``format`` of a tensor with more than one element",
             "refused", "whole-value", "the answer depends on every element; compute with tensor operations, "
                                       "or take ``int()`` of a size first"),
    Question("isinstance", "``isinstance(v, T)``", "guarded", "type", "the example value's type"),
    Question("type", "``type(v)``, ``type(v) is T``, ``v.__class__``, ``issubclass(type(v), T)``", "guarded",
             "type", "the example value's type"),
    Question("callable", "``callable(v)``", "guarded", "type", "answered from the example value's type"),
    Question("hasattr", "``hasattr(v, name)``, ``getattr(v, name, default)``", "guarded", "hasattr",
             "answered for the example's value, never by the stand-in's own attributes (a tensor has no "
             "``keys``, ``node`` or ``tracer``); an attribute of the value's type is guarded by the type, any "
             "other (a Python attribute set on this tensor) by a node that asks again on every call"),
    Question("none-attribute", "``x.grad_fn is None``, ``x.grad is None`` (an attribute whose example value is None)",
             "guarded", "attribute", "answered ``None`` and guarded to stay ``None``"),
    Question("identity", "``id(v)``", "refused", "identity",
             "a traced value's identity is not the tensor's; compare values, not identities"),
    Question("introspection", "``dir(v)``, ``vars(v)``", "refused", "introspection",
             "they would list the proxy's attributes; test for one attribute with ``hasattr`` instead"),
    # -- torch's predicates
    Question("torch.is_tensor", "``torch.is_tensor(v)``, ``torch.overrides.is_tensor_like(v)``", "guarded", "type",
             "the example value's type"),
    Question("tensor-predicates", "``torch.is_floating_point(x)``, ``torch.is_complex(x)``, "
             "``torch.is_nonzero(x)``, ``torch.equal(x, y)``, ``torch.allclose(x, y)``, ``torch.numel(x)``",
             "guarded", "truth", "a graph node; its truth (or int) is the decision"),
    Question("global-settings", "``torch.is_grad_enabled()``, ``torch.is_inference_mode_enabled()``, "
             "``torch.are_deterministic_algorithms_enabled()``, ``torch.is_autocast_enabled()``, "
             "``torch.get_default_dtype()``, ``torch.get_num_threads()``, ``torch.is_anomaly_enabled()``, "
             "``torch.get_float32_matmul_precision()``, ``torch.get_autocast_dtype('cpu')``, "
             "``torch.get_default_device()``, ``torch.initial_seed()``, ``torch.is_warn_always_enabled()``, "
             "``torch.backends.cuda.flash_sdp_enabled()``, ``torch.backends.mha.get_fastpath_enabled()``, "
             "``torch.distributed.is_initialized()``, ``get_rank()``, ``get_world_size()`` (the functions of "
             "``_tracer._GLOBALS``)", "guarded", "global",
             "called again by the graph on every call; a different answer raises"),
    Question("tracing-predicates", "``torch.jit.is_scripting()``, ``torch.jit.is_tracing()``, "
             "``torch.compiler.is_compiling()``, ``torch.compiler.is_dynamo_compiling()``, "
             "``torch.fx._symbolic_trace.is_fx_tracing()``", "guarded", "global",
             "answered as eager mode answers (``is_fx_tracing()`` is False: the model runs on real values), "
             "and called again by the graph on every call"),
    # -- tensor attributes and methods that return Python values
    Question("dtype-device", "``x.dtype``, ``x.device``, ``x.layout``, ``x.is_cuda``, ``x.is_sparse``, "
             "``x.is_quantized``, ``x.is_meta``", "guarded", "attribute",
             "the real object (code passes it on: ``torch.finfo(x.dtype)``)"),
    Question("sizes", "``x.shape``, ``x.size()``, ``x.size(d)``, ``x.dim()``, ``x.ndim``, ``x.numel()``, "
             "``x.nelement()``, ``x.stride()``, ``x.storage_offset()``, ``x.element_size()``, ``x.itemsize``, "
             "``x.nbytes``", "guarded", "int", "graph nodes; each use as a Python value is guarded"),
    Question("flags", "``x.requires_grad``, ``x.is_leaf``, ``x.is_contiguous()``, ``x.is_floating_point()``, "
             "``x.is_complex()``, ``x.is_signed()``, ``x.is_inference()``", "guarded", "truth",
             "graph nodes; their truth is the decision"),
    Question("values", "``x.item()``, ``x.tolist()``, ``x.data_ptr()``", "guarded", "truth",
             "graph nodes; each use as a Python value is guarded"),
    # -- what forward does and reads outside torch
    Question("output", "``print(...)``, ``logger.warning(...)`` (any logger method, the root logger's "
             "``logging.info(...)``), ``warnings.warn(...)``, ``sys.stdout.write(...)``", "guarded", "side-effects",
             "a graph node makes the same call, traced values among its arguments, on every call"),
    Question("files", "``open(path)`` in forward, to read or to write", "refused", "side-effects",
             "the graph would not open the file again; read it before tracing and pass what it holds"),
    Question("environ", "``os.environ.get(name)``, ``os.environ[name]``, ``os.getenv(name)``", "guarded", "reads",
             "the value read is compared with the variable's on every call"),
    Question("module-globals", "``x * SCALE``, ``x * CFG['scale']``, ``x * helpers.SHIFT`` (a global of the model's "
             "module or of a module its code names: a plain value, or a container or object holding them)",
             "guarded", "reads",
             "compared with the global's value on every call (a container or object deeply); a global read by "
             "a function the model calls is seen when that function records an operation or is named by the "
             "model's code"),
    Question("module-attributes", "``x * self.factor``, ``len(self.sizes)``, ``self.config.act`` (an attribute, "
             "its own or its class's, of a module whose code the graph holds: a plain value, or a container or "
             "object holding them)", "guarded", "reads",
             "compared with the module's attribute on every call (a container or object deeply), through the "
             "traced model's modules"),
    Question("closure", "``x ** kept['power']`` (a variable of the function around a traced function)",
             "guarded", "reads", "compared with the variable's value on every call (a container deeply)"),
    Question("torch-settings", "``torch.backends.cudnn.enabled``, ``cudnn.benchmark``, "
             "``torch.backends.cuda.matmul.allow_tf32`` (a setting of torch read as an attribute)", "guarded",
             "reads", "compared with the setting's value on every call"),
    # -- the model and the call
    Question("try-except", "an operation inside ``try: ... except E:``", "guarded", "raises",
             "whether it raises, and which exception type"),
    Question("python-object", "``self.scale = x.shape[-1] ** -0.5`` (a Python object computed from traced sizes "
             "stored on the module)", "guarded", "object", "the object's fields; a node of the graph sets the "
             "attribute on every call, as forward does"),
    Question("input-structure", "the call's inputs: a list, tuple or dict of another length or keys, extra or "
             "missing ``*args``/``**kwargs``, a number in a tensor's place, a default overridden",
             "guarded", "inputs", "the structure of each input, bound to the signature"),
    Question("store", "``self.total = self.total + x.sum()`` (a traced value stored on the module)", "refused",
             "store", "the graph would not replay the update; update a registered buffer in place "
                      "(``self.buf.copy_(...)``) or return the value"),
    Question("python-attribute", "``self.calls += 1`` (a Python attribute changed by forward)", "refused",
             "python-attribute", "a graph cannot replay Python state; keep it in a buffer updated in place"),
    Question("autocast", "``with torch.autocast(...):`` inside forward", "refused", "autocast",
             "a graph does not record autocast; call the traced graph inside ``torch.autocast`` instead"),
    Question("grad-mode", "``with torch.no_grad():``, ``torch.enable_grad()``, ``torch.set_grad_enabled(b)``, "
             "``@torch.no_grad()`` on a method forward calls", "guarded", "grad-mode",
             "the graph switches grad mode where forward did, and restores the mode it found, on every call"),
    Question("autograd-function", "``MyFunction.apply(x)``, a custom ``torch.autograd.Function``", "refused",
             "autograd-function", "its backward would be lost: the graph holds only its forward's operations"),
    Question("python-state", "``self.hist.append(1)``, ``self.seen.append(x)`` on a deque, ``self.t += (1,)``, "
             "``type(self).calls += 1``, a global changed, ``xs.append(...)`` on an input list, ``random.random()``, "
             "``torch.rand(2, 3)``, ``torch.set_default_dtype(...)`` (any state forward changes that no operation of "
             "the graph changes again)", "refused", "python-state",
             "the state diff compares everything forward can reach before and after tracing and names what "
             "changed; keep such state in a buffer updated in place, draw with ``torch.rand_like``. A cache filled "
             "once (a second call changes nothing) is traced, and left empty"),
    Question("root-hooks", "forward pre-hooks and forward hooks on the traced model "
             "(``model.register_forward_hook(h)``), global module hooks", "guarded", "root-call",
             "the model is traced through its ``__call__``, so the hooks' code is in the graph (hooks added "
             "after tracing are not)"),
    Question("call-override", "a ``__call__`` defined by the model's class, ``model.forward = f`` on the instance",
             "guarded", "root-call", "the model is traced as a call runs it, through ``__call__``"),
    Question("manual-seed", "``torch.manual_seed(n)`` inside forward", "guarded", "rng",
             "a graph node seeds again on every call, where forward did"),
    Question("default-dtype", "``torch.zeros(2)``, ``torch.tensor([0.5])``, ``torch.full((2,), 1.0)``, "
             "``torch.logspace(0, 1, 3)`` without ``dtype=`` or ``device=`` and without traced sizes (a constant "
             "made in the default dtype, on the default device)", "guarded", "default-dtype",
             "``torch.get_default_dtype()`` and ``torch.get_default_device()`` are re-read on every call; another "
             "default raises"),
    Question("traced-object", "``return logits, cache`` or ``wrapped_fn(cache)``, where ``cache`` is a Python "
             "object holding traced tensors (a Hugging Face ``DynamicCache``, a dataclass not registered with pytree)",
             "guarded", "rebuilt-object", "the graph builds a fresh copy of the object on every call, holding that "
             "call's tensors (the objects on the way to them are copied, the rest shared); a traced value inside a "
             "set, or an object holding them reached twice, is refused"),
    Question("compile-hints", "``torch._dynamo.mark_static_address(v)``, ``mark_dynamic``, ``mark_static``, "
             "``maybe_mark_dynamic`` (when ``torch._dynamo`` is imported before tracing, as transformers imports "
             "it)", "guarded", "hints", "the example's tensor gets the mark and the graph no node: a hint changes no "
             "value (mark the graph's own inputs before compiling it)"),
    Question("example-inputs", "``x.add_(1)`` on an input inside forward", "guarded", "example-inputs",
             "tracing puts the caller's example inputs back as they were; the graph makes the change on every "
             "call, as eager mode does"),
    Question("in-place-operator", "``x += y``, ``x *= w`` (an augmented assignment on a traced tensor)", "guarded",
             "inplace", "recorded as ``operator.iadd`` and its kind: the graph updates the tensor in place, as eager "
             "mode does (the caller's input too)"),
    Question("inference-mode", "``with torch.inference_mode():`` inside forward", "refused", "inference-mode",
             "a graph does not record inference mode; use ``torch.no_grad()`` (recorded), or call the traced graph "
             "inside ``torch.inference_mode``"),
    Question("train-eval", "``model.eval()``, ``model.train()`` or ``gm.eval()`` after tracing, a hook added to or "
             "removed from the model after tracing, a global module hook", "guarded", "modes",
             "checked before every call: the training flags and hooks of the modules whose code the graph holds, "
             "and that no global module hook is registered (one registered while tracing, or a backward hook on "
             "such a module, is refused)"),
]


def table() -> str:
    """:data:`QUESTIONS` as a reStructuredText table: question, how code asks it, answer, what is checked."""
    rows = [(q.name, q.asks, q.answer, q.how) for q in QUESTIONS]
    lines = [".. list-table::", "   :header-rows: 1", "   :widths: 12 40 8 40", "",
             "   * - question", "     - asked by", "     - answer", "     - recorded and checked, or why refused"]
    for row in rows:
        lines += [f"   * - {row[0]}"] + [f"     - {cell}" for cell in row[1:]]
    return "\n".join(lines)


if __doc__ is not None:  # the table is part of the documentation (not under python -OO)
    __doc__ += f"\nThe questions ({len(QUESTIONS)}: " \
               f"{sum(q.answer == 'guarded' for q in QUESTIONS)} guarded, " \
               f"{sum(q.answer == 'refused' for q in QUESTIONS)} refused):\n\n{table()}\n"

#: Guards switched off, for the property test's mutation check only: a question
#: whose guard is listed here is answered without a decision (or not refused).
_OFF: set[str] = set()
