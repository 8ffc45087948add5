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
from functools import cache
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
    """A class of failures: a short name, the text it matches, and where the guide explains it."""

    name: str
    regex: re.Pattern[str]
    section: Section
    tools: tuple[str, ...] = ()  # only failures of these tools (all when empty)


def _cause(name: str, regex: str, page: str, anchor: str, tools: tuple[str, ...] = ()) -> Cause:
    return Cause(name, re.compile(regex), Section(page, anchor), tools)


_ERRORS = "reference/errors"
_BEYOND = "beyond"
CAUSES: tuple[Cause, ...] = (
    # symbolic tracing
    _cause("control flow on a traced value", r"symbolically traced variables cannot be used as inputs to control flow",
           _ERRORS, "error-control-flow"),
    _cause("iterating over a traced value", r"Proxy object cannot be iterated", _ERRORS, "error-proxy-iterated"),
    _cause("len() of a traced value", r"'len' is not supported in symbolic tracing", _ERRORS, "error-len"),
    _cause("int() of a traced value", r"int\(\) argument must be .*not '(Proxy|Attribute)'", _ERRORS, "error-int-proxy"),
    _cause("float() of a traced value", r"float\(\) argument must be .*not '(Proxy|Attribute)'",
           _ERRORS, "error-float-proxy"),
    _cause("math on a traced value", r"must be real number, not (Proxy|Attribute)", _ERRORS, "error-math-proxy"),
    _cause("a traced value used as an index", r"'(Proxy|Attribute)' object cannot be interpreted as an integer",
           _ERRORS, "error-interpreted-as-integer"),
    _cause("a traced value where Python needs a number",
           r"slice indices must be integers or None or have an __index__ method|"
           r"torch\.finfo\(\) requires a floating point input type", "limitations", "limitations-python-numbers"),
    _cause("item assignment on a traced value", r"'(Proxy|Attribute)' object does not support item assignment",
           _ERRORS, "error-item-assignment"),
    _cause("a traced value passed to NumPy-style code", r"__cuda_array_interface__",
           _ERRORS, "error-cuda-array-interface"),
    _cause("a module that is not a submodule", r"is not installed as a submodule", _ERRORS, "error-not-a-submodule"),
    _cause("a concrete argument that was specialized", r"has been specialized to have value",
           _ERRORS, "error-specialized"),
    _cause("a tensor's truth value", r"Boolean value of Tensor with more than one value is ambiguous",
           _ERRORS, "error-boolean-ambiguous"),
    _cause("a tensor constructor given traced sizes", r"must be tuple of ints, but found element of type (Proxy|Attribute)",
           "limitations", "limitations-constructors"),
    _cause("a decorated forward", r"co_varnames is too small", _ERRORS, "error-decorated-forward"),
    _cause("a Hugging Face forward that needs its keyword arguments",
           r"^AttributeError: 'NoneType' object has no attribute 'get'", "traceable-code",
           "traceable-code-decorated-forward"),
    # torch.export and torch.compile
    _cause("a branch on data", r"^GuardOnDataDependentSymNode: Could not guard on data-dependent expression"
           r"|^Unsupported: Data-dependent branching", _ERRORS, "error-data-dependent-guard"),
    _cause("a Python number taken from tensor data", r"Could not extract specialized integer from data-dependent",
           "pt2/export-real-models", "export-real-check"),
    _cause("an eager-mode quantized model", r"quantized\.\w+PackedParamsBase .*does not have a field",
           "problems/diagnose", "diagnose-quantized"),
    _cause("an output or input of a type export cannot flatten",
           r"which is not a known type|Encountered unrecognized type .* at (output|input)"
           r"|is not a registered (pytree|dataclass)|No pytree flatten function|register_dataclass",
           _ERRORS, "error-not-a-known-type"),
    # fxguide's concrete tracer
    _cause("an output holding the tracer's proxies", r"returns trace-time objects",
           _BEYOND, "concrete-tracing-real-values-alongside-the-proxies"),
    _cause("a traced value the concrete tracer cannot guard", r"^UnguardableError:", _BEYOND, "all-four-models-guarded"),
    _cause("another input takes another path", r"^GuardError:", _BEYOND, "one-graph-per-path"),
    _cause("a list the concrete tracer made read-only", r"'immutable_list' object does not support mutation",
           _BEYOND, "a-fair-verdict-on-the-concrete-tracer", ("concrete_trace",)),
    # a library's feature extractor
    _cause("a path the extractor's train-mode trace does not have", r"^AttributeError: 'NoneType' object has no attribute",
           "feature-extraction", "train-and-eval-can-trace-differently", ("library_route",)),
    # the second input
    _cause("a batch of 1 through a graph traced for larger batches", r"on a batch of 1$",
           "pt2/export-real-models", "export-real-zero-one", ("export_dynamic_batch",)),
    _cause("a capture that computes something else", r"^values differ|^shapes differ|^dtypes differ|^devices differ"
           r"|^\d+ (outputs|items) instead of \d+|instead of a tensor|^a \w+ instead of a \w+|^keys differ"
           r"|^froze a random draw$|^froze state from the first call$", "limitations", "limitations-silent"),
)
"""The cause classes the guide explains, in the order they are tried."""

TOOL_SECTIONS: dict[str, Section] = {
    "symbolic_trace": Section("limitations", ""),
    "concrete_trace": Section(_BEYOND, "concrete-tracing-real-values-alongside-the-proxies"),
    "library_route": Section("feature-extraction", ""),
    "export": Section(_BEYOND, "beyond-export"),
    "export_strict": Section(_BEYOND, "beyond-export"),
    "export_dynamic_batch": Section(_BEYOND, "beyond-dynamic-shapes"),
    "compile_fullgraph": Section(_BEYOND, "beyond-compile"),
}
"""Each tool's own section, the one an unclassified failure of that tool points to."""


def classify(text: str, tool: str = "") -> Cause | None:
    """The cause class of ``tool``'s failure ``"Type: message"``, or ``None`` when no class matches.

    >>> classify("TraceError: symbolically traced variables cannot be used as inputs to control flow").name
    'control flow on a traced value'
    >>> classify("RuntimeError: something new") is None
    True
    """
    if not isinstance(text, str) or not isinstance(tool, str):
        raise TypeError(f"classify: text and tool must be str, got {type(text).__name__} and {type(tool).__name__}")
    for cause in CAUSES:
        if (not cause.tools or tool in cause.tools) and cause.regex.search(text):
            return cause
    return None


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
