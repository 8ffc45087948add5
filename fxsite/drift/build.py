"""Run the docs build the way ``make docs`` does, from Python (tests, drift, bench)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from fxsite.drift.extract import ROOT

SERVER_ENV = "FXGUIDE_KERNEL_SERVER"
"""The variable naming the socket of the warm kernel server a build hands its kernels to
(:mod:`fxsite.sphinx.warm_kernels`); a build that must not share the server of the process
that starts it (one under other CPU settings, :mod:`fxsite.drift.cpu`) is started without it."""


def sphinx_command(out: Path, *, src: Path = ROOT / "docs", conf: Path = ROOT, jobs: str | int = "auto",
                   settings: Mapping[str, str] | None = None) -> list[str]:
    """The ``sphinx-build`` command ``make docs`` runs; ``jobs`` is ``"auto"`` or a number of processes.

    ``settings`` override ``conf.py``'s values for this build (``-D name=value``), e.g.
    ``{"nb_execution_mode": "off"}``: the pages are read, not executed; the examples still run.

    >>> sphinx_command(Path("_build"), settings={"nb_execution_mode": "off"})[-4:-2]
    ['-D', 'nb_execution_mode=off']

    >>> sphinx_command(Path("_build"), jobs=0)
    Traceback (most recent call last):
    ...
    ValueError: sphinx_command: jobs must be "auto" or a positive int, got 0
    """
    if jobs != "auto" and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f'sphinx_command: jobs must be "auto" or a positive int, got {jobs!r}')
    overrides = []
    for name, value in (settings or {}).items():
        if not isinstance(name, str) or not isinstance(value, str) or not name.isidentifier():
            raise ValueError(f"sphinx_command: settings must map config names to strings, got {name!r}: {value!r}")
        overrides += ["-D", f"{name}={value}"]
    return [sys.executable, "-m", "fxsite.sphinx.run", "-b", "html", "-c", str(conf), "-W", "--keep-going",
            "-j", str(jobs), *overrides, str(src), str(Path(out) / "html")]


def build_docs(out: Path = ROOT / "_build", *, force: bool | None = None, cwd: Path = ROOT,
               src: Path | None = None, conf: Path | None = None,
               env: Mapping[str, str | None] | None = None,
               settings: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Build the site into ``out/html``.

    ``force=True`` re-executes every page and example; ``force=False`` is the local,
    cached workflow even inside CI (``CI`` and ``FXGUIDE_EXECUTE`` are dropped for the
    build); ``None`` leaves the choice to the environment, as ``make docs`` does.
    ``env`` sets variables for the build only (``None`` removes one), on top of this
    process's environment; ``settings`` override ``conf.py`` (:func:`sphinx_command`).
    Returns the finished process (stdout and stderr merged); callers decide what a
    non-zero exit means for them.
    """
    if force is not None and not isinstance(force, bool):
        raise TypeError(f"force must be True, False or None, not {force!r}")
    if not Path(cwd).is_dir():
        raise FileNotFoundError(f"build_docs: cwd {cwd} is not a folder; pass the repository (or site) to build")
    changes, env = dict(env or {}), dict(os.environ)
    env.update({name: value for name, value in changes.items() if value is not None})
    for name in [name for name, value in changes.items() if value is None]:
        env.pop(name, None)
    if force:
        env["FXGUIDE_EXECUTE"] = "force"
    elif force is False:
        env.pop("CI", None)
        env.pop("FXGUIDE_EXECUTE", None)
    command = sphinx_command(out, src=src or Path(cwd) / "docs", conf=conf or Path(cwd), settings=settings)
    return subprocess.run(command, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, check=False)
