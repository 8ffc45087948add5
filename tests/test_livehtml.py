"""make livehtml: sphinx-autobuild with the site's options, blind to what the build itself writes into docs/."""

from __future__ import annotations

import fnmatch
import subprocess
import sys

from fxsite import ROOT


def _dry_run() -> str:
    done = subprocess.run(["make", "-n", "livehtml"], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout


def test_every_generated_path_under_docs_is_ignored_so_a_build_does_not_start_the_next() -> None:
    command = _dry_run()
    ignores = [part.split("'")[1] for part in command.split("--ignore ")[1:]]
    generated = [line.strip().rstrip("/") for line in (ROOT / ".gitignore").read_text().splitlines()
                 if line.strip().startswith("docs/")]
    assert generated, "no generated path under docs/ in .gitignore"
    for path in generated:
        sample = f"{ROOT}/{path}/page.md" if not path.endswith(".md") else f"{ROOT}/{path}"
        assert any(fnmatch.fnmatch(sample, glob) for glob in ignores), f"{path} is not ignored by make livehtml"


def test_livehtml_runs_sphinx_autobuild_with_the_site_config_and_watches_the_package_and_gallery() -> None:
    command = _dry_run()
    assert "-m fxsite.sphinx.live -b html -c ." in command and " docs _build/html" in command
    assert "--watch fxguide" in command and "--watch gallery" in command
    done = subprocess.run([sys.executable, "-m", "fxsite.sphinx.live", "--help"], capture_output=True, text=True,
                          cwd=ROOT)
    assert "sphinx-autobuild" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 0, "sphinx-autobuild is missing: `make venv` installs it (the docs extra)"



def test_each_rebuild_runs_sphinx_through_the_fast_exit_runner(monkeypatch) -> None:
    """live.main hands sphinx-autobuild a subprocess module whose run starts fxsite.sphinx.run."""
    import sphinx_autobuild.__main__
    import sphinx_autobuild.build

    from fxsite.sphinx import live

    monkeypatch.setenv("FXGUIDE_WARM_KERNELS", "0")
    monkeypatch.setattr(sphinx_autobuild.build, "subprocess", subprocess)  # restored after the test
    ran: list[list[str]] = []

    def autobuild(argv):  # one rebuild, as sphinx-autobuild's server would start it
        sphinx_autobuild.build.Builder(argv, url_host="127.0.0.1:0", pre_build_commands=[],
                                       post_build_commands=[])(changed_paths=[])
        return 0

    monkeypatch.setattr(sphinx_autobuild.__main__, "main", autobuild)
    monkeypatch.setattr(subprocess, "run", lambda command, *a, **k: ran.append(command))
    assert live.main(["-b", "html", "docs", "out"]) == 0
    assert ran == [[sys.executable, "-m", "fxsite.sphinx.run", "-b", "html", "docs", "out"]]
