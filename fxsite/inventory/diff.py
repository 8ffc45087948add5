"""The drift of the inventory between two releases: messages and graph-break types that appear, disappear or change.

A message is keyed by where it is raised: its subsystem, its file and
function, and its exception class. A key in both releases whose templates
differ is a *changed* message (old and new template side by side); a key in
one release only is a message that appeared or disappeared. Line numbers are
not compared (they move with every edit). Graph-break types are keyed by their
id: a type, an explanation or hints that changed, or an id that appeared or
disappeared.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

Key = tuple[str, str, str, str]  # subsystem, file, function, exception class


@dataclass
class Drift:
    """What changed from release ``old`` to release ``new``."""

    old: str
    new: str
    appeared: dict[Key, list[str]] = field(default_factory=dict)
    disappeared: dict[Key, list[str]] = field(default_factory=dict)
    changed: dict[Key, tuple[list[str], list[str]]] = field(default_factory=dict)
    graph_breaks_appeared: list[dict] = field(default_factory=list)
    graph_breaks_disappeared: list[dict] = field(default_factory=list)
    graph_breaks_changed: list[tuple[dict, dict, list[str]]] = field(default_factory=list)
    not_compared: list[str] = field(default_factory=list)  # libraries installed with one release only

    @property
    def empty(self) -> bool:
        return not (self.appeared or self.disappeared or self.changed or self.graph_breaks_appeared
                    or self.graph_breaks_disappeared or self.graph_breaks_changed)


def _by_place(inventory: dict) -> dict[Key, list[str]]:
    templates: dict[Key, list[str]] = defaultdict(list)
    for entry in inventory["messages"]:
        for place in entry["where"]:
            key = (entry["subsystem"], place["file"], place["function"], entry["exception"])
            if entry["template"] not in templates[key]:
                templates[key].append(entry["template"])
    return {key: sorted(value) for key, value in templates.items()}


_COMPARED = ("gb_type", "explanation", "hints")


_LIBRARIES = ("torchvision", "timm", "transformers", "torchao")


def _libraries_in_one(old: dict, new: dict) -> list[str]:
    """The libraries beside torch installed with one release only: their messages are not compared."""
    return [name for name in _LIBRARIES if (name in old["packages"]) != (name in new["packages"])]


def drift(old: dict, new: dict) -> Drift:
    """The drift from inventory ``old`` to inventory ``new``; the messages of a library beside torch (torchvision,
    timm, transformers, torchao) are compared only when it was installed with both releases."""
    result = Drift(old["release"], new["release"], not_compared=_libraries_in_one(old, new))
    before, after = _by_place(old), _by_place(new)
    left_out = tuple(f"{name}/" for name in result.not_compared)
    before, after = ({key: value for key, value in side.items() if not key[1].startswith(left_out)}
                     for side in (before, after))
    for key in sorted(before.keys() | after.keys()):
        was, now = before.get(key), after.get(key)
        if was is None:
            result.appeared[key] = now
        elif now is None:
            result.disappeared[key] = was
        elif was != now:
            result.changed[key] = ([t for t in was if t not in now], [t for t in now if t not in was])
    old_breaks = {entry["id"]: entry for entry in old["graph_breaks"]}
    new_breaks = {entry["id"]: entry for entry in new["graph_breaks"]}
    for gb_id in sorted(old_breaks.keys() | new_breaks.keys()):
        was, now = old_breaks.get(gb_id), new_breaks.get(gb_id)
        if was is None:
            result.graph_breaks_appeared.append(now)
        elif now is None:
            result.graph_breaks_disappeared.append(was)
        elif fields := [name for name in _COMPARED if was[name] != now[name]]:
            result.graph_breaks_changed.append((was, now, fields))
    return result


def _short(text: str, width: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _key(key: Key) -> str:
    subsystem, file, function, kind = key
    return f"[{subsystem}] {kind} in {function} ({file})"


def report(found: Drift, limit: int = 0) -> str:
    """``found`` as text: counts first, then each section (at most ``limit`` items each; 0: all)."""
    lines = [f"Inventory drift, torch {found.old} -> {found.new}",
             f"  messages: {len(found.appeared)} appeared, {len(found.disappeared)} disappeared, "
             f"{len(found.changed)} changed (keyed by subsystem, file, function and exception class)",
             f"  graph breaks: {len(found.graph_breaks_appeared)} appeared, "
             f"{len(found.graph_breaks_disappeared)} disappeared, {len(found.graph_breaks_changed)} changed"]
    if found.not_compared:
        lines.append(f"  not compared (installed with one release only): {', '.join(found.not_compared)}")
    if found.empty:
        return "\n".join([*lines, "No drift."])

    def section(title: str, items: list[list[str]]) -> None:
        if not items:
            return
        lines.extend(["", f"{title} ({len(items)})"])
        for item in items[:limit or None]:
            lines.extend(item)
        if limit and len(items) > limit:
            lines.append(f"  … and {len(items) - limit} more (--limit 0 shows all)")

    section("Messages that changed", [[f"~ {_key(key)}", *(f"    - {_short(t)}" for t in was),
                                       *(f"    + {_short(t)}" for t in now)]
                                      for key, (was, now) in found.changed.items()])
    section("Messages that appeared", [[f"+ {_key(key)}", *(f"    {_short(t)}" for t in now)]
                                       for key, now in found.appeared.items()])
    section("Messages that disappeared", [[f"- {_key(key)}", *(f"    {_short(t)}" for t in was)]
                                          for key, was in found.disappeared.items()])
    section("Graph-break types that changed", [
        [f"~ {now['id']} ({', '.join(fields)})",
         *(f"    {name}: - {_short(str(was[name]))}\n    {' ' * len(name)}  + {_short(str(now[name]))}"
           for name in fields)] for was, now, fields in found.graph_breaks_changed])
    section("Graph-break types that appeared", [[f"+ {entry['id']}: {_short(entry['gb_type'])}"]
                                                for entry in found.graph_breaks_appeared])
    section("Graph-break types that disappeared", [[f"- {entry['id']}: {_short(entry['gb_type'])}"]
                                                   for entry in found.graph_breaks_disappeared])
    return "\n".join(lines)


__all__ = ["Drift", "drift", "report"]
