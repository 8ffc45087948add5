"""The inventory of torch's messages (issue 52, parts 1, 2 and 5): harvested from the installed torch, committed, and
recognised by the lookup with values nobody typed.

- the committed inventory of the installed release is what ``python -m fxsite.inventory`` harvests now (it cannot go
  stale silently);
- every recognisable entry, its template filled with values of a seeded generator (not the site's examples), is
  recognised as itself (or as an entry with the same literal text);
- short messages are recognised on what torch prints around them: a message without wildcards found whole under its
  exception type, a message of torch's own exception class after the class's module path in torch (real errors,
  raised by torch here);
- the plain-Python and other-library errors of tests/test_lookup_claims.py, and the messages Python's standard library
  raises in torch's words, are recognised as none;
- a 1 MB paste is answered in under a second;
- the harvester reads what it should from source (templates, branches, helpers), and the drift report says what
  changed between two releases.
"""

from __future__ import annotations

import ast
import builtins
import json
import random
import re
import sysconfig
import time
import traceback
from collections import Counter
from pathlib import Path

import pytest
import torch

from fxguide.diagnose.recognise import recognisable, recognise
from fxguide.diagnose.torch_messages import entries, fill, installed_release, inventory_release, parts, shipped
from fxguide.explain import NOT_CAPTURE, explain
from fxsite.inventory.__main__ import default_out
from fxsite.inventory.diff import drift, report
from fxsite.inventory.harvest import dumps, harvest
from fxsite.inventory.templates import Scope, build, finish, from_registry
from test_lookup_claims import FORMS, NOT_CLAIMED, TORCH_NOT_CAPTURE, _text

SITE = Path(sysconfig.get_paths()["purelib"])  # the installed torch's
REGENERATE = "python -m fxsite.inventory"  # reads this Python's site-packages


@pytest.fixture(scope="module")
def harvested() -> dict:
    return harvest(SITE)


def test_the_committed_inventory_is_what_the_installed_torch_holds(harvested):
    committed_path = default_out(harvested["release"])
    assert committed_path.is_file(), f"no inventory for torch {harvested['release']}: run `{REGENERATE}` and commit it"
    committed = json.loads(committed_path.read_text(encoding="utf-8"))
    if committed != harvested:
        drifted = report(drift(committed, harvested), limit=10)
        pytest.fail(f"{committed_path.name} is stale: run `{REGENERATE}` and commit the result\n{drifted}")
    assert committed_path.read_text(encoding="utf-8") == dumps(harvested)  # written as the harvester writes it


def test_the_inventory_holds_every_graph_break_type_and_each_subsystem(harvested):
    registry = json.loads((SITE / "torch/_dynamo/graph_break_registry.json").read_text(encoding="utf-8"))
    assert [entry["id"] for entry in harvested["graph_breaks"]] == sorted(registry)
    summary = harvested["summary"]
    assert summary["graph_breaks"]["types"] == len(registry) and summary["graph_breaks"]["raised_in_source"] > 400
    counted = {name: counts["templates"] for name, counts in summary["messages"].items()}
    assert {"fx", "export", "dynamo", "custom-ops", "pt2e", "aot-autograd", "inductor", "onnx"} <= counted.keys()
    assert min(counted[name] for name in ("fx", "export", "dynamo", "onnx")) > 200, counted
    assert Counter(entry["subsystem"] for entry in harvested["messages"]) == Counter(
        {name: count for name, count in counted.items() if count})
    ids = [entry["id"] for entry in harvested["messages"]]
    assert len(ids) == len(set(ids))
    assert not any(re.search(r"\bsite-packages\b|^/", place["file"]) for entry in harvested["messages"]
                   for place in entry["where"])  # paths relative to site-packages: the same on every machine


def test_both_releases_are_committed_and_the_lookup_reads_the_installed_one():
    assert {"2.14.1", "2.15.0"} <= set(shipped())
    assert inventory_release() == installed_release()
    for release in ("2.14.1", "2.15.0"):
        data = json.loads(default_out(release).read_text(encoding="utf-8"))
        assert data["release"] == release and data["summary"]["total"]["templates"] == len(data["messages"])


# --- recognised, with values nobody typed ------------------------------------------------------------------------


def _values(rng: random.Random):
    while True:
        yield rng.choice([f"v{rng.randrange(10**6)}", f"qz_{rng.randrange(1000)}x", str(rng.randrange(2, 10**5)),
                          f"'k{rng.randrange(999)}'", f"<class 'm{rng.randrange(99)}.T'>"])


def _type(entry) -> str:
    """The entry's exception as a traceback prints it: a class of torch's after a module path in torch (the file
    that raises it), one of Python's bare."""
    if entry.exception in dir(builtins):
        return entry.exception
    return f"{entry.where[0].file.removesuffix('.py').removesuffix('/__init__').replace('/', '.')}.{entry.exception}"


def _pasted(entry, rng: random.Random) -> str:
    """The entry as torch prints it, its wildcards filled with values of ``rng``."""
    if entry.graph_break:
        return (f"torch._dynamo.exc.Unsupported: {fill(entry.template, _values(rng))}\n"
                f"  Explanation: {fill(entry.explanation, _values(rng))}\n\n  Developer debug context: x\n")
    return f"{_type(entry)}: {fill(entry.template, _values(rng))}"


def _literal(template: str) -> list[str]:
    return " ".join(" ".join(parts(line)) for line in template.split("\n")).split()


def test_every_recognisable_message_is_recognised_with_values_nobody_typed():
    rng = random.Random(52)
    tried, wrong = 0, []
    start = time.perf_counter()
    for entry in entries():
        if not recognisable(entry):
            continue
        tried += 1
        found = recognise(_pasted(entry, rng), 1)
        if not found or found[0].entry.id != entry.id and _literal(found[0].entry.template) != _literal(entry.template):
            wrong.append((entry.id, entry.template[:80], found and (found[0].entry.id, found[0].entry.template[:80])))
    assert wrong == [], f"{len(wrong)} of {tried} recognised as another message or none"
    assert time.perf_counter() - start < 10  # 0.3 s on a quiet machine


def _fragment(message: str) -> str:
    """Six words from inside a message, as a reader pastes what they remember of it."""
    return " ".join(message.split()[2:8])


def test_most_messages_are_recognised_from_six_words_of_their_middle_and_none_as_another():
    """A fragment of a message (``keyword mismatch: Got the following keywords``) holds no line of it whole; it is
    recognised when its words are a stretch of one template's, values where the template has a wildcard, and
    only when no other message fits as well. Every recognisable message of nine words or more, filled with
    values nobody typed: most found, one of a thousand at most taken for another."""
    rng = random.Random(52)
    tried, found, wrong = 0, 0, []
    for entry in entries():
        message = " ".join(fill(entry.template, _values(rng)).split())
        if entry.graph_break or not recognisable(entry) or len(message.split()) < 9:
            continue
        tried += 1
        got = recognise(_fragment(message))  # messages the fragment cannot tell apart come together
        if got and got[0].how == "recognised by a fragment of its message":
            found += 1
            if not any(other.entry.id == entry.id or _literal(other.template.split("\n")[0]) == _literal(
                    entry.template.split("\n")[0]) for other in got):  # an entry of the same first line is the same
                wrong.append((_fragment(message), entry.template[:60], got[0].entry.template[:60]))
    assert tried > 1000
    assert found / tried > 0.65, f"{found} of {tried} fragments recognised"
    assert len(wrong) <= tried // 1000, wrong


@pytest.mark.parametrize(("fragment", "answer"), [
    ("keyword mismatch: Got the following keywords", "#msg-export-kwarg-mismatch-ep-module"),
    ("cycle exists between partitions", "#msg-fx-cyclic-partitions-split-module"),
    ("must have a type annotation. Got func with", "#msg-custom-ops-unannotated-parameter"),
])
def test_a_fragment_of_a_reproduced_message_is_answered_at_its_reproductions_row(fragment, answer):
    status, said = explain(fragment)
    assert status == 0 and said.startswith("cause (reproduced on the atlas's messages page)")
    assert answer in said.splitlines()[2]


@pytest.mark.parametrize("name", [*NOT_CLAIMED, *TORCH_NOT_CAPTURE])
def test_a_fragment_of_a_plain_python_or_other_library_error_is_no_message_of_torch(name):
    assert recognise(_fragment(_text(name, "line"))) == ()


def test_every_graph_break_and_most_messages_are_recognisable():
    recognised = Counter((entry.graph_break and "graph-break") or entry.subsystem for entry in entries()
                         if recognisable(entry))
    total = Counter((entry.graph_break and "graph-break") or entry.subsystem for entry in entries())
    assert recognised["graph-break"] == total["graph-break"]
    messages = sum(total.values()) - total["graph-break"]
    assert (sum(recognised.values()) - recognised["graph-break"]) / messages > 0.8, (recognised, total)


def test_a_message_is_recognised_in_a_whole_traceback_with_its_place():
    text = ('Traceback (most recent call last):\n  File "/tmp/run.py", line 9, in <module>\n    ep.module().train()\n'
            '  File "/venv/lib/python3.11/site-packages/torch/export/exported_program.py", line 1495, in _train\n'
            "NotImplementedError: Calling train() is not supported yet.\n")
    found = recognise(text)
    assert found and found[0].entry.subsystem == "export" and found[0].entry.exception == "NotImplementedError"
    assert found[0].entry.where[0].file == "torch/export/exported_program.py"
    status, said = explain(text)
    assert status == 0 and said.startswith("cause:  eval() or train() on an exported module")
    assert "[export] NotImplementedError: Calling train() is not supported yet." in said
    assert f"raised in {found[0].entry.where[0].function} (torch/export/exported_program.py:" in said


def test_a_recognised_message_with_no_cause_and_no_reproduction_is_shown_without_a_cause_claimed():
    text = "RuntimeError: Unsupported type for global function! Must be either a callable or string name"
    assert recognise(text), "the inventory holds this message"
    status, said = explain(text)
    assert status == 1 and NOT_CAPTURE not in said and said.startswith("No cause in fxguide's catalogue")
    assert "torch's message (the inventory of torch" in said


# --- short messages, recognised on what torch prints around them (real errors, raised by torch here) ------------


def _traceback(call) -> str:
    """The traceback ``call`` raises, as a reader pastes it (chained errors, notes and all)."""
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the error is the point
        return "".join(traceback.format_exception(error))
    finally:
        torch._dynamo.reset()
    raise AssertionError(f"{call.__name__} raised nothing")


def _exported_eval():
    torch.export.export(torch.nn.Linear(2, 2), (torch.ones(1, 2),)).module().eval()


class _PlainListOfModules(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [torch.nn.Linear(2, 2)]  # a plain list: not submodules

    def forward(self, x):
        return self.layers[0](x)


def _failing_backend(gm, example_inputs):
    raise RuntimeError("this backend cannot compile the graph")


def _backend_fails():
    torch._dynamo.reset()
    torch.compile(torch.relu, backend=_failing_backend)(torch.ones(2))


def _example_outside_its_dim():
    torch.export.export(torch.nn.Linear(2, 2), (torch.ones(2, 2),),
                        dynamic_shapes=({0: torch.export.Dim("batch", min=3)},))


WHOLE = {  # messages without wildcards too plain to be recognised as a part of a line: eval is Python's builtin
    "Calling eval() is not supported yet.": _exported_eval,
    "module is not installed as a submodule": lambda: torch.fx.symbolic_trace(_PlainListOfModules()),
}


@pytest.mark.parametrize("message", WHOLE)
def test_a_message_without_wildcards_is_recognised_whole_under_its_exception_type(message):
    text = _traceback(WHOLE[message])
    last = text.strip().splitlines()[-1]
    assert last.endswith(f": {message}")
    found = recognise(text)
    assert found and found[0].entry.template == message and found[0].line == last
    assert found[0].entry.exception == last.partition(":")[0] and recognisable(found[0].entry)
    kind = found[0].entry.exception
    for other in (message, f"RuntimeError: {message}", f"{kind}: {message} Try again.", f"{kind}: In {message}"):
        # without its type, under another type, or a part of a longer message: anyone's words
        assert recognise(other) == (), other


TYPED = {  # short first lines of messages raised as torch's own exception classes
    "backend={} raised:\n{}: {}": _backend_fails,  # BackendCompilerFailed, the backend's error on the next line
    "{} not in range [{}, {}]": _example_outside_its_dim,  # ConstraintViolationError
}


@pytest.mark.parametrize("template", TYPED)
def test_a_short_message_of_torchs_own_exception_class_is_recognised_after_its_module_path(template):
    text = _traceback(TYPED[template])
    found = recognise(text)
    assert found and found[0].entry.template == template and recognisable(found[0].entry)
    kind = found[0].entry.exception
    line = next(line for line in text.splitlines() if re.match(rf"torch\.[\w.]*\.{kind}: ", line))
    message = line.partition(": ")[2]
    assert recognise(line)[0].entry == found[0].entry  # the line alone
    for other in (f"{kind}: {message}", f"mylib.errors.{kind}: {message}", f"torchmetrics.{kind}: {message}",
                  f"torch.fx.TraceError: {message}"):  # not torch's class: another library's of the same name, or
        assert found[0].entry not in {hit.entry for hit in recognise(other)}, other  # another of torch's


def test_a_graph_break_shows_torchs_explanation_hints_and_page_beside_its_cause():
    status, said = explain("torch._dynamo.exc.Unsupported: Data-dependent branching")
    assert status == 0 and said.startswith("cause:  a branch on data, compiled")
    assert "- graph break GB0170 [dynamo]: Data-dependent branching" in said
    assert "explanation: Detected data-dependent branching" in said and "hint: Use `torch.cond`" in said
    assert "gb/gb0170.html" in said


# --- never recognised: errors of plain Python, of other libraries, of Python's own words -------------------------


@pytest.mark.parametrize("name", [*NOT_CLAIMED, *TORCH_NOT_CAPTURE])
def test_plain_python_and_other_library_errors_are_no_message_of_torch(name):
    for form in FORMS:
        assert recognise(_text(name, form)) == (), form


def test_a_message_python_raises_in_the_same_words_is_not_recognised():
    shared = [entry for entry in entries() if entry.python]
    assert any(entry.template == "attempted relative import beyond top-level package" for entry in shared)
    for entry in shared:
        assert not recognisable(entry)
    assert recognise("ImportError: attempted relative import beyond top-level package") == ()
    assert recognise("ValueError: commonpath() arg is an empty sequence") == ()


# --- linear in the paste ---------------------------------------------------------------------------------------


MB = 1_000_000


@pytest.mark.parametrize("paste", ["token", "many-lines", "torch-messages", "index-words"])
def test_a_1mb_paste_is_recognised_and_explained_in_under_a_second(paste):
    messages = "".join(f"torch._dynamo.exc.Unsupported: Data-dependent branching {i}\n"
                       f"AssertionError: fw_metadata must not be None\nRuntimeError: Node n{i} referenced target "
                       f"t{i} but that target was not provided in ``root``!\n" for i in range(MB // 150))
    text = {"token": "a" * MB,
            "many-lines": "".join(f"ValueError: step {i} of the loader failed on item_{i % 97}\n"
                                  for i in range(MB // 50)),
            "torch-messages": messages,
            "index-words": " ".join(["GraphModule get_attr fake_mode shape_env example_value Schema"] * (MB // 60)),
            }[paste]
    assert len(text) >= MB
    start = time.perf_counter()
    found = recognise(text)
    explain(text)
    assert time.perf_counter() - start < 1.0
    assert bool(found) == (paste == "torch-messages")


# --- the harvester reads templates from source ----------------------------------------------------------------


def _raised(source: str) -> list[str]:
    """The templates of the ``raise`` statements of ``source`` (one function), as the harvester reads them."""
    from fxsite.inventory.reader import Found, Reader
    from fxsite.inventory.sources import Source

    tree, found = ast.parse(source), Found()
    Reader(Source("fx", "torch/fx/x.py"), "torch/fx/x.py", frozenset(), found).read(tree)
    return [template for *_, template, _ in found.messages]


def test_templates_keep_the_literal_text_and_a_wildcard_for_each_value():
    assert _raised('def f(n, k):\n    raise TraceError(f"Proxy {n!r} cannot be {k:>3} iterated")') == [
        "Proxy {} cannot be {} iterated"]
    assert _raised('def f(n):\n    raise ValueError("bad %s for %d%%" % (n, 3))') == ["bad {} for {}%"]
    assert _raised('def f(n):\n    raise ValueError("no {} in {{root}}".format(n) + " here")') == [
        "no {} in {{root}} here"]
    assert _raised('def f(n):\n    raise ValueError(msg)') == []  # a message of no literal words: counted only
    assert finish(build(ast.parse('"a" + x + "b"', mode="eval").body, Scope(None), 1)) == "a{}b"


def test_a_message_made_in_a_variable_is_read_for_each_branch():
    source = ('def f(compiler):\n    if compiler is None:\n        msg = f"No working compiler found in {x}"\n'
              '    else:\n        msg = f"Compiler: {compiler} is not found."\n        msg += " Install one."\n'
              '    raise InvalidCxxCompiler(msg)\n')
    assert sorted(_raised(source)) == ["Compiler: {} is not found. Install one.", "No working compiler found in {}"]


def test_a_helper_that_only_raises_is_read_where_it_is_called():
    source = ('def infer(sig):\n    def error_fn(what):\n        raise ValueError(f"infer(func): {what} Got {sig}")\n'
              '    error_fn(f"Parameter {name} must have a type annotation.")\n')
    assert "infer(func): Parameter {} must have a type annotation. Got {}" in _raised(source)


def test_registry_text_is_read_as_the_f_string_or_code_it_was():
    assert from_registry("Dynamo does not know how to trace {fn}") == "Dynamo does not know how to trace {}"
    assert from_registry('"Failed to compare {self}, " + f"because {other} is not"', code=True) == \
        "Failed to compare {}, because {} is not"
    assert from_registry("msg", code=True) == "{}" and from_registry("_gb_type") == "{}"
    assert from_registry("copy.deepcopy()") == "copy.deepcopy()"  # a type is text, never code


# --- drift ------------------------------------------------------------------------------------------------------


def test_the_drift_between_the_committed_releases_is_reported_by_place():
    old, new = (json.loads(default_out(release).read_text(encoding="utf-8")) for release in ("2.14.1", "2.15.0"))
    found = drift(old, new)
    assert found.appeared and found.disappeared and found.graph_breaks_appeared
    assert not drift(old, old).appeared and drift(old, old).empty
    text = report(found, limit=3)
    assert text.startswith("Inventory drift, torch 2.14.1 -> 2.15.0") and "… and" in text


def test_drift_says_which_message_changed_appeared_and_disappeared():
    def inventory(*messages):
        return {"release": "x", "packages": {"torch": "x"}, "graph_breaks": [], "messages": [
            {"id": str(i), "subsystem": "fx", "exception": "TraceError", "template": template,
             "where": [{"file": "torch/fx/proxy.py", "line": i, "function": function}]}
            for i, (function, template) in enumerate(messages)]}
    old = inventory(("iter", "Proxy object cannot be iterated"), ("gone", "old words {}"))
    new = inventory(("iter", "Proxy object cannot be iterated, see {}"), ("new", "new words"))
    found = drift(old, new)
    key = ("fx", "torch/fx/proxy.py", "iter", "TraceError")
    assert found.changed == {key: (["Proxy object cannot be iterated"], ["Proxy object cannot be iterated, see {}"])}
    assert list(found.appeared.values()) == [["new words"]] and list(found.disappeared.values()) == [["old words {}"]]
    assert "~ [fx] TraceError in iter (torch/fx/proxy.py)" in report(found)
