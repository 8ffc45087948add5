"""``make bench``: measure the guide's build and tests and hold them to their budgets.

Each figure is the median of ``--runs`` runs (default 3) with min and max. Results
are printed and written to fxsite/bench/results.json and results.md (committed), with
the torch version, the machine's cores and the date. Builds are timed as ``make docs``
itself (the same command a reader types, Makefile and tool checks included), so a
regression of what ``make docs`` does shows in these figures.

    python -m fxsite.bench [--runs N] [--skip-tests]

"make test, fresh clone" removes everything a build generates (site, execution cache,
gallery outputs) before each run, so it is what a reader's first ``make test`` costs
with the virtual environment already made.
"""

from __future__ import annotations

import argparse
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
from fxsite.drift.extract import gallery_sources, page_sources

OUT = ROOT / "_build" / "bench"
GENERATED = [OUT, ROOT / ".jupyter_cache", ROOT / "docs" / "gallery"]

# Budgets on the 2-core reference machine (issue "Fast to build, fast to test").
BUDGETS = {
    "no-op rebuild": 2.0,
    "one-page rebuild": 8.0,
    "one-example rebuild": 8.0,
    "make test, fresh clone": 180.0,
    "clean build": 90.0,
}
EXAMPLE_BUDGET_S = 10.0


def stats(samples: list[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "runs": len(samples)}


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


def edited(path: Path, action, run: int) -> float:
    """Time ``action`` after an edit of ``path`` that must re-execute it; restore the file after.

    Each run's edit is new (a comment for a script, a code cell for a page), so neither
    sphinx-gallery's md5 nor the notebook cache can recognize it from an earlier run.
    """
    original = path.read_text()
    if path.suffix == ".py":
        addition = f"\n# bench edit {run}\n"
    else:
        addition = f"\n```{{code-cell}} python\nbench_edit = {run}\n```\n"
    try:
        path.write_text(original + addition)
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
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    os.environ.pop("CI", None)  # measure the local, cached workflow; clean builds have no cache anyway
    figures: dict[str, dict] = {}

    print("floor ...", flush=True)
    floors = [floor() for _ in range(args.runs)]
    figures["floor"] = stats([f["total_s"] for f in floors])
    items = {name: statistics.median(f["items"][name] for f in floors) for name in floors[0]["items"]}

    print("clean build ...", flush=True)
    samples = []
    for _ in range(args.runs):
        clean()
        samples.append(timed(build_ok))
    figures["clean build"] = stats(samples)

    print("no-op rebuild ...", flush=True)
    figures["no-op rebuild"] = stats([timed(build_ok) for _ in range(args.runs)])
    print("Sphinx's own no-op (what make docs skips when nothing changed) ...", flush=True)
    figures["no-op Sphinx run"] = stats([timed(sphinx_noop) for _ in range(args.runs)])

    page = next(p for p in page_sources() if p.name == "quickstart.md")
    script = gallery_sources()[0]
    print(f"one-page rebuild ({page.name}) ...", flush=True)
    figures["one-page rebuild"] = stats([edited(page, build_ok, run) for run in range(args.runs)])
    build_ok()
    print(f"one-example rebuild ({script.name}) ...", flush=True)
    figures["one-example rebuild"] = stats([edited(script, build_ok, run) for run in range(args.runs)])
    build_ok()

    if not args.skip_tests:
        print("make test, fresh clone ...", flush=True)
        figures["make test, fresh clone"] = stats([fresh_tests() for _ in range(args.runs)])

    print("peak memory per page and example ...", flush=True)
    memory = {name: peak_memory(ROOT / name) for name in items}

    floor_s = figures["floor"]["median"]
    verdicts = {name: figures[name]["median"] <= limit for name, limit in BUDGETS.items() if name in figures}
    verdicts["clean build <= 1.0 x floor"] = figures["clean build"]["median"] <= floor_s
    verdicts[f"no example over {EXAMPLE_BUDGET_S:.0f} s"] = all(
        t <= EXAMPLE_BUDGET_S for n, t in items.items() if n.startswith("gallery/"))

    result = {
        "date": date.today().isoformat(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "figures": figures,
        "items": {n: {"seconds": items[n], "max_rss_mib": memory[n]} for n in items},
        "budgets": verdicts,
    }
    (ROOT / "fxsite" / "bench" / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    (ROOT / "fxsite" / "bench" / "results.md").write_text(render(result))
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
    lines += ["", "| budget | met |", "| --- | --- |"]
    lines += [f"| {name} | {'yes' if ok else '**no**'} |" for name, ok in result["budgets"].items()]
    lines += ["", "| page or example | seconds (in the floor run) | peak memory (MiB, alone) |", "| --- | --- | --- |"]
    lines += [f"| {n} | {v['seconds']:.2f} | {v['max_rss_mib']:.0f} |" for n, v in result["items"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
