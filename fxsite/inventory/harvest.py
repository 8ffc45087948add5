"""Harvest the inventory of one torch installation: every graph-break type and every message its capture stack raises.

:func:`harvest` reads a ``site-packages`` folder's source files (never
importing them) and returns the inventory: the graph-break registry
(``torch/_dynamo/graph_break_registry.json``: id, type and explanation as
templates, context, hints, earlier wordings, and where Dynamo's
``unimplemented(...)`` calls raise each), and every
``raise`` in :data:`~fxsite.inventory.sources.SOURCES` whose message holds
literal words, as a template (:mod:`fxsite.inventory.templates`), its
exception class and where it is raised. A message raised in several places is
one entry with several places; its id is a hash of its subsystem, class and
template, so it stays the same from release to release while the words do.
A message Python's standard library raises in the same words is marked
(:mod:`fxsite.inventory.python_words`).
:func:`dumps` writes it as the committed JSON, one entry a line.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections import Counter
from pathlib import Path

from fxsite.inventory.sources import EXCEPTION_MODULES, REGISTRY, files
from fxsite.inventory.python_words import in_python
from fxsite.inventory.reader import Found, Reader
from fxsite.inventory.templates import from_registry, has_words

_PACKAGES = ("torch", "torchvision", "timm", "transformers", "torchao")


def _user_facing(site: Path) -> frozenset[str]:
    names = set()
    for module in EXCEPTION_MODULES:
        path = site / module
        if path.is_file():
            names |= {node.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                      if isinstance(node, ast.ClassDef)}
    return frozenset(names)


def _read(site: Path) -> Found:
    found = Found()
    user_facing = _user_facing(site)
    for source, path in files(site):
        text = path.read_text(encoding="utf-8")
        if source.user_facing_only and not any(name in text for name in user_facing):
            continue  # none of the classes is named in the file: nothing to read (Inductor's bulk)
        try:
            tree = ast.parse(text, filename=str(path))
        except SyntaxError:
            continue
        try:
            Reader(source, path.relative_to(site).as_posix(), user_facing, found).read(tree)
        except RecursionError:  # a generated module nested deeper than the walk goes: none in torch
            continue
    return found


def message_id(subsystem: str, kind: str, template: str) -> str:
    """A message's stable id: a hash of what identifies it, not of where it is raised."""
    return hashlib.sha1(f"{subsystem}\0{kind}\0{template}".encode()).hexdigest()[:10]


def _graph_breaks(site: Path, calls: list[tuple[str, str, dict]]) -> tuple[list[dict], list[tuple[str, str, dict]]]:
    """The registry's types, each with the places that raise it; and the calls whose type the registry lacks."""
    path = site / REGISTRY
    registry = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    by_type: dict[str, str] = {}
    for gb_id, variants in registry.items():
        for variant in variants:  # as torch links a type to its page: the last id that has it
            if has_words(gb_type := from_registry(variant["Gb_type"])):
                by_type[gb_type] = gb_id
    places: dict[str, list[tuple[str, dict]]] = {}
    explained: dict[str, list[str]] = {}  # the explanations the source writes (the registry holds their code)
    unregistered = []
    for gb_type, explanation, place in calls:
        if gb_type in by_type:
            places.setdefault(by_type[gb_type], []).append((gb_type, place))
            explained.setdefault(by_type[gb_type], []).append(explanation)
        else:
            unregistered.append((gb_type, explanation, place))
    entries = []
    for gb_id in sorted(registry):
        variants = registry[gb_id]
        raised = {gb_type for gb_type, _ in places.get(gb_id, ())}
        current = next((v for v in variants if from_registry(v["Gb_type"]) in raised), variants[0])
        explanation = next(iter(explained.get(gb_id, ())), None) or from_registry(current["Explanation"], code=True)
        earlier = [{"gb_type": from_registry(v["Gb_type"]), "explanation": from_registry(v["Explanation"], code=True)}
                   for v in variants if v is not current]
        earlier = [dict(pairs) for pairs in dict.fromkeys(tuple(e.items()) for e in earlier
                                                          if has_words(e["gb_type"]) or has_words(e["explanation"]))]
        templates = [from_registry(current["Gb_type"]), *(e["gb_type"] for e in earlier),
                     *explained.get(gb_id, ()), explanation, *(e["explanation"] for e in earlier)]
        entries.append({"id": gb_id, "gb_type": templates[0], "explanation": explanation,
                        "context": current["Context"],
                        "hints": current["Hints"] or next((v["Hints"] for v in variants if v["Hints"]), []),
                        "where": sorted((place for _, place in places.get(gb_id, ())),
                                        key=lambda p: (p["file"], p["line"])),
                        "earlier": earlier, "templates": [t for t in dict.fromkeys(templates) if has_words(t)]})
    return entries, unregistered


def _messages(found: Found, unregistered: list[tuple[str, str, dict]]) -> list[dict]:
    merged: dict[str, dict] = {}
    raised = [*found.messages, *(("dynamo", "Unsupported", gb_type, place) for gb_type, _, place in unregistered
                                 if has_words(gb_type))]
    explanations = {place["file"] + str(place["line"]): explanation for _, explanation, place in unregistered}
    for subsystem, kind, template, place in raised:
        key = message_id(subsystem, kind, template)
        entry = merged.setdefault(key, {"id": key, "subsystem": subsystem, "exception": kind,
                                        "template": template, "where": []})
        entry["where"].append(place)
        explanation = explanations.get(place["file"] + str(place["line"]))
        if kind == "Unsupported" and explanation and has_words(explanation):
            entry["explanation"] = explanation
    order = {source: i for i, source in enumerate(dict.fromkeys(s for s, *_ in raised))}
    for entry in merged.values():
        entry["where"].sort(key=lambda p: (p["file"], p["line"]))
    for key, file in in_python({key: entry["template"] for key, entry in merged.items()}).items():
        merged[key]["python"] = file
    return sorted(merged.values(), key=lambda e: (order[e["subsystem"]], e["where"][0]["file"],
                                                  e["where"][0]["line"], e["id"]))


def versions(site: Path) -> dict[str, str]:
    """The installed versions of torch and of the libraries read, from their ``.dist-info`` folders."""
    found = {}
    for info in sorted(site.glob("*.dist-info")):
        name, _, version = info.name[: -len(".dist-info")].partition("-")
        if name.lower() in _PACKAGES:
            found[name.lower()] = version
    return found


def release(site: Path) -> str:
    """The torch release installed in ``site`` (``2.14.1``; a local suffix such as ``+cpu`` left out)."""
    version = versions(site).get("torch")
    if version is None:
        raise FileNotFoundError(f"no torch-*.dist-info in {site}: pass the site-packages folder torch is in")
    return re.split(r"[+]", version)[0]


def harvest(site: Path) -> dict:
    """The inventory of the torch installed in the ``site-packages`` folder ``site``."""
    site = Path(site)
    if not (site / "torch").is_dir():
        raise FileNotFoundError(f"no torch in {site}: pass a site-packages folder that holds torch")
    found = _read(site)
    graph_breaks, unregistered = _graph_breaks(site, found.graph_breaks)
    messages = _messages(found, unregistered)
    subsystems = dict.fromkeys(entry["subsystem"] for entry in messages)
    counted = Counter(entry["subsystem"] for entry in messages)
    places = Counter(entry["subsystem"] for entry in messages for _ in entry["where"])
    summary = {
        "graph_breaks": {"types": len(graph_breaks),
                         "earlier_wordings": sum(len(entry["earlier"]) for entry in graph_breaks),
                         "raised_in_source": sum(bool(entry["where"]) for entry in graph_breaks),
                         "calls_not_in_registry": len(unregistered)},
        "messages": {name: {"templates": counted[name], "raised_at": places[name],
                            "no_literal_words": found.wordless[name]} for name in (*subsystems, *(
                                name for name in found.wordless if name not in subsystems))},
        "total": {"templates": len(messages), "raised_at": sum(places.values()),
                  "no_literal_words": sum(found.wordless.values())},
    }
    return {"release": release(site), "packages": versions(site), "summary": summary,
            "graph_breaks": graph_breaks, "messages": messages}


def dumps(inventory: dict) -> str:
    """The inventory as committed: its summary indented, then each entry on a line of its own (git diffs read
    per entry)."""
    head = {key: value for key, value in inventory.items() if key not in ("graph_breaks", "messages")}
    lines = [json.dumps(head, indent=1, ensure_ascii=False)[:-2] + ","]
    for key in ("graph_breaks", "messages"):
        entries = [json.dumps(entry, ensure_ascii=False) for entry in inventory[key]]
        lines.append(f' "{key}": [\n  ' + ",\n  ".join(entries) + "\n ]" + ("," if key == "graph_breaks" else ""))
    return "\n".join(lines) + "\n}\n"


__all__ = ["dumps", "harvest", "message_id", "release", "versions"]
