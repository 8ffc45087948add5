"""Shared fixtures: the docs build every output check reads, built once per test run.

Under pytest-xdist (``make test`` runs two workers) each worker is a session of its
own; a file lock and a marker naming the run make the first worker build the site
and the others read that same build instead of building it again.

``make test`` distributes with ``--dist loadgroup``; :func:`pytest_collection_modifyitems`
puts every test that reads the docs build in one group (one worker builds the site
and then checks it, while the other runs the long tests instead of waiting on the
build's lock) and starts the long tests first, so no worker is left with one at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

from fxsite import ROOT
from fxsite.drift.build import build_docs
from fxsite.sphinx.fingerprint import inductor_cache_dir
from throwaway import build_wheel, share_kernel_server

BUILD_DIR = Path(os.environ.get("FXGUIDE_BUILD_DIR", ROOT / "_build"))

# Tests run under other CPU settings (ATEN_CPU_CAPABILITY=avx2 make test) compile Inductor code into a cache of
# their own: torch's cache key leaves out the vector width, and code cached for another one computes garbage.
if inductor_cache_dir() is not None:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache_dir()

DOCS_GROUP = "docs-build"


def _start_rank(item: pytest.Item) -> int:
    """When a test starts: the docs build's group, then the wheel's, then other long tests, then the long
    tests that read the build (each on any worker, once the build is done), then the rest."""
    if item.get_closest_marker("spread"):
        return 3
    if "built_site" in item.fixturenames:
        return 0
    if "once_per_run" in item.fixturenames:  # the wheel: its first test builds and installs it (about 45 s)
        return 1
    if item.get_closest_marker("slow") or item.get_closest_marker("long"):
        return 2
    return 4


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Schedule for ``--dist loadgroup`` (only the order changes, never what runs).

    The tests reading the docs build share one xdist group: the worker that builds
    the site checks it, and no other worker idles on the build's lock. Long tests
    (throwaway-site builds, the survey sample, the wheel and its gallery runs)
    start first, the wheel's right after the docs group so that it is built and
    installed while the other worker builds the docs; the many short tests fill in.
    A test marked ``spread`` reads the build but is long on its own (a notebook run in a
    fresh environment): it is a unit of its own, for whichever worker is free after the
    long tests, by when the build is done (a worker that reaches one earlier waits on the
    build's lock).
    """
    for item in items:
        if _start_rank(item) == 0:
            item.add_marker(pytest.mark.xdist_group(DOCS_GROUP))
    items[:] = sorted(items, key=_start_rank)  # stable: the collection's order within a rank
    folder = os.environ.get(GROUPS_ENV)
    if folder and hasattr(config, "workerinput"):  # tell the controller's scheduler (below) the groups
        groups = {item.nodeid: "_".join(sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                                                for m in item.iter_markers("xdist_group")}))
                  for item in items if item.get_closest_marker("xdist_group")}
        Path(folder, f"{config.workerinput['workerid']}.json").write_text(json.dumps(groups))


# pytest-xdist 3.8's own loadgroup marks a test's group by rewriting ``item._nodeid``, which
# pytest 9.2 no longer reads (its groups are silently ignored). Here the workers write each
# grouped test's id and group to a folder the controller made, and the controller's
# scheduler reads them.
GROUPS_ENV = "FXGUIDE_TEST_GROUPS"


def pytest_configure(config: pytest.Config) -> None:
    # Registered here rather than in pyproject.toml: an edit there makes `make` reinstall the environment.
    config.addinivalue_line("markers", "long: runs tens of seconds without building a site (started early under xdist)")
    config.addinivalue_line("markers", "spread: reads the docs build, runs tens of seconds: any worker, after the "
                                       "long tests (not the docs build's group)")
    if hasattr(config, "workerinput") or config.getoption("dist", "no") != "loadgroup":
        return
    folder = tempfile.mkdtemp(prefix="fxguide-test-groups-")
    os.environ[GROUPS_ENV] = folder  # the workers, started after this, inherit it
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown without it (-p no:xdist)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadgroup`` with the groups the workers wrote: each group one unit of work, other tests one each."""
    folder = os.environ.get(GROUPS_ENV)
    if config.getoption("dist", "no") != "loadgroup" or not folder:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # read once every worker has collected (when scheduling starts)
                self.groups = {}
                for written in Path(folder).glob("*.json"):
                    self.groups.update(json.loads(written.read_text()))
            if nodeid.rfind("@") > nodeid.rfind("]"):  # an xdist that marks groups in the id itself
                return nodeid.split("@")[-1]
            return self.groups.get(nodeid, nodeid)

    return GroupScheduling(config, log)


@pytest.fixture(scope="session")
def built_site() -> Path:
    """Build the whole site the way ``make docs`` would here (CI re-executes everything)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # shared by the workers of one run
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    marker = BUILD_DIR / ".built-for-test-run"
    with FileLock(str(BUILD_DIR / ".build.lock")):
        if run is not None and marker.is_file() and marker.read_text() == run:
            return BUILD_DIR  # another worker of this run built it
        marker.unlink(missing_ok=True)
        share_kernel_server()  # torch is imported before Sphinx starts, as `make docs` does
        done = build_docs(BUILD_DIR)
        if done.returncode != 0:
            pytest.fail(f"the docs build failed (exit {done.returncode}):\n{done.stdout[-15000:]}", pytrace=False)
        if run is not None:
            marker.write_text(run)
    return BUILD_DIR


@pytest.fixture(scope="session")
def once_per_run(tmp_path_factory, worker_id) -> Callable[[str, Callable[[Path], None]], Path]:
    """``once_per_run(name, make)``: a folder ``make`` filled once for the whole test run.

    The first xdist worker to ask runs ``make(folder)`` under a file lock; the
    others wait and reuse the folder (the base temporary folder's parent is
    shared by the workers of one run, and by nothing else). A ``make`` that
    raises leaves no folder behind: the next worker to ask tries again.
    """
    root = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent

    def get(name: str, make: Callable[[Path], None]) -> Path:
        folder = root / name
        with FileLock(str(root / f"{name}.lock")):
            if not (folder / ".made").is_file():
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                try:
                    make(folder)
                except BaseException:
                    shutil.rmtree(folder, ignore_errors=True)
                    raise
                (folder / ".made").write_text("")
        return folder

    return get


@pytest.fixture(scope="session")
def wheel(once_per_run) -> Path:
    """fxguide's wheel, built from this checkout once per test run (the wheel's tests and the notebook runs)."""
    (built,) = once_per_run("wheel", build_wheel).glob("fxguide-*.whl")
    return built
