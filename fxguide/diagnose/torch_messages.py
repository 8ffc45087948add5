"""The inventory of torch's messages, as fxguide ships it: every graph-break type and raised message, per release.

``fxguide/diagnose/inventory/torch-<release>.json`` is harvested from torch's
source by ``python -m fxsite.inventory`` (site tooling, not part of this
package) and committed. Each message is a template: literal text, and ``{}``
where torch fills in a value (:func:`parts` splits it). :func:`entries` reads
the inventory of the installed torch (or, for a release fxguide has none of,
the newest older one), without importing torch.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import metadata, resources

_DATA = "inventory"
_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*\}")


@dataclass(frozen=True)
class Place:
    """Where torch raises a message: a file (relative to site-packages), a line, the function."""

    file: str
    line: int
    function: str


@dataclass(frozen=True)
class Entry:
    """A message of the inventory: a graph-break type (``graph_break``: its id, ``template``: its type) or a
    raised message. ``templates``: every template it is recognised by (a graph break's explanation and earlier
    wordings too). ``python``: the module of Python's standard library that raises it in the same words, if one
    does (then it tells nothing of where an error comes from)."""

    id: str
    subsystem: str
    exception: str
    template: str
    where: tuple[Place, ...]
    templates: tuple[str, ...]
    graph_break: str = ""
    explanation: str = ""
    hints: tuple[str, ...] = ()
    python: str = ""  # the file of Python's standard library that raises it in the same words


def installed_release() -> str:
    """The torch release installed (``2.14.1``), from its metadata (torch is not imported)."""
    return re.split(r"[+]", metadata.version("torch"))[0]


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", release)[:3])


def shipped() -> list[str]:
    """The releases fxguide ships an inventory of, oldest first."""
    folder = resources.files(__package__).joinpath(_DATA)
    names = [path.name for path in folder.iterdir()] if folder.is_dir() else []
    return sorted((name[len("torch-"):-len(".json")] for name in names
                   if name.startswith("torch-") and name.endswith(".json")), key=_release_key)


@cache
def inventory_release() -> str:
    """The release whose inventory the lookup reads: the installed torch's, else the newest older one (else the
    oldest)."""
    releases = shipped()
    if not releases:
        raise FileNotFoundError("fxguide ships no inventory (fxguide/diagnose/inventory/torch-*.json)")
    installed = _release_key(installed_release())
    older = [release for release in releases if _release_key(release) <= installed]
    return older[-1] if older else releases[0]


def _places(entry: dict) -> tuple[Place, ...]:
    return tuple(Place(place["file"], place["line"], place["function"]) for place in entry["where"])


def entries(release: str = "") -> tuple[Entry, ...]:
    """The inventory of ``release`` (default: :func:`inventory_release`): graph-break types, then messages."""
    return _entries(release or inventory_release())


@cache
def _entries(release: str) -> tuple[Entry, ...]:
    name = f"torch-{release}.json"
    data = json.loads(resources.files(__package__).joinpath(_DATA, name).read_text(encoding="utf-8"))
    breaks = tuple(Entry(e["id"], "dynamo", "Unsupported", e["gb_type"], _places(e), tuple(e["templates"]),
                         graph_break=e["id"], explanation=e["explanation"], hints=tuple(e["hints"]))
                   for e in data["graph_breaks"])
    messages = tuple(Entry(e["id"], e["subsystem"], e["exception"], e["template"], _places(e),
                           (e["template"], *((e["explanation"],) if e.get("explanation") else ())),
                           explanation=e.get("explanation", ""), python=e.get("python", ""))
                     for e in data["messages"])
    return breaks + messages


def parts(line: str) -> tuple[str, ...]:
    """The literal parts of one template line, in order, whitespace runs read as one space: ``""`` first or last
    where the line begins or ends with a wildcard.

    >>> parts("Node {} referenced target {} but that target was not provided")
    ('Node ', ' referenced target ', ' but that target was not provided')
    >>> parts("{} is not supported"), parts("a {{literal}} brace")
    (('', ' is not supported'), ('a {literal} brace',))
    """
    line = " ".join(line.split())
    pieces = _FIELD.split(line)
    literal, out = pieces[0], []
    for brace, piece in zip((match[0] for match in _FIELD.finditer(line)), pieces[1:], strict=True):
        if brace in ("{{", "}}"):
            literal += brace[0] + piece
        else:
            out.append(literal)
            literal = piece
    return (*out, literal)


def fill(template: str, values) -> str:
    """``template`` with each wildcard replaced by the next of ``values`` (an iterator of strings).

    >>> fill("Node {} referenced {}", iter(["a", "b"]))
    'Node a referenced b'
    """
    return _FIELD.sub(lambda match: match[0][0] if match[0] in ("{{", "}}") else next(values), template)


__all__ = ["Entry", "Place", "entries", "fill", "installed_release", "inventory_release", "parts", "shipped"]
