"""`.ci/ensure-tools` finds the C++ compiler Inductor needs, or says how to get one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fxsite import ROOT

SCRIPT = ROOT / ".ci/ensure-tools"


def _path_with(tmp_path: Path, *tools: str) -> str:
    """A PATH holding only links to the given tools (and what the script itself calls)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname", "id", *tools):
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not on this machine")
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def _run(path: str, **env: str) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run([bash, str(SCRIPT), "docs"], env={"PATH": path, **env}, capture_output=True, text=True)


def test_without_a_cpp_compiler_it_fails_and_names_the_package_to_install(tmp_path: Path) -> None:
    done = _run(_path_with(tmp_path, "dot"))  # no g++, c++, clang++ nor apt-get on this PATH
    assert done.returncode == 1
    assert "missing g++" in done.stderr and "apt-get install g++" in done.stderr


def test_with_g_plus_plus_on_the_path_the_docs_check_passes(tmp_path: Path) -> None:
    done = _run(_path_with(tmp_path, "dot", "g++"))
    assert done.returncode == 0, done.stderr


def test_a_cxx_that_is_not_a_program_is_reported(tmp_path: Path) -> None:
    done = _run(_path_with(tmp_path, "dot", "g++"), CXX="/nonexistent/g++")
    assert done.returncode == 1 and "CXX=/nonexistent/g++ is not an executable" in done.stderr
