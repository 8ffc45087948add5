"""The Compatibility page and the home page's "verified on torch …", from the committed drift reports.

``make drift TORCH=X`` writes ``drift/torch-X/report.json``. At build time the
Sphinx extension (:mod:`fxsite.sphinx.sphinx_ext`) calls :func:`render_page`
and :func:`verified_sentence` on those reports and today's snapshots, so the
page never says more than the reports checked: a snippet counts as verified on
a torch only if that torch's report compared the very output recorded today
(same digest) and found it the same.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from fxsite.drift import snapshots
from fxsite.drift.compare import MISSING_LIBRARY, SAME
from fxsite.drift.extract import ROOT, relative
from fxsite.drift.report import REFERENCE_TORCH

DRIFT = ROOT / "drift"
_REQUIRED = {"torch", "date", "summary", "snippets"}


def version_key(version: str) -> tuple[int, ...]:
    """Sort key of a release like ``2.14.1``.

    >>> sorted(["2.9.1", "2.14.1", "2.13.0"], key=version_key)
    ['2.9.1', '2.13.0', '2.14.1']
    """
    if not isinstance(version, str) or not re.fullmatch(r"\d+(\.\d+)*", version):
        raise ValueError(f"version_key: {version!r} is not a release number like 2.14.1")
    return tuple(int(part) for part in version.split("."))


class Reports(list):
    """The readable drift reports, oldest torch first; ``damaged`` maps each unreadable one's path to why."""

    damaged: dict[Path, str]


class Recorded(dict):
    """Today's recorded outputs by source; ``damaged`` maps each unreadable store file to what is wrong."""

    damaged: dict[Path, str]


def _tell(kind: str, damaged: dict[Path, str], repair: str) -> None:
    # Printed, not a Sphinx warning: a damaged file must not stop the site from building.
    for path, why in damaged.items():
        print(f"fxguide: {kind} {path} cannot be read: {why}; {repair}", file=sys.stderr)


def read_report(path: Path) -> dict:
    """One ``report.json``; anything else raises ``ValueError`` naming ``path`` and what is wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a drift report (not valid JSON: {error}); rerun `make drift`") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a drift report (a JSON {type(data).__name__}, not an object); "
                         "rerun `make drift`")
    missing = _REQUIRED - data.keys()
    if missing:
        raise ValueError(f"{path}: not a drift report (missing {sorted(missing)}); rerun `make drift`")
    if not isinstance(data["snippets"], list) or not all(isinstance(e, dict) and {"source", "index", "status"}
                                                         <= e.keys() for e in data["snippets"]):
        raise ValueError(f"{path}: not a drift report (its snippets lack source, index or status); "
                         "rerun `make drift`")
    version_key(str(data["torch"]))
    return data


def load_reports(folder: Path = DRIFT) -> Reports:
    """Every readable ``torch-*/report.json`` under ``folder``, oldest torch first.

    An unreadable report is left out, named on stderr and kept in ``.damaged``
    (path -> what is wrong); the test suite fails on it.
    """
    reports, damaged = Reports(), {}
    for path in sorted(Path(folder).glob("torch-*/report.json")):
        try:
            report = read_report(path)
        except ValueError as error:
            damaged[path] = str(error).removeprefix(f"{path}: ")
            continue
        if path.parent.name != f"torch-{report['torch']}":
            damaged[path] = (f"it reports torch {report['torch']} but lies in {path.parent.name}/ "
                             f"(moved or copied by hand?)")
            continue
        reports.append(report)
    reports.sort(key=lambda r: version_key(r["torch"]))
    reports.damaged = damaged
    _tell("drift report", damaged, "rerun `make drift TORCH=<version>`")
    return reports


def current_snapshots(expected: Path = snapshots.EXPECTED) -> Recorded:
    """Today's recorded outputs, by source (``docs/page.md``) and snippet number.

    A damaged file of the store (see :func:`fxsite.drift.snapshots.damage`) is left
    out, named on stderr and kept in ``.damaged``; ``make update-expected`` repairs it.
    """
    expected = Path(expected)
    found = Recorded()
    found.damaged = snapshots.damage(expected)
    for path in sorted(expected.rglob("*.txt")):
        if path in found.damaged or not path.resolve().is_relative_to(expected.resolve()):
            continue
        found[str(path.relative_to(expected))[: -len(".txt")]] = snapshots.read(path)
    _tell("expected-output file", found.damaged, "`make update-expected` repairs the store")
    return found


@dataclass
class Coverage:
    """What one report says about today's snippets."""

    torch: str
    date: str
    same: list[tuple[str, int]] = field(default_factory=list)
    differs: list[dict] = field(default_factory=list)  # report entries whose status is not "same"
    unchecked: list[tuple[str, int]] = field(default_factory=list)  # added or re-recorded since the report
    not_run: list[dict] = field(default_factory=list)  # entries that needed a library this torch cannot install
    unavailable: dict[str, str] = field(default_factory=dict)  # library -> why this torch cannot install it
    tests: dict[str, int] = field(default_factory=dict)


def coverage(report: dict, current: dict[str, dict[int, snapshots.Expected]]) -> Coverage:
    """Sort today's recorded snippets by what ``report`` found for them."""
    if not isinstance(report, dict) or not _REQUIRED <= report.keys():
        raise TypeError(f"coverage: report must be a drift report as read_report returns it (with "
                        f"{sorted(_REQUIRED)}), got {type(report).__name__}")
    entries = {(e["source"], e["index"]): e for e in report["snippets"]}
    result = Coverage(report["torch"], report["date"], tests=report.get("tests", {}).get("summary", {}),
                      unavailable=report.get("unavailable", {}))
    for source, recorded in sorted(current.items()):
        for index, expected in sorted(recorded.items()):
            entry = entries.get((source, index))
            if entry is None or entry.get("expected_digest") != snapshots.digest(expected.output):
                result.unchecked.append((source, index))
            elif entry["status"] == SAME:
                result.same.append((source, index))
            elif entry["status"] == MISSING_LIBRARY:
                result.not_run.append(entry)
            else:
                result.differs.append(entry)
    return result


def _versions_text(versions: list[str]) -> str:
    return versions[0] if len(versions) == 1 else ", ".join(versions[:-1]) + " and " + versions[-1]


def verified_sentence(reports: list[dict], current: dict[str, dict[int, snapshots.Expected]]) -> str:
    """The home page's sentence naming the torch releases the guide's outputs were verified on.

    The reference is verified by the test suite; another release by its drift
    report, counting only outputs that report compared with today's recording.

    >>> verified_sentence([], {"docs/a.md": {1: snapshots.Expected(1, 9, "x", False)}}) == (
    ...     f"Every output shown here is verified on torch {REFERENCE_TORCH}.")
    True
    """
    if not isinstance(reports, list) or not all(isinstance(r, dict) for r in reports):
        raise TypeError("verified_sentence: reports must be the list load_reports returns")
    total = sum(len(v) for v in current.values())
    if total == 0:
        return ("No output of this guide is recorded yet (tests/expected is empty), so none is verified; "
                "`make update-expected` records them.")
    versions, details = [REFERENCE_TORCH], [f"{REFERENCE_TORCH} (every output)"]
    for report in reports:
        if report["torch"] == REFERENCE_TORCH:
            continue
        cov = coverage(report, current)
        versions.append(report["torch"])
        if not cov.differs and not cov.unchecked and not cov.not_run:
            details.append(f"{report['torch']} (every output)")
        else:
            extra = f", {len(cov.unchecked)} not checked yet" if cov.unchecked else ""
            extra += (f", {len(cov.not_run)} not run without {_versions_text(sorted(cov.unavailable))}"
                      if cov.not_run else "")
            details.append(f"{report['torch']} ({len(cov.same)} of {total} outputs the same{extra})")
    damaged = len(getattr(current, "damaged", {}))
    caveat = (f" The expected outputs in {damaged} damaged file{'s' if damaged > 1 else ''} of the store are not "
              "counted (see Compatibility)." if damaged else "")
    if all(d.endswith("(every output)") for d in details):
        return f"Every output shown here is verified on torch {_versions_text(versions)}.{caveat}"
    return f"Verified on torch {_versions_text(details)}.{caveat}"


def _snippet_list(kind: str, indices: list[int]) -> str:
    return f"{kind}{'s' if len(indices) > 1 else ''} " + ", ".join(str(i) for i in indices)


def _headline(message: str) -> str:
    """What a finding says, without the place the heading above it already names.

    >>> _headline("docs/a.md, cell 3 (line 43), torch 2.15.0: output changed\\n--- expected")
    'Output changed.'
    """
    verdict = message.splitlines()[0].split(": ", 1)[-1]
    return verdict[:1].upper() + verdict[1:] + "."


def render_page(reports: list[dict], current: dict[str, dict[int, snapshots.Expected]]) -> str:
    """The Markdown of the Compatibility page."""
    others = [r for r in reports if r["torch"] != REFERENCE_TORCH]
    covs = [coverage(r, current) for r in others]
    total = sum(len(v) for v in current.values())
    lines = [
        "% Generated at build time by fxsite.drift.compat from drift/torch-*/report.json: do not edit.",
        "",
        "# Compatibility",
        "",
        f"Every output in this guide was recorded on torch {REFERENCE_TORCH}, the reference, and the test "
        f"suite checks all {total} of them against that torch on every change. To see what another release "
        "does to them, `make drift TORCH=<version>` builds the guide with that torch in a side environment "
        "and compares every output with the recorded one. This page is generated from those reports.",
        "",
    ]
    damaged = {**getattr(current, "damaged", {}), **getattr(reports, "damaged", {})}
    if damaged:
        lines += ["```{warning}", "These files could not be read, so what they hold is missing from this page "
                  "(`make update-expected` repairs an expected-output file, `make drift TORCH=<version>` a report):",
                  "", *[f"- `{relative(path)}`: {why}" for path, why in sorted(damaged.items())], "```", ""]
    if not covs:
        lines += ["No release other than the reference has been checked yet.", ""]
        return "\n".join(lines)
    lines += [
        "## Releases checked",
        "",
        "A snippet is *the same* when its normalized output is identical to the recorded one. "
        "*Not checked yet* counts outputs added or re-recorded after that release's report.",
        "",
        "*Not run* counts outputs whose page needs a library that release cannot install.",
        "",
        "| torch | checked on | same | differ | not checked yet | not run | unit tests and doctests |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cov in covs:
        kinds = [(s, sum(1 for e in cov.differs if e["status"] == s)) for s in
                 ("changed", "newly raising", "newly hangs", "no longer raising", "not recorded",
                  "no longer shown")]
        differ = str(len(cov.differs)) + (" (" + ", ".join(f"{n} {s}" for s, n in kinds if n) + ")"
                                          if cov.differs else "")
        tests = ", ".join(f"{n} {k}" for k, n in cov.tests.items()) or "not run"
        not_run = str(len(cov.not_run)) + (f" (needs {_versions_text(sorted(cov.unavailable))})"
                                           if cov.not_run else "")
        lines.append(f"| {cov.torch} | {cov.date} | {len(cov.same)} | {differ} | {len(cov.unchecked)} | {not_run} "
                     f"| {tests} |")
    lines += ["", "## Page by page", "",
              "| page or script | outputs | " + " | ".join(f"torch {c.torch}" for c in covs) + " |",
              "| --- | --- | " + " | ".join("---" for _ in covs) + " |"]
    for source, recorded in sorted(current.items()):
        kind = "cell" if source.endswith(".md") else "block"
        cells = []
        for cov in covs:
            differs = sorted(e["index"] for e in cov.differs if e["source"] == source)
            unchecked = sorted(i for s, i in cov.unchecked if s == source)
            parts = [f"{_snippet_list(kind, differs)} differ"] if differs else []
            parts += [f"{_snippet_list(kind, unchecked)} not checked yet"] if unchecked else []
            not_run = sorted(e["index"] for e in cov.not_run if e["source"] == source)
            parts += [f"{_snippet_list(kind, not_run)} not run"] if not_run else []
            cells.append("; ".join(parts) or "all the same")
        lines.append(f"| `{source}` | {len(recorded)} | " + " | ".join(cells) + " |")
    lines += ["", "## What changed", ""]
    for cov in covs:
        lines += [f"### torch {cov.torch}", ""]
        for lib, why in sorted(cov.unavailable.items()):
            lines += [f"Not installed: **{lib}**, {why}.", ""]
        if not cov.differs:
            lines += [f"Every checked output is the same on torch {cov.torch}.", ""]
        for entry in cov.differs:
            kind = "cell" if entry["source"].endswith(".md") else "block"
            lines += [f"#### {cov.torch}: `{entry['source']}`, {kind} {entry['index']} (line {entry['line']})", "",
                      _headline(entry["message"]), ""]
            if entry.get("diff"):
                lines += ["```diff", entry["diff"], "```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` unless it already holds it (keeps Sphinx from re-reading it); True if written."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"write_if_changed: {path} is a folder; give the path of the file to write")
    if path.is_file() and path.read_text() == text:
        return False
    path.write_text(text)
    return True
