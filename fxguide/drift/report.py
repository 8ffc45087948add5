"""Drift reports: what the guide's snippets do on another torch, for machines and for people."""

from __future__ import annotations

import json
import platform
from collections import Counter
from dataclasses import asdict
from datetime import date
from pathlib import Path

from fxguide.drift.compare import SAME, Finding

REFERENCE_TORCH = "2.13.0"


def summarize(findings: list[Finding]) -> dict[str, int]:
    counts = Counter(f.status for f in findings)
    return dict(sorted(counts.items()))


def write_report(folder: Path, torch_version: str, findings: list[Finding]) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.md`` into ``folder``; return both paths."""
    if not findings:
        raise ValueError("write_report: no findings to report; was the docs build empty?")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "torch": torch_version,
        "reference": REFERENCE_TORCH,
        "date": date.today().isoformat(),
        "python": platform.python_version(),
        "summary": summarize(findings),
        "snippets": [asdict(f) for f in findings],
    }
    json_path = folder / "report.json"
    json_path.write_text(json.dumps(data, indent=1) + "\n")

    lines = [f"# Drift report: torch {torch_version} against the reference torch {REFERENCE_TORCH}", "",
             f"{len(findings)} snippets: " + ", ".join(f"{n} {s}" for s, n in data["summary"].items()), ""]
    for f in findings:
        if f.status == SAME:
            continue
        lines += [f"## {f.source}, snippet {f.index} (line {f.line}): {f.status}", ""]
        if f.diff:
            lines += ["```diff", f.diff, "```", ""]
        else:
            lines += [f.message, ""]
    md_path = folder / "report.md"
    md_path.write_text("\n".join(lines))
    return json_path, md_path
