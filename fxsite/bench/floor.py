"""The floor: every page's cells and every gallery script, run in one Python process.

torch is imported once; each page runs in a fresh namespace like a fresh kernel,
each gallery script like ``python gallery/<name>.py``. What the docs build adds
on top of this (kernels, Sphinx, HTML) is overhead the build should pay for
with parallelism. Prints one JSON object: total seconds and per-source seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import sys
import time
from pathlib import Path

from fxsite import ROOT


def run_page(page: Path) -> None:
    from fxsite.drift.extract import code_cells

    namespace: dict = {"__name__": "__main__"}
    for number, cell in enumerate(code_cells(page), 1):
        try:
            exec(compile(cell.source, f"{page}:cell{number}", "exec"), namespace)
        except Exception:
            if "raises-exception" not in cell.tags:
                raise


def run_script(script: Path) -> None:
    runpy.run_path(str(script), run_name="__main__")


def main() -> None:
    os.environ["MPLBACKEND"] = "Agg"
    sys.path.insert(0, str(ROOT))
    start = time.perf_counter()
    import torch  # noqa: F401  (imported once, timed as part of the floor)

    from fxsite.drift.extract import gallery_sources, page_sources

    import_s = time.perf_counter() - start
    items: dict[str, float] = {}
    sink = io.StringIO()
    for path, run in [(p, run_page) for p in page_sources()] + [(p, run_script) for p in gallery_sources()]:
        t0 = time.perf_counter()
        cwd = os.getcwd()
        os.chdir(path.parent)
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                run(path)
        finally:
            os.chdir(cwd)
            import matplotlib.pyplot as plt

            plt.close("all")
        items[str(path.relative_to(ROOT))] = time.perf_counter() - t0
        sink.seek(0)
        sink.truncate()
    print(json.dumps({"total_s": time.perf_counter() - start, "import_s": import_s, "items": items}))


if __name__ == "__main__":
    main()
