"""Where survey records live, and how they merge into ``drift/torch-<version>/survey.json``.

Each surveyed model writes one record (``records/<zoo>__<name>.json``) under a
folder per torch version; each run of the CLI adds a ``run-*.json`` saying what
it selected and how long it took. :func:`merge` turns the folder into the
survey file: every catalogue model in catalogue order, a model without a record
marked "not surveyed" with the reason, the zoos whose library does not import
with this torch under ``unavailable``, and ``complete`` false (the page then
says the survey is partial) unless every model of every zoo was surveyed.
"""

from __future__ import annotations

import ast
import hashlib
import json
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from fxguide.diagnose import TIMEOUT as TOOL_TIMEOUT
from fxguide.diagnose.compare import ATOL, RTOL
from fxsite import ROOT
from fxsite.survey.catalogue import Entry, catalogue, unavailable_zoos
from fxsite.survey.tools import TOOLS

DRIFT = ROOT / "drift"
LIBRARIES = ("torch", "torchvision", "timm", "transformers")


def versions() -> dict[str, str]:
    """Installed versions of the libraries the survey depends on, without local tags ("not installed")."""
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name).split("+")[0]
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return {**found, "python": platform.python_version()}


def records_dir(torch_version: str | None = None) -> Path:
    """The folder of per-model records for a torch version (under ``_build``, not committed)."""
    return ROOT / "_build" / "survey" / f"torch-{torch_version or versions()['torch']}"


def survey_path(torch_version: str) -> Path:
    return DRIFT / f"torch-{torch_version}" / "survey.json"


def record_path(folder: Path, entry: Entry) -> Path:
    return folder / "records" / f"{entry.zoo}__{entry.name}.json"


# Imported by the runner, but deciding nothing a record holds: which guide section a failure links to,
# and the range of torch releases fxguide declares (a warning at import; a change of it would otherwise
# mark every record stale).
_DECIDES_NO_RECORD = {ROOT / "fxguide" / "diagnose" / "causes.py", ROOT / "fxguide" / "_torch_range.py"}


def survey_sources() -> list[Path]:
    """The source files whose code decides a record: the survey's runner and every module it imports.

    Starting from ``tools.py`` and ``catalogue.py``, follow every ``fxguide`` and
    ``fxsite.survey`` import (also those inside functions, and relative ones), with the ``__init__.py``
    of each package on the way. Merging, rendering and the rest of fxguide are left
    out, so editing a page's helper does not mark the whole survey stale.
    """
    todo = [ROOT / "fxsite" / "survey" / "tools.py", ROOT / "fxsite" / "survey" / "catalogue.py"]
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file() or path in _DECIDES_NO_RECORD:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module, *(f"{node.module}.{a.name}" for a in node.names)] \
                if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            if isinstance(node, ast.ImportFrom) and node.level:  # from . import x, from ._y import z
                package = path.relative_to(ROOT).parent.parts[:len(path.relative_to(ROOT).parent.parts) - node.level + 1]
                base = ".".join((*package, *([node.module] if node.module else [])))
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "fxguide" or parts[:2] == ["fxsite", "survey"]:
                    for depth in range(1, len(parts) + 1):
                        base = ROOT.joinpath(*parts[:depth])
                        todo += [base / "__init__.py", base.with_suffix(".py")]
    return sorted(seen)


def fxguide_key() -> str:
    """A short hash of :func:`survey_sources`: which version of the tools made a record."""
    digest = hashlib.sha256()
    for path in survey_sources():
        digest.update(str(path.relative_to(ROOT)).encode() + path.read_bytes())
    return digest.hexdigest()[:12]


def is_current(path: Path, key: str | None = None) -> bool:
    """Whether ``path`` holds a record made by today's survey code, whose :func:`fxguide_key`
    is ``key`` (computed here when not given: pass it when checking many records)."""
    return path.is_file() and json.loads(path.read_text()).get("fxguide") == (key or fxguide_key())


def write_record(folder: Path, entry: Entry, record: dict[str, Any]) -> Path:
    path = record_path(folder, entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**record, "fxguide": fxguide_key()}, indent=1) + "\n")
    return path


def merge(folder: Path, keys: list[str] | None = None, kept: dict[str, Any] | None = None,
          selected: list[str] | None = None) -> dict[str, Any]:
    """The survey document for the records in ``folder`` (of the models ``keys``, or all).

    ``kept`` is an earlier survey document (the committed one) and ``selected`` the models this run
    surveyed (a ``--zoo`` or ``--model`` run): a model outside ``selected`` with no record in ``folder``
    keeps its record from ``kept``, and so do ``kept``'s runs. A selected model without a record is
    "not surveyed", never its old record.
    """
    if (kept is None) != (selected is None):
        raise ValueError("merge: give both kept (an earlier survey) and selected (the models this run surveyed), or neither")
    previous = {f"{m['zoo']}/{m['model']}": m for m in (kept or {}).get("models", [])}
    models, missing = [], 0
    entries = catalogue()
    for entry in (entries[k] for k in keys) if keys is not None else entries.values():
        path = record_path(folder, entry)
        if path.exists():
            models.append(json.loads(path.read_text()))
            continue
        if selected is not None and entry.key not in selected and entry.key in previous:
            models.append(previous[entry.key])
            continue
        missing += not entry.skip  # a model the catalogue skips needs no run: its reason is its record
        models.append({"zoo": entry.zoo, "category": entry.category, "model": entry.name, "input": entry.shape,
                       "status": "not surveyed", "tools": {},
                       "reason": entry.skip or "no record: not run yet, or the model timed out or crashed its worker"})
    runs = [json.loads(p.read_text()) for p in sorted(folder.glob("run-*.json"))]
    if kept:
        runs = [run for run in kept.get("runs", []) if run not in runs] + runs
    return _document(models, runs, missing)


def _document(models: list[dict[str, Any]], runs: list[dict[str, Any]], missing: int,
              environment: dict[str, Any] | None = None) -> dict[str, Any]:
    """The survey file's fields; ``environment`` (``versions``, ``unavailable``, ``fxguide``) is the
    one the records were made in, by default this process's."""
    environment = environment or {"versions": versions(), "unavailable": unavailable_zoos(), "fxguide": fxguide_key()}
    current, unavailable = environment["fxguide"], environment["unavailable"]
    return {
        "versions": environment["versions"],
        "complete": missing == 0 and not unavailable,
        "missing": missing,
        # Zoos whose library does not import with this torch: none of their models is listed.
        "unavailable": unavailable,
        # Records made by another version of fxguide's tools (or before records said which).
        "fxguide": current,
        "stale": sum(m["status"] == "surveyed" and m.get("fxguide") != current for m in models),
        "runs": runs,
        "tools": list(TOOLS),
        "tolerance": {"rtol": RTOL, "atol": ATOL, "atol_scaled_by": "largest eager magnitude"},
        "tool_timeout_seconds": TOOL_TIMEOUT,
        "models": models,
    }


class ShardError(ValueError):
    """Shard results that cannot be merged: mixed environments, or a shard given twice."""


def merge_shards(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """One survey document from the documents of the shards of one run (``--shard i/N``).

    Every model the run split (``shard["all"]``, catalogue order) comes out once. A missing shard, or
    one that did not survey all its models, is named under ``"shards"`` and its
    models stay "not surveyed" with the reason: never silently dropped. Shards made
    with other library versions or another survey code raise :class:`ShardError`.
    """
    if not documents:
        raise ShardError("merge: no shard results given; pass the shard-*.json files of one run")
    counts = {d.get("shard", {}).get("count") for d in documents}
    if len(counts) != 1 or None in counts:
        raise ShardError(f"merge: every file must be a shard of one run (--shard i/N with one N); found N = {counts}")
    count = counts.pop()
    seen: dict[int, dict[str, Any]] = {}
    for document in documents:
        index = document["shard"]["index"]
        if index in seen:
            raise ShardError(f"merge: shard {index}/{count} given twice")
        for field in ("versions", "fxguide", "tools", "unavailable"):
            if document[field] != documents[0][field]:
                raise ShardError(f"merge: shard {index}/{count} has {field} {document[field]!r}, shard "
                                 f"{documents[0]['shard']['index']}/{count} has {documents[0][field]!r}: "
                                 "shards of one run must come from one environment and one survey code")
        seen[index] = document
        if document["shard"]["all"] != documents[0]["shard"]["all"]:
            raise ShardError(f"merge: shard {index}/{count} splits another list of models than shard "
                             f"{documents[0]['shard']['index']}/{count}: the shards come from different runs")
    by_key = {f"{m['zoo']}/{m['model']}": m for d in seen.values() for m in d["models"]}
    absent = sorted(set(range(1, count + 1)) - set(seen))
    entries = catalogue()
    failed = [f"{i}/{count}: {d['missing']} of its {len(d['models'])} models have no record"
              for i, d in sorted(seen.items()) if d["missing"]]
    models, missing = [], sum(d["missing"] for d in seen.values())
    for key in documents[0]["shard"]["all"]:
        entry, model = entries[key], by_key.get(key)
        if model is None:
            missing += 1
            model = {"zoo": entry.zoo, "category": entry.category, "model": entry.name, "input": entry.shape,
                     "status": "not surveyed", "tools": {},
                     "reason": entry.skip or f"no shard result: shard(s) {', '.join(f'{i}/{count}' for i in absent)} missing"}
        models.append(model)
    first = documents[0]  # the shards' environment, not the merging one's
    document = _document(models, [r for _, d in sorted(seen.items()) for r in d["runs"]], missing,
                         {field: first[field] for field in ("versions", "unavailable", "fxguide")})
    document["shards"] = {"count": count, "missing": [f"{i}/{count}" for i in absent], "failed": failed}
    return document

