"""fxsite.sphinx.run: sphinx-build's exit status and exit handlers, without the interpreter's teardown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fxsite import ROOT


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fxsite.sphinx.run", *args], cwd=cwd, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_a_build_exits_0_after_every_exit_handler_ran(tmp_path):
    (tmp_path / "conf.py").write_text(
        "import atexit, pathlib\n"
        "atexit.register(lambda: pathlib.Path('handler-ran').write_text('yes'))  # like a kernel server's stop\n")
    (tmp_path / "index.rst").write_text("Title\n=====\n\nText.\n")
    done = run("-b", "html", "-q", ".", "_build", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "_build" / "index.html").is_file()
    assert (tmp_path / "handler-ran").read_text() == "yes"


def test_a_failed_build_and_a_bad_option_exit_as_sphinx_build_does(tmp_path):
    (tmp_path / "conf.py").write_text("")
    (tmp_path / "index.rst").write_text("Title\n=====\n\n.. no-such-directive::\n")
    ours = run("-b", "html", "-W", "-q", ".", "_build", cwd=tmp_path)
    sphinx = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "-q", ".", "_other"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert ours.returncode == sphinx.returncode != 0
    assert "no-such-directive" in ours.stderr
    assert run("--no-such-option", cwd=tmp_path).returncode == 2
    version = run("--version", cwd=tmp_path)
    import sphinx

    assert version.returncode == 0 and version.stdout.split()[-1] == sphinx.__version__
