"""``python -m fxguide.explain "<error message>"``: the cause of an error and the guide section that answers it.

The text is the arguments joined by spaces or, without arguments, standard
input: a message, a fragment of one, or a whole traceback. It is matched
offline against the guide's catalogue of causes
(:data:`fxguide.diagnose.causes.CAUSES`, the one the error index is written
from). A cause is named only when its pattern matches the message and, for a
pattern that an error of plain Python or another library could match too,
the text shows it comes from torch's capture stack (a torch frame, or a
phrase torch's tracing prints); words in common with a catalogued message
only rank the closest entries. Whatever the cause, the text is also looked up
in the inventory of the installed torch's messages
(:func:`fxguide.diagnose.recognise.recognise`): which message it is, the
subsystem and function that raise it, and for a graph break torch's own
explanation and hints. A recognised message that a reproduction of the
atlas's messages page raises (an executed example, with a fix that runs) is
answered by that reproduction's cause when no cause of the catalogue, or only
its catch-all for graph breaks, matched; so is a message the inventory does
not hold (``torch.func``'s, a C++ argument check, Python's own error on a
``Proxy``) that a reproduction raises, found by the words that identify it
(``says=`` of ``fxguide.atlas.repros.repro``). Exit status: 0 when a cause matched
or a reproduction answered, 1 when neither did (the closest entries are
listed, and text with neither a sign of torch's capture stack nor a message of
the inventory is said to be none of its errors), 2 when there was no text.
"""

from __future__ import annotations

import functools
import re
import sys
from typing import Any

from fxguide.diagnose.causes import Cause, from_capture_stack, graph_break_url, local_site, published_site
from fxguide.diagnose.lookup import Match, closest, lookup
from fxguide.diagnose.recognise import Recognition, recognise
from fxguide.diagnose.torch_messages import inventory_release, parts
from fxguide.diagnose.topics import described, topic


NOT_CAPTURE = ("This does not look like an error of torch's capture stack (torch.fx, torch.export, torch.compile): "
               "no torch frame and no phrase torch's tracing prints.")
# (nor a message of the inventory of torch's own: text that holds one is recognised, not said to be elsewhere's)


def _as_printed(recognition: Recognition) -> str:
    """The recognised message as torch prints it: its exception class, its template with ``...`` for each value."""
    lines = ["...".join(parts(line)) for line in recognition.template.split("\n")]
    if recognition.entry.graph_break:
        return "\n".join([f"Unsupported: {lines[0]}", *lines[1:]])
    return "\n".join([f"{recognition.entry.exception}: {lines[0]}", *lines[1:]])


def _where(cause: Cause) -> list[str]:
    lines = [f"  guide:  {cause.section.url() or cause.section.path}"]
    if cause.section.local():
        lines.append(f"  local:  {cause.section.local()}")
    if cause.graph_break:
        lines.append(f"  PyTorch's page for {cause.graph_break}: {graph_break_url(cause.graph_break)}")
    return lines


_PLACES = 2  # the places shown for a message torch raises in several


def _short(text: str, width: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _recognised(found: tuple[Recognition, ...]) -> list[str]:
    """The inventory entries the text holds: which message of torch each is, where torch raises it."""
    lines = ["", f"torch's message (the inventory of torch {inventory_release()}):"]
    for recognition in found:
        entry = recognition.entry
        if entry.graph_break:
            lines.append(f"- graph break {entry.graph_break} [{entry.subsystem}]: {_short(entry.template)}")
            if entry.explanation:
                lines.append(f"    explanation: {_short(entry.explanation, 400)}")
            lines += [f"    hint: {_short(hint, 300)}" for hint in entry.hints]
            lines.append(f"    PyTorch's page: {graph_break_url(entry.graph_break)}")
        else:
            lines += [f"- [{entry.subsystem}] {entry.exception}: {_short(entry.template)}"]
        if recognition.raised_at is not None:  # a message too short to tell by its words: the traceback's last frame
            lines.append(f"    {recognition.how}")
        lines += [f"    raised in {place.function} ({place.file}:{place.line})" for place in entry.where[:_PLACES]]
        if len(entry.where) > _PLACES:
            lines.append(f"    … and {len(entry.where) - _PLACES} more places")
        place = recognition.raised_at or (entry.where[0] if entry.where else None)
        section = topic(place.file) if place else None
        if section is not None:
            lines.append(f"    the guide on {described(place.file)}: {section.url() or section.path}")
            if section.local():
                lines.append(f"      local: {section.local()}")
    return lines


@functools.cache
def _reproduced_index() -> dict[str, Any]:
    """``atlas/reproduced.json``, read once per process (a paste can need both its entries and its unlisted)."""
    import json
    from pathlib import Path

    return json.loads((Path(__file__).parent / "atlas" / "reproduced.json").read_text(encoding="utf-8"))


def _reproductions(found: tuple[Recognition, ...]) -> list[dict[str, str]]:
    """The atlas's executed reproductions of the recognised messages (message, tool, cause), best first."""
    entries = _reproduced_index()["entries"]
    return [item for recognition in found for item in entries.get(recognition.entry.id, [])][:_ATLAS_ROWS]


def _unlisted(text: str) -> list[dict[str, str]]:
    """The reproductions of messages the inventory does not hold (``torch.func``'s, C++ argument checks, Python's
    own errors on a ``Proxy``) whose identifying words (names and numbers as wildcards) the text holds."""
    return [item for item in _reproduced_index().get("unlisted", []) if re.search(item["says"], text)][:_ATLAS_ROWS]


def _reproduced(shown: list[dict[str, str]]) -> list[str]:
    """The lines naming ``shown`` (:func:`_reproductions`): each reproduction's message, tool and cause."""
    if not shown:
        return []
    lines = ["", "Reproduced, with a fix that runs and matches eager mode, on the atlas's messages page:"]
    for item in shown:
        lines.append(f"- {_short(item['message'], 120)} (under {item['tool']})")
        lines.append(f"    cause: {_short(item['cause'], 300)}")
    return lines + [f"    {label}{place}" for label, place in _places(_row(shown[0]))]


def _row(reproduction: dict[str, str]) -> str:
    """The messages page, at ``reproduction``'s row."""
    return "atlas/messages.html" + (f"#{reproduction['anchor']}" if reproduction.get("anchor") else "")


def _atlas(text: str) -> list[str]:
    """The behaviour atlas's rows that meet the text: the construct, and the tools that raised it there."""
    from fxguide.atlas.lookup import rows_for

    hits = rows_for(text)[:_ATLAS_ROWS]
    if not hits:
        return []
    lines = ["", "In the behaviour atlas (the constructs that raise it, and what every capture tool does with them):"]
    for hit in hits:
        lines.append(f"- {hit.title} (met under: {', '.join(hit.tools)})")
        lines += [f"    {label}{place}" for label, place in _places(hit.where)]
    return lines


_ATLAS_ROWS = 3


def _places(path: str) -> list[tuple[str, str]]:
    site, root = published_site(), local_site()
    places = [("guide:  ", f"{site}{path}")] if site else []
    return places + ([("local:  ", f"{root.as_uri()}/{path}")] if root else [])


def explain(text: str) -> tuple[int, str]:
    """``(exit status, report)`` for the pasted ``text``."""
    if not isinstance(text, str):
        raise TypeError(f"explain: text must be str, got {type(text).__name__}")
    if not text.strip():
        return 2, ("fxguide.explain: no error text. Pass the message as an argument (quoted) or on standard input, "
                   "e.g. `python -m fxguide.explain \"TraceError: symbolically traced variables ...\"`")
    match = lookup(text)
    found = recognise(text)
    if match is None and found:  # torch's message, recognised (a fragment of it too): the cause of its full text
        match = next((Match(inferred.cause, recognition.line) for recognition in found
                      if (inferred := lookup(_as_printed(recognition))) is not None), None)
    shown = _reproductions(found) if found else []
    if match is None and not shown:  # a message outside the inventory, reproduced on the messages page
        shown = _unlisted(text)
    known = (_recognised(found) + _reproduced(shown) if found else []) + _atlas(text)
    if match is not None and not (shown and match.cause.type_only):
        return 0, "\n".join([f"cause:  {match.cause.name}", f"  from:   {match.line[:200]}", *_where(match.cause),
                             *known])
    # torch's message, recognised, raised by an executed reproduction whose fix runs: its cause (before a
    # catch-all of the catalogue, "another graph break", which names the kind of error only)
    if shown:
        return 0, "\n".join([f"cause (reproduced on the atlas's messages page): {_short(shown[0]['cause'], 300)}",
                             f"  reproduced: {_short(shown[0]['message'], 120)} (under {shown[0]['tool']})",
                             *[f"  {label}{place}" for label, place in _places(_row(shown[0]))], *known,
                             *(["", f"The catalogue's class of it: {match.cause.name}", *_where(match.cause)]
                               if match is not None else [])])
    lines = ["No cause in fxguide's catalogue matches this text.", *known]
    elsewhere = not found and not from_capture_stack(text)
    if elsewhere:
        lines.insert(0, NOT_CAPTURE)
    near = closest(text)
    if near:
        lines.append("The closest entries:")
        for cause in near:
            lines += [f"- {cause.name}", *_where(cause)]
    if elsewhere:
        lines.append("If torch raised it, paste the whole traceback (every `File ...` line): its frames tell.")
    lines.append("Search the guide's error index for more: "
                 f"{near[0].section.url().split('#')[0] if near and near[0].section.url() else 'reference/errors.html'}")
    return 1, "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    text = " ".join(args) if args else ("" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read())
    status, report = explain(text)
    try:
        print(report, file=sys.stderr if status == 2 else sys.stdout)
    except BrokenPipeError:  # the reader piped it into `head`: what they read was printed
        sys.stdout = None  # no second error when Python flushes it at exit
    return status


if __name__ == "__main__":
    sys.exit(main())
