"""Write the intersphinx inventory of torch's reference that the site links to, offline.

The build never fetches anything, so the inventory of https://docs.pytorch.org is a
file committed with the site (:data:`INVENTORY`). It is refreshed with one of::

    # with the network: the inventory pytorch.org publishes for the pinned release
    python -m fxsite.sphinx.torch_inventory --download
    # without it: from PyTorch's documentation sources at the release tag
    git clone --depth 1 --branch v2.14.1 --filter=blob:none --sparse https://github.com/pytorch/pytorch
    git -C pytorch sparse-checkout set docs/source
    python -m fxsite.sphinx.torch_inventory --sources pytorch/docs/source

``--sources`` reads the directives Sphinx turns into reference entries
(``autosummary`` with a ``:toctree:``, ``autoclass``/``autofunction``/...,
``class``/``function``/...) and writes the address each entry gets: an
``autosummary`` entry ``X`` under ``currentmodule:: M`` is the page
``generated/M.X.html``, anchored at ``#M.X``; a directive elsewhere is an anchor on
its own page. Members of a class page (``:template: classtemplate.rst`` or
``:members:``) are listed from the installed torch. Only names the installed torch
has are written, so a link never points at an entry that does not exist.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

INVENTORY = Path(__file__).resolve().parent / "torch-objects.inv"
"""The committed inventory, read by ``intersphinx_mapping`` in ``conf.py``."""


def docs_url(version: str) -> str:
    """The root of the reference for a torch release: pytorch.org keeps one per ``major.minor``.

    >>> docs_url("2.14.1+cpu")
    'https://docs.pytorch.org/docs/2.14/'
    """
    match = re.match(r"(\d+)\.(\d+)", version)
    if not match:
        raise ValueError(f"docs_url: expected a torch version such as 2.14.1, got {version!r}")
    return f"https://docs.pytorch.org/docs/{match[1]}.{match[2]}/"


@dataclass(frozen=True)
class Entry:
    name: str  # torch.nn.Linear
    role: str  # py:class, py:function, py:method, py:attribute, py:data, py:module
    uri: str  # generated/torch.nn.Linear.html#torch.nn.Linear


_DIRECTIVE = re.compile(r"^(?P<indent>\s*)(?:\.\. (?P<rst>[\w:-]+)::|```\{(?P<myst>[\w:-]+)\})[ \t]*(?P<arg>.*)$")
_ROLES = {"class": "py:class", "function": "py:function", "method": "py:method", "attribute": "py:attribute",
          "data": "py:data", "exception": "py:exception", "decorator": "py:function", "property": "py:property"}


def _live(name: str):
    """The installed object named ``name`` (``torch.nn.Linear``), or None.

    Attributes win over submodules of the same name: ``torch.nn.utils.spectral_norm``
    is the function, not the module that defines it.
    """
    parts = name.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except Exception:  # noqa: BLE001 (not installed: nothing to link)
        return None
    for depth, part in enumerate(parts[1:], start=2):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(".".join(parts[:depth]))
        except Exception:  # noqa: BLE001 (no such name in the installed torch)
            return None
    return obj


def _home(obj) -> str | None:
    """Where ``obj`` is defined (``torch.nn.modules.linear.Linear``): the name autodoc and
    sphinx-codeautolink look up, which differs from the documented one (``torch.nn.Linear``)."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and module.startswith("torch"):
        return f"{module}.{qualname}"
    return None


def _role(obj, name: str) -> str:
    if inspect.ismodule(obj):
        return "py:module"
    if inspect.isclass(obj):
        return "py:exception" if issubclass(obj, BaseException) else "py:class"
    if isinstance(obj, property) or type(obj).__name__ in {"getset_descriptor", "member_descriptor"}:
        return "py:attribute"
    if callable(obj):
        return "py:method" if inspect.isclass(_live(name.rpartition(".")[0])) else "py:function"
    return "py:data"


def _members(cls: type, page: str, owner: str) -> list[Entry]:
    """The documented members of class ``cls`` (its own public callables and properties with a docstring)."""
    found = []
    for member, value in vars(cls).items():
        if member.startswith("_") or not getattr(value, "__doc__", None):
            continue
        if inspect.isfunction(value) or inspect.ismethoddescriptor(value) or isinstance(
                value, (property, staticmethod, classmethod)):
            name = f"{owner}.{member}"
            role = "py:attribute" if isinstance(value, property) else "py:method"
            found.append(Entry(name, role, f"{page}#{name}"))
    return found


def entries_from_sources(sources: Path) -> list[Entry]:
    """Every reference entry PyTorch's documentation sources in ``sources`` define (see the module's docstring)."""
    sources = Path(sources)
    if not sources.is_dir():
        raise NotADirectoryError(f"entries_from_sources: {sources} is not PyTorch's docs/source folder")
    found: dict[str, Entry] = {}

    def add(entry: Entry) -> None:
        found.setdefault(entry.name, entry)

    for path in sorted([*sources.rglob("*.rst"), *sources.rglob("*.md")]):
        docname = path.relative_to(sources).with_suffix("").as_posix()
        folder = docname.rpartition("/")[0]
        lines = path.read_text(encoding="utf-8").splitlines()
        module = ""
        index = 0
        while index < len(lines):
            match = _DIRECTIVE.match(lines[index])
            index += 1
            if not match:
                continue
            kind = (match["rst"] or match["myst"]).removeprefix("py:")
            arg = match["arg"].strip()
            if kind in {"currentmodule", "module", "automodule"}:
                module = arg
                continue
            if kind != "autosummary" and kind.removeprefix("auto") not in _ROLES:
                continue  # eval-rst, toctree, note, ...: their content is read line by line
            # the directive's body: its options, then (autosummary) its entries
            body, fenced = [], bool(match["myst"])
            while index < len(lines):
                line = lines[index]
                if fenced and line.strip().startswith("```"):
                    break
                if not fenced and line.strip() and len(line) - len(line.lstrip()) <= len(match["indent"]):
                    break
                body.append(line.strip())
                index += 1
            options = {m[1]: m[2].strip() for m in (re.match(r":([\w-]+):(.*)", b) for b in body) if m}
            if kind == "autosummary":
                toctree = options.get("toctree")
                if not toctree:
                    continue
                base = f"{folder}/{toctree}" if folder else toctree
                for item in body:
                    if not item or item.startswith((":", "..")):
                        continue
                    item = item.lstrip("~").split()[0]
                    name = item if item.startswith("torch.") or item == "torch" else f"{module}.{item}"
                    obj = _live(name)
                    if obj is None:
                        continue
                    page = f"{base}/{name}.html"
                    add(Entry(name, _role(obj, name), f"{page}#{name}"))
                    if inspect.isclass(obj) and "classtemplate" in options.get("template", ""):
                        for member in _members(obj, page, name):
                            add(member)
            elif kind.removeprefix("auto") in _ROLES and arg:
                target = arg.split("(")[0].strip()
                name = target if target.startswith("torch.") or not module else f"{module}.{target}"
                obj = _live(name)
                if obj is None:
                    continue
                page = f"{docname}.html"
                add(Entry(name, _ROLES[kind.removeprefix("auto")] if not kind.startswith("auto") else _role(obj, name),
                          f"{page}#{name}"))
                if inspect.isclass(obj) and "members" in options:
                    for member in _members(obj, page, name):
                        add(member)
    # The same entries under the names of their definitions, so that a signature's
    # ``torch.nn.modules.module.Module`` finds the page of ``torch.nn.Module``.
    for entry in list(found.values()):
        if entry.role in {"py:class", "py:function"}:
            home = _home(_live(entry.name))
            if home and home != entry.name:
                add(Entry(home, entry.role, entry.uri))
                if entry.role == "py:class":
                    for member in [e for e in list(found.values()) if e.name.startswith(entry.name + ".")]:
                        add(Entry(home + member.name[len(entry.name):], member.role, member.uri))
    return sorted(found.values(), key=lambda e: e.name)


def write_inventory(entries: list[Entry], path: Path, version: str) -> None:
    """Write ``entries`` as a Sphinx inventory (version 2), the format intersphinx reads."""
    if not entries:
        raise ValueError("write_inventory: no entries; is the sources folder PyTorch's docs/source?")
    header = (f"# Sphinx inventory version 2\n# Project: PyTorch\n# Version: {version}\n"
              "# The remainder of this file is compressed using zlib.\n")
    body = "".join(
        f"{e.name} {e.role} 1 {e.uri[:-len(e.name)] + '$' if e.uri.endswith('#' + e.name) else e.uri} -\n"
        for e in entries)
    Path(path).write_bytes(header.encode() + zlib.compress(body.encode()))


def main(argv: list[str] | None = None) -> None:
    from fxsite.sphinx.fingerprint import torch_version

    parser = argparse.ArgumentParser(prog="python -m fxsite.sphinx.torch_inventory",
                                     description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--sources", type=Path, help="PyTorch's docs/source folder at the release tag")
    source.add_argument("--download", action="store_true", help="fetch objects.inv from pytorch.org")
    parser.add_argument("--version", default=torch_version().split("+")[0], help="torch release (default: installed)")
    parser.add_argument("--output", type=Path, default=INVENTORY)
    args = parser.parse_args(argv)
    if args.download:
        import urllib.request  # here: conf.py imports this module, and a build fetches nothing

        with urllib.request.urlopen(docs_url(args.version) + "objects.inv", timeout=60) as response:
            args.output.write_bytes(response.read())
        print(f"downloaded {docs_url(args.version)}objects.inv to {args.output}")
        return
    entries = entries_from_sources(args.sources)
    write_inventory(entries, args.output, ".".join(args.version.split(".")[:2]))
    print(f"wrote {len(entries)} entries to {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
