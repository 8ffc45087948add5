"""Throwaway things the tests make: a copy of the site (real conf.py and fxguide, one page, one script) for
build tests, the wheel of fxguide, and the environment of a reader's fresh process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from fxsite.drift.build import build_docs
from fxsite.drift.extract import ROOT
from fxsite.sphinx import warm_kernels

INDEX = """\
# Throwaway site

```{toctree}
page
gallery/index
```
"""

PAGE_HEAD = """\
---
file_format: mystnb
kernelspec:
  name: python3
  display_name: Python 3
---

# A page

"""

GOOD_SCRIPT = '''\
"""
A fine example
==============

It prints.
"""

print("fine")
'''


def make_site(tmp_path: Path, page_cells: str, script: str = GOOD_SCRIPT) -> Path:
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "gallery").mkdir()
    for name in ("conf.py", "constraints.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, site / name)
    for package in ("fxguide", "fxsite"):
        shutil.copytree(ROOT / package, site / package, ignore=shutil.ignore_patterns("__pycache__"))
    (site / "docs" / "index.md").write_text(INDEX)
    (site / "docs" / "page.md").write_text(PAGE_HEAD + textwrap.dedent(page_cells))
    (site / "gallery" / "README.rst").write_text("Gallery\n=======\n")
    (site / "gallery" / "example.py").write_text(script)
    return site


def build(site: Path, *, force: bool = True):
    share_kernel_server()
    return build_docs(site / "_build", force=force, cwd=site)


def share_kernel_server() -> None:
    """One kernel server for every docs build this test process starts, from now on.

    ``make docs`` starts one server per build, before Sphinx; a test process runs
    dozens of builds, so it starts one for all of them (in ``os.environ``, which
    the builds inherit) instead of paying torch's import in each. Each page still
    gets a fresh kernel forked with its build's folder, environment and
    ``PYTHONPATH`` (the throwaway site's own fxguide). The server watches the
    installed distributions, as ``make livehtml``'s does, and stops with the process.
    """
    if os.environ.get(warm_kernels.SERVER_ENV) is None:
        warm_kernels.start(watch_environment=True)




def reader_temp_folder(once_per_run: Callable[[str, Callable[[Path], None]], Path]) -> Path:
    """The temporary folder (``TMPDIR``) of every reader's process in this test run, one for all of them.

    A process in a new environment writes to the temporary folder what stays after it: torch's
    precompiled headers (about 130 MB for each environment that compiles, in
    ``<tmp>/torchinductor_<user>``, whatever ``TORCHINDUCTOR_CACHE_DIR`` says) and what a page keeps
    in ``tempfile.mkdtemp()`` folders (a 45 MB ONNX file). In the system's folder that grew by
    gigabytes with every test run, until a disk was full; in this one, pytest removes it with the run's
    other folders. One for the whole run, so the environments that compile build their headers once.
    """
    return once_per_run("reader-tmp", lambda folder: None)


def reader_environment(home: Path, scratch: Path, *, path: str = "/usr/bin:/bin", **more: str) -> dict[str, str]:
    """The variables a reader's fresh process gets: none of the developer's, its own home and temporary folder."""
    return {"PATH": path, "HOME": str(home), "TMPDIR": str(scratch), "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1",
            **more}


def build_wheel(out: Path) -> None:
    """The wheel, built into ``out`` from a copy of what a source distribution holds (the build writes beside its
    sources)."""
    source = out / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "fxguide", source / "fxguide", ignore=shutil.ignore_patterns("__pycache__"))
    command = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(source)]
    done = subprocess.run(command, cwd=out, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(command)} failed (exit {done.returncode}):\n" \
                                 f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
