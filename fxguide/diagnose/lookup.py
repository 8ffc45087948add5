"""Find the cause of an error message as a reader pastes it: a line, a fragment, or a whole traceback.

:func:`lookup` reads the text the way a traceback prints it (the module path
of the exception class, ``torch._dynamo.exc.Unsupported: ...``; Dynamo's
``Explanation:`` line; the graph-break id or its URL) and returns the cause of
:data:`~fxguide.diagnose.causes.CAUSES` that answers it; :func:`closest` ranks
the causes by the words they share with the text, for when none matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fxguide._checks import int_at_least, string
from fxguide.diagnose.causes import CAUSES, Cause, classify

_QUALIFIED = re.compile(r"^\s*(?:[A-Za-z_]\w*\.)+(?=[A-Z]\w*: )")  # torch._dynamo.exc.Unsupported: -> Unsupported:
_EXCEPTION_LINE = re.compile(r"^[A-Z]\w*: ")
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')
_CARETS = re.compile(r"^\s*[\^~]+\s*$")  # Python 3.11's markers under the quoted source
_GRAPH_BREAK = re.compile(r"\bgb(\d{4})\b", re.IGNORECASE)
# values torch fills in (quoted names, numbers, paths, addresses): left out when comparing words
_VALUES = re.compile(r"`[^`]*`|'[^']*'|\"[^\"]*\"|<[^>]*>|\b0x[0-9a-f]+\b|\S*/\S*|\b\w*\d\w*\b")
_WORD = re.compile(r"[A-Za-z_][A-Za-z_]+")
_COMMON = frozenset("the a an of to in is be it and or for on not with that this by as at use you your".split())


@dataclass(frozen=True)
class Match:
    """A cause and the line of the pasted text it was found from."""

    cause: Cause
    line: str


def _lines(text: str) -> list[str]:
    """The lines worth trying, most telling first: exception lines (the last one of a traceback first), then
    ``Explanation:`` lines, then the rest. A traceback's frames (``File "...", line N, in f``) and the line of
    source each quotes are left out: code, not a message (``return function(*args, **kwargs)`` shares its
    words with a message)."""
    raw = text.splitlines()
    quoted = {i + 1 for i, line in enumerate(raw[:-1]) if _FRAME.match(line) and raw[i + 1].startswith("    ")
              and not _EXCEPTION_LINE.match(_QUALIFIED.sub("", raw[i + 1]).strip())}
    lines = [_QUALIFIED.sub("", line).strip() for i, line in enumerate(raw)
             if i not in quoted and not _FRAME.match(line) and not _CARETS.match(line)]
    lines = [line for line in lines if line]
    exceptions = [line for line in reversed(lines) if _EXCEPTION_LINE.match(line)]
    explanations = [line for line in lines if line.startswith("Explanation:")]
    rest = [line for line in lines if line not in exceptions and line not in explanations]
    return exceptions + explanations + rest


def lookup(text: str) -> Match | None:
    """The cause that answers the pasted ``text``, or ``None``.

    >>> lookup("torch.fx.proxy.TraceError: symbolically traced variables cannot be used as inputs to control flow").cause.section.path
    'reference/errors.html#error-control-flow'
    >>> lookup("  Explanation: Dynamo does not know how to trace builtin operator `len`").cause.section.anchor
    'error-graph-break'
    >>> lookup("nothing like an error") is None
    True
    """
    string("lookup", "text", text)
    if not text.strip():
        raise ValueError("lookup: the text is empty; paste the error message or the whole traceback")
    for line in _lines(text):
        if line.startswith("Explanation:"):  # it may quote another message (a fake tensor call quotes its cause)
            continue
        for candidate in (line, *_with_types(line)):
            cause = classify(candidate, traceback=text)
            if cause is not None and cause.type_only and candidate != line:  # the type was our guess
                continue
            if cause is not None:
                return Match(_narrowed(cause, candidate, text), line)
    named = _graph_break_cause(text)
    if named is not None:
        return Match(*named)
    best = (0.0, None, "")  # an Explanation line alone, or a fragment of a catalogued message
    for line in _lines(text):
        words = _words(_VALUES.sub(" ", line))
        if len(words) < 2:
            continue
        for cause in CAUSES:
            for message in cause.messages:
                share = len(words & _words(message)) / len(words)
                if share >= 0.75 and share > best[0]:
                    best = (share, cause, line)
    return Match(best[1], best[2]) if best[1] is not None else None


def _narrowed(cause: Cause, line: str, text: str) -> Cause:
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
    whole = classify("\n".join(body), traceback=text) if len(body) > 1 else None
    return whole if whole is not None and CAUSES.index(whole) < CAUSES.index(cause) else cause


def _graph_break_cause(text: str) -> tuple[Cause, str] | None:
    """The cause of the first graph-break id ``text`` names (``GB0170``, or its URL), and the id."""
    for number in _GRAPH_BREAK.findall(text):
        for cause in CAUSES:
            if cause.graph_break == f"GB{number}":
                return cause, f"GB{number}"
    return None


def _with_types(line: str) -> tuple[str, ...]:
    """A message pasted without its ``Type:`` prefix, with each type a catalogued message has."""
    if _EXCEPTION_LINE.match(line):
        return ()
    types = {message.partition(": ")[0] for cause in CAUSES for message in cause.messages}
    return tuple(f"{kind}: {line}" for kind in sorted(types))


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text) if word.lower() not in _COMMON}


def _stems(text: str) -> set[str]:
    return {word[:6] for word in _words(text)}  # "iterated" and "iteration" meet


def closest(text: str, count: int = 3) -> list[Cause]:
    """The ``count`` causes whose name and messages share the most words with ``text``, best first."""
    string("closest", "text", text)
    int_at_least("closest", "count", count)
    words = _stems(_QUALIFIED.sub("", text))
    scored = []
    for order, cause in enumerate(CAUSES):
        known = _stems(" ".join((cause.name, *cause.messages)))
        shared = len(words & known)
        if shared:
            scored.append((-shared, len(known), order, cause))
    return [cause for *_, cause in sorted(scored)[:count]]


__all__ = ["Match", "closest", "lookup"]
