"""Find the cause of an error message as a reader pastes it: a line, a fragment, or a whole traceback.

:func:`lookup` reads the text the way a traceback prints it (the module path
of the exception class, ``torch._dynamo.exc.Unsupported: ...``; Dynamo's
``Explanation:`` line; the graph-break id or its URL) and returns the cause of
:data:`~fxguide.diagnose.causes.CAUSES` whose pattern matches it. A cause whose
pattern an error of plain Python or another library can match too
(``Cause.plain_python``) is named only when the text shows it comes from
torch's capture stack (:func:`~fxguide.diagnose.causes.from_capture_stack`).
Words shared with a catalogued message never name a cause: :func:`closest`
ranks the causes by them, for when none matches. Time is linear in the length
of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from fxguide._checks import int_at_least, string
from fxguide.diagnose.causes import CAUSES, Cause, classify, from_capture_stack

_QUALIFIED = re.compile(r"^\s*(?:[A-Za-z_]\w*\.)+(?=[A-Z]\w*: )")  # torch._dynamo.exc.Unsupported: -> Unsupported:
_EXCEPTION_LINE = re.compile(r"^[A-Z]\w*: ")
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')
_CARETS = re.compile(r"^\s*[\^~]+\s*$")  # Python 3.11's markers under the quoted source
_GRAPH_BREAK = re.compile(r"\bgb(\d{4})\b", re.IGNORECASE)
# values torch fills in (quoted names, numbers, paths, addresses): left out when comparing words. Each alternative
# is tried only where a match can start (a path at the start of a token; `<` up to the next `<` or `>`), so that
# a long token costs linear time, not the square of its length
_VALUES = re.compile(r"`[^`\n]*`|'[^'\n]*'|\"[^\"\n]*\"|<[^<>\n]*>|\b0x[0-9a-f]+\b|(?<!\S)\S*/\S*|\b\w*\d\w*\b")
_WORD = re.compile(r"[A-Za-z_][A-Za-z_]+")
_COMMON = frozenset("the a an of to in is be it and or for on not with that this by as at use you your".split())
_OVERLAP_LINES = 200  # the lines read for shared words (the most telling first): a ranking, not a claim
_LINE_HEAD = 2000  # the characters of a line compared word by word (a catalogued message is shorter)

# Each cause's pattern over the lines tried, joined, each after a newline: a cause it does not match matches no line.
# A line's start (``^``) is read as the newline before it, which a fast search for the literal after it finds.
_LINE_START = re.compile(r"(?:^|(?<=[|(])|(?<=\(\?:))\^")


def _anywhere(pattern: str) -> re.Pattern[str]:
    return re.compile(_LINE_START.sub(r"\\n", pattern), re.MULTILINE)


_ANYWHERE = tuple(_anywhere(cause.regex.pattern) for cause in CAUSES)
_TYPES = tuple(sorted({message.partition(": ")[0] for cause in CAUSES for message in cause.messages}))
_TYPED = re.compile(r"\^(\w+): ")
# A message pasted without its ``Type:`` prefix is tried with each type a catalogued message has; only a pattern
# that begins with that type (``^UnboundLocalError: cannot ...``) can match it and not the line alone: the rest of
# such a pattern, over the whole text, tells which are worth trying
_UNTYPED = {kind: tuple((index, _anywhere("^" + cause.regex.pattern[len(f"^{kind}: "):]))
                        for index, cause in enumerate(CAUSES)
                        if not cause.type_only and (typed := _TYPED.match(cause.regex.pattern)) and typed[1] == kind)
            for kind in _TYPES}


@dataclass(frozen=True)
class Match:
    """A cause and the line of the pasted text it was found from."""

    cause: Cause
    line: str


@lru_cache(maxsize=4)  # lookup, then closest, read the same text
def message_lines(text: str) -> tuple[str, ...]:
    """The lines worth trying, most telling first: exception lines (the last one of a traceback first), then
    ``Explanation:`` lines, then the rest. A traceback's frames (``File "...", line N, in f``) and the line of
    source each quotes are left out: code, not a message (``return function(*args, **kwargs)`` shares its
    words with a message), indented or not (a traceback copied from a log that dropped the indentation)."""
    raw = text.splitlines()
    quoted = {i + 1 for i, line in enumerate(raw[:-1]) if _FRAME.match(line)
              and not _EXCEPTION_LINE.match(_QUALIFIED.sub("", raw[i + 1]).strip())}
    lines = [_QUALIFIED.sub("", line).strip() for i, line in enumerate(raw)
             if i not in quoted and not _FRAME.match(line) and not _CARETS.match(line)]
    lines = list(dict.fromkeys(line for line in lines if line))  # each line once (a line's answer is the same)
    exceptions = [line for line in reversed(lines) if _EXCEPTION_LINE.match(line)]
    explanations = [line for line in lines if line.startswith("Explanation:")]
    rest = [line for line in lines if not _EXCEPTION_LINE.match(line) and not line.startswith("Explanation:")]
    return (*exceptions, *explanations, *rest)


def lookup(text: str) -> Match | None:
    """The cause that answers the pasted ``text``, or ``None``.

    >>> lookup("torch.fx.proxy.TraceError: symbolically traced variables cannot be used as inputs to control flow").cause.section.path
    'reference/errors.html#error-control-flow'
    >>> lookup("  Explanation: Dynamo does not know how to trace builtin operator `len`").cause.section.anchor
    'error-graph-break'
    >>> lookup("nothing like an error") is None
    True
    >>> lookup("UnboundLocalError: cannot access local variable 'x' where it is not associated") is None
    True
    """
    string("lookup", "text", text)
    if not text.strip():
        raise ValueError("lookup: the text is empty; paste the error message or the whole traceback")
    evidence = from_capture_stack(text)
    lines = message_lines(text)
    joined = "".join(f"\n{line}" for line in lines)  # the lines as they are tried (no module path, no indent)
    present = [index for index, anywhere in enumerate(_ANYWHERE) if anywhere.search(joined)]
    untyped = [(kind, [index for index, rest in _UNTYPED[kind] if rest.search(joined)]) for kind in _TYPES]
    untyped = [(kind, indices) for kind, indices in untyped if indices]
    for line in lines if present or untyped else ():
        if line.startswith("Explanation:"):  # it may quote another message (a fake tensor call quotes its cause)
            continue
        found = _first(line, present, text, evidence)
        if found is None and not _EXCEPTION_LINE.match(line):  # a message without its type: the catalogued types
            found = next(((cause, candidate) for kind, indices in untyped
                          if (cause := _first(candidate := f"{kind}: {line}", indices, text, evidence)) is not None),
                         None)
        elif found is not None:
            found = (found, line)
        if found is not None:
            return Match(_narrowed(found[0], found[1], text, evidence), line)
    named = _graph_break_cause(text)
    if named is not None:
        return Match(*named)
    return next((Match(cause, line) for line in lines if (cause := _explained(line)) is not None), None)


def _sequence(text: str) -> list[str]:
    """The words of ``text`` in order, values left out (``_VALUES``)."""
    return [word.lower() for word in _WORD.findall(_VALUES.sub(" ", text))]


_EXPLANATIONS = tuple((cause, _sequence(message)) for cause in CAUSES for message in cause.messages
                      if message.startswith("Explanation: "))
_EXPLAINED_WORDS = 6  # "explanation" and five words of Dynamo's sentence


def _explained(line: str) -> Cause | None:
    """The cause whose catalogued ``Explanation:`` line (Dynamo's sentence for a graph break) begins as ``line``
    does: the longest run of words from the start in common, at least five words of Dynamo's sentence, and no other
    cause's as long (``Dynamo does not know how to trace builtin operator`` is GB0059, ``... trace the builtin`` is
    GB0007). The sentence is Dynamo's fixed text, the values in it are not compared; a line pasted short of its end
    still begins the same."""
    if not line.startswith("Explanation:"):
        return None
    words = _sequence(line[:_LINE_HEAD])
    runs = sorted(((next((i for i, (a, b) in enumerate(zip(words, known)) if a != b), min(len(words), len(known))),
                    cause) for cause, known in _EXPLANATIONS), key=lambda run: -run[0])
    if not runs or runs[0][0] < _EXPLAINED_WORDS:
        return None
    return runs[0][1] if len(runs) == 1 or runs[1][0] < runs[0][0] or runs[1][1] is runs[0][1] else None


def _first(candidate: str, indices: list[int], text: str, evidence: bool) -> Cause | None:
    """The first cause of ``CAUSES[i] for i in indices`` that answers ``candidate``, as :func:`classify` picks."""
    return next((CAUSES[index] for index in indices
                 if CAUSES[index].answers(candidate, traceback=text, capture_evidence=evidence)), None)


def _narrowed(cause: Cause, line: str, text: str, evidence: bool) -> Cause:
    """``cause``, or a cause listed before it that the whole message answers: the lines that follow an
    exception line in ``text`` (up to a frame or the next exception) belong to its message, and may name a
    narrower class (``Found the following conflicts ...`` then ``- Received ... Dim.DYNAMIC ... specialized``).
    For Dynamo's catch-all class of graph breaks, a graph-break id the text names decides first."""
    if cause.type_only and (named := _graph_break_cause(text)) is not None:
        return named[0]
    lines = [_QUALIFIED.sub("", raw).strip() for raw in text.splitlines()]
    head = line.partition(": ")[2] or line
    start = next((i for i, raw in enumerate(lines) if raw.endswith(head)), None)
    if start is None:
        return cause
    body = [line]
    for raw in lines[start + 1:]:
        if not raw or _EXCEPTION_LINE.match(raw) or _FRAME.match(raw) or raw.startswith(
                ("Traceback ", "During handling", "The above exception")):
            break
        body.append(raw)
    whole = classify("\n".join(body), traceback=text, capture_evidence=evidence) if len(body) > 1 else None
    return whole if whole is not None and CAUSES.index(whole) < CAUSES.index(cause) else cause


def _graph_break_cause(text: str) -> tuple[Cause, str] | None:
    """The cause of the first graph-break id ``text`` names (``GB0170``, or its URL), and the id."""
    for number in _GRAPH_BREAK.findall(text):
        for cause in CAUSES:
            if cause.graph_break == f"GB{number}":
                return cause, f"GB{number}"
    return None


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _COMMON


def _stems(text: str) -> set[str]:
    return {word[:6] for word in _words(text)}  # "iterated" and "iteration" meet


_MESSAGE_WORDS = tuple(tuple(_words(message) for message in cause.messages) for cause in CAUSES)
_KNOWN_STEMS = tuple(_stems(" ".join((cause.name, *cause.messages))) for cause in CAUSES)


def _overlap(text: str) -> dict[int, float]:
    """Cause index -> the largest share (at least 0.75) of a line's words that one of its messages holds: an
    ``Explanation:`` line alone, or a fragment of a catalogued message. Only a ranking: words in common are no
    evidence of a cause (``'ExportedProgram' object has no attribute 'tell'`` has every word of ``... 'meta'``)."""
    best: dict[int, float] = {}
    for line in message_lines(text)[:_OVERLAP_LINES]:
        words = _words(_VALUES.sub(" ", line[:_LINE_HEAD]))
        if len(words) < 2:
            continue
        for index, messages in enumerate(_MESSAGE_WORDS):
            for message in messages:
                share = len(words & message) / len(words)
                if share >= 0.75 and share > best.get(index, 0.0):
                    best[index] = share
    return best


def closest(text: str, count: int = 3) -> list[Cause]:
    """The ``count`` causes whose name and messages share the most words with ``text``, best first: first those
    with a message that holds most of the words of a line of ``text`` (a fragment of it), then by words shared.

    >>> [cause.name for cause in closest("cannot access local variable 'x' where it is not associated", 1)]
    ['a generated forward that reads a value before it is made']
    """
    string("closest", "text", text)
    int_at_least("closest", "count", count)
    words = _stems(_QUALIFIED.sub("", text))
    overlap = _overlap(text)
    scored = []
    for order, (cause, known) in enumerate(zip(CAUSES, _KNOWN_STEMS, strict=True)):
        shared = len(words & known)
        if shared:
            scored.append((-overlap.get(order, 0.0), -shared, len(known), order, cause))
    return [cause for *_, cause in sorted(scored)[:count]]


__all__ = ["Match", "closest", "lookup", "message_lines"]
