"""The floor: every page's cells and every gallery script, one after another, torch imported once.

torch is imported once; each page then runs in a fork of that process (a fresh
process, like a page's kernel, without the imports), each gallery script like
``python gallery/<name>.py``. What the docs build adds
on top of this (kernels, Sphinx, HTML) is overhead the build should pay for
with parallelism. Prints one JSON object: total seconds and per-source seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import sys
import time
import traceback
from pathlib import Path

from fxsite import ROOT


def run_page(page: Path) -> None:
    """The page's cells in order, in ``__main__`` as in a kernel (pickle and Dynamo look names up there)."""
    from fxsite.drift.extract import code_cells

    namespace = sys.modules["__main__"].__dict__
    namespace.clear()
    namespace.update(__name__="__main__", __builtins__=__builtins__)
    for number, cell in enumerate(code_cells(page), 1):
        try:
            exec(compile(cell.source, f"{page}:cell{number}", "exec"), namespace)
        except Exception:
            if "raises-exception" not in cell.tags:
                raise


def run_script(script: Path) -> None:
    runpy.run_path(str(script), run_name="__main__")


def in_a_fork(run, path: Path) -> float:
    """Seconds to ``run(path)`` in a child forked from this process (torch imported, no threads yet):
    each page or script starts from a fresh process, as each page's kernel does, minus the imports."""
    read, write = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code = 0
        try:
            os.chdir(path.parent)
            with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                run(path)
        except BaseException:  # noqa: BLE001 (reported to the parent, which fails)
            os.write(write, traceback.format_exc().encode()[-8000:])
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        error = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"floor: {path.relative_to(ROOT)} failed:\n{error}")
    return seconds


def main() -> None:
    os.environ["MPLBACKEND"] = "Agg"
    sys.path.insert(0, str(ROOT))
    start = time.perf_counter()
    import torch  # noqa: F401  (imported once, timed as part of the floor)

    from fxsite.drift.extract import gallery_sources, page_sources

    import_s = time.perf_counter() - start
    items: dict[str, float] = {}
    for path, run in [(p, run_page) for p in page_sources()] + [(p, run_script) for p in gallery_sources()]:
        items[str(path.relative_to(ROOT))] = in_a_fork(run, path)
    print(json.dumps({"total_s": time.perf_counter() - start, "import_s": import_s, "items": items}))


if __name__ == "__main__":
    # Run the imported copy's main(): run_page empties __main__ (this copy's globals) in each child.
    from fxsite.bench import floor

    floor.main()
