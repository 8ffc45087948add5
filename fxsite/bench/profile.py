"""Where ``make test``'s time goes: its slowest tests and fixtures, and the sum per test file.

    python -m fxsite.bench.profile              # run `make test` with --durations=0, write the profile
    python -m fxsite.bench.profile LOG          # read the output of a run made with --durations=N

Writes ``fxsite/bench/test-profile.md`` (committed beside ``results.md``). pytest prints each
test's setup, call and teardown phases that took 5 ms or more; a session fixture (the docs build,
the build on other CPU settings, the wheel) is charged to the setup of the first test that asked
for it. Under xdist the phases of two workers overlap: their sum is worker time, not wall time.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path

from fxsite import ROOT

OUT = Path(__file__).with_name("test-profile.md")
_PHASE = re.compile(r"^(\d+\.\d+)s (setup|call|teardown)\s+(\S+)")
_SUMMARY = re.compile(r"^=+ (.*\d+ passed.*) in ([\d.]+)s")


def parse(log: str) -> tuple[list[tuple[float, str, str]], str, float | None]:
    """The phases ``(seconds, phase, test id)`` of a pytest log, its summary line and its wall seconds.

    >>> phases, summary, wall = parse("12.50s setup    tests/test_a.py::test_x\\n"
    ...                               "===== 3 passed in 40.00s (0:00:40) =====\\n")
    >>> phases, summary, wall
    ([(12.5, 'setup', 'tests/test_a.py::test_x')], '3 passed', 40.0)
    """
    if not isinstance(log, str):
        raise TypeError(f"parse: log must be pytest's output as a str, got {type(log).__name__}")
    phases = [(float(m[1]), m[2], m[3]) for line in log.splitlines() if (m := _PHASE.match(line))]
    summaries = [m for line in log.splitlines() if (m := _SUMMARY.match(line.strip()))]
    if not phases:
        raise ValueError("parse: no durations in the log; run pytest with --durations=0 (or --durations=N)")
    summary, wall = (summaries[-1][1], float(summaries[-1][2])) if summaries else ("", None)
    return phases, summary, wall


def render(phases: list[tuple[float, str, str]], summary: str, wall: float | None, *, source: str,
           top: int = 40) -> str:
    """The profile as Markdown: the totals, the sum per file, the slowest phases."""
    per_file: dict[str, float] = defaultdict(float)
    for seconds, _, test in phases:
        per_file[test.split("::")[0]] += seconds
    total = sum(seconds for seconds, _, _ in phases)
    lines = ["# Where `make test`'s time goes", "",
             f"{source}, {date.today().isoformat()}. Regenerate with `python -m fxsite.bench.profile`.", "",
             f"Wall time of the test session: {wall:.0f} s ({summary})." if wall is not None else "",
             f"Listed phases add up to {total:.0f} s of worker time (two workers run side by side; a session "
             "fixture is charged to the first test that asked for it).", "",
             "## Per test file (worker seconds)", "", "| file | seconds | share |", "| --- | --- | --- |"]
    for name, seconds in sorted(per_file.items(), key=lambda item: -item[1]):
        if seconds >= 1:
            lines.append(f"| `{name}` | {seconds:.1f} | {seconds / total:.0%} |")
    lines += ["", f"## The {top} slowest phases", "", "| seconds | phase | test |", "| --- | --- | --- |"]
    for seconds, phase, test in sorted(phases, reverse=True)[:top]:
        lines.append(f"| {seconds:.1f} | {phase} | `{test}` |")
    return "\n".join(line for line in lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if args:
        log, source = Path(args[0]).read_text(), f"read from a log of `make test` ({args[0]})"
    else:
        done = subprocess.run(["make", "test", "PYTEST_ARGS=--durations=0"], cwd=ROOT, capture_output=True,
                              text=True, check=False)
        log, source = done.stdout + done.stderr, "`make test PYTEST_ARGS=--durations=0`"
    phases, summary, wall = parse(log)
    OUT.write_text(render(phases, summary, wall, source=source))
    print(f"wrote {OUT.relative_to(ROOT)}: {len(phases)} phases, {summary or 'no summary line'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
