"""A whole traceback is recognised by where torch raised its error (issue 52, item 2: "every message the capture stack
raises is recognised").

Many of torch's messages are too short to tell from anyone's by their words (``{} not in {}``, ``shouldn't be hit``):
by the message alone they are recognised as none. A traceback names where its error was raised: its last frame, a
file and function of torch where the inventory says the message is raised, with the inventory's exception class and
a message that holds the template's literal parts, recognises the entry, any path before ``torch/`` and any line
number.

- every entry of the inventory, pasted in a made-up traceback (a user frame, torch frames, the entry's place last,
  values nobody typed), is recognised as itself, by where it was raised, first or among the top three;
- real errors raised by torch here are recognised by their raising frame;
- only the last frame counts: a reader's own error under torch's frames, a class no entry at the place raises, a
  message that does not hold the template's words, and an error of a call on the frame's line (no ``raise``) are
  recognised as none, while the same traceback with torch's raise last is recognised;
- every message is raised in a part of torch a page of the guide covers (:mod:`fxguide.diagnose.topics`), and the
  explain command names that page.
"""

from __future__ import annotations

import builtins
import itertools
import traceback
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
import torch

from fxguide.diagnose.raising import raising_frame
from fxguide.diagnose.recognise import recognisable, recognise
from fxguide.diagnose.topics import TOPICS, topic
from fxguide.diagnose.torch_messages import Entry, Place, entries, fill
from fxguide.explain import NOT_CAPTURE, explain
from fxsite import ROOT

SITE = "/opt/venv/lib/python3.12/site-packages"
HEAD = ('Traceback (most recent call last):\n  File "/home/me/train.py", line 12, in <module>\n    model(x)\n'
        f'  File "{SITE}/torch/nn/modules/module.py", line 1775, in _call_impl\n'
        "    return forward_call(*args, **kwargs)\n")


def _values() -> Iterator[str]:
    """Values no example of the site holds: ``zq_17``, ``zq_18``, ..."""
    return (f"zq_{number}" for number in itertools.count(17))


def _frame(place: Place, line: int, source: bool, kind: str) -> str:
    """``place`` as a traceback's frame prints it, at a made-up ``line``, quoting a ``raise`` if ``source``."""
    frame = f'  File "{SITE}/{place.file}", line {line}, in {place.function.rpartition(".")[2]}\n'
    return frame + (f"    raise {kind}(message)\n" if source else "")


def _shown(entry: Entry, qualified: bool) -> str:
    """The entry's class as the exception line prints it: bare, or (a class of torch's) after a module path."""
    if qualified and entry.where and entry.exception not in dir(builtins) and entry.exception.lstrip("_")[:1].isupper():
        return f"{entry.where[0].file.removesuffix('.py').replace('/', '.')}.{entry.exception}"
    return entry.exception


def _pasted(entry: Entry, number: int) -> str:
    """The entry raised at its first place, under a user frame and torch's ``_call_impl`` (and for every other
    entry ``_wrapped_call_impl`` too), with and without the quoted source and the class's module path."""
    above = f'  File "{SITE}/torch/nn/modules/module.py", line 1764, in _wrapped_call_impl\n' if number % 3 else ""
    # a name that is no class's (`_mismatch_error(...)` makes the error) is printed by no traceback: quote its raise,
    # as the lookup reads a lowercase line straight after a frame as the frame's source
    source = number % 2 == 0 or not entry.exception.lstrip("_")[:1].isupper()
    last = _frame(entry.where[0], entry.where[0].line + 7919, source, entry.exception) if entry.where else ""
    return f"{HEAD}{above}{last}{_shown(entry, number // 2 % 2 == 1)}: {fill(entry.template, _values())}\n"


def test_every_entry_is_recognised_in_a_traceback_by_where_it_was_raised():
    every = entries()
    ranks, missed = Counter(), []
    for number, entry in enumerate(every):
        found = [hit.entry.id for hit in recognise(_pasted(entry, number), 3)]
        if entry.id in found:
            ranks[found.index(entry.id)] += 1
        else:
            missed.append(entry)
    by_message = sum(recognisable(entry) for entry in every)
    by_traceback = sum(ranks.values())
    print(f"recognised by message alone: {by_message} of {len(every)}; in a traceback: {by_traceback}; ranks {ranks}")
    # only the entries neither route can name are missed: raised by no class's name, a helper's call (its own frame
    # raises: `_onnx_unsupported(...)`) or a variable's class (`observed_exception_type`), and no distinctive words
    assert missed == [entry for entry in every if not recognisable(entry, traceback=True)]
    assert {entry.exception for entry in missed} <= {"_onnx_unsupported", "observed_exception_type"}
    assert by_traceback > by_message + 600, (by_message, by_traceback)
    assert ranks[0] / by_traceback > 0.99  # first, save where messages raised at one place share their words


def test_a_short_message_is_recognised_only_in_its_traceback_and_says_so():
    entry = next(entry for entry in entries() if entry.template == "{} not in {}")
    text = _pasted(entry, 0)
    assert recognise(text.splitlines()[-1]) == ()  # the line alone: anyone's words
    found = recognise(text)[0]
    assert found.entry == entry and found.raised_at == entry.where[0] and found.line == "AssertionError: zq_17 not in zq_18"
    assert found.how.startswith("recognised by where it was raised: ShapeEnv._update_var_to_range in "
                                "torch/fx/experimental/symbolic_shapes.py")
    status, said = explain(text)
    assert status == 1 and NOT_CAPTURE not in said and f"AssertionError: {entry.template}" in said
    assert found.how in said  # explain says how: a reader can tell a message's words from its traceback's frame
    assert "the guide on symbolic sizes and their guards: " in said and "pt2/dynamic-shapes.html" in said


# --- real errors raised by torch here -----------------------------------------------------------------------------


def _graph_with_placeholder_only():
    graph = torch.fx.Graph()
    graph.placeholder("x")
    return graph.output_node()


RAISED = {  # messages recognised by no words of their own, raised by torch
    "Unsupported type {} passed for root!": lambda: torch.fx.GraphModule(5, torch.fx.Graph()),
    "args must be a tuple, got {}": lambda: torch.fx.Graph().create_node("call_function", torch.relu, args=[1]),
    "Expected output node, got op={}": _graph_with_placeholder_only,
}


def _traceback(call: Callable[[], object]) -> str:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the error is the point
        return "".join(traceback.format_exception(error))
    raise AssertionError("raised nothing")


@pytest.mark.parametrize("template", RAISED)
def test_a_real_torch_error_is_recognised_by_its_raising_frame(template):
    text = _traceback(RAISED[template])
    assert recognise(text.strip().splitlines()[-1]) == ()
    for form in (text, "\n".join(line.strip() for line in text.splitlines()),  # a log that dropped the indentation
                 "".join(f"[rank0]: {line}" for line in text.splitlines(keepends=True))):  # a log's prefix
        found = recognise(form)
        assert found and found[0].entry.template == template and found[0].raised_at is not None, form


# --- only the last frame counts -----------------------------------------------------------------------------------


class _Plain(torch.nn.Module):
    """A model whose forward raises an error of plain Python: torch's frames above it, the reader's last."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def count(x):  # self forgotten
        return x

    def forward(self, x):
        if self.kind == "key":
            return {"lr": 0.1}["batch_size"]
        if self.kind == "unbound":
            if x.sum() > 1e9:
                scale = 2
            return x * scale  # noqa: F821 - the error is the point
        if self.kind == "missing-self":
            return self.count(x)
        if self.kind == "module-not-found":
            return __import__("foo")
        return int(None)


PLAIN = ("key", "unbound", "missing-self", "module-not-found", "int-of-none")
_TORCH_RAISE = next(entry for entry in entries() if entry.template == "Unexpected key {}, expected {}")


@pytest.mark.parametrize("kind", PLAIN)
def test_a_readers_own_error_under_torchs_frames_is_not_torchs(kind):
    text = _traceback(lambda: _Plain(kind)(torch.ones(2)))
    assert "torch/nn/modules/module.py" in text and raising_frame(text).file == __file__
    for form in (text, "\n".join(line.strip() for line in text.splitlines())):
        assert recognise(form) == (), form
    # the same frames with torch's raise last: recognised, by where it was raised
    above = text[:text.rindex('  File "')] + _frame(_TORCH_RAISE.where[0], 9, True, "AssertionError")
    found = recognise(f"{above}AssertionError: Unexpected key 'lr', expected 'x'\n")
    assert found and found[0].entry == _TORCH_RAISE and found[0].raised_at is not None


def _at_place(entry: Entry, kind: str, message: str, source: str = "    raise {kind}(message)") -> str:
    place = entry.where[0]
    frame = f'  File "{SITE}/{place.file}", line 3, in {place.function.rpartition(".")[2]}\n'
    return f"{HEAD}{frame}{source.format(kind=kind)}\n{kind}: {message}\n"


def test_a_class_no_entry_at_the_place_raises_is_not_claimed():
    entry = next(entry for entry in entries() if entry.template == "{} not in {}")
    at_place = {other.exception for other in entries() for place in other.where if place == entry.where[0]}
    assert recognise(_at_place(entry, "AssertionError", "zq_1 not in zq_2"))[0].entry == entry
    for kind in ("KeyError", "ValueError", "torch._dynamo.exc.Unsupported"):
        assert kind.rpartition(".")[2] not in at_place
        assert recognise(_at_place(entry, kind, "zq_1 not in zq_2")) == (), kind


def test_a_message_without_the_templates_words_or_a_raise_on_its_line_is_not_claimed():
    entry = next(entry for entry in entries() if entry.template == "{} not in {}")
    assert recognise(_at_place(entry, "AssertionError", "zq_1 not in zq_2"))[0].entry == entry
    assert recognise(_at_place(entry, "AssertionError", "zq_1 is missing")) == ()  # not the template's words
    # an error of a call on the frame's line (raised in C): not the place's own raise
    assert recognise(_at_place(entry, "AssertionError", "zq_1 not in zq_2", "    return int(x)")) == ()


def test_a_frame_quoted_in_a_message_is_not_the_raising_frame():
    entry = next(entry for entry in entries() if entry.template == "{} not in {}")
    quoted = ("\n\nfrom user code:\n" f'  File "{SITE}/torch/fx/experimental/symbolic_shapes.py", line 4, in error\n'
              "    raise AssertionError(x)\n\nSet TORCH_LOGS=\"+dynamo\" for more\n")
    text = _at_place(entry, "AssertionError", "zq_1 not in zq_2").rstrip("\n") + quoted
    found = raising_frame(text)
    assert found.function == entry.where[0].function.rpartition(".")[2] and "from user code:" in found.message
    assert recognise(text)[0].entry == entry


def test_recognisable_checks_its_argument():
    with pytest.raises(TypeError, match="recognisable: traceback must be True or False, got 'yes'"):
        recognisable(entries()[0], traceback="yes")
    with pytest.raises(TypeError, match="raising_frame: text must be a str, got bytes"):
        raising_frame(b"KeyError")


# --- the guide's page for the part of torch a message is raised in ------------------------------------------------


@pytest.mark.parametrize("prefix, section", [(prefix, section) for prefix, section, _ in TOPICS], ids=lambda v: str(v))
def test_each_part_of_torch_points_to_a_section_the_guide_has(prefix, section):
    page = ROOT / "docs" / f"{section.page}.md"
    assert page.is_file(), f"{prefix}: no page {page}"
    assert not section.anchor or f"({section.anchor})=" in page.read_text(encoding="utf-8"), \
        f"{prefix}: no label {section.anchor} on {page}"


def test_every_message_torch_raises_has_a_page_of_the_guide():
    """Every message of torch's own capture stack (torchvision's model code aside) is raised in a part of torch
    a page covers, so a recognised message is answered with a page even where no cause is catalogued."""
    placed = [entry for entry in entries() if entry.where and not entry.where[0].file.startswith("torchvision/")]
    without = sorted({entry.where[0].file for entry in placed if topic(entry.where[0].file) is None})
    assert len(placed) > 4000 and not without, without
