"""Drift reports: what the guide's snippets do on another torch, for machines and for people.

``report.json`` holds one entry per snippet (source, cell or block, line, status,
diff) plus the digest of the recorded output it was compared with, so that the
Compatibility page can tell a report that checked today's page from a stale one.
``report.md`` says the same for a reviewer.
"""

from __future__ import annotations

import json
import platform
import re
from collections import Counter
from dataclasses import asdict
from datetime import date
from pathlib import Path

from fxsite import ROOT
from fxsite.drift import snapshots
from fxsite.drift.compare import MISSING_LIBRARY, SAME, Finding

_RELEASE = re.compile(r"\d+\.\d+\.\d+")


def check_version(version: str) -> str:
    """Return ``version`` if it names one torch release like ``2.14.1``.

    >>> check_version("2.14.1")
    '2.14.1'
    >>> check_version("2.14")
    Traceback (most recent call last):
    ...
    ValueError: torch version must look like 2.14.1 (major.minor.patch), got '2.14'
    """
    if not isinstance(version, str) or not _RELEASE.fullmatch(version):
        raise ValueError(f"torch version must look like 2.14.1 (major.minor.patch), got {version!r}")
    return version


def _reference_torch() -> str:
    """The torch release ``constraints.txt`` pins: the reference every output is recorded on."""
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.startswith("torch=="):
            return line.removeprefix("torch==").strip()
    raise RuntimeError(f"{ROOT / 'constraints.txt'} pins no torch (expected a line 'torch==X.Y.Z')")


REFERENCE_TORCH = _reference_torch()


def machine() -> dict[str, object]:
    """The machine a report was made on: its architecture, the CPU kernels torch picked, its thread count.

    Outputs must not depend on them (``tests/test_cpu_independence.py``); a report names them so that a
    difference found on another machine can be told from drift (``fxsite.drift.compare.ROUNDING``).
    """
    import torch

    return {"arch": platform.machine(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads()}


def summarize(findings: list[Finding]) -> dict[str, int]:
    """How many snippets have each status.

    >>> summarize([Finding("docs/a.md", 1, 9, "same"), Finding("docs/a.md", 2, 14, "changed")])
    {'changed': 1, 'same': 1}
    """
    if not all(isinstance(f, Finding) for f in findings):
        raise TypeError("summarize: expected the Finding list that fxsite.drift.compare.compare returns")
    counts = Counter(f.status for f in findings)
    return dict(sorted(counts.items()))


def _entry(finding: Finding, recorded: dict[str, dict[int, snapshots.Expected] | None]) -> dict:
    if finding.source not in recorded:
        try:
            recorded[finding.source] = snapshots.load(finding.source)
        except ValueError:  # a damaged snapshot: its finding already says so (UNREADABLE)
            recorded[finding.source] = None
    expected = (recorded[finding.source] or {}).get(finding.index)
    entry = asdict(finding)
    entry["expected_digest"] = snapshots.digest(expected.output) if expected else None
    return entry


def write_report(folder: Path, torch_version: str, findings: list[Finding],
                 build_problems: list[str] | tuple[str, ...] = (),
                 unavailable: dict[str, str] | None = None) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.md`` into ``folder``; return both paths.

    ``unavailable`` names the libraries the checked torch cannot install (library ->
    why); the snippets they kept from running are listed apart, not as drift.
    """
    if not findings:
        raise ValueError("write_report: no findings to report; was the docs build empty?")
    check_version(torch_version)
    if not all(isinstance(f, Finding) for f in findings):
        raise TypeError("write_report: findings must be the Finding list that fxsite.drift.compare.compare returns")
    if isinstance(build_problems, str) or not isinstance(build_problems, (list, tuple)) \
            or not all(isinstance(p, str) for p in build_problems):
        raise TypeError(f"write_report: build_problems must be a list of log lines (str), got {build_problems!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    recorded: dict[str, dict[int, snapshots.Expected] | None] = {}
    data = {
        "torch": torch_version,
        "reference": REFERENCE_TORCH,
        "date": date.today().isoformat(),
        "python": platform.python_version(),
        "machine": machine(),
        "summary": summarize(findings),
        "unavailable": dict(sorted((unavailable or {}).items())),
        "build_problems": list(build_problems),
        "snippets": [_entry(f, recorded) for f in findings],
    }
    json_path = folder / "report.json"
    json_path.write_text(json.dumps(data, indent=1) + "\n")

    sources = sorted({f.source for f in findings})
    lines = [f"# Drift report: torch {torch_version} against the reference torch {REFERENCE_TORCH}", "",
             f"Checked on {data['date']} (Python {data['python']}, {data['machine']['arch']} with torch's "
             f"{data['machine']['cpu_capability']} kernels, {data['machine']['threads']} threads): "
             f"{len(findings)} snippets from "
             f"{len(sources)} pages and scripts: " + ", ".join(f"{n} {s}" for s, n in data["summary"].items()) + ".",
             ""]
    if unavailable:
        lines += [f"## Not run: libraries torch {torch_version} cannot install", "",
                  *[f"- **{lib}**: {why}" for lib, why in sorted(unavailable.items())], ""]
        not_run = [f for f in findings if f.status == MISSING_LIBRARY]
        if not_run:
            lines += ["These snippets could not run without them (not counted as drift):", "",
                      *[f"- {f.message.split(', torch ')[0]}: {f.message.split(': ', 1)[1].split(';')[0]}"
                        for f in not_run], ""]
        else:
            lines += ["No page or example needed them.", ""]
    if build_problems:
        lines += ["The docs build reported:", "", *[f"- `{p}`" for p in build_problems], ""]
    for f in findings:
        if f.status in {SAME, MISSING_LIBRARY}:
            continue
        lines += [f"## {f.source}, snippet {f.index} (line {f.line}): {f.status}", "", f.message.splitlines()[0], ""]
        if f.diff:
            lines += ["```diff", f.diff, "```", ""]
    md_path = folder / "report.md"
    md_path.write_text("\n".join(lines).rstrip("\n") + "\n")
    return json_path, md_path
