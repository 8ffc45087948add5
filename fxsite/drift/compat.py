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
from fxsite.drift.compare import MISSING_LIBRARY, ROUNDING, SAME
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
            elif entry["status"] in (SAME, ROUNDING):  # rounding: the checking machine's kernels, torch holds
                result.same.append((source, index))
            elif entry["status"] == MISSING_LIBRARY:
                result.not_run.append(entry)
            else:
                result.differs.append(entry)
    return result


#: How far behind today's recordings a committed report may be: the newest reported release not at all,
#: each older one (the reference aside: the test suite checks it) this share of the outputs.
OLDER_BEHIND = 0.05


def behind(reports: list[dict], current: dict[str, dict[int, snapshots.Expected]],
           reference: str = REFERENCE_TORCH) -> list[str]:
    """What each report that fell behind today's recordings lacks, with the command that refreshes it.

    A report is behind when it has not compared outputs recorded today (:func:`coverage`'s
    ``unchecked``): more than none on the newest reported release, more than :data:`OLDER_BEHIND` of
    them on an older one. Empty when every report is current enough.
    """
    others = [r for r in reports if r["torch"] != reference]
    if not others:
        return []
    total = sum(len(recorded) for recorded in current.values())
    newest = max(others, key=lambda r: version_key(r["torch"]))
    found = []
    for report in others:
        unchecked = len(coverage(report, current).unchecked)
        allowed = 0 if report is newest else int(OLDER_BEHIND * total)
        if unchecked > allowed:
            found.append(f"torch {report['torch']}: {unchecked} of {total} outputs not checked yet (at most "
                         f"{allowed}{' on the newest release' if report is newest else ''}); refresh it with "
                         f"`python -m fxsite.drift.side_env {report['torch']} --outputs-only`")
    return found


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


_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*$")


def page_title(source: str, root: Path = ROOT) -> str:
    """The title a reader sees for ``source`` (a page's first heading, a gallery script's docstring title).

    >>> page_title("docs/no-such-page.md")
    'docs/no-such-page.md'
    """
    path = Path(root) / source
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return source
    if source.endswith(".py"):
        match = re.search(r'^"""\s*\n?(.+?)\n', text, re.MULTILINE)
        return match.group(1).strip() if match else source
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading and len(heading.group(1)) == 1:
            return heading.group(2).strip("`")
    return source


def section_of(source: str, line: int, root: Path = ROOT) -> str:
    """The heading of the section of a page that holds ``line`` ("" before the first section, or for scripts)."""
    if not source.endswith(".md"):
        return ""
    try:
        lines = (Path(root) / source).read_text(encoding="utf-8").splitlines()[:max(line, 0)]
    except OSError:
        return ""
    fenced = False
    found = ""
    for text in lines:
        if text.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(text)
        if heading and len(heading.group(1)) > 1:
            found = heading.group(2)
    return found


def anchor_of(source: str) -> str:
    """The Compatibility page's anchor for one page's findings.

    >>> anchor_of("docs/pt2/saving.md")
    'compat-docs-pt2-saving-md'
    """
    return "compat-" + re.sub(r"[^a-z0-9]+", "-", source.lower()).strip("-")


def what_changed(entry: dict) -> str:
    """One line, in a reader's words, for a finding of a drift report.

    >>> what_changed({"status": "newly raising", "diff": ""})
    'raises where it returned'
    >>> what_changed({"status": "changed", "diff": "-x = add_1\\n+x = add_2"})
    'node or variable names changed (a numeric suffix)'
    """
    status = entry.get("status", "")
    fixed = {"newly raising": "raises where it returned", "no longer raising": "returns where it raised",
             "newly hangs": "hangs where it returned", "not recorded": "prints something new",
             "no longer shown": "no longer prints this output", MISSING_LIBRARY: "not run: a library is missing",
             ROUNDING: "digits at rounding level differ (the checking machine's kernels, not torch)"}
    if status in fixed:
        return fixed[status]
    diff = entry.get("diff", "")
    removed = [line[1:] for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    if added and all("warn" in line.lower() for line in added) and not removed:
        return "a new warning"
    if removed and all("warn" in line.lower() for line in removed) and not added:
        return "a warning is gone"
    if len(removed) == len(added):
        digits = [(re.sub(r"\d+", "N", a), re.sub(r"\d+", "N", b)) for a, b in zip(removed, added)]
        if all(a == b for a, b in digits):
            suffixes = all(re.sub(r"_\d+\b", "", a) == re.sub(r"_\d+\b", "", b) for a, b in zip(removed, added))
            return "node or variable names changed (a numeric suffix)" if suffixes else "numbers changed"
    if any(re.search(r"(Error|Exception)\b", line) for line in added + removed):
        return "the error message changed"
    if any(re.search(r"\b(graph|def forward|%\w+ :|call_function|aten\.)", line) for line in added + removed):
        return "the printed graph or code changed"
    return "the output changed"


def _table_cells(line: str) -> list[str]:
    """The cells of a printed table's line, with or without Markdown's outer pipes.

    >>> _table_cells("| pickle | works | error: TypeError |"), _table_cells("print | same")
    (['pickle', 'works', 'error: TypeError'], ['print', 'same'])
    """
    text = line.strip()
    text = text[1:] if text.startswith("| ") else text
    text = text[:-1] if text.endswith(" |") else text
    return [part.strip() for part in text.split(" | ")]


def _header(output: str) -> str:
    """The first line of ``output`` that is a table's header (a warning may come before it), or ``""``."""
    return next((line for line in output.splitlines() if " | " in line), "")


#: What follows a row's name in its heading on an atlas page: ``### print: what ...``, ``### pickle on each ...``
#: (the Sphinx extension finds the row's section by the same words).
ROW_HEADING_AFTER = (": ", " on ")


def _row_headings(source: str, root: Path = ROOT) -> set[str]:
    """The rows that have a heading of their own on the page (``### <row>`` and one of :data:`ROW_HEADING_AFTER`)."""
    path = Path(root) / source
    if not path.is_file():
        return set()
    after = "|".join(re.escape(words) for words in ROW_HEADING_AFTER)
    return {match.group(1) for match in re.finditer(rf"^### (.+?)(?:{after})", path.read_text(encoding="utf-8"),
                                                    re.MULTILINE)}


def table_row_changes(covs: list[Coverage], current: dict[str, dict[int, snapshots.Expected]],
                      prefix: str = "docs/atlas/", root: Path = ROOT) -> dict[tuple[str, str], list[str]]:
    """What each row of a table an atlas page prints did on the other releases, where it differs: by (source,
    the row's first column), one line per release and column, newest release first.

    The rows are those of each page's first table (the first output with a header line such as
    ``construct | eager | symbolic_trace | ...`` over ``|``-separated rows; later tables on the page are
    summaries, counts by tool) that have a heading of their own on the page, where a note can go. A report's
    diff of it names the rows it changed (``-`` today, ``+`` on that release). Only what the report checked
    against today's recording counts (:func:`coverage`).

    >>> header = "construct | eager | export"
    >>> recorded = {"docs/atlas/x.md": {1: snapshots.Expected(1, 9, header + "\\nprint | same | same", False)}}
    >>> cov = Coverage("2.13.0", "", differs=[{"source": "docs/atlas/x.md", "index": 1, "status": "changed",
    ...     "diff": "-print | same | same\\n+print | same | error: Unsupported GB0007"}])
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "docs" / "atlas").mkdir(parents=True)
    >>> _ = (root / "docs" / "atlas" / "x.md").write_text("### print: what each tool does\\n")
    >>> table_row_changes([cov], recorded, root=root)
    {('docs/atlas/x.md', 'print'): ['torch 2.13.0, export: error: Unsupported GB0007 (here: same)']}
    """
    first_table = {source: min((index for index, expected in recorded.items() if _header(expected.output)),
                               default=None)
                   for source, recorded in current.items() if source.startswith(prefix)}
    headings = {source: _row_headings(source, root) for source, index in first_table.items() if index is not None}
    notes: dict[tuple[str, str], list[str]] = {}
    for cov in sorted(covs, key=lambda c: version_key(c.torch), reverse=True):
        for entry in cov.differs:
            source = entry["source"]
            recorded = current.get(source, {}).get(entry["index"])
            if (recorded is None or entry["status"] != "changed"
                    or first_table.get(source) is None or entry["index"] != first_table[source]):
                continue
            header = _table_cells(_header(recorded.output))
            if len(header) < 2:
                continue
            rows: dict[str, dict[str, list[str]]] = {}
            for line in entry.get("diff", "").splitlines():
                if line[:1] in "+-" and not line.startswith(("+++", "---")) and " | " in line:
                    cells = _table_cells(line[1:])
                    if len(cells) == len(header) and cells != header:
                        rows.setdefault(cells[0], {})["+" if line[0] == "+" else "-"] = cells
            for name, sides in rows.items():
                if "+" not in sides or "-" not in sides or name not in headings[source]:
                    continue
                for column, there, here in zip(header[1:], sides["+"][1:], sides["-"][1:]):
                    if there != here:
                        notes.setdefault((source, name), []).append(
                            f"torch {cov.torch}, {column}: {there} (here: {here})")
    return notes


def page_status(source: str, reports: list[dict], current: dict[str, dict[int, snapshots.Expected]],
                covs: list[Coverage] | None = None) -> list[str]:
    """What the committed reports say about one page, in parts: ``["Verified on torch 2.14.1", "same on
    2.15.0", "3 outputs differ on 2.13.0", ...]``, newest release first, ending with the torch the page
    needs when an older release raised on it. The first part is the reference, which the test suite checks.
    """
    if source not in current:
        return []
    covs = covs if covs is not None else [coverage(r, current) for r in reports if r["torch"] != REFERENCE_TORCH]
    parts = [f"Verified on torch {REFERENCE_TORCH}"]
    raised_on = []
    for cov in sorted(covs, key=lambda c: version_key(c.torch), reverse=True):
        differs = [e for e in cov.differs if e["source"] == source]
        unchecked = [i for s, i in cov.unchecked if s == source]
        not_run = [e for e in cov.not_run if e["source"] == source]
        if (any(e["status"] in ("newly raising", "newly hangs") for e in differs)
                and version_key(cov.torch) < version_key(REFERENCE_TORCH)):  # a newer release raising is drift, not a need
            raised_on.append(cov.torch)
        bits = []
        if differs:
            bits.append(f"{len(differs)} output{'s' * (len(differs) > 1)} differ{'s' * (len(differs) == 1)}")
        if not_run:
            bits.append(f"{len(not_run)} not run")
        if unchecked:
            bits.append(f"{len(unchecked)} not checked yet")
        if not bits:
            parts.append(f"same on {cov.torch}")
        elif len(unchecked) == len(current[source]):
            parts.append(f"not checked yet on {cov.torch}")
        else:
            parts.append(f"{', '.join(bits)} on {cov.torch}")
    if raised_on:
        newest_raising = max(raised_on, key=version_key)
        above = sorted((c.torch for c in covs if version_key(c.torch) > version_key(newest_raising)), key=version_key)
        parts.append(f"needs torch ≥ {above[0] if above else REFERENCE_TORCH}")
    return parts


def render_page(reports: list[dict], current: dict[str, dict[int, snapshots.Expected]]) -> str:
    """The Markdown of the Compatibility page: releases checked, then page by page, each change in one line."""
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
        "and compares every output with the recorded one. This page is generated from those reports; each "
        "page of the guide says the same under its title.",
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
    lines += ["## Releases checked", ""]
    for cov in sorted(covs, key=lambda c: version_key(c.torch), reverse=True):
        kinds = [(s, sum(1 for e in cov.differs if e["status"] == s)) for s in
                 ("changed", "newly raising", "newly hangs", "no longer raising", "not recorded",
                  "no longer shown")]
        differ = f"{len(cov.differs)} differ" + (" (" + ", ".join(f"{n} {s}" for s, n in kinds if n) + ")"
                                                 if cov.differs else "")
        tests = ", ".join(f"{n} {k}" for k, n in cov.tests.items()) or "not run"
        not_run = (f", {len(cov.not_run)} not run (needs {_versions_text(sorted(cov.unavailable))})"
                   if cov.not_run else "")
        lines.append(f"- **torch {cov.torch}**, checked on {cov.date}: {len(cov.same)} of {total} outputs the "
                     f"same, {differ}, {len(cov.unchecked)} not checked yet{not_run}. Unit tests and doctests: "
                     f"{tests}.")
        for lib, why in sorted(cov.unavailable.items()):
            lines.append(f"  Not installed: **{lib}**, {why}.")
    lines += ["", "*Same*: the normalized output is identical to the recorded one. *Not checked yet*: added or "
              "re-recorded after that release's report. *Not run*: the page needs a library that release "
              "cannot install.", "", "## Page by page", ""]
    for source in sorted(current, key=lambda s: (page_title(s).lower(), s)):
        parts = page_status(source, reports, current, covs)
        changed = any(e["source"] == source for cov in covs for e in cov.differs)
        title = page_title(source)
        link = f"[{title}](#{anchor_of(source)})" if changed else title
        lines.append(f"- {link} (`{source}`): " + " · ".join(parts[1:] or ["no other release checked"]))
    lines += ["", "## What changed", ""]
    for source in sorted(current, key=lambda s: (page_title(s).lower(), s)):
        entries = [(cov.torch, e) for cov in sorted(covs, key=lambda c: version_key(c.torch), reverse=True)
                   for e in cov.differs if e["source"] == source]
        if not entries:
            continue
        lines += [f"({anchor_of(source)})=", f"### {page_title(source)}", "", f"`{source}`", ""]
        for torch_version, entry in entries:
            kind = "cell" if entry["source"].endswith(".md") else "block"
            section = section_of(source, entry.get("line", 0))
            where = f"{section}, " if section else ""
            lines += [f"- **torch {torch_version}**, {where}{kind} {entry['index']} (line {entry['line']}): "
                      f"{what_changed(entry)}.", ""]
            if entry.get("diff"):
                lines += ["  <details><summary>The difference</summary>", "", "  ```diff",
                          *[f"  {line}" for line in entry["diff"].splitlines()], "  ```", "", "  </details>", ""]
    if lines[-2:] == ["## What changed", ""]:
        lines += ["Every checked output is the same on every release checked.", ""]
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
