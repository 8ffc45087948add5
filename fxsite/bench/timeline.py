"""Where ``make test`` spends its time: each test's span on its xdist worker, and a report by file.

    make test PYTEST_ARGS="-p fxsite.bench.timeline"    # writes _build/test-timeline/<worker>.jsonl
    python -m fxsite.bench.timeline [FOLDER]            # when each worker was busy, the costliest files and tests

A test's CPU is its process's own plus that of the child processes it waited for
(a Sphinx build, the wheel's gallery run). Processes nobody waits for are not
counted where they ran: Chromium's CPU shows up when its driver exits, at the end
of the session. Read the figures of a loaded machine as shares, not as times.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

FOLDER = Path(os.environ.get("FXGUIDE_TIMELINE", Path(__file__).resolve().parents[2] / "_build" / "test-timeline"))


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) starts a new timeline
        shutil.rmtree(FOLDER, ignore_errors=True)
    FOLDER.mkdir(parents=True, exist_ok=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    # the xdist worker's own id (not its environment's: a pytest started by a test inherits that)
    worker = getattr(item.config, "workerinput", {}).get("workerid", "main")
    start, cpu = time.time(), _cpu()
    yield
    line = {"test": item.nodeid, "worker": worker, "start": start, "end": time.time(), "cpu": _cpu() - cpu}
    with open(FOLDER / f"{worker}.jsonl", "a") as out:
        out.write(json.dumps(line) + "\n")


def report(folder: Path, top: int = 15) -> str:
    """The timeline in ``folder`` as text: each worker's span, then the files and tests that cost most CPU."""
    rows = [json.loads(line) for path in sorted(Path(folder).glob("*.jsonl")) for line in path.read_text().splitlines()]
    if not rows:
        raise FileNotFoundError(f"no timeline in {folder}: run `make test PYTEST_ARGS=\"-p fxsite.bench.timeline\"` first")
    zero = min(r["start"] for r in rows)
    lines = ["worker: tests, from-to (s), busy (s), CPU (s)"]
    workers: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        workers[row["worker"]].append(row)
    for worker, mine in sorted(workers.items()):
        lines.append(f"{worker}: {len(mine)}, {min(r['start'] for r in mine) - zero:.0f}-"
                     f"{max(r['end'] for r in mine) - zero:.0f}, {sum(r['end'] - r['start'] for r in mine):.0f}, "
                     f"{sum(r['cpu'] for r in mine):.0f}")
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for row in rows:
        entry = files[row["test"].split("::")[0]]
        entry[0] += row["cpu"]
        entry[1] += row["end"] - row["start"]
        entry[2] += 1
    lines += ["", "file: CPU (s), wall (s), tests"]
    lines += [f"{name}: {cpu:.0f}, {wall:.0f}, {count}"
              for name, (cpu, wall, count) in sorted(files.items(), key=lambda item: -item[1][0])[:top]]
    lines += ["", "test: CPU (s), wall (s), worker, from-to (s)"]
    lines += [f"{r['test']}: {r['cpu']:.0f}, {r['end'] - r['start']:.0f}, {r['worker']}, "
              f"{r['start'] - zero:.0f}-{r['end'] - zero:.0f}"
              for r in sorted(rows, key=lambda r: -r["cpu"])[:top]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fxsite.bench.timeline", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", type=Path, default=FOLDER)
    parser.add_argument("--top", type=int, default=15, help="how many files and tests to list")
    args = parser.parse_args(argv)
    try:
        print(report(args.folder, args.top))
    except FileNotFoundError as missing:
        print(missing, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
