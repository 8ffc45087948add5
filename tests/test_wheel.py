"""fxguide works outside the repository: built as a wheel, installed elsewhere, used from an empty folder.

One throwaway environment per test run (made by the first xdist worker that needs
it, see ``once_per_run`` in conftest.py): the wheel is built
from this checkout, installed with ``--no-deps`` into a new virtual environment
that sees the reference environment's packages (torch included) through a
``.pth`` line, so nothing is downloaded and torch is not installed twice. The
reference environment's editable ``fxguide`` is not visible there (its import
hook lives in a ``.pth`` file, and ``.pth`` files of an added folder are not
run), so every check below exercises the installed wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from fxsite import ROOT
from throwaway import reader_environment, reader_temp_folder

pytestmark = pytest.mark.slow

GALLERY = sorted((ROOT / "gallery").glob("*.py"))


def _run(command: list[str], cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed (exit {done.returncode}):\n" \
                                 f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def _install(wheel: Path) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        env = folder / "env"
        venv.create(env, with_pip=False)
        python = env / "bin" / "python"
        site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         cwd=env).stdout.strip())
        (site / "reference-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
              "--no-index", str(wheel)], cwd=env)
        (folder / "empty").mkdir()
    return make


@pytest.fixture(scope="session")
def installed(wheel, once_per_run) -> tuple[Path, Path]:
    """(python of the throwaway environment, an empty working folder), made once per test run."""
    folder = once_per_run("installed", _install(wheel))
    return folder / "env" / "bin" / "python", folder / "empty"


def test_the_wheel_holds_the_readers_package_only_with_license_py_typed_and_inventories(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.startswith(("fxsite/", "tests/", "docs/", "gallery/"))]
    assert "fxguide/py.typed" in names
    assert {"fxguide/diagnose/inventory/torch-2.14.1.json", "fxguide/diagnose/inventory/torch-2.15.0.json"} <= set(names)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    assert "fxguide/models/__init__.py" in names and "fxguide/tracing/concrete/_tracer.py" in names


def test_import_fxguide_from_an_empty_folder_uses_the_installed_wheel(installed):
    python, empty = installed
    code = "import fxguide, fxguide.models, importlib.metadata as m; print(fxguide.__file__); " \
           "print(fxguide.__version__, m.version('fxguide'))"
    where, versions = _run([str(python), "-c", code], cwd=empty).stdout.split("\n")[:2]
    assert str(python.parents[1]) in where and str(ROOT) not in where
    package_version, metadata_version = versions.split()
    assert package_version == metadata_version  # one version source


def test_the_installed_dependencies_are_satisfied(installed):
    python, empty = installed
    code = ("import importlib.metadata as m\nfrom packaging.requirements import Requirement\n"
            "for r in map(Requirement, m.requires('fxguide')):\n"
            "    if r.marker is None or r.marker.evaluate({'extra': 'draw'}):\n"
            "        assert r.specifier.contains(m.version(r.name), prereleases=True), (r, m.version(r.name))\n"
            "        print(r.name, m.version(r.name))\n")
    printed = _run([str(python), "-c", code], cwd=empty).stdout
    assert "torch" in printed and "tabulate" in printed and "matplotlib" in printed


def test_the_doctests_pass_against_the_installed_package(installed):
    python, empty = installed
    package = Path(_run([str(python), "-c", "import fxguide, os; print(os.path.dirname(fxguide.__file__))"],
                        cwd=empty).stdout.strip())
    done = _run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:playwright",
                 "--doctest-modules", "-o", "doctest_optionflags=NORMALIZE_WHITESPACE",
                 "--rootdir", str(empty), str(package)], cwd=empty)
    assert " passed" in done.stdout and "failed" not in done.stdout


def test_the_diagnose_command_runs_from_the_installed_wheel_in_an_empty_folder(installed):
    python, empty = installed
    done = subprocess.run([str(python), "-m", "fxguide.diagnose", "fxguide.models.dynamic:DataBranch",
                           "--input", "2x4", "--tools", "symbolic_trace,concrete_trace"],
                          cwd=empty, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr  # symbolic_trace refuses the branch on data
    assert "fails: TraceError" in done.stdout and "matches eager" in done.stdout
    # its links go to the published guide named in the wheel's metadata, and to no local build
    assert "guide sections are relative to https://" in done.stdout and "local build" not in done.stdout


def test_the_explain_command_runs_from_the_installed_wheel_in_an_empty_folder(installed):
    python, empty = installed
    traceback = ('Traceback (most recent call last):\n  File "train.py", line 12, in <module>\n'
                 "torch._dynamo.exc.Unsupported: Skip calling `torch.compiler.disable()`d function\n")
    alone = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}  # not the checkout's fxguide
    done = subprocess.run([str(python), "-m", "fxguide.explain"], input=traceback, cwd=empty,
                          capture_output=True, text=True, env=alone)
    assert done.returncode == 0, done.stderr
    # the cause from the catalogue the wheel ships, its section on the published guide, no local build
    assert "cause:  a call to a torch.compiler.disable'd function" in done.stdout
    assert "https://" in done.stdout and "reference/errors.html#error-compiler-disable" in done.stdout
    assert "local:" not in done.stdout
    nothing = subprocess.run([str(python), "-m", "fxguide.explain", "KeyError: 'weights'"], cwd=empty,
                             capture_output=True, text=True, env=alone)
    assert nothing.returncode == 1 and "No cause in fxguide's catalogue matches" in nothing.stdout


# Runs every gallery script as `python <script>` would, from the empty folder: each in a fresh
# process (a fork of this driver, which imported torch once, so 17 scripts pay for one torch
# import), `__name__ == "__main__"`, and the script's own folder first on sys.path.
DRIVER = """
import os, runpy, sys, traceback
import torch
logs = sys.argv[1]
for script in sys.argv[2:]:
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.path.join(logs, os.path.basename(script) + ".log"), os.O_WRONLY | os.O_CREAT)
        os.dup2(fd, 1); os.dup2(fd, 2)
        sys.argv, sys.path[0], code = [script], os.path.dirname(script), 0
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
        except BaseException:
            traceback.print_exc(); code = 1
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    print(os.path.basename(script), os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


def _run_gallery(installed: tuple[Path, Path], scratch: Path) -> Callable[[Path], None]:
    def make(logs: Path) -> None:
        python, empty = installed
        done = _run([str(python), "-c", DRIVER, str(logs), *map(str, GALLERY)], cwd=empty,
                    env=reader_environment(empty, scratch))
        (logs / "statuses.txt").write_text(done.stdout)
    return make


@pytest.fixture(scope="session")
def gallery_runs(installed, once_per_run) -> dict[str, tuple[int, str]]:
    """{script name: (exit status, what it printed)} for every gallery script, run once per test run."""
    logs = once_per_run("gallery-runs", _run_gallery(installed, reader_temp_folder(once_per_run)))
    statuses = dict(line.split() for line in (logs / "statuses.txt").read_text().splitlines())
    return {name: (int(code), (logs / f"{name}.log").read_text()) for name, code in statuses.items()}


@pytest.mark.parametrize("script", GALLERY, ids=lambda p: p.name)
def test_every_gallery_script_runs_from_an_empty_folder(gallery_runs, script):
    status, printed = gallery_runs[script.name]
    assert status == 0, f"python {script} from an empty folder failed (exit {status}):\n{printed[-6000:]}"
