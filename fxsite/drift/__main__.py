"""Command line of the drift guard.

``python -m fxsite.drift record``  build the docs, then rewrite every expectation (``make update-expected``).
``python -m fxsite.drift check``   build the docs, then compare every shown output with its expectation.
``--no-build`` reads an existing build instead; ``--report DIR`` writes the drift report;
``--page PATH`` (repeatable) records or compares that page or gallery script alone;
``--unavailable FILE`` (JSON: library -> why) names libraries the torch checked cannot install.

Exit status (both commands): 0 done, every output the same; 1 the check ran and
found drift; 2 it could not run (a failure of the tooling: an expectation file is
damaged, a page printed a path of this machine, the build failed for a reason no
output shows): nothing was recorded or compared for what failed, and the message
says what to do.

A build that fails because a page or an example starts raising, or hangs (the
build stops it at its time limit, :mod:`fxsite.sphinx.limits`), is drift for
``check``, with or without ``--report``: what it built is compared, and the
snippet that failed is reported. ``record`` never records a failed build.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

EXIT_SAME, EXIT_DRIFT, EXIT_COULD_NOT_RUN = 0, 1, 2

# An absolute path: a slash not inside a word, a URL or a placeholder, then two components or more.
_ABS_PATH = re.compile(r"(?<![\w:/.<>~-])(/[\w.@+-]+)(/[\w.@+-]+)+")


def build_problems(log: str) -> list[str]:
    """The warning and error lines of a Sphinx log (what made a build fail), sorted, the first 50.

    Sorted: a parallel build logs its pages in any order, and a report must not change when only
    that order did.

    >>> build_problems("reading sources...\\ndocs/a.md:12: WARNING: cell 2 raised ValueError: x\\ndone")
    ['docs/a.md:12: WARNING: cell 2 raised ValueError: x']
    """
    if not isinstance(log, str):
        raise TypeError(f"build_problems: log must be the build's output as a str, got {type(log).__name__}")
    return sorted({line.strip() for line in log.splitlines() if "WARNING:" in line or "ERROR:" in line})[:50]


def machine_paths(text: str) -> list[str]:
    """The absolute paths in ``text`` that lead somewhere on this machine (their first two parts exist).

    Such text differs from one checkout or machine to the next and must never be recorded.

    >>> machine_paths("see /usr/lib and https://pytorch.org/docs/stable and <repo>/fxguide/x.py")
    ['/usr/lib']
    """
    found = []
    for match in _ABS_PATH.finditer(text):
        parts = match.group(0).split("/")
        if os.path.exists("/".join(parts[:3])) and match.group(0) not in found:
            found.append(match.group(0))
    return found


def unrecordable(found: dict) -> list[str]:
    """Why some snippets of a build must not become expectations (empty when all may be recorded).

    A cell that raised without the ``raises-exception`` tag is a failed build, not an
    expectation; text naming a path of this machine would differ on the next checkout.
    """
    problems = []
    for snippets in found.values():
        for s in snippets:
            if s.hung:
                problems.append(f"{s.where}: was stopped at the build's time limit ({s.raised}); a snippet that "
                                "hangs is never an expectation: fix it, or make it fast enough")
            elif s.raised is not None and not s.expects_raise:
                problems.append(f"{s.where}: raised {s.raised.splitlines()[0][:200]} without the raises-exception "
                                "tag; that is a failure of the build, not an expectation: fix the cell (or tag it "
                                "if the error is the point of the example)")
            paths = machine_paths("\n".join(filter(None, (s.output, s.raised))))
            if paths:
                problems.append(f"{s.where}: shows a path of this machine ({', '.join(paths[:3])}); print it "
                                "relative to the repository, or teach fxsite/drift/normalize.py to hide it")
    return problems


def _record(found: dict, version: str, partial: bool = False) -> int:
    from fxsite.drift import snapshots
    from fxsite.drift.extract import relative

    problems = unrecordable(found)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print(f"nothing was recorded: {len(problems)} output(s) above must not become expectations",
              file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    store = snapshots.EXPECTED
    damaged = snapshots.damage(store)
    removed = []
    for path in sorted(damaged):  # links first: nothing may be written through one
        if path.is_symlink():
            path.unlink()
            removed.append(f"{relative(path)} ({damaged[path]})")
    written = {snapshots.write(source, snippets, version) for source, snippets in found.items()}
    for path in [] if partial else sorted(store.rglob("*"), reverse=True):  # --page: the others stay
        if path.is_dir() and not path.is_symlink():
            if not any(path.iterdir()):
                path.rmdir()
        elif path not in written:
            why = damaged.get(path, "a snapshot of a page or script that no longer exists")
            path.unlink()
            removed.append(f"{relative(path)} ({why})")
    print(f"recorded {sum(len(v) for v in found.values())} snippets from {len(found)} sources on torch {version}.")
    for path in sorted(p for p in damaged if p in written):
        print(f"repaired {relative(path)} (it was damaged: {damaged[path]})")
    for line in removed:
        print(f"removed {line}")
    print("Review with `git diff tests/expected`.")
    return EXIT_SAME


def _check(found: dict, version: str, report: Path | None, problems: list[str], unavailable: dict[str, str],
           partial: bool = False) -> int:
    from fxsite.drift import snapshots
    from fxsite.drift.compare import MISSING_LIBRARY, ROUNDING, SAME, UNREADABLE, Finding, compare
    from fxsite.drift.extract import relative

    findings: list[Finding] = []
    for source, snippets in found.items():
        try:
            expected = snapshots.load(source)
        except (snapshots.SnapshotError, ValueError) as error:
            findings.append(Finding(source, 0, 0, UNREADABLE,
                                    message=f"{source}: its expected outputs cannot be read: {error}; "
                                            "`make update-expected` rewrites them"))
            continue
        findings += compare(source, expected, snippets, version, unavailable=unavailable)
    drift = [f for f in findings if f.status not in {SAME, MISSING_LIBRARY, UNREADABLE, ROUNDING}]
    rounding = [f for f in findings if f.status == ROUNDING]
    for f in drift + rounding:
        print(f.message, end="\n\n")
    store = snapshots.EXPECTED
    sources = {snapshots.snapshot_path(s) for s in found}
    foreign = {} if partial else {p: why for p, why in snapshots.damage(store).items() if p not in sources}
    unreadable = [f.message for f in findings if f.status == UNREADABLE]
    unreadable += [f"{relative(p)}: {why}; `make update-expected` removes it"
                   for p, why in foreign.items()]
    not_run = [f for f in findings if f.status == MISSING_LIBRARY]
    if report:
        from fxsite.drift.report import write_report

        write_report(report, version, findings, build_problems=problems, unavailable=unavailable)
    same = sum(f.status == SAME for f in findings)
    print(f"torch {version}: {same} same, {len(drift)} drifted"
          + (f", {len(not_run)} not run (a library torch {version} cannot install)" if not_run else "")
          + (f", {len(rounding)} differ only at rounding level (this machine's kernels, not drift)"
             if rounding else "")
          + (f", {len(unreadable)} store file(s) unreadable" if unreadable else ""))
    if unreadable:
        print("\n".join(unreadable), file=sys.stderr)
        print(f"the check could not run completely: {len(unreadable)} file(s) of the expected-output store "
              "are damaged (named above)", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    if drift:
        print(f"the check ran and found drift: {len(drift)} output(s) differ from what is recorded")
        return EXIT_DRIFT
    return EXIT_SAME


def _hangs(sources: list[str], version: str, report: Path | None, problems: list[str],
           unavailable: dict[str, str]) -> int:
    """A build the watchdog stopped: each example it names newly hangs; nothing else was built to compare."""
    from fxsite.drift.compare import NEWLY_HANGS, Finding

    findings = [Finding(source, 0, 0, NEWLY_HANGS,
                        message=f"{source}, torch {version}: now hangs, and could not be interrupted; the build "
                                "was stopped, so no other output was compared") for source in sources]
    for f in findings:
        print(f.message, end="\n\n")
    if report:
        from fxsite.drift.report import write_report

        write_report(report, version, findings, build_problems=problems, unavailable=unavailable)
    print(f"the check ran and found drift: {len(findings)} example(s) hang")
    return EXIT_DRIFT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fxsite.drift", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["record", "check"])
    parser.add_argument("--build-dir", type=Path, default=None)
    parser.add_argument("--no-build", action="store_true", help="use the existing build")
    parser.add_argument("--report", type=Path, help="write report.json and report.md into this folder")
    parser.add_argument("--unavailable", type=Path, help="JSON file: library -> why it cannot be installed")
    parser.add_argument("--page", action="append", default=[], metavar="PATH",
                        help="only this page or gallery script (repeatable): make check PAGE=docs/x.md")
    args = parser.parse_args(argv)
    try:
        from fxsite.drift.build import build_docs
        from fxsite.drift.extract import ROOT, collect, only, stopped_by_watchdog

        from importlib import metadata

        version = metadata.version("torch").split("+")[0]  # from torch's metadata: importing torch costs seconds
        build_dir = args.build_dir or ROOT / "_build"
        unavailable = json.loads(args.unavailable.read_text()) if args.unavailable else {}
        problems: list[str] = []
        failed = False
        if not args.no_build:
            print(f"building the docs with torch {version} into {build_dir} ...", flush=True)
            done = build_docs(build_dir)
            if done.returncode != 0:
                print(done.stdout[-20000:])
                if args.command == "record":
                    print(f"the docs build failed (exit {done.returncode}); nothing was recorded: "
                          "the check could not run", file=sys.stderr)
                    return EXIT_COULD_NOT_RUN
                # The check still compares what was built: on another torch a cell that starts
                # raising (or hanging) fails the build, and that is exactly the drift to report.
                failed, problems = True, build_problems(done.stdout)
                print(f"the docs build failed (exit {done.returncode}); comparing what it built", file=sys.stderr)
                stopped = stopped_by_watchdog(done.stdout)
                if stopped:  # the build was stopped mid-way: only the example that hung is known
                    return _hangs(stopped, version, args.report, problems, unavailable)
        found = collect(build_dir)
        if args.page:
            found = only(found, args.page)
        if args.command == "record":
            return _record(found, version, partial=bool(args.page))
        status = _check(found, version, args.report, problems, unavailable, partial=bool(args.page))
        if failed and status == EXIT_SAME:
            print("the docs build failed, yet every output it shows is the recorded one: the failure is not an "
                  "output's (see the build's problems above); the check could not run", file=sys.stderr)
            return EXIT_COULD_NOT_RUN
        return status
    except Exception as error:  # noqa: BLE001 - any failure of the tooling is "could not run", never "drift"
        print(f"python -m fxsite.drift {args.command}: the check could not run: {type(error).__name__}: {error}",
              file=sys.stderr)
        return EXIT_COULD_NOT_RUN


if __name__ == "__main__":
    sys.exit(main())
