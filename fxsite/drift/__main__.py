"""Command line of the drift guard.

``python -m fxsite.drift record``  build the docs, then rewrite every expectation.
``python -m fxsite.drift check``   build the docs, then compare; exit 1 on any drift.
``--no-build`` reads an existing build instead; ``--report DIR`` writes the drift report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from fxsite.drift import snapshots
from fxsite.drift.build import build_docs
from fxsite.drift.compare import SAME, compare
from fxsite.drift.extract import ROOT, collect


def build_problems(log: str) -> list[str]:
    """The warning and error lines of a Sphinx log (what made a build fail).

    >>> build_problems("reading sources...\\ndocs/a.md:12: WARNING: cell 2 raised ValueError: x\\ndone")
    ['docs/a.md:12: WARNING: cell 2 raised ValueError: x']
    """
    return [line.strip() for line in log.splitlines() if "WARNING:" in line or "ERROR:" in line][:50]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fxsite.drift", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["record", "check"])
    parser.add_argument("--build-dir", type=Path, default=ROOT / "_build")
    parser.add_argument("--no-build", action="store_true", help="use the existing build")
    parser.add_argument("--report", type=Path, help="write report.json and report.md into this folder")
    args = parser.parse_args(argv)
    version = torch.__version__.split("+")[0]

    problems: list[str] = []
    if not args.no_build:
        print(f"building the docs with torch {version} into {args.build_dir} ...", flush=True)
        done = build_docs(args.build_dir)
        if done.returncode != 0:
            print(done.stdout[-20000:])
            if args.command == "record" or not args.report:
                print(f"the docs build failed (exit {done.returncode}); nothing was compared", file=sys.stderr)
                return 2
            # A drift report still compares what was built: on another torch a cell that
            # starts raising fails the build, and that is exactly the drift to report.
            problems = build_problems(done.stdout)
            print(f"the docs build failed (exit {done.returncode}); comparing what it built", file=sys.stderr)
    found = collect(args.build_dir)

    if args.command == "record":
        for source, snippets in found.items():
            snapshots.write(source, snippets, version)
        stale = {p for p in snapshots.EXPECTED.rglob("*.txt")} - {snapshots.snapshot_path(s) for s in found}
        for path in stale:
            path.unlink()
        print(f"recorded {sum(len(v) for v in found.values())} snippets from {len(found)} sources "
              f"on torch {version}; removed {len(stale)} stale snapshot(s). Review with `git diff tests/expected`.")
        return 0

    findings = [f for source, snippets in found.items()
                for f in compare(source, snapshots.load(source), snippets, version)]
    drift = [f for f in findings if f.status != SAME]
    for f in drift:
        print(f.message, end="\n\n")
    if args.report:
        from fxsite.drift.report import write_report
        write_report(args.report, version, findings, build_problems=problems)
    print(f"{len(findings) - len(drift)} same, {len(drift)} drifted, torch {version}")
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
