"""Cause classes: what a capture failure means, and the guide section that shows the fix.

A failure is ``"Type: message"`` (a capture's error, or what went wrong on the
second input). :data:`CAUSES` lists the classes the guide explains, each a
regular expression over that text and a section of the guide; the first match
wins. A failure no class matches is *unclassified* and points to the tool's own
section (:data:`TOOL_SECTIONS`).

Links go to the published guide (the ``Documentation`` URL of fxguide's
package metadata; ``$FXGUIDE_SITE`` overrides it) and, when there is one, to a
local build (``$FXGUIDE_LOCAL_SITE``, or ``_build/html`` of the checkout
fxguide runs from).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import metadata
from pathlib import Path


@dataclass(frozen=True)
class Section:
    """A section of the guide: a page (its path without ``.html``) and an anchor on it (``""``: the page)."""

    page: str
    anchor: str

    @property
    def path(self) -> str:
        """``page.html#anchor``, relative to the site's root."""
        return f"{self.page}.html#{self.anchor}" if self.anchor else f"{self.page}.html"

    def url(self) -> str:
        """The section on the published guide, or ``""`` when fxguide has no published URL."""
        site = published_site()
        return f"{site}{self.path}" if site else ""

    def local(self) -> str:
        """The section in a local build (a ``file://`` URL), or ``""`` when there is none."""
        root = local_site()
        return f"{root.as_uri()}/{self.path}" if root else ""


@dataclass(frozen=True)
class Cause:
    """A class of failures: a short name, the text it matches, and where the guide explains it.

    ``messages`` are the messages it answers as this torch prints them (a first
    line, and for Dynamo's graph breaks the ``Explanation:`` line): the site
    shows them in the cause's section, where the search finds them, and a test
    checks that each was printed by a cell of the site. ``graph_break`` is the
    id torch prints with a graph break (``GB0059``), whose page PyTorch keeps at
    :func:`graph_break_url`. ``frames``, when set, narrows the class to failures
    whose traceback (the rest of the pasted text) holds a frame in a file whose
    path matches it: the same message has another cause when torch's own module
    raised it. ``plain_python``: the pattern can match an error of plain Python
    or of another library too (an ``UnboundLocalError``, or ``'NoneType'
    object has no attribute 'get'`` in a reader's own code): a lookup of pasted
    text names the cause only with evidence that the text comes from torch's
    capture stack (:func:`~fxguide.diagnose.causes.from_capture_stack`), or
    with the cause's own ``distinctive`` phrase in the message (the type
    ``ExportedProgram``, the word ``pytree``).
    """

    name: str
    regex: re.Pattern[str]
    section: Section
    tools: tuple[str, ...] = ()  # only failures of these tools (all when empty)
    messages: tuple[str, ...] = ()
    graph_break: str = ""
    frames: re.Pattern[str] | None = None  # only failures with a traceback frame in a file matching this
    plain_python: bool = False  # pasted text: named only with evidence of torch's capture stack
    distinctive: re.Pattern[str] | None = None  # a plain_python cause's own phrase that is evidence enough

    def answers(self, text: str, tool: str = "", traceback: str = "", capture_evidence: bool | None = None) -> bool:
        """Whether ``text`` (``"Type: message"``) is a failure of this class; see
        :func:`~fxguide.diagnose.causes.classify`."""
        if self.tools and tool not in self.tools or not self.regex.search(text):
            return False
        if self.frames is not None and not self.frames.search(traceback):
            return False
        return not (self.plain_python and capture_evidence is False
                    and not (self.distinctive is not None and self.distinctive.search(text)))

    @property
    def type_only(self) -> bool:
        """Whether the class is an exception type alone (the pattern ``^Unsupported:`` and a space): a
        catch-all, listed after every narrower class, that a lookup never tries on a type it guessed for an
        untyped line."""
        return bool(re.fullmatch(r"\^\w+: ", self.regex.pattern))


GRAPH_BREAK_SITE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/"


def graph_break_url(graph_break: str) -> str:
    """PyTorch's page for a graph-break id (``GB0059`` -> ``…/gb/gb0059.html``), the link torch prints."""
    if not isinstance(graph_break, str) or not re.fullmatch(r"GB\d{4}", graph_break):
        raise ValueError(f"graph_break_url: expected an id like 'GB0059', got {graph_break!r}")
    return f"{GRAPH_BREAK_SITE}{graph_break.lower()}.html"


def _cause(name: str, regex: str, page: str, anchor: str, tools: tuple[str, ...] = (),
           messages: tuple[str, ...] = (), graph_break: str = "", frames: str = "", plain_python: bool = False,
           distinctive: str = "") -> Cause:
    return Cause(name, re.compile(regex), Section(page, anchor), tools, messages, graph_break,
                 re.compile(frames) if frames else None, plain_python, re.compile(distinctive) if distinctive else None)


# The one catalogue of causes: the error index (docs/reference/errors.md) has one section for each cause whose
# section is on it, and lists the others (tests/test_catalogue.py checks both ways). A new message: add a cause
# here (its pattern, its section, the message as a cell of the site printed it), then its section.
_ERRORS = "reference/errors"
_CONCRETE = "concrete-tracing"
_CAPTURE_TOOLS = "capture-tools"
CAUSES: tuple[Cause, ...] = (
    # symbolic tracing
    _cause("control flow on a traced value", r"symbolically traced variables cannot be used as inputs to control flow",
           _ERRORS, "error-control-flow",
           messages=("TraceError: symbolically traced variables cannot be used as inputs to control flow",)),
    _cause("iterating over a traced value", r"Proxy object cannot be iterated", _ERRORS, "error-proxy-iterated",
           messages=('TraceError: Proxy object cannot be iterated. This can be attempted when the Proxy is used in a '
                     'loop or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a '
                     'more detailed explanation of what types of control flow can be traced, and check out the Proxy '
                     'docstring for help troubleshooting Proxy iteration errors',)),
    _cause("len() of a traced value", r"'len' is not supported in symbolic tracing", _ERRORS, "error-len",
           messages=("RuntimeError: 'len' is not supported in symbolic tracing by default. If you want this call to "
                     "be recorded, please call torch.fx.wrap('len') at module scope",)),
    _cause("int() of a traced value", r"int\(\) argument must be [^'\n]{0,200}not '(Proxy|Attribute)'",
           _ERRORS, "error-int-proxy",
           messages=("TypeError: int() argument must be a string, a bytes-like object or a real number, not 'Proxy'",)),
    _cause("float() of a traced value", r"float\(\) argument must be [^'\n]{0,200}not '(Proxy|Attribute)'",
           _ERRORS, "error-float-proxy",
           messages=("TypeError: float() argument must be a string or a real number, not 'Proxy'",)),
    _cause("math on a traced value", r"must be real number, not (Proxy|Attribute)", _ERRORS, "error-math-proxy",
           messages=("TypeError: must be real number, not Proxy",)),
    _cause("a traced value used as an index", r"'(Proxy|Attribute)' object cannot be interpreted as an integer",
           _ERRORS, "error-interpreted-as-integer",
           messages=("TypeError: 'Proxy' object cannot be interpreted as an integer",)),
    _cause("a traced value where Python needs a number",
           r"slice indices must be integers or None or have an __index__ method|"
           r"torch\.finfo\(\) requires a floating point input type|"
           r"type (Proxy|Attribute) doesn't define __\w+__ method", "limitations", "limitations-python-numbers",
           plain_python=True, distinctive=r"torch\.finfo\(\)|type (Proxy|Attribute) doesn't"),
    _cause("real tensors given to a strict FakeTensorMode",
           r"Please convert all Tensors to FakeTensors first or instantiate FakeTensorMode with 'allow_non_fake_inputs'",
           "pt2/pass-infrastructure", "pass-infra-fake-weights",
           messages=("AssertionError: Please convert all Tensors to FakeTensors first or instantiate FakeTensorMode "
                     "with 'allow_non_fake_inputs'.",)),
    _cause("inputs given to Interpreter.run by name", r"Interpreter\.run\(\) got an unexpected keyword argument",
           "interpreters", "interpreters-run-positional",
           messages=("TypeError: Interpreter.run() got an unexpected keyword argument 'x'",)),
    _cause("NumPy given a traced value", r"invalid __array_struct__", "atlas/calls-out",
           "atlas-np-asarray-of-a-tensor", plain_python=True),  # NumPy's own words: a Proxy answers every attribute
    _cause("a bound argument passed by name to the traced graph",
           r"forward\(\) got an unexpected keyword argument", "limitations", "limitations-concrete-args",
           plain_python=True),  # a GraphModule's frame says so (torch/fx/graph_module.py); any module's call too
    _cause("item assignment on a traced value", r"'(Proxy|Attribute)' object does not support item assignment",
           _ERRORS, "error-item-assignment", messages=("TypeError: 'Proxy' object does not support item assignment",)),
    _cause("a traced value passed to NumPy-style code", r"__cuda_array_interface__",
           _ERRORS, "error-cuda-array-interface", messages=("TypeError: `__cuda_array_interface__` must be a dict",),
           plain_python=True, distinctive=r"`__cuda_array_interface__` must be a dict"),  # torch's words, not Numba's
    _cause("a module that is not a submodule", r"is not installed as a submodule", _ERRORS, "error-not-a-submodule",
           messages=("NameError: module is not installed as a submodule",)),
    _cause("a concrete argument that was specialized", r"has been specialized to have value",
           _ERRORS, "error-specialized",
           messages=("AssertionError: relu has been specialized to have value True but got another value",)),
    _cause("a tensor's truth value", r"Boolean value of Tensor with more than one value is ambiguous",
           _ERRORS, "error-boolean-ambiguous",
           messages=("RuntimeError: Boolean value of Tensor with more than one value is ambiguous",),
           plain_python=True),  # eager code raises it too: `if delta.abs() < threshold:`
    _cause("a tensor constructor given traced sizes", r"must be tuple of ints, but found element of type (Proxy|Attribute)",
           "limitations", "limitations-constructors"),
    _cause("a decorated forward", r"co_varnames is too small", _ERRORS, "error-decorated-forward",
           messages=("ValueError: code: co_varnames is too small",), plain_python=True),  # CodeType's own words
    _cause("a Hugging Face forward that needs its keyword arguments",
           r"^AttributeError: 'NoneType' object has no attribute 'get'", "past-symbolic-trace",
           "traceable-code-decorated-forward", plain_python=True),
    # torch.export and torch.compile
    _cause("a branch on data", r"^GuardOnDataDependentSymNode: Could not guard on data-dependent expression",
           _ERRORS, "error-data-dependent-guard",
           messages=("GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(u0, 1) "
                     "(unhinted: Eq(u0, 1)).  (Size-like symbols: none)",)),
    _cause("a branch on data, compiled", r"^Unsupported: Data-dependent branching", _ERRORS,
           "error-data-dependent-branching", graph_break="GB0170",
           messages=("Unsupported: Data-dependent branching",
                     "Explanation: Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). Dynamo does "
                     "not support tracing dynamic control flow.")),
    # torch's eager-mode quantized modules read their scale and zero point as Python numbers: no torch._check helps
    _cause("a quantized module's scale or zero point read as a number",
           r"Could not extract specialized integer from data-dependent", "problems/diagnose", "diagnose-quantized",
           frames=r"ao[/\\.]nn[/\\.]quantized[/\\.]"),
    _cause("a Python number taken from tensor data", r"Could not extract specialized integer from data-dependent",
           "pt2/export-real-models", "export-real-check"),
    _cause("an int8 model from eager-mode or FX-mode quantization given to export (its packed weights)",
           r"quantized\.\w+PackedParamsBase [^\n]{0,300}?does not have a field",
           "pt2/quantization", "quantization-old-int8-export"),
    _cause("an output or input of a type export cannot flatten",
           r"which is not a known type|Encountered unrecognized type [^\n]{0,300}? at (output|input)"
           r"|is not a registered (pytree|dataclass)|No pytree flatten function|register_dataclass"
           r"|inputs with type [^\n]{0,300}? is not supported or pytree-flattenable|Unsupported input type",
           _ERRORS, "error-not-a-known-type",
           messages=("RuntimeError: Found <class '__main__.Box'> in output, which is not a known type. If this type "
                     'holds tensors, you need to register a pytree for it. See '
                     "https://github.com/pytorch/functorch/issues/475 for a brief explanation why. If you don't need "
                     "to register a pytree, please leave a comment explaining your use case and we'll make this more "
                     'ergonomic to deal with',
                     "UserError: It looks like one of the inputs with type `<class "
                     "'transformers.cache_utils.DynamicCache'>` is not supported or pytree-flattenable."),
           plain_python=True, distinctive=r"pytree"),
    # fxguide's concrete tracer
    _cause("an output holding the tracer's proxies", r"returns trace-time objects",
           _CONCRETE, "concrete-tracing-real-values-alongside-the-proxies"),
    _cause("an object symbolic tracing cannot write into a graph", r"^NotImplementedError: argument of type: <class ",
           _CONCRETE, "concrete-traced-objects", plain_python=True),
    _cause("an object holding tensors given to the concrete tracer as an input",
           r"^TypeError: concrete_trace: the example input .* is \(or holds\) a ", _CONCRETE, "concrete-traced-objects"),
    _cause("a traced value the concrete tracer cannot guard", r"^UnguardableError:", _CONCRETE, "all-four-models-guarded"),
    _cause("another input takes another path", r"^GuardError:", _CONCRETE, "one-graph-per-path", plain_python=True),
    _cause("a list the concrete tracer made read-only", r"'immutable_list' object does not support mutation",
           _CAPTURE_TOOLS, "a-fair-verdict-on-the-concrete-tracer", ("concrete_trace",)),
    _cause("a call the concrete tracer handed its own objects",
           r"expects a tensor but received <class '[\w.]*ConcreteProxy'>"
           r"|received an invalid combination of arguments - got \([^)]{0,1000}immutable_list",
           "survey", "survey-concrete-tracer-own-objects",
           messages=("TypeError: mark_static_address expects a tensor but received "
                     "<class 'fxguide.tracing.concrete.ConcreteProxy'>",)),
    # a library's feature extractor
    _cause("a path the extractor's train-mode trace does not have", r"^AttributeError: 'NoneType' object has no attribute",
           "feature-extraction", "train-and-eval-can-trace-differently", ("library_route",)),
    # the second input
    _cause("a batch of 1 through a graph traced for larger batches", r"on a batch of 1$",
           "pt2/export-real-models", "export-real-zero-one", ("export_dynamic_batch",)),
    _cause("a capture that computes something else", r"^values differ|^shapes differ|^dtypes differ|^devices differ"
           r"|^\d+ (outputs|items) instead of \d+|instead of a tensor|^a \w+ instead of a \w+|^keys differ"
           r"|^froze a random draw$|^froze state from the first call$", "limitations", "limitations-silent",
           plain_python=True),
    # a graph that calls a module with other arguments than its forward takes (before the constructor class below,
    # whose pattern also reads `X.forward() takes 1 positional argument`); their home is another page.
    # An unqualified `forward()` is a GraphModule's generated forward (a class's own forward prints `Net.forward()`)
    _cause("a graph's forward called without an input it takes (a fused partition's module, say)",
           r"^TypeError: forward\(\) missing \d+ required positional arguments?: ",
           "pt2/pass-infrastructure", "capabilitybasedpartitioner-what-a-backend-supports",
           messages=("TypeError: forward() missing 1 required positional argument: 'x'",), plain_python=True),
    _cause("a module called with more arguments than its forward takes "
           "(a swapped submodule of an unflattened program, say)",
           r"^TypeError: \w+\.forward\(\) takes \d+ positional arguments? but \d+ were given",
           "pt2/saving", "replacing-a-submodule-preserve_module_call_signature",
           messages=("TypeError: HardGate.forward() takes 2 positional arguments but 3 were given",),
           plain_python=True),
    # the rest of the error index, after the classes above (which a diagnosis tried first before these were added)
    # symbolic tracing
    _cause("a constructor given several traced sizes",
           r"\b(?:new_)?(?:zeros|ones|empty|full|rand|randn|randint|randperm|eye|arange|tensor)\(\) "
           r"(?:takes 1 positional argument but \d+ were given|received an invalid combination of arguments - "
           r"got \((?:Proxy|Attribute|int)(?:, (?:Proxy|Attribute|int))*\))",
           _ERRORS, "error-zeros-traced-sizes",
           messages=("TypeError: zeros() takes 1 positional argument but 2 were given",
                     "TypeError: randn() received an invalid combination of arguments - got (Proxy, Proxy), but "
                     "expected one of:")),
    _cause("a feature-extractor node the graph lacks", r"node: '?[^'\s]*'? is not present in model",
           _ERRORS, "error-node-not-present",
           messages=("ValueError: node: 'layer1' is not present in model. Hint: use `get_graph_node_names` to make "
                     'sure the `return_nodes` you specified are present. It may even be that you need to specify '
                     '`train_return_nodes` and `eval_return_nodes` separately.',)),
    _cause("torch.fx.wrap called inside a function", r"wrap must be called at the top level of a module",
           _ERRORS, "error-wrap-top-level",
           messages=("NotImplementedError: wrap must be called at the top level of a module",)),
    # graph editing
    _cause("erasing a node that still has users", r"Tried to erase Node \S+ but it still had \d+ users in the graph",
           _ERRORS, "error-erase-node",
           messages=("RuntimeError: Tried to erase Node relu but it still had 1 users in the graph: {add: None}!",)),
    _cause("a node placed before its argument", r"Argument '?[^'\s]*'? of Node '?[^'\s]*'? was used before it has been defined",
           _ERRORS, "error-used-before-defined",
           messages=("RuntimeError: Argument 'add' of Node 'neg' was used before it has been defined! Please check "
                     "that Nodes in the graph are topologically ordered",)),
    _cause("a generated forward that reads a value before it is made",
           r"^UnboundLocalError: cannot access local variable '?\w+'? where it is not associated with a value",
           _ERRORS, "error-unbound-local",
           messages=("UnboundLocalError: cannot access local variable 'neg' where it is not associated with a value",),
           plain_python=True),
    # GraphModule
    _cause("a PT2E model used like a GraphModule", r"object has no attribute 'meta'$",
           _ERRORS, "error-pt2e-meta", messages=("AttributeError: 'ExportedProgram' object has no attribute 'meta'",),
           plain_python=True, distinctive=r"'ExportedProgram' object"),
    _cause("a GraphModule's root without what its graph reads", r"^AttributeError: 'Module' object has no attribute",
           _ERRORS, "error-no-attribute", messages=("AttributeError: 'Module' object has no attribute 'weight'",),
           plain_python=True),
    # the same cause when the root is a real model: the GraphModule's class is named after it ('Sequential' object
    # ...), so the words are any AttributeError's; the traceback tells: the generated forward (<eval_with_key>) reads
    # the attribute and nn.Module's __getattr__ refuses it (not a frame of the reader's own module in between)
    _cause("a graph that reads a submodule or attribute its GraphModule does not hold (a pass's call_module target)",
           r"^AttributeError: '\w+' object has no attribute '[\w.]+'",
           "problems/when-it-fails", "problems-no-attribute",
           frames=(r'<eval_with_key>[^"\n]{0,300}", line \d+, in forward[ \t]{0,20}\n(?:[^\n]{0,300}\n){0,3}?'
                   r'[ \t]{0,20}File "[^"\n]{0,300}[/\\]torch[/\\]nn[/\\]modules[/\\]module\.py", line \d+, in __getattr__'),
           plain_python=True),
    _cause("torch.load of a pickled module", r"Weights only load failed", _ERRORS, "error-weights-only",
           messages=("UnpicklingError: Weights only load failed. This file can still be loaded, to do so you have "
                     "two options, do those steps only if you trust the source of the checkpoint.",)),
    # torch.compile's mark_dynamic: Dynamo names the input by its source (L['x']), export by the Dim's name
    _cause("mark_dynamic on a dimension the code fixes (torch.compile)",
           r"(marked |Constraints violated \()L\[['\"]\w+['\"]\]\.size\(\)", "pt2/dynamic-shapes",
           "dynamic-shapes-marked-but-fixed",
           messages=("ConstraintViolationError: Constraints violated (L['x'].size()[0])! For more information, run "
                     'with TORCH_LOGS="+dynamic".',)),
    # torch.export
    # the narrower class first: a message's later lines may name it (lookup's _narrowed)
    _cause("a dimension marked dynamic that the code specialized",
           r"marked \S+ as dynamic but your code specialized it to be a constant", _ERRORS, "error-specialized-constant",
           messages=('UserError: - You marked batch as dynamic but your code specialized it to be a constant (1). If '
                     "you're using mark_dynamic, either remove it or use maybe_mark_dynamic. If you're using "
                     'Dim.DYNAMIC, replace it with either Dim.STATIC or Dim.AUTO.',)),
    _cause("a dynamic dimension export found constrained", r"Constraints violated \(", _ERRORS,
           "error-constraints-violated",
           messages=('UserError: Constraints violated (width)! For more information, run with '
                     'TORCH_LOGS="+dynamic".',)),
    _cause("Dim.DYNAMIC given to a size of 0 or 1", r"Received user-specified dim hint Dim\.DYNAMIC[^\n]{0,300}?specialized",
           _ERRORS, "error-dim-dynamic-specialized",
           messages=("ValueError: - Received user-specified dim hint Dim.DYNAMIC(min=None, max=None), but export 0/1 "
                     "specialized due to hint of 1 for dimension inputs['input'].shape[0].",)),
    _cause("an exported program called with another size", r"^AssertionError: Guard failed: ", _ERRORS,
           "error-guard-failed", messages=("AssertionError: Guard failed: x.size()[0] == 2",)),
    _cause("a runtime assertion of an exported program", r"Runtime assertion failed for expression [^\n]{0,500}? on node",
           _ERRORS, "error-runtime-assertion",
           messages=("RuntimeError: Runtime assertion failed for expression u0 <= 5 on node 'le_1'",)),
    _cause("a custom operator without a fake implementation", r"There was no fake impl registered for",
           _ERRORS, "error-no-fake-impl",
           messages=("RuntimeError: There was no fake impl registered for <CustomOpDef(fxguide_errors::scaled)>. "
                     "This is necessary for torch.compile/export/fx tracing to work. Please use "
                     "`scaled.register_fake` to add an fake impl.",)),
    _cause("a kernel that reads a fake tensor's data", r"Cannot access data pointer of Tensor", _ERRORS,
           "error-data-pointer",
           messages=('RuntimeError: Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). If '
                     "you're using torch.compile/export/fx, it is likely that we are erroneously tracing into a "
                     'custom kernel. To fix this, please wrap the custom kernel into an opaque custom op. Please see '
                     'the following for details: https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html',)),
    _cause("a node without the metadata export's checks need", r"Node\.meta \S+ is missing val field",
           _ERRORS, "error-spec-violation", messages=("SpecViolationError: Node.meta print_1 is missing val field.",)),
    _cause("example inputs not given as a tuple", r"Expecting `args` to be a tuple of example positional inputs",
           _ERRORS, "error-export-args-tuple",
           messages=("UserError: Expecting `args` to be a tuple of example positional inputs, "
                     "got <class 'torch.Tensor'>",)),
    _cause("eval() or train() on an exported module", r"Calling (eval|train)\(\) is not supported yet", _ERRORS,
           "error-eval-not-supported", messages=("NotImplementedError: Calling eval() is not supported yet.",
                                                  "NotImplementedError: Calling train() is not supported yet.")),
    _cause("a Python value read from a tensor under make_fx",
           r"trying to get value out of a tracing tensor", _ERRORS, "error-make-fx-value",
           messages=("RuntimeError: It appears that you're trying to get value out of a tracing tensor with "
                     "aten._local_scalar_dense.default - erroring out! It's likely that this is caused by "
                     'data-dependent control flow or similar.  It may be possible to trace this with dynamic shapes; '
                     "try setting tracing_mode='symbolic' in your make_fx call.",)),
    # Dynamo
    _cause("a graph break on a builtin", r"^Unsupported: Failed to trace builtin operator", _ERRORS,
           "error-graph-break", graph_break="GB0059",
           messages=("Unsupported: Failed to trace builtin operator",
                     "Explanation: Dynamo does not know how to trace builtin operator `print` with argument types "
                     "['str'] (has_kwargs False)")),
    _cause("a call to a function Dynamo skips", r"^Unsupported: Attempted to call function marked as skipped",
           _ERRORS, "error-skipped-function", graph_break="GB0007",
           messages=("Unsupported: Attempted to call function marked as skipped",
                     "Explanation: Dynamo does not know how to trace the builtin `time.time.` This function is either "
                     "a Python builtin (e.g. _warnings.warn) or a third-party C/C++ Python extension (perhaps "
                     "created with pybind).")),
    _cause("a call to a torch.compiler.disable'd function", r"^Unsupported: Skip calling `torch\.compiler\.disable\(\)`d",
           _ERRORS, "error-compiler-disable", graph_break="GB0098",
           messages=("Unsupported: Skip calling `torch.compiler.disable()`d function",
                     "Explanation: Skip calling function `<function left_to_python at 0x…>` since it was wrapped "
                     "with `torch.compiler.disable` (reason: None)")),
    _cause("more recompiles than the limit", r"Hard failure due to fullgraph=True|recompile_limit", _ERRORS,
           "error-recompile-limit", messages=("FailOnRecompileLimitHit: Hard failure due to fullgraph=True",)),
    _cause("an operation that failed on fake tensors", r"RuntimeError when making fake tensor call", _ERRORS,
           "error-fake-tensor-call", graph_break="GB4315",
           messages=("TorchRuntimeError: RuntimeError when making fake tensor call",
                     "Explanation: Dynamo failed to run FX node with fake tensors: call_function "
                     "fxguide_errors.scaled.default(*(FakeTensor(..., size=(2,)),), **{}): got RuntimeError('There "
                     "was no fake impl registered for <CustomOpDef(fxguide_errors::scaled)>.")),
    # PT2E quantization
    _cause("the old PT2E capture function", r"(has no attribute|cannot import name) 'capture_pre_autograd_graph'",
           _ERRORS,
           "error-capture-pre-autograd-graph",
           messages=("AttributeError: module 'torch._export' has no attribute 'capture_pre_autograd_graph'",)),
    # causes whose home is another page (listed under "Causes explained on other pages" on the error index)
    _cause("a feature extractor's model contract", r"Expected FunctionType, got <class 'NoneType'>|"
           r"object has no attribute 'feature_info'", "problems/when-it-fails", "problems-feature-extractor-contract",
           plain_python=True),
    _cause("a Proxy stored where a Node belongs", r"^NameError: name 'Proxy' is not defined",
           "problems/when-it-fails", "problems-proxy-in-args", plain_python=True),
    _cause("dead-code elimination on a Graph with no module", r"owning_module not set for purity check",
           "problems/when-it-fails", "problems-dce-bare-graph"),
    # a number read with .item() is not size-like ("Size-like symbols: none"); mark_unbacked's size is
    _cause("a branch on a number read from a tensor (.item()), compiled with fullgraph=True",
           r"Consider annotating your code using torch\._check\*\(\)\. Could not guard on data-dependent expression "
           r"[^\n]{1,300}?\(Size-like symbols: none\)", "pt2/data-dependent-sizes", "data-sizes-branch"),
    _cause("a size from data checked by compile", r"Consider annotating your code using torch\._check",
           "pt2/data-dependent-sizes", "data-sizes-mark-unbacked"),
    _cause("a dynamic-shape spec given twice or to the wrong make_fx mode",
           r"make_fx\(dynamic_shapes=\.\.\.\) requires tracing_mode='fake'|Both `@dynamic_spec\(\.\.\.\)` is attached",
           "pt2/dynamic-shapes", "dynamic-shapes-spec"),
    # the exporter colours "This is step 1/3": the ANSI escapes stay in a log file or a CI log a reader pastes from
    _cause("ONNX export stopped by torch.export",
           r"Failed to export the model with torch\.export\. (?:\x1b\[[0-9;]{1,10}m)?This is step 1/3",
           "pt2/onnx", "onnx-data-dependent"),
    _cause("a function given to GraphModule as its root", r"Unsupported type [^\n]{1,200}? passed for root",
           "custom-tracers", "a-tracer-is-a-class"),
    _cause("a torch.compile'd module given to symbolic_trace",
           r"Module \[OptimizedModule\] is missing the required \"forward\" function",
           "problems/when-it-fails", "problems-compiled-module",
           messages=('NotImplementedError: Module [OptimizedModule] is missing the required "forward" function',)),
    _cause("an exported program's runnable module (ep.module()) saved with torch.save or pickle",
           r"Can't (pickle|get) local object '?(<function )?_create_stateful_graph_module\.<locals>",
           "pt2/saving", "epmodule-does-not-pickle"),
    _cause("the _guards_fn of ep.module(), pickled by a tool that copies every submodule (to_folder)",
           r"Can't (pickle|get) local object '?(<function )?wrap_dunder_call_ctx_manager\.<locals>",
           "pt2/export-passes", "export-passes-guards-fn"),
    _cause("a program edited with a Python function as an operator", r"Operator '[^'\n]{1,300}' is not an allowed operator type",
           "pt2/export-passes", "export-passes-edit-program"),
    _cause("a random draw in a strict export (a value it would add as an input)",
           r"Dynamo attempts to add additional input during export", "pt2/export-real-models", "export-real-strict"),
    _cause("a dynamic_shapes spec that does not mirror the inputs",
           r"top-level keys must be the arg names|Detected mismatch between the structure of `inputs` and "
           r"`dynamic_shapes`", "pt2/export-real-models", "export-real-dims"),
    _cause("dynamic_shapes that the example contradicts (a size of 1 marked dynamic)",
           r"Found the following conflicts between user-specified ranges and inferred ranges",
           "pt2/export-real-models", "export-real-zero-one",
           messages=("ValueError: Found the following conflicts between user-specified ranges and inferred ranges "
                     "from model tracing:",)),
    _cause("an operator deleted from a decomposition table that does not hold it",
           r"^KeyError: <OpOverload\(op='[\w.]+', overload='\w+'\)>$", "pt2/ir-levels", "keeping-one-operator-whole",
           messages=("KeyError: <OpOverload(op='aten.batch_norm', overload='default')>",)),
    _cause("torch.export.export_for_training, gone from torch",
           r"(has no attribute|cannot import name) 'export_for_training'",
           "pt2/ir-levels", "training-ir-is-not-train-mode",
           messages=("AttributeError: module 'torch.export' has no attribute 'export_for_training'",)),
    _cause("transformers' FX tracer, removed in transformers 5",
           r"No module named 'transformers\.utils\.fx'|cannot import name '(HFTracer|symbolic_trace)' from "
           r"'transformers\.utils", "problems/how-do-i", "problems-hf-without-fx-tracer"),
    _cause("a pass that replaced an output node without renaming it in the graph signature",
           r"User output \S+ is not in the correct order", "pt2/metadata", "a-pass-that-adds-nodes",
           messages=("SpecViolationError: User output addmm_default is not in the correct order or is not found in "
                     "the exported program's user_output list: ('linear',).",)),
    _cause("backward through a custom operator without a registered backward",
           r"Trying to backward through \S+ but no autograd formula was registered", "pt2/opaque-regions",
           "opaque-opcheck",
           messages=("RuntimeError: Trying to backward through fxguide_pt2.unit_norm.default but no autograd formula "
                     "was registered. Please use register_autograd to add one.",)),
    _cause("an XNNPACK quantizer imported from torchao (it lives in ExecuTorch)",
           r"cannot import name 'XNNPACK\w*'|No module named '[\w.]*xnnpack_quantizer'",
           "pt2/pt2e-deployment", "where-other-backends-quantizers-live"),
    _cause("PT2E quantization imported from torch.ao (it moved to torchao)",
           r"No module named 'torch\.ao\.quantization\.(quantize_pt2e|pt2e|quantizer)\b"
           r"|cannot import name '\w+_pt2e' from 'torch\.ao\.", "pt2/quantization", "quantization-api",
           messages=("ModuleNotFoundError: No module named 'torch.ao.quantization.quantize_pt2e'",)),
    _cause("a 2-D matrix operator (mm, addmm) given a batched input, as a replacement pattern can do",
           r"mat1 must be a matrix, got \d+-D tensor", "gallery/replace_pattern", "replace-pattern-every-match",
           messages=("RuntimeError: mat1 must be a matrix, got 3-D tensor",),
           plain_python=True),  # eager torch.addmm of a 3-D input raises it too
    _cause("a pickled GraphModule whose tracer needs constructor arguments",
           r"^TypeError: \w+\.__init__\(\) missing \d+ required positional arguments?: ", "pt2/saving",
           "saving-pickle-custom-tracer", plain_python=True),
    _cause("a recompile under the fail_on_recompile stance",
           r"Detected recompile when torch\.compile stance is 'fail_on_recompile'", "pt2/debugging", "pt2-debugging-stance"),
    _cause("a tool that walks only the top-level graph", r"is not an aten conv2d operator", "pt2/higher-order-ops",
           "hop-no-grad-autocast"),
    # shipping and loading: what the target machine needs
    _cause("aoti_compile_and_package given a module instead of the program torch.export made",
           r"^ValueError: Only ExportedProgram is supported", "pt2/shipping", "shipping-aoti-package"),
    _cause("a saved compiled function (or a cache) loaded where no C++ compiler works: the load compiles C++",
           r"InvalidCxxCompiler\b", "pt2/shipping", "shipping-aot-compile"),
    _cause("an AOTInductor package called with a size outside the export's range (input checks on)",
           r"dim value is too small at \d+, expected it to be >= \d+|dim value is too large at \d+, expected it "
           r"to be <= \d+", "pt2/shipping", "shipping-checks"),
    _cause("a loaded aot_compile function called with an input its guards refuse",
           r"GuardManager check failed", "pt2/shipping", "shipping-aot-compile"),
    _cause("a compile package loaded by another torch or Python than the one that made it",
           r"Compile package was created with a different (PyTorch|Python) version", "pt2/shipping",
           "shipping-aot-compile"),
    _cause("a program that calls a custom operator, loaded without the module that defines it",
           r"We failed to resolve torch\.ops\.[\w.]+ to an operator"
           r"|We ran into an error when deserializing the saved file", "pt2/saving", "saving-custom-ops"),
    _cause("the two branches of a torch.cond returning different dtypes (a pass changed one)",
           r"When merging two branches' output in torch\.cond,\s+expected same (dtype|shape|device)",
           "pt2/higher-order-ops", "hop-branches-agree"),
    _cause("draft_export stopped by an unbacked size no output carries (torch.where with one argument)",
           r"Pending unbacked symbols \{[^}\n]{1,200}\} not in returned outputs", "pt2/export-real-models",
           "export-real-draft-where"),
    _cause("a backend name torch.compile does not know (a typo, or not registered)",
           r"Invalid backend: '[^'\n]{1,200}'", "pt2/compile-backends", "compile-named-backends"),
    _cause("load_constants given a name the AOTInductor package has no constant for (a small tensor inlined)",
           r"Constant not found: [\w.]+|Cannot find constants \w+ in constants_map", "pt2/shipping", "shipping-swap"),
    _cause("a torch.compiler.precompile artifact called with another shape or dtype than it was traced with",
           r"precompile: a runtime input has (shape|dtype) ", "pt2/shipping", "shipping-precompile"),
    _cause("aoti_load_package given an archive without the default model name",
           r"Failed to find a generated cpp file or so file for model '[^'\n]{1,200}' in the zip archive",
           "pt2/shipping", "shipping-several-models"),
    _cause("the minifier's accuracy check: a backend's result differs from eager",
           r"AccuracyError: Bad accuracy detected", "pt2/debugging", "pt2-debugging-minifier"),
    _cause("an operator the ONNX exporter has no translation for (a custom operator)",
           r"No ONNX function found for <OpOverload", "pt2/onnx", "onnx-custom-op"),
    _cause("ONNX Runtime given a size the export fixed",
           r"INVALID_ARGUMENT : Got invalid dimensions for input", "pt2/onnx", "onnx-runtime"),
    # Last: any other graph break that fullgraph=True (or error_on_graph_break) turned into an error. The lookup
    # prefers the cause of a graph-break id the text names (GB0170 ...) to this one.
    _cause("another graph break, made an error", r"^Unsupported: ", "pt2/debugging", "pt2-debugging-graph-breaks"),
    _cause("an input with no batch dimension, given to the dynamic-batch row", r"^eager fails on a batch of \d+: ",
           "problems/diagnose", "diagnose-batch"),
    _cause("a custom operator that fails torch.library.opcheck", r"^OpCheckError: opcheck\(op, \.\.\.\)",
           "pt2/opaque-regions", "opaque-opcheck"),
)
"""The cause classes the guide explains, in the order they are tried."""

TOOL_SECTIONS: dict[str, Section] = {
    "symbolic_trace": Section("limitations", ""),
    "concrete_trace": Section(_CONCRETE, "concrete-tracing-real-values-alongside-the-proxies"),
    "library_route": Section("feature-extraction", ""),
    "export": Section(_CAPTURE_TOOLS, "beyond-export"),
    "export_strict": Section(_CAPTURE_TOOLS, "beyond-export"),
    "export_dynamic_batch": Section(_CAPTURE_TOOLS, "beyond-dynamic-shapes"),
    "compile_fullgraph": Section(_CAPTURE_TOOLS, "beyond-compile"),
}
"""Each tool's own section, the one an unclassified failure of that tool points to."""


# Evidence that pasted text is an error of torch's capture stack (for the plain_python causes): a frame in a file of
# torch (its eager-only corners left out: an error in the reader's forward passes through nn.Module's __call__, one
# in a backward through autograd), of torchao (PT2E), of fxguide, of torchvision's feature extraction, or of the
# code fx generates ...
_FRAME_FILE = re.compile(r'^\s*File "([^"\n]*)", line \d+')
_CAPTURE_FILE = re.compile(
    r"[/\\]torch[/\\](?!(?:nn|optim|cuda|autograd|amp|distributed|multiprocessing|utils[/\\]data)[/\\]"
    r"|(?:_tensor|serialization|hub|functional|random)\.py$)"
    r"|[/\\]torchao[/\\]|[/\\]fxguide[/\\](?:tracing|diagnose|transforms|display|models)[/\\]"
    r"|[/\\]torchvision[/\\]models[/\\]feature_extraction\.py$|^<eval_with_key>")
# ... or a phrase only torch's tracing prints, in the message (not in the code a traceback quotes, nor in a quoted
# value: 'Proxy' in "name 'Proxy' is not defined" is the reader's own name). Each phrase with a word it holds, looked
# for first (a substring test is cheap on a long paste; one pattern of all the phrases is not).
_CAPTURE_PHRASES = tuple((word, re.compile(pattern)) for word, pattern in (
    ("Proxy", r"\bProxy\b"), ("symbolic", r"symbolic(?:ally)?[ _]trac"),
    ("torch.", r"\btorch\.(?:_\w|fx\b|export\b|compile|library\b|ao\b|onnx\b|jit\b)"), ("ynamo", r"\b[Dd]ynamo\b"),
    ("ExportedProgram", r"\bExportedProgram\b"), ("GraphModule", r"\bGraphModule\b"), ("FakeTensor", r"\bFakeTensor"),
    ("FunctionalTensor", r"\bFunctionalTensor"), ("Sym", r"\bSym(?:Int|Float|Bool|Node)\b"),
    ("graph", r"\bgraph[ _]break"), ("aten", r"\baten[.:]{1,2}\w"), ("make_fx", r"\bmake_fx\b"),
    ("TORCH_LOGS", r"\bTORCH_LOGS\b"), ("fullgraph", r"\bfullgraph\b"), ("eval_with_key", r"eval_with_key"),
    ("pytree", r"\bpytree"), ("OpOverload", r"\bOpOverload"), ("CustomOpDef", r"\bCustomOpDef\b"),
    ("GB", r"\bGB\d{4}\b"), ("fx.", r"\bfx\.[A-Z]"), ("Dim.", r"\bDim\.(?:DYNAMIC|AUTO|STATIC)\b"),
    ("dynamic_shapes", r"\bdynamic_shapes\b"), ("data-dependent", r"\bdata-dependent\b"), ("unbacked", r"\bunbacked\b"),
    ("concrete_trace", r"\bconcrete_trace\b"), ("fxguide", r"\bfxguide\b"),
    ("Explanation: ", r"^\s*Explanation: Dynamo"),
    ("Developer debug", r"^\s*Developer debug context:"), ("Unsupported: ", r"^\s*Unsupported: "),
    ("Inductor", r"\bInductor"), ("register_fake", r"\bregister_fake\b"), ("opcheck", r"\bopcheck\b"),
    ("OptimizedModule", r"\bOptimizedModule\b")))
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_RAISED = re.compile(r"\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*: ")  # an exception line: `torch._dynamo.exc.Unsupported: `


@lru_cache(maxsize=4)  # a lookup and its report read the same text
def from_capture_stack(text: str) -> bool:
    """Whether pasted ``text`` shows that it comes from torch's capture stack (torch.fx, torch.export,
    torch.compile): a traceback frame in a file of torch's capture code or of fxguide, or a phrase torch's tracing
    prints (``Proxy``, ``symbolically traced``, ``torch._dynamo``, ``GraphModule``, ``FakeTensor``, a graph-break
    id ...) in a line of the message. Linear in the length of ``text``.

    >>> from_capture_stack("torch.fx.proxy.TraceError: symbolically traced variables cannot be used")
    True
    >>> from_capture_stack("UnboundLocalError: cannot access local variable 'x' where it is not associated")
    False
    >>> from_capture_stack('  File "/venv/lib/python3.11/site-packages/torch/fx/graph_module.py", line 848, in f')
    True
    """
    if not isinstance(text, str):
        raise TypeError(f"from_capture_stack: text must be str, got {type(text).__name__}")
    phrases = [(word, phrase) for word, phrase in _CAPTURE_PHRASES if word in text]
    if not phrases and 'File "' not in text:
        return False
    after_frame = False
    for line in text.splitlines():
        frame = _FRAME_FILE.match(line)
        if frame:
            if _CAPTURE_FILE.search(frame[1]):
                return True
            after_frame = True
            continue
        if after_frame and (line.startswith("    ") or not _RAISED.match(line)):
            after_frame = line.startswith("    ")  # the line of source a frame quotes (and its ^^^ markers)
            continue
        after_frame = False
        found = [phrase for word, phrase in phrases if word in line]
        if found and any(phrase.search(_QUOTED.sub("''", line)) for phrase in found):
            return True
    return False


def classify(text: str, tool: str = "", traceback: str = "", capture_evidence: bool | None = None) -> Cause | None:
    """The cause class of ``tool``'s failure ``"Type: message"``, or ``None`` when no class matches.

    ``traceback`` is the text around the message (a pasted traceback), read by
    the classes that depend on where the error was raised (``Cause.frames``).
    ``capture_evidence`` is ``None`` for a failure a capture tool raised (a
    diagnosis); for text a reader pasted it is
    :func:`~fxguide.diagnose.causes.from_capture_stack` of the whole text, and a
    ``plain_python`` class is then skipped without it (unless the message holds
    the class's ``distinctive`` phrase).

    >>> classify("TraceError: symbolically traced variables cannot be used as inputs to control flow").name
    'control flow on a traced value'
    >>> classify("RuntimeError: something new") is None
    True
    >>> classify("UnboundLocalError: cannot access local variable 'x' where it is not associated with a value",
    ...          capture_evidence=False) is None
    True
    """
    if not isinstance(text, str) or not isinstance(tool, str) or not isinstance(traceback, str):
        raise TypeError(f"classify: text, tool and traceback must be str, got {type(text).__name__}, "
                        f"{type(tool).__name__} and {type(traceback).__name__}")
    return next((cause for cause in CAUSES if cause.answers(text, tool, traceback, capture_evidence)), None)


@cache
def published_site() -> str:
    """The published guide's root URL, ending in ``/``, or ``""``."""
    site = os.environ.get("FXGUIDE_SITE")
    if site is None:
        try:
            urls = metadata.metadata("fxguide").get_all("Project-URL") or []
        except metadata.PackageNotFoundError:
            urls = []
        site = next((url.split(",", 1)[1].strip() for url in urls
                     if url.split(",", 1)[0].strip().lower() == "documentation"), "")
    return site if not site or site.endswith("/") else site + "/"


@cache
def local_site() -> Path | None:
    """A local build of the guide: ``$FXGUIDE_LOCAL_SITE``, or the checkout's ``_build/html``."""
    given = os.environ.get("FXGUIDE_LOCAL_SITE")  # set and empty: no local build
    if given == "":
        return None
    candidates = [Path(given)] if given else [Path(__file__).resolve().parents[2] / "_build" / "html"]
    return next((path.resolve() for path in candidates if (path / "index.html").is_file()), None)
