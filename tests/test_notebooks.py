"""Every notebook a reader downloads runs top to bottom in a fresh environment.

The environment holds only what the notebook's first cell installs: the wheel of
``fxguide`` built from this checkout, with the extras that cell names, the torch it pins,
and the Jupyter kernel to run it. Nothing is downloaded: the installed distributions are
those of the reference environment, linked one by one into a folder the new environment
reads (the closure of the cell's requirements, from their metadata), so a notebook that
imports a library its install cell does not ask for fails here as it would for a reader.

Each notebook runs once per test run, under other CPU kernels and another thread count than the
docs build's (:func:`reader_cpu`): ``tests/test_cpu_independence.py`` compares what a page's
notebook shows there with the page's recording, so one execution checks both.
"""

from __future__ import annotations

import functools
import getpass
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
import venv
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from fxsite import ROOT
from fxsite.drift import cpu
from fxsite.drift.report import REFERENCE_TORCH
from fxsite.sphinx.running import INSTALL_MARKER
from throwaway import reader_environment, reader_temp_folder

pytestmark = [pytest.mark.docs, pytest.mark.slow]

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
TORCH = REFERENCE_TORCH  # the torch constraints.txt pins


def _executed_sources() -> list[str]:
    """Every page and example the site executes, named from the sources (known before the build)."""
    pages = [p.relative_to(ROOT / "docs").with_suffix("").as_posix() for p in sorted((ROOT / "docs").rglob("*.md"))
             if "gallery" not in p.parts and "kernelspec:" in p.read_text(encoding="utf-8")[:600]]
    return pages + [f"gallery/{p.stem}" for p in sorted((ROOT / "gallery").glob("*.py"))]


def _downloaded(site: Path, name: str) -> Path:
    """The notebook a reader downloads for page or example ``name`` of the built site."""
    if name.startswith("gallery/"):
        found = list(site.glob(f"_downloads/*/{name.removeprefix('gallery/')}.ipynb"))
        assert len(found) == 1, f"{name}: expected one downloadable notebook, found {found}"
        return found[0]
    return site / f"{name}.ipynb"


def install_request(notebook: dict) -> tuple[set[str], str, list[str]]:
    """(the extras of fxguide, the torch release, other packages) that the notebook's install cell asks for."""
    first = notebook["cells"][0]
    source = "".join(first["source"])
    assert source.startswith(INSTALL_MARKER), f"the first cell is not the install cell: {source[:80]!r}"
    torch = re.search(r'"torch==([^"]+)"', source).group(1)
    extras = re.search(r'"fxguide(?:\[([a-z,]*)\])? @ git\+', source).group(1)
    others = [r for r in re.findall(r'"([^"]+==[^"]+)"', source) if not r.startswith("torch==")]
    return set(filter(None, (extras or "").split(","))), torch, others


def closure(requirements: list[str]) -> dict[str, metadata.Distribution]:
    """Every installed distribution ``requirements`` need, following their own requirements and extras."""
    found: dict[str, tuple[metadata.Distribution, set[str]]] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        dist, extras = found.get(name, (None, set()))
        if dist is not None and set(requirement.extras) <= extras:
            continue
        dist = dist or metadata.distribution(requirement.name)
        extras = extras | set(requirement.extras)
        found[name] = (dist, extras)
        for line in dist.requires or []:
            needed = Requirement(line)
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in extras | {""}):
                todo.append(needed)
    return {name: dist for name, (dist, _) in found.items()}


def _link_distributions(dists: dict[str, metadata.Distribution], folder: Path, bin_folder: Path) -> None:
    """Link each of ``dists``'s files and folders into ``folder`` (the new environment's site-packages, where a
    reader's pip puts them: a traceback or a frame's file names them as it would for a reader)."""
    purelib = Path(sysconfig.get_paths()["purelib"])
    for dist in dists.values():
        for script in (Path(str(f)) for f in dist.files or [] if str(f).startswith("../../../bin/")):
            target = bin_folder / script.name  # a program the distribution installs (tlparse)
            if not target.exists():
                target.symlink_to((purelib / script).resolve())
        for entry in {Path(str(f)).parts[0] for f in dist.files or []}:
            source = purelib / entry
            if entry.startswith("..") or entry.endswith(".pth") or entry == "__pycache__" or not source.exists():
                continue
            target = folder / entry
            if not target.exists():
                target.symlink_to(source)


def _environment(extras: set[str], others: list[str], wheel: Path, folder: Path) -> Path:
    """A new environment with the wheel and exactly the distributions ``fxguide[extras]``, ``others`` and a
    kernel need."""
    env = folder / "env"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    requirements = list(PYPROJECT["dependencies"]) + others + ["ipykernel", "nbclient"]  # a reader's Jupyter
    for extra in extras:
        requirements += PYPROJECT["optional-dependencies"][extra]
    _link_distributions(closure(requirements), site, python.parent)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)], check=True, capture_output=True)
    return python


@functools.cache
def reader_cpu() -> cpu.Setting:
    """The CPU setting the notebooks run under: other kernels and another thread count than the docs build's."""
    return cpu.other_setting()


def run_downloaded(name: str, site: Path, wheel: Path, once_per_run) -> Path:
    """Run the notebook a reader downloads for page or example ``name``, once per test run.

    It runs as a reader runs it (a fresh environment, an empty folder, an empty Inductor cache)
    under :func:`reader_cpu`: the tests of this file check that it runs, and
    ``tests/test_cpu_independence.py`` that a page's notebook shows what the page shows. Returns the
    folder holding ``executed.ipynb`` (without its install cell) and ``result.json`` (exit status, stderr).
    """
    path = _downloaded(site / "html", name)
    notebook = json.loads(path.read_text())
    extras, torch, others = install_request(notebook)
    assert torch == TORCH, f"{path.name} pins torch {torch}, the reference is {TORCH}"
    env_name = "-".join(sorted(extras) + [o.split("==")[0] for o in others]) or "base"
    python = once_per_run(f"notebook-env-{env_name}", lambda folder: _environment(extras, others, wheel, folder)) \
        / "env" / "bin" / "python"
    inductor_cache = once_per_run("notebook-inductor-cache", lambda folder: None)  # kept apart: other kernels
    scratch = reader_temp_folder(once_per_run)

    def run(home: Path) -> None:
        # Where the reader runs it: an empty folder; a page that reads the repository's data has its
        # install cell clone the repository and change into its docs/ folder: here, a copy of that data.
        install = "".join(notebook["cells"][0]["source"])
        folder = re.search(r"%cd fxguide-repository/(\S+)", install)
        work = home / (folder[1] if folder else "docs")
        work.mkdir(parents=True)
        if "git clone" in install:
            shutil.copytree(ROOT / "drift", home / "drift")
            shutil.copy(ROOT / "constraints.txt", home / "constraints.txt")
            for data in (ROOT / folder[1]).iterdir():  # the data committed beside the page (not pages themselves)
                if data.is_file() and data.suffix not in (".md", ".ipynb", ".py"):
                    shutil.copy(data, work / data.name)
        notebook["cells"] = notebook["cells"][1:]  # the install cell: its environment is made above
        for cell in notebook["cells"]:
            cell.pop("outputs", None) if cell["cell_type"] != "code" else cell.update(outputs=[], execution_count=None)
        (work / path.name).write_text(json.dumps(notebook))
        runner = ("import sys, nbformat\nfrom nbclient import NotebookClient\n"
                  "nb = nbformat.read(sys.argv[1], as_version=4)\n"
                  "try:\n"
                  "    NotebookClient(nb, timeout=300, kernel_name='python3', "
                  "resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
                  "finally:\n"
                  "    nbformat.write(nb, sys.argv[3])\n")
        done = subprocess.run([str(python), "-c", runner, str(work / path.name), str(work), str(home / "executed.ipynb")],
                              cwd=work, capture_output=True, text=True, timeout=900,
                              env=reader_environment(home, scratch, path=f"{python.parent}:/usr/bin:/bin",
                                                     JUPYTER_PLATFORM_DIRS="1",
                                                     TORCHINDUCTOR_CACHE_DIR=str(inductor_cache), **reader_cpu().env))
        (home / "result.json").write_text(json.dumps({"returncode": done.returncode, "stderr": done.stderr[-6000:],
                                                      "extras": sorted(extras), "env": str(python.parent.parent),
                                                      "tmp": str(scratch)}))

    return once_per_run(f"notebook-run-{name.replace('/', '-')}", run)


def as_in_the_checkout(run: Path) -> dict:
    """The executed notebook of :func:`run_downloaded`, with the reader's folders written as the checkout's.

    The reader's folder stands for the repository, the new environment for the reference environment,
    and the installed ``fxguide`` for the checkout's: :func:`fxsite.drift.normalize.hide_paths`
    then names them as it names the docs build's.
    """
    result = json.loads((run / "result.json").read_text())
    env = Path(result["env"])
    (site,) = env.glob("lib/python*/site-packages")
    purelib = sysconfig.get_paths()["purelib"]
    text = (run / "executed.ipynb").read_text()
    for reader, ours in sorted({str(site / "fxguide"): str(ROOT / "fxguide"), str(site): purelib,
                                str(env): sys.prefix, result["tmp"]: tempfile.gettempdir(),
                                str(run): str(ROOT)}.items(), key=lambda item: -len(item[0])):
        text = text.replace(reader, ours)
    return json.loads(text)


def test_the_install_cell_asks_for_what_the_page_imports():
    """The closure of fxguide[models] holds torchvision; of fxguide alone, not (the environment is strict)."""
    assert "torchvision" in closure(["fxguide[models]"])
    assert "torchvision" not in closure(["fxguide"]) and "torch" in closure(["fxguide"])


def test_every_executed_page_is_checked_below():
    assert len(_executed_sources()) > 45


@pytest.mark.spread
@pytest.mark.parametrize("name", _executed_sources())
def test_a_downloaded_notebook_runs_top_to_bottom_in_a_fresh_environment(name, built_site, wheel, once_per_run):
    result = json.loads((run_downloaded(name, built_site, wheel, once_per_run) / "result.json").read_text())
    assert result["returncode"] == 0, f"{name}.ipynb failed in an environment with " \
                                      f"fxguide[{','.join(result['extras'])}] under {reader_cpu()}:\n{result['stderr']}"


@pytest.mark.spread
def test_what_a_readers_run_leaves_in_the_temporary_folder_goes_with_the_test_run(built_site, wheel, once_per_run):
    """A page that compiles C++ with Inductor (compile-backends) builds torch's precompiled headers in the
    temporary folder: the reader's, inside the test run's folders, not the system's (where every run's new
    environments left 130 MB each, for good)."""
    run_downloaded("pt2/compile-backends", built_site, wheel, once_per_run)
    headers = reader_temp_folder(once_per_run) / f"torchinductor_{getpass.getuser()}" / "precompiled_headers"
    assert list(headers.glob("*.gch")), f"no precompiled header in {headers}: the reader's run wrote them elsewhere"
