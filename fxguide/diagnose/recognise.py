"""Which of torch's messages a pasted error is: recognised from the inventory of the installed torch release.

:func:`recognise` finds in a paste the templates of the inventory
(:mod:`fxguide.diagnose.torch_messages`: every graph-break type of Dynamo's
registry and every message the capture stack raises) and says which message it
is: its subsystem, the function that raises it and, for a graph break, the
registry's explanation and hints. That is a recognition, not a cause: the
guide's causes stay :func:`fxguide.diagnose.lookup.lookup`'s.

A template line is recognised only with enough distinctive literal text
(:func:`fxguide.diagnose.distinct.distinctive`): ``{} is not supported`` or
``Expected {} but got {}`` would claim errors of any code. Three kinds of line
are recognised on what torch prints around them, however short:

- a graph-break type, on the line torch prints it on (``Unsupported: <type>``);
- a message raised as one of torch's own exception classes, on the line a
  traceback prints it on, the class's module path in torch
  (``torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:``): the
  class is a term of the line, and the line needs words of its own. Without that
  path (``UserError: ...``, another library's class of the same name) it is not;
- a message without wildcards, found whole under its exception type
  (``NotImplementedError: Calling eval() is not supported yet.``) with the lesser
  score :func:`~fxguide.diagnose.distinct.distinctive` asks of a whole sentence.

A whole traceback is recognised by where its error was raised too, however
short the message: when its raising frame (the last one,
:func:`~fxguide.diagnose.raising.raising_frame`) is a file and function of
torch where an entry is raised, any line number (lines move between releases),
the exception's class is the entry's, and the message holds the template's
literal parts in order, the entry comes first, ahead of what the message alone
finds; several entries raised there with the class are ranked by their literal
text found. A frame that quotes its line of source must quote a ``raise``: an
error raised by a call on that line (``int(x)``) is not the place's message.
Only the last frame counts: a reader's own ``KeyError`` under torch's frames
(``Module._call_impl``) is not torch's.

Matching is linear in the paste: each template line is indexed by its rarest
whole word (a torch class's first line by the class, a whole message by its
line), and only the lines of the paste that hold that word are tried, by
finding its literal parts in order.
"""

from __future__ import annotations

import builtins
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache, lru_cache

from fxguide._checks import int_at_least, string
from fxguide.diagnose.distinct import TOKEN, distinctive, whole_words
from fxguide.diagnose.lookup import message_lines
from fxguide.diagnose.raising import Raised, raising_frame
from fxguide.diagnose.torch_messages import Entry, Place, entries, parts


@dataclass(frozen=True)
class Recognition:
    """An inventory entry found in a paste: the entry, the template found, the (first) line it was found on, and
    where the traceback says it was raised (``raised_at``: the entry's place its raising frame is at), if that is
    how it was recognised."""

    entry: Entry
    template: str
    line: str
    raised_at: Place | None = None

    fragment: bool = False
    """Recognised from a fragment of the message, not from a whole line of it."""

    @property
    def how(self) -> str:
        """How it was recognised, in words (by its message, a fragment of it, or where the traceback says it was
        raised)."""
        if self.fragment:
            return "recognised by a fragment of its message"
        if self.raised_at is None:
            return "recognised by its message"
        return (f"recognised by where it was raised: {self.raised_at.function} in {self.raised_at.file}, "
                f"the traceback's last frame")


@dataclass(frozen=True)
class _Line:
    """One line of a template, as matched: its literal parts in order, and a match's weight."""

    entry: Entry
    template: str
    parts: tuple[str, ...]
    weight: int


def _weight(literal: tuple[str, ...]) -> int:
    """A match's weight: the characters of its literal text, spaces left out."""
    text = "".join(literal)
    return len(text) - text.count(" ")


def _line(entry: Entry, template: str, text: str) -> _Line:
    literal = parts(text)
    return _Line(entry, template, literal, _weight(literal))


_BUILTIN = frozenset(dir(builtins))  # Python's own exception classes, printed without a module path


@dataclass(frozen=True)
class _Index:
    """The template lines of a release's inventory, as :func:`recognise` looks them up."""

    words: dict[str, tuple[_Line, ...]]
    """Each distinctive template line under its rarest whole word."""
    exact: dict[str, tuple[_Line, ...]]
    """Whole pasted lines: each graph-break type as torch prints it (``Unsupported: <type>``), each message without
    wildcards under its exception type (``NotImplementedError: Calling eval() is not supported yet.``)."""
    typed: dict[str, tuple[_Line, ...]]
    """Under one of torch's exception classes, the first lines of its messages with that class in front
    (``BackendCompilerFailed: backend={} raised:``): found only after the class's module path in torch."""
    packages: frozenset[str]
    """The packages the inventory was harvested from (``torch``): a class path in one of them is torch's."""
    ids: frozenset[str]
    """The entries some line of which is indexed: :func:`recognisable`."""
    places: dict[tuple[str, str], tuple[tuple[Entry, Place], ...]]
    """Each message under the places it is raised at: the file, the function's own name (``create_arg`` for
    ``Tracer.create_arg``, as a traceback prints it). A graph break is raised in ``unimplemented``, not where the
    registry places it, so none is here."""


def _typed_line(entry: Entry) -> str:
    """The first line of ``entry``'s template as a traceback prints it after its exception class; empty for a
    class of Python's own, a name that is no class's (``_onnx_unsupported(...)`` makes the exception raised), or a
    line of no whole words of its own (``{}``, ``{}: {}``)."""
    first = entry.template.split("\n")[0]
    if (entry.graph_break or entry.exception in _BUILTIN or not entry.exception.lstrip("_")[:1].isupper()
            or not whole_words(parts(first))):
        return ""
    return f"{entry.exception}: {first}"


def _whole(entry: Entry) -> str:
    """``entry``'s message as a traceback's last line prints it (its exception type, then the message), when the
    template is one line with no wildcard; else empty."""
    literal = parts(entry.template)
    if entry.graph_break or "\n" in entry.template or len(literal) != 1 or not literal[0]:
        return ""
    return f"{entry.exception}: {literal[0]}"


@cache
def _index(release: str = "") -> _Index:
    """The inventory of ``release``'s template lines, indexed (:class:`_Index`); Python's own messages left out."""
    found = [entry for entry in entries(release) if not entry.python]
    lines = [(line, whole_words(line.parts)) for entry in found
             for template in entry.templates for text in template.split("\n") if distinctive(text)
             for line in (_line(entry, template, text),)]
    frequency = Counter(word for _, words in lines for word in words)
    index: dict[str, list[_Line]] = {}
    for line, words in lines:
        if words:
            index.setdefault(min(words, key=lambda word: (frequency[word], -len(word), word)), []).append(line)
    exact: dict[str, list[_Line]] = {}
    typed: dict[str, list[_Line]] = {}
    for entry in found:
        if entry.graph_break and "\n" not in entry.template and len(parts(entry.template)) == 1 and entry.template:
            exact.setdefault(f"Unsupported: {parts(entry.template)[0]}", []).append(
                _line(entry, entry.template, entry.template))
        if (whole := _whole(entry)) and not distinctive(entry.template) and distinctive(entry.template, whole=True):
            exact.setdefault(" ".join(whole.split()), []).append(_line(entry, entry.template, entry.template))
        if (shown := _typed_line(entry)) and distinctive(shown):
            typed.setdefault(entry.exception, []).append(_line(entry, entry.template, shown))
    packages = frozenset(place.file.split("/")[0] for entry in found for place in entry.where)
    ids = frozenset(line.entry.id for table in (index, exact, typed) for found_lines in table.values()
                    for line in found_lines)
    return _Index({word: tuple(lines) for word, lines in index.items()},
                  {line: tuple(lines) for line, lines in exact.items()},
                  {kind: tuple(lines) for kind, lines in typed.items()}, packages, ids, _places(release))


def _own_name(function: str) -> str:
    """A function's own name, as a traceback prints it: ``Tracer.create_arg`` is ``create_arg``."""
    return function.rpartition(".")[2]


def _placed(entry: Entry) -> bool:
    """Whether a traceback's raising frame can name ``entry``: a message (not a graph break) with a place, raised as
    a class (``KeyError``, ``_ShapeEnvGuardError``); a function's name (``_onnx_unsupported(...)``) makes the
    exception raised in its own frame, and a variable's (``observed_exception_type``) names no class."""
    return bool(entry.where) and not entry.graph_break and entry.exception.lstrip("_")[:1].isupper()


def _places(release: str) -> dict[tuple[str, str], tuple[tuple[Entry, Place], ...]]:
    """Every message of ``release`` (graph breaks left out) under each place it is raised at: :attr:`_Index.places`."""
    places: dict[tuple[str, str], dict[str, tuple[Entry, Place]]] = {}
    for entry in filter(_placed, entries(release)):
        for place in entry.where:
            places.setdefault((place.file, _own_name(place.function)), {}).setdefault(entry.id, (entry, place))
    return {key: tuple(found.values()) for key, found in places.items()}


@cache
def _torch_class(packages: frozenset[str]) -> re.Pattern[str]:
    """An exception class printed with its module path in ``packages``, then its message (a traceback's last line,
    ``torch._dynamo.exc.BackendCompilerFailed: ...``, also after a log's or pytest's prefix): the class's name."""
    names = "|".join(sorted(map(re.escape, packages)))
    return re.compile(rf"(?<![\w.])(?:{names})(?:\.[A-Za-z_]\w*)*\.([A-Za-z_]\w*): ")


def recognisable(entry: Entry, traceback: bool = False) -> bool:
    """Whether the lookup can recognise ``entry`` by its message: a graph-break type (by the line torch prints it
    on), a message with a template line distinctive enough (:func:`fxguide.diagnose.distinct.distinctive`) and a
    whole word to index it by, a message of one of torch's exception classes by its first line after the class, or
    a message without wildcards found whole; never one Python's standard library raises in the same words. With
    ``traceback``, also by where a whole traceback says it was raised: a message raised at a place of torch's, as
    one of torch's or Python's exception classes.

    >>> short = next(entry for entry in entries() if entry.template == "shouldn't be hit")
    >>> recognisable(short), recognisable(short, traceback=True)
    (False, True)
    """
    if not isinstance(traceback, bool):
        raise TypeError(f"recognisable: traceback must be True or False, got {traceback!r}")
    return entry.id in _index().ids or traceback and _placed(entry)


def _wordy(char: str) -> bool:
    return char.isalnum() or char == "_"


def _glued(line: str, at: int, end: int) -> tuple[bool, bool]:
    """Whether ``line[at:end]`` continues a word (or a dotted name: ``pn.graph``) on its left, on its right."""
    left = at > 0 and (_wordy(line[at - 1]) or line[at - 1] == "." and at > 1 and _wordy(line[at - 2]))
    right = end < len(line) and (_wordy(line[end]) or line[end] == "." and _wordy(line[end + 1:end + 2] or " "))
    return left, right


def _at(line: str, part: str, start: int, left: bool, right: bool) -> int:
    """Where ``part`` is in ``line`` from ``start`` on (-1: nowhere), not glued to a word on the ``left`` or
    ``right`` when asked (``graph.owning_module`` is not in ``fx_graph.owning_module``)."""
    left, right = left and _wordy(part[0]), right and _wordy(part[-1])
    at = line.find(part, start)
    while at >= 0 and (left or right):
        glued_left, glued_right = _glued(line, at, at + len(part))
        if not (left and glued_left or right and glued_right):
            break
        at = line.find(part, at + 1)
    return at


def _found(line: str, literal: tuple[str, ...]) -> bool:
    """Whether ``line`` holds the literal parts in order (a wildcard between them: any text); the template's own
    ends (not a wildcard) at word boundaries."""
    at, last = 0, len(literal) - 1
    for number, part in enumerate(literal):
        if not part:
            continue
        at = _at(line, part, at, number == 0, number == last)
        if at < 0:
            return False
        at += len(part)
    return True


def _unmatched(template: str, text: str) -> int:
    """The weight of ``template``'s lines that ``text`` does not hold: the less, the closer the fit."""
    lines = [parts(raw) for raw in template.split("\n")]
    return sum(_weight(literal) for literal in lines if not _found(text, literal))


def _typed(line: str, classes: set[str], typed: dict[str, tuple[_Line, ...]]) -> list[_Line]:
    """The first lines of ``typed`` that ``line`` begins with, its class one of ``classes`` (those the paste prints
    with a module path in torch)."""
    head, colon, rest = line.partition(": ")
    kind = head.rpartition(".")[2]
    if not colon or kind not in classes:
        return []
    shown = f"{kind}: {rest}"
    return [candidate for candidate in typed[kind]
            if shown.startswith(candidate.parts[0]) and _found(shown, candidate.parts)]


_RAISE = re.compile(r"\braise\b")


def _at_place(found: Raised, index: _Index) -> tuple[tuple[Entry, Place], ...]:
    """The messages raised at the frame's place (its path from a package of the inventory on, ``torch/fx/graph.py``;
    its function's own name) as the frame's exception class."""
    names = found.file.split("/")
    function = _own_name(found.function)
    for start, name in enumerate(names):
        if name in index.packages and (placed := index.places.get(("/".join(names[start:]), function))):
            return tuple((entry, place) for entry, place in placed if entry.exception == found.exception)
    return ()


def _literal_weight(template: str) -> int:
    """The weight of a template's literal text, all its lines."""
    return sum(_weight(parts(line)) for line in template.split("\n"))


def _by_frame(text: str, index: _Index) -> list[Recognition]:
    """The messages the traceback's raising frame names (:func:`_at_place`) whose literal parts the message holds in
    order, the most literal text first."""
    found = raising_frame(text)
    if found is None or found.source and not _RAISE.search(found.source):
        return []  # no traceback, or an error raised by a call on the quoted line, not by its raise
    flat = " ".join(found.message.split())
    fitting = [(entry, place) for entry, place in _at_place(found, index) if not _unmatched(entry.template, flat)]
    fitting.sort(key=lambda pair: -_literal_weight(pair[0].template))  # stable: the inventory's order next
    return [Recognition(entry, entry.template, found.line, place) for entry, place in fitting]


_RANKED = 10  # the best entries by weight matched, ranked again by the weight of their templates not in the paste


def _by_message(text: str, index: _Index, limit: int) -> list[Recognition]:
    """The entries whose template lines the paste's message lines hold, best first (:func:`recognise`)."""
    classes = set(_torch_class(index.packages).findall(text)) & index.typed.keys() if index.typed else set()
    matched: dict[str, dict[tuple[str, tuple[str, ...]], int]] = {}
    first: dict[str, tuple[int, _Line, str]] = {}
    for order, line in enumerate(message_lines(text)):
        line = " ".join(line.split())
        candidates = [*index.exact.get(line, ()), *_typed(line, classes, index.typed),
                      *(candidate for word in set(TOKEN.findall(line))
                        for candidate in index.words.get(word, ()) if _found(line, candidate.parts))]
        for candidate in candidates:
            matched.setdefault(candidate.entry.id, {})[(candidate.template, candidate.parts)] = candidate.weight
            first.setdefault(candidate.entry.id, (order, candidate, line))
    best = sorted(matched, key=lambda key: (-sum(matched[key].values()), first[key][0], key))[:_RANKED]
    flat = " ".join(text.split()) if best else ""
    current = {key for key in best if any(template == first[key][1].entry.template for template, _ in matched[key])}
    best.sort(key=lambda key: (-sum(matched[key].values()), _unmatched(first[key][1].template, flat),
                               key not in current, first[key][0], key))  # a graph break's current wording first
    return [Recognition(first[key][1].entry, first[key][1].template, first[key][2]) for key in best[:limit]]


_FRAGMENT_TOKEN = re.compile(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")
# a value as one token: a quoted string, a bracketed list of them, an <object>, a number, a path
_VALUE = re.compile(r"\[[^\[\]\n]{0,200}\]|`[^`\n]*`|'[^'\n]*'|\"[^\"\n]*\"|<[^<>\n]*>|(?<!\w)[-+]?\d[\w.]*|(?<!\S)\S*/\S*")
_VALUE_TOKENS = 5  # the most tokens a wildcard takes
_WILD = ""  # a wildcard among a template line's tokens: up to _VALUE_TOKENS of the fragment's
_FRAGMENT_LONGEST = 400  # a paste longer than this (or of more than 3 lines) is a message, not a fragment
_FRAGMENT_WORDS = 4  # the least words of the template's own literal text a fragment must hold


def _template_tokens(literal: tuple[str, ...]) -> tuple[str, ...]:
    tokens: list[str] = []
    for number, part in enumerate(literal):
        if number:
            tokens.append(_WILD)
        tokens += [token.lower() for token in _FRAGMENT_TOKEN.findall(_VALUE.sub(" \x00 ", part))]
    return tuple(tokens)


@cache
def _fragments(release: str = "") -> tuple[tuple[tuple[Entry, str, tuple[str, ...], bool], ...],
                                           dict[str, frozenset[int]]]:
    """Every template line of ``release``'s inventory as tokens (a wildcard as ``_WILD``), whether it is telling
    (:func:`distinctive`), and for each word the lines holding it. Lines too plain to recognise a message by are
    here too: a fragment that fits one of them as well as a telling line is not told apart."""
    lines = tuple((entry, template, _template_tokens(parts(text)), distinctive(text)) for entry in entries(release)
                  for template in entry.templates for text in template.split("\n"))
    words: dict[str, set[int]] = {}
    for number, (_, _, tokens, _) in enumerate(lines):
        for token in tokens:
            if token[:1].isalpha():
                words.setdefault(token, set()).add(number)
    return lines, {word: frozenset(found) for word, found in words.items()}


def _aligned(fragment: list[str], template: tuple[str, ...]) -> int:
    """The most of ``fragment``'s words that ``template``'s literal tokens hold, the fragment read as a stretch of
    a message made from the template (a wildcard taking up to :data:`_VALUE_TOKENS` of its tokens, its ends cut
    anywhere); 0 where it is not such a stretch. Each (fragment token, template token) pair is tried once."""
    memo: dict[tuple[int, int], int] = {}

    def walk(i: int, j: int) -> int:  # the words matched from here on, -1 where the rest does not fit
        if i == len(fragment):
            return 0
        if j == len(template):
            return -1
        if (i, j) not in memo:
            if template[j] == _WILD:  # a value torch filled in, or the fragment ends inside it
                found = 0 if len(fragment) - i <= _VALUE_TOKENS else -1
                for taken in range(1, min(_VALUE_TOKENS, len(fragment) - i) + 1):
                    found = max(found, walk(i + taken, j + 1))
            elif fragment[i] != template[j]:
                found = -1
            else:
                rest = walk(i + 1, j + 1)
                found = -1 if rest < 0 else rest + fragment[i][:1].isalpha()
            memo[(i, j)] = found
        return memo[(i, j)]

    return max([0, *(walk(0, start) for start, token in enumerate(template) if token in (fragment[0], _WILD))])


def _by_fragment(text: str) -> list[Recognition]:
    """The entries a short paste is a stretch of (``keyword mismatch: Got the following keywords``): the template
    lines holding its words in order, values between them where the template has a wildcard, at least
    :data:`_FRAGMENT_WORDS` of their own words, and either telling words (:func:`distinctive`) or
    :data:`_FRAGMENT_PHRASE` words of a telling line short of all of it; the best fit only, and only when no
    other message fits as well (entries of one message raised in several places come together)."""
    flat = " ".join(text.split())
    if len(flat) > _FRAGMENT_LONGEST or text.strip().count("\n") > 2:
        return []
    shown = _FRAGMENT_TOKEN.findall(_VALUE.sub(" \x00 ", _QUALIFIED_CLASS.sub("", flat)))
    fragment = [token.lower() for token in shown]
    if len(fragment) < _FRAGMENT_WORDS:
        return []
    lines, words = _fragments()
    known = sorted((words[token] for token in set(fragment) if token in words and token[:1].isalpha()), key=len)
    if not known:
        return []
    # every line holding one of the two rarest words (one of them may be a value the template has a wildcard for)
    candidates = sorted(set().union(*known[:2]))
    fits = [(score, number) for number in candidates
            if (score := _aligned(fragment, lines[number][2])) >= _FRAGMENT_WORDS]
    if not fits:
        return []
    best = max(score for score, _ in fits)
    winners = {lines[number][0].id: number for score, number in fits if score == best}
    if len({lines[number][2] for number in winners.values()}) != 1:
        return []  # two messages fit as well: the fragment does not tell which (one raised in two places does)
    entry, _, tokens, telling = lines[next(iter(winners.values()))]
    literal = " ".join(token for token in shown if token.lower() in tokens)
    words = sum(token[:1].isalpha() for token in tokens)
    if entry.python or not (distinctive(literal) or telling and _FRAGMENT_PHRASE <= best < words):
        return []  # Python's own message, words anyone's could hold, or a plain message whole (not a fragment)
    return [Recognition(lines[number][0], lines[number][1], flat, fragment=True) for number in winners.values()]


_FRAGMENT_PHRASE = 5  # ... or this many of a telling line's words, in a row (a value between them aside)


_QUALIFIED_CLASS = re.compile(r"^\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*: ")  # a fragment pasted with its class in front


@lru_cache(maxsize=4)
def recognise(text: str, limit: int = 3) -> tuple[Recognition, ...]:
    """The inventory entries ``text`` holds, at most ``limit``, best first. First those its traceback's raising
    frame names (a place of torch's where they are raised, as the exception's class; the message holding their
    literal parts), then those found by the message: the most literal text of its template lines found
    (characters; each line counted once), then the least of its template missing, then the first found in
    :func:`~fxguide.diagnose.lookup.message_lines`' order (the last exception line first).

    >>> found = recognise("torch._dynamo.exc.Unsupported: Data-dependent branching")
    >>> found[0].entry.graph_break, found[0].entry.subsystem, found[0].entry.hints[0][:40]
    ('GB0170', 'dynamo', 'Use `torch.cond` to express dynamic cont')
    >>> recognise("UnboundLocalError: cannot access local variable 'x' where it is not associated with a value")
    ()

    A message too short to tell from anyone's (``shouldn't be hit``) is recognised in a traceback that says torch
    raised it, any path before ``torch/`` and any line number:

    >>> pasted = "\\n".join(["Traceback (most recent call last):", '  File "/me/run.py", line 3, in <module>',
    ...     '  File "/venv/site-packages/torch/fx/experimental/symbolic_shapes.py", line 9, in error',
    ...     "    raise AssertionError(\\"shouldn't be hit\\")", "AssertionError: shouldn't be hit"])
    >>> recognise("AssertionError: shouldn't be hit")
    ()
    >>> found = recognise(pasted)[0]
    >>> found.entry.subsystem, found.raised_at.function, found.how.split(':')[0]
    ('fx', 'error', 'recognised by where it was raised')
    """
    string("recognise", "text", text)
    int_at_least("recognise", "limit", limit)
    index = _index()
    placed = _by_frame(text, index)
    named = {recognition.entry.id for recognition in placed}
    rest = [recognition for recognition in _by_message(text, index, limit) if recognition.entry.id not in named]
    found = [*placed, *rest] or _by_fragment(text)
    return tuple(found[:limit])


__all__ = ["Recognition", "recognisable", "recognise"]
