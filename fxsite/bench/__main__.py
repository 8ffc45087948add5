"""``make bench``: measure the guide's build and tests and hold them to their budgets.

Each figure is the median of ``--runs`` runs (default 3) with min and max. Results
are printed and written to fxsite/bench/results.json and results.md (committed), with
the torch version, the machine's cores and the date. Builds are timed as ``make docs``
itself (the same command a reader types, Makefile and tool checks included), so a
regression of what ``make docs`` does shows in these figures.

    python -m fxsite.bench [--runs N] [--skip-tests] [--only-loop] [--out DIR]

The floor, a clean ``make docs`` and a fresh-clone ``make test`` are timed side by
side, run after run, so that the ratio of a clean build to the floor and the cost
of the tests beyond the build compare figures taken under the same conditions.

"make test, fresh clone" removes everything a build generates (site, execution cache,
gallery outputs) before each run, so it is what a reader's first ``make test`` costs
with the virtual environment already made.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import torch

from fxsite import ROOT
from fxsite.drift.build import sphinx_command
from fxsite.bench.edits import edit
from fxsite.drift.extract import gallery_sources, page_sources

OUT = ROOT / "_build" / "bench"
GENERATED = [OUT, ROOT / ".jupyter_cache", ROOT / "docs" / "gallery"]

# Budgets on the 2-core reference machine (issue 26, "Fast for the people who write the guide").
BUDGETS = {
    "no-op rebuild": 2.0,
    "one-page rebuild, code edit": 5.0,
    "one-page rebuild, prose edit": 5.0,
    "one-example rebuild": 5.0,
    "make check PAGE=, after a code edit": 15.0,
}
CLEAN_OVER_FLOOR = 2.5  # clean build <= 2.5 x the floor
TEST_OVER_CLEAN_S = 150.0  # fresh-clone make test <= clean make docs + 150 s
EXAMPLE_BUDGET_S = 10.0


def stats(samples: list[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "runs": len(samples),
            "samples": [round(x, 2) for x in samples]}


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def make(target: str, *variables: str, env: dict[str, str] | None = None) -> None:
    """``make TARGET VARIABLE=...`` at the root, exactly as a reader runs it; stop the bench if it fails."""
    done = subprocess.run(["make", "--no-print-directory", target, *variables], cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        sys.exit(f"bench: `make {target}` failed:\n{done.stdout[-5000:]}")


def build_ok() -> None:
    """``make docs`` into the bench's own build folder."""
    make("docs", f"BUILDDIR={OUT}")


def check_page(page: Path):
    """``make check PAGE=...`` on the bench's build folder: build what changed, compare that page."""
    return lambda: make("check", f"BUILDDIR={OUT}", f"PAGE={page.relative_to(ROOT)}")


def sphinx_noop() -> None:
    """The Sphinx command ``make docs`` wraps, run directly on an up-to-date build."""
    done = subprocess.run(sphinx_command(OUT), cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench: Sphinx failed:\n{done.stdout[-5000:]}{done.stderr[-5000:]}")


def fresh_tests() -> float:
    """``make test`` with nothing generated yet (no site, no execution cache), as on a fresh clone."""
    clean()
    env = dict(os.environ, FXGUIDE_BUILD_DIR=str(OUT))
    return timed(lambda: make("test", "PYTEST_ARGS=-q -p no:cacheprovider", env=env))


def clean() -> None:
    for path in GENERATED:
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


_EDITS = itertools.count(time.time_ns() // 1000)  # a label no earlier edit, in this bench or another, had


def edited(path: Path, action, kind: str = "code") -> float:
    """Time ``action`` after an edit of ``path`` (:func:`edit`) that no execution cache can hold; restore the
    file after. (Labelled by the run's number alone, the make check step re-made the code-edit step's edits, and found
    them executed.)"""
    original = path.read_text()
    try:
        path.write_text(edit(original, path.suffix, kind, next(_EDITS)))
        return timed(action)
    finally:
        path.write_text(original)


def floor() -> dict:
    done = subprocess.run([sys.executable, "-m", "fxsite.bench.floor"], cwd=ROOT, text=True,
                          capture_output=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def peak_memory(path: Path) -> float:
    done = subprocess.run([sys.executable, "-m", "fxsite.bench.peak_memory", str(path)], cwd=ROOT, text=True,
                          capture_output=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["max_rss_mib"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fxsite.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-tests", action="store_true", help="do not time the test suite")
    parser.add_argument("--only-loop", action="store_true",
                        help="only the writer's loop (rebuilds and make check), on the build already there")
    parser.add_argument("--out", type=Path, default=ROOT / "fxsite" / "bench",
                        help="folder of results.json and results.md (default: fxsite/bench)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    os.environ.pop("CI", None)  # measure the local, cached workflow; clean builds have no cache anyway
    figures: dict[str, dict] = {}
    ratios: dict[str, dict] = {}
    items: dict[str, float] = {}

    if not args.only_loop:
        # Side by side: each run times the floor, a clean `make docs` and (unless skipped) a
        # fresh-clone `make test`, so that each ratio and difference compares runs under the same load.
        floors, cleans, tests = [], [], []
        for run in range(args.runs):
            print(f"run {run + 1} of {args.runs}: floor ...", flush=True)
            floors.append(floor())
            print(f"run {run + 1} of {args.runs}: clean build ...", flush=True)
            clean()
            cleans.append(timed(build_ok))
            if not args.skip_tests:
                print(f"run {run + 1} of {args.runs}: make test, fresh clone ...", flush=True)
                tests.append(fresh_tests())
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "figures-so-far.json").write_text(json.dumps(
                {"floor": [f["total_s"] for f in floors], "clean build": cleans, "make test": tests}, indent=1))
        figures["floor"] = stats([f["total_s"] for f in floors])
        figures["clean build"] = stats(cleans)
        ratios[f"clean build / floor (budget <= {CLEAN_OVER_FLOOR:g})"] = stats(
            [c / f["total_s"] for c, f in zip(cleans, floors)])
        if tests:
            figures["make test, fresh clone"] = stats(tests)
            ratios[f"make test - clean build, s (budget <= {TEST_OVER_CLEAN_S:g})"] = stats(
                [t - c for t, c in zip(tests, cleans)])
        items = {name: statistics.median(f["items"][name] for f in floors) for name in floors[0]["items"]}
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "figures-so-far.json").write_text(json.dumps({"figures": figures, "ratios": ratios}, indent=1))
        build_ok()  # the site the loop's figures start from

    print("no-op rebuild ...", flush=True)
    figures["no-op rebuild"] = stats([timed(build_ok) for _ in range(args.runs)])
    print("Sphinx's own no-op (what make docs skips when nothing changed) ...", flush=True)
    figures["no-op Sphinx run"] = stats([timed(sphinx_noop) for _ in range(args.runs)])

    page = next(p for p in page_sources() if p.name == "quickstart.md")
    script = gallery_sources()[0]
    for kind in ("code", "prose"):
        print(f"one-page rebuild, {kind} edit ({page.name}) ...", flush=True)
        figures[f"one-page rebuild, {kind} edit"] = stats(
            [edited(page, build_ok, kind) for _ in range(args.runs)])
        build_ok()
    print(f"one-example rebuild ({script.name}) ...", flush=True)
    figures["one-example rebuild"] = stats([edited(script, build_ok) for _ in range(args.runs)])
    build_ok()
    print(f"make check PAGE={page.relative_to(ROOT)}, after a code edit ...", flush=True)
    figures["make check PAGE=, after a code edit"] = stats(
        [edited(page, check_page(page)) for _ in range(args.runs)])
    build_ok()

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "figures-so-far.json").write_text(json.dumps({"figures": figures, "ratios": ratios}, indent=1))
    verdicts = {name: figures[name]["median"] <= limit for name, limit in BUDGETS.items() if name in figures}
    for name, ratio in ratios.items():
        verdicts[name] = ratio["median"] <= (CLEAN_OVER_FLOOR if name.startswith("clean") else TEST_OVER_CLEAN_S)
    memory = {}
    if items:
        print("peak memory per page and example ...", flush=True)
        memory = {name: peak_memory(ROOT / name) for name in items}
        verdicts[f"no example over {EXAMPLE_BUDGET_S:.0f} s"] = all(
            t <= EXAMPLE_BUDGET_S for n, t in items.items() if n.startswith("gallery/"))

    result = {
        "date": date.today().isoformat(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "load_before": os.getloadavg()[0],
        "figures": figures,
        "ratios": ratios,
        "items": {n: {"seconds": items[n], "max_rss_mib": memory[n]} for n in items},
        "budgets": verdicts,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    if not items and (args.out / "results.json").is_file():  # keep the per-page times the page order reads
        result["items"] = json.loads((args.out / "results.json").read_text()).get("items", {})
    (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "results.md").write_text(render(result))
    (args.out / "figures-so-far.json").unlink(missing_ok=True)  # kept only should the bench stop before here
    print(render(result))
    return 0


def render(result: dict) -> str:
    lines = [
        "# Benchmark results", "",
        f"torch {result['torch']}, Python {result['python']}, {result['cores']} cores, {result['date']}.",
        "Regenerate with `make bench`. Seconds: median (min–max) of the runs.", "",
        "| figure | median | min | max | runs | budget |", "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, f in result["figures"].items():
        budget = BUDGETS.get(name)
        lines.append(f"| {name} | {f['median']:.1f} | {f['min']:.1f} | {f['max']:.1f} | {f['runs']} | "
                     f"{'≤ %.0f s' % budget if budget else ''} |")
    if result.get("ratios"):
        lines += ["", "Measured side by side, run by run:", "",
                  "| ratio or difference | median | min | max | runs |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| {name} | {f['median']:.2f} | {f['min']:.2f} | {f['max']:.2f} | {f['runs']} |"
                  for name, f in result["ratios"].items()]
    lines += ["", "| budget | met |", "| --- | --- |"]
    lines += [f"| {name} | {'yes' if ok else '**no**'} |" for name, ok in result["budgets"].items()]
    if result["items"]:
        lines += ["", "| page or example | seconds (in the floor run) | peak memory (MiB, alone) |",
                  "| --- | --- | --- |"]
        lines += [f"| {n} | {v['seconds']:.2f} | {v['max_rss_mib']:.0f} |" for n, v in result["items"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
