"""One catalogue of causes: the error index and fxguide.diagnose's cause classes are the same list.

Every entry of the error index (docs/reference/errors.md) is a cause of
``fxguide.diagnose.causes.CAUSES`` with its section, and every cause is on the
error index (its own section, or its line in "Causes explained on other
pages"). Each cause's messages are the ones a cell of the site printed and
are classified as that cause; and every message a cell of the site raises is
answered by some cause, so a new page's new error shows up here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fxguide.diagnose.causes import CAUSES, classify, from_capture_stack, graph_break_url
from fxguide.diagnose.lookup import closest, lookup
from fxsite import ROOT

ERRORS = ROOT / "docs" / "reference" / "errors.md"
EXPECTED = ROOT / "tests" / "expected"
EXCEPTION_LINE = re.compile(r"^((?:[a-z_]\w*\.)*)([A-Z]\w*(?:Error|Exception|Unsupported|Violation|Hit|SymNode)\w*): (.+)$")
ADDRESS = re.compile(r"0x(?:[0-9a-fA-F]+|<addr>|…)")

# Raised by a cell of the site, but no error a reader's model meets: fxguide's own checks (they say what to do
# themselves), and a page's demonstration of a test helper or of an optional package missing.
NOT_CAUSES = {
    r"^ValueError: LeafTracer: ": "fxguide's own check, custom-tracers.md",
    r"^ValueError: extract_features: ": "fxguide's own check, feature-extraction.md",
    r"^AssertionError: Tensor-likes are not close!": "torch.testing's report of a difference, debugging.md",
    r"^ModuleNotFoundError: import of tabulate halted": "a missing optional package simulated, ir.md",
    r"^AssertionError: duplicate name: ": "a pattern registered twice on purpose, pattern-matcher.md",
    r"^RuntimeError: this backend cannot compile the graph": "a backend that fails on purpose, atlas/messages.md",
}
# Messages cells of the site raise that the error index does not answer yet (each is explained on its page).
# The test below fails when one of them gets a cause (take it off this list) or is no longer raised; and a NEW
# page's message that no cause answers fails the test too: give it a cause in causes.py and a section here.
NOT_YET_CATALOGUED: tuple[str, ...] = (
    r"^ConstraintViolationError: \d+ not in range",  # an example outside a Dim's range: atlas/messages.md
)


def _error_index_anchors() -> list[str]:
    return re.findall(r"^\((error-[\w-]+)\)=\n## ", ERRORS.read_text(), flags=re.MULTILINE)


def _elsewhere_section() -> str:
    text = ERRORS.read_text()
    start = text.index("(errors-elsewhere)=")
    return text[start:text.index("\n(", start + 1)]


def recorded_messages() -> dict[str, str]:
    """Every exception line the recorded outputs hold (the last line of a raising cell, a printed error),
    addresses normalized: message -> the recording it is in."""
    found: dict[str, str] = {}
    for recording in sorted(EXPECTED.rglob("*.txt")):
        for line in recording.read_text().splitlines():
            match = EXCEPTION_LINE.match(line.strip())
            if match:
                found.setdefault(ADDRESS.sub("0x…", f"{match[2]}: {match[3]}"), recording.name)
    return found


def _recorded_text() -> str:
    return ADDRESS.sub("0x…", "\n".join(path.read_text() for path in sorted(EXPECTED.rglob("*.txt"))))


def test_every_error_index_entry_is_a_cause():
    anchors = _error_index_anchors()
    assert len(anchors) >= 40, anchors
    causes_here = {cause.section.anchor for cause in CAUSES if cause.section.page == "reference/errors"}
    assert [anchor for anchor in anchors if anchor not in causes_here] == []


def test_every_cause_is_on_the_error_index():
    anchors = set(_error_index_anchors())
    elsewhere = _elsewhere_section()
    missing = [cause.name for cause in CAUSES
               if not (cause.section.anchor in anchors if cause.section.page == "reference/errors"
                       else cause.section.anchor and cause.section.anchor in elsewhere)]
    assert missing == []


def test_the_error_index_has_one_cause_per_entry():
    on_index = [cause.section.anchor for cause in CAUSES if cause.section.page == "reference/errors"]
    assert sorted(on_index) == sorted(set(on_index))


# The head of a traceback through torch's capture stack: a message plain Python prints too
# (UnboundLocalError: cannot access local variable ...) is that cause's error only with such a frame.
TORCH_FRAME = ('Traceback (most recent call last):\n  File "/home/me/.venv/lib/python3.11/site-packages/torch/fx/'
               'graph_module.py", line 848, in call_wrapped\n    return self._wrapped_call(self, *args, **kwargs)\n')


def _evidenced(cause, message: str) -> bool:
    return not cause.plain_python or from_capture_stack(message) or bool(
        cause.distinctive and cause.distinctive.search(message))


@pytest.mark.parametrize("cause", [c for c in CAUSES if c.section.page == "reference/errors"], ids=lambda c: c.name)
def test_an_entrys_messages_were_printed_by_the_site_and_find_it(cause):
    assert cause.messages, f"{cause.name}: give it the message(s) it answers, as a cell of the site printed them"
    recorded = _recorded_text()
    for message in cause.messages:
        assert ADDRESS.sub("0x…", message) in recorded, f"{message!r} is in no recorded output"
        found = lookup(message)
        if not _evidenced(cause, message):  # alone, the message could be plain Python's: the cause is a candidate
            assert found is None and closest(message)[0] is cause, (message, found)
            found = lookup(TORCH_FRAME + message)
        assert found is not None and found.cause is cause, (message, found)


def test_the_graph_break_ids_are_the_ones_torch_printed():
    recorded = _recorded_text()
    breaks = [cause for cause in CAUSES if cause.graph_break]
    assert len(breaks) >= 4
    for cause in breaks:
        assert graph_break_url(cause.graph_break) in recorded, cause.name


def test_every_message_the_site_raises_has_a_cause():
    unanswered, stale = [], set(NOT_YET_CATALOGUED)
    for message, recording in recorded_messages().items():
        if classify(message) is not None or any(re.search(p, message) for p in NOT_CAUSES):
            continue
        waiting = [p for p in NOT_YET_CATALOGUED if re.search(p, message)]
        stale -= set(waiting)
        if not waiting:
            unanswered.append(f"{recording}: {message[:200]}")
    assert unanswered == [], "messages no cause answers (add each to fxguide/diagnose/causes.py and errors.md)"
    assert stale == set(), "listed as not catalogued yet, but answered now or no longer raised: take them off"


# Messages of shipping, loading, cond and ONNX Runtime that pages print (audit P26): a phrase of each -> the
# section of the page that explains it.
PRINTED_ELSEWHERE = {
    "InvalidCxxCompiler": "shipping-aot-compile",
    "dim value is too small at": "shipping-checks",
    "GuardManager check failed": "shipping-aot-compile",
    "Compile package was created with a different": "shipping-aot-compile",
    "We failed to resolve torch.ops": "saving-custom-ops",
    "We ran into an error when deserializing the saved file": "saving-custom-ops",
    "When merging two branches' output in torch.cond": "hop-branches-agree",
    "INVALID_ARGUMENT : Got invalid dimensions for input": "onnx-runtime",
}


@pytest.mark.parametrize(("phrase", "anchor"), PRINTED_ELSEWHERE.items())
def test_a_message_a_page_printed_finds_the_section_that_explains_it(phrase, anchor):
    """Each line of the recorded outputs holding the phrase, pasted as it is, names the cause whose section
    is the one on the page that printed it (a Dynamo ``Explanation:`` line quoting it is read by Dynamo's
    sentence instead: the fake-tensor call that quotes it)."""
    lines = {line.strip() for path in sorted(EXPECTED.rglob("*.txt")) for line in path.read_text().splitlines()
             if phrase in line and not line.strip().startswith("Explanation:")}
    assert lines, f"no recorded output holds {phrase!r}: the page no longer prints it"
    for line in sorted(lines):
        found = lookup(line)
        assert found is not None and found.cause.section.anchor == anchor, (line, found)


@pytest.mark.parametrize(("pasted", "anchor"), [
    ("torch.fx.proxy.TraceError: symbolically traced variables cannot be used as inputs to control flow",
     "error-control-flow"),
    ("torch._dynamo.exc.Unsupported: Attempted to call function marked as skipped", "error-skipped-function"),
    ("Explanation: Dynamo does not know how to trace the builtin `os.getpid.` This function is either a Python "
     "builtin", "error-skipped-function"),
    ("For more details about this graph break, please visit: "
     "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html", "error-data-dependent-branching"),
    ("RuntimeError: There was no fake impl registered for <CustomOpDef(mylib::gelu2)>.", "error-no-fake-impl"),
    ("Tried to erase Node attention_mask_1 but it still had 2 users in the graph", "error-erase-node"),
    # a message's later lines can name a narrower class than its first line
    ("torch._dynamo.exc.UserError: Found the following conflicts between user-specified ranges and inferred "
     "ranges from model tracing:\n- Received user-specified dim hint Dim.DYNAMIC(min=None, max=None), but export "
     "0/1 specialized due to hint of 1 for dimension inputs['x'].shape[0].", "error-dim-dynamic-specialized"),
    ("ValueError: Found the following conflicts between user-specified ranges and inferred ranges from model "
     "tracing:", "export-real-zero-one"),
    # a name gone from torch or transformers, imported by name instead of read as an attribute
    ("ImportError: cannot import name 'capture_pre_autograd_graph' from 'torch._export' (/x/torch/_export/"
     "__init__.py)", "error-capture-pre-autograd-graph"),
    ("ImportError: cannot import name 'export_for_training' from 'torch.export'", "training-ir-is-not-train-mode"),
    ("ModuleNotFoundError: No module named 'transformers.utils.fx'", "problems-hf-without-fx-tracer"),
    # a number read with .item() and branched on under fullgraph=True: not size-like, unlike mark_unbacked's size
    ("torch._dynamo.exc.UserError: Consider annotating your code using torch._check*(). Could not guard on "
     "data-dependent expression zuf0 > 0.5 (unhinted: zuf0 > 0.5).  (Size-like symbols: none)", "data-sizes-branch"),
    # the ONNX exporter's colours, as a log file or a CI log keeps them
    ("torch.onnx._internal.exporter._errors.TorchExportError: Failed to export the model with torch.export. "
     "\x1b[96mThis is step 1/3\x1b[0m of exporting the model to ONNX. Next steps:", "onnx-data-dependent"),
    ("ValueError: Only ExportedProgram is supported", "shipping-aoti-package"),
])
def test_lookup_reads_a_message_as_a_traceback_prints_it(pasted, anchor):
    found = lookup(pasted)
    assert found is not None and found.cause.section.anchor == anchor, found


def test_lookup_reads_a_whole_traceback():
    traceback = ('Traceback (most recent call last):\n  File "model.py", line 9, in <module>\n'
                 "    gm = torch.fx.symbolic_trace(model)\n"
                 "torch.fx.proxy.TraceError: Proxy object cannot be iterated. This can be attempted when\n")
    assert lookup(traceback).cause.section.anchor == "error-proxy-iterated"


# torch.export.export(strict=True) of a torchvision model quantized in eager mode, as torch 2.14.1 prints it
# (abridged): the integer is taken by torch's own Quantize module, where no torch._check of the reader's helps.
QUANTIZED_EXPORT = """\
Traceback (most recent call last):
  File "/home/me/run.py", line 12, in <module>
    torch.export.export(model, (x,), strict=True)
  File "/home/me/.venv/lib/python3.11/site-packages/torch/export/_trace.py", line 1073, in _export_to_torch_ir
    gm_torch_level = dynamo_graph_capture(*args, **kwargs)
torch._dynamo.exc.UserError: Could not extract specialized integer from data-dependent expression u0 (unhinted: u0).  (Size-like symbols: none)


Caused by: return torch.quantize_per_tensor(  # ao/nn/quantized/modules/__init__.py:123 in forward (_dynamo/utils.py:4415 in run_node)
For more information, run with TORCH_LOGS="dynamic"

User Stack (most recent call last):
  (snipped, see stack below for prefix)
  File "/home/me/.venv/lib/python3.11/site-packages/torch/ao/nn/quantized/modules/__init__.py", line 123, in forward
    return torch.quantize_per_tensor(
"""


# a pass pointed a call_module node at a submodule the GraphModule (named after its root, Sequential) does not hold
MISSING_SUBMODULE = """\
Traceback (most recent call last):
  File "/home/me/rewrite.py", line 10, in <module>
    gm(torch.randn(2, 4))
  File "/home/me/.venv/lib/python3.11/site-packages/torch/fx/graph_module.py", line 1007, in call_wrapped
    return self._wrapped_call(self, *args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/home/me/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1794, in _call_impl
    return forward_call(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "<eval_with_key>.1 from /home/me/.venv/lib/python3.11/site-packages/torch/nn/modules/container.py:254 in forward", line 6, in forward
  File "/home/me/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1972, in __getattr__
    raise AttributeError(
AttributeError: 'Sequential' object has no attribute 'encoder'
"""


def test_lookup_finds_a_graphs_missing_submodule_only_where_the_generated_forward_reads_it():
    assert lookup(MISSING_SUBMODULE).cause.section.anchor == "problems-no-attribute"
    assert lookup(MISSING_SUBMODULE.replace("/", "\\")).cause.section.anchor == "problems-no-attribute"
    assert lookup(MISSING_SUBMODULE.splitlines()[-1]) is None  # the line alone is any AttributeError
    # a leaf module's own forward between them: its own bug, not the graph's
    own = MISSING_SUBMODULE.replace(
        '  File "/home/me/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1972',
        '  File "/home/me/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1794, in _call_impl\n'
        '    return forward_call(*args, **kwargs)\n'
        '           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n'
        '  File "/home/me/leafy.py", line 4, in forward\n    return x * self.scale\n'
        '  File "/home/me/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1972')
    assert "leafy.py" in own and lookup(own) is None


def test_lookup_sends_a_quantized_modules_specialized_integer_to_the_quantized_section():
    assert lookup(QUANTIZED_EXPORT).cause.section.path == "problems/diagnose.html#diagnose-quantized"
    windows = QUANTIZED_EXPORT.replace("/", "\\")  # the same traceback with a Windows path
    assert lookup(windows).cause.section.anchor == "diagnose-quantized"


def test_lookup_reads_no_cause_into_the_source_lines_a_traceback_quotes():
    pasted = ('Traceback (most recent call last):\n  File "/home/me/.venv/lib/python3.11/site-packages/torch/'
              'export/_trace.py", line 1073, in wrapper\n    return function(*args, **kwargs)\n'
              '           ^^^^^^^^^^^^^^^^^^^^^^^^^\nValueError: a message no cause answers')
    assert lookup(pasted) is None  # the quoted line shares its words with "Proxy object cannot be iterated"
    dims = pasted.replace("ValueError: a message no cause answers", "torch._dynamo.exc.UserError: When "
                          "`dynamic_shapes` is specified as a dict, its top-level keys must be the arg names ['x']")
    assert lookup(dims).cause.section.anchor == "export-real-dims"


def test_lookup_keeps_the_torch_check_section_for_a_specialized_integer_from_model_code():
    message = QUANTIZED_EXPORT.splitlines()[5]
    assert lookup(message).cause.section.path == "pt2/export-real-models.html#export-real-check"
    elsewhere = QUANTIZED_EXPORT.split("Caused by")[0] + '  File "/home/me/model.py", line 7, in forward\n'
    assert lookup(elsewhere).cause.section.anchor == "export-real-check"
    assert classify(message).section.anchor == "export-real-check"  # a diagnosis' first line alone


def test_lookup_validates_its_text():
    with pytest.raises(ValueError, match="the text is empty"):
        lookup("  \n")
    with pytest.raises(TypeError):
        lookup(None)
    with pytest.raises(ValueError, match="count"):
        closest("proxy", count=0)


def test_closest_ranks_the_causes_that_share_words():
    assert lookup("my proxy iteration went wrong") is None
    assert closest("my proxy iteration went wrong")[0].section.anchor == "error-proxy-iterated"


# The shell lookup on messages made by running snippets with values of their own (tests/pasted_errors.py).
SHARE = 0.95


@pytest.fixture(scope="module")
def pasted_messages():
    from pasted_errors import SNIPPETS, pasted

    messages = pasted()
    assert {anchor for _, _, anchor in messages} == set(SNIPPETS), "a snippet raised nothing"
    return messages


def _answered(text: str, anchor: str, form: str) -> bool:
    """``text`` named as the cause of ``anchor``; or, for a fragment (words in common are no evidence) and for a
    message plain Python prints too, no cause named and that cause first among the closest."""
    found = lookup(text)
    if found is not None:
        return found.cause.section.anchor == anchor
    cause = next(cause for cause in CAUSES if cause.section.anchor == anchor)
    return (form == "fragment" or not _evidenced(cause, text)) and closest(text)[:1] == [cause]


@pytest.mark.parametrize("form", ["traceback", "explanation", "fragment"])
def test_the_lookup_finds_pasted_messages(pasted_messages, form):
    tried = [(text, anchor) for kind, text, anchor in pasted_messages if kind == form]
    missed = [(text, anchor, getattr(lookup(text), "cause", None)) for text, anchor in tried
              if not _answered(text, anchor, form)]
    assert len(tried) >= (3 if form == "explanation" else 35)
    assert 1 - len(missed) / len(tried) >= SHARE, missed


def _explain(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fxguide.explain", *args], input=stdin, capture_output=True,
                          text=True, env={**os.environ, "FXGUIDE_LOCAL_SITE": ""}, cwd=ROOT)


def test_explain_prints_the_cause_and_the_section():
    done = _explain("torch._dynamo.exc.Unsupported: Data-dependent branching")
    assert done.returncode == 0, done.stderr
    assert "cause:  a branch on data, compiled" in done.stdout
    assert "reference/errors.html#error-data-dependent-branching" in done.stdout
    assert graph_break_url("GB0170") in done.stdout


def test_explain_reads_a_traceback_on_stdin():
    done = _explain(stdin='Traceback (most recent call last):\n  File "m.py", line 3, in <module>\n'
                          "torch.fx.proxy.TraceError: symbolically traced variables cannot be used as inputs to "
                          "control flow\n")
    assert done.returncode == 0 and "#error-control-flow" in done.stdout, done.stdout + done.stderr


def test_explain_says_when_nothing_matches_and_lists_the_closest():
    done = _explain("RuntimeError: my proxy iteration went wrong somewhere")
    assert done.returncode == 1
    assert "No cause in fxguide's catalogue matches" in done.stdout
    assert "#error-proxy-iterated" in done.stdout.split("The closest entries:")[1]


def test_explain_refuses_empty_text():
    done = _explain("   ")
    assert done.returncode == 2 and "no error text" in done.stderr


def test_every_catalogued_message_starts_with_its_exception_type_as_the_search_reads_it():
    """The site search guesses a pasted line's exception type from the catalogue's messages (``Type: text``); a
    message without one (a later line of a longer message) made every query match that cause's pattern."""
    untyped = [(cause.name, message) for cause in CAUSES for message in cause.messages
               if not re.match(r"[A-Z]\w*: ", message)]
    assert not untyped
