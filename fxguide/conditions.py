"""Conditions a claim names, measured where the claim is shown.

"The package loads with no compiler", "a new process with an empty cache
finds the graph in the file", "with the default settings the call runs":
each such sentence is true only in the conditions it names, and a check
made on the machine that built the model (its cache warm, its compiler
installed, a setting changed three cells earlier) proves nothing about
them. This module runs a witness in the named conditions and prints them
*as measured*, on one line that starts with ``conditions:``:

- :func:`run_fresh` runs a script in a new interpreter with an Inductor
  cache folder and a temporary folder of its own, both empty, and ``CXX``
  pointing where you say (:func:`compiler_stand_in` writes a script that
  logs each compiler call and runs ``g++``, or fails as if no compiler were
  installed). The new interpreter measures its conditions before the script
  runs, and :class:`FreshRun` holds them with the script's output and the
  compiler calls it made.
- :func:`settings_here` reads settings of this process (a config entry,
  an environment variable) and says whether each is at its default.

The site's tests read the ``conditions:`` lines: a section whose prose
names a condition (a fresh process, an empty cache, no compiler, the
default settings) must hold a cell whose recorded output shows it met.

>>> line = settings_here(configs=["torch._dynamo.config.capture_scalar_outputs"],
...                      unset=["FXGUIDE_EXAMPLE_VARIABLE"])
>>> print(line)
conditions: torch._dynamo.config.capture_scalar_outputs=False (its default) | FXGUIDE_EXAMPLE_VARIABLE unset
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Conditions", "FreshRun", "compiler_stand_in", "kernel_compiles", "run_fresh", "settings_here"]

# Runs first in the new interpreter: it measures the conditions, writes them to a file, then runs the
# script as `python script.py arguments...` would. It imports nothing of torch's.
_BOOT = r"""
import json, os, runpy, subprocess, sys
def entries(variable):
    folder = os.environ.get(variable)
    return None if not folder or not os.path.isdir(folder) else len(os.listdir(folder))
def compiler():
    cxx = os.environ.get("CXX")
    if not cxx:
        import shutil
        return "path" if shutil.which("g++") else "none (CXX unset, no g++ on PATH)"
    try:
        done = subprocess.run([cxx, "--version"], capture_output=True, text=True,
                              env={**os.environ, "CXX_LOG": os.devnull})
    except OSError as error:
        return f"none ({type(error).__name__})"
    return "runs" if done.returncode == 0 else f"none (exits {done.returncode})"
measured = {"torch imported at start": "torch" in sys.modules,
            "cache entries": entries("TORCHINDUCTOR_CACHE_DIR"), "tmp entries": entries("TMPDIR"),
            "compiler": compiler()}
with open(os.environ.pop("FXGUIDE_CONDITIONS_FILE"), "w") as report:
    json.dump(measured, report)
script, sys.argv = sys.argv[1], sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(script))
runpy.run_path(script, run_name="__main__")
"""


@dataclass(frozen=True)
class Conditions:
    """What a new interpreter found before its script ran.

    ``cache_entries`` and ``tmp_entries`` count what its Inductor cache folder
    and temporary folder held; ``compiler`` is ``"runs"`` when ``$CXX --version``
    succeeded, ``"path"`` without ``CXX`` and with ``g++`` on ``PATH``, ``"none (...)"`` otherwise;
    ``settings`` lists the environment variables given to :func:`run_fresh`.
    """

    new_interpreter: bool
    cache_entries: int | None
    tmp_entries: int | None
    compiler: str
    settings: tuple[str, ...] = ()

    def __str__(self) -> str:
        def folder(count: int | None) -> str:
            return "missing" if count is None else "empty, its own" if count == 0 else f"{count} entries at start"

        compiler = {"runs": "CXX runs", "path": "g++ on PATH"}.get(self.compiler, self.compiler)
        parts = ["new interpreter" if self.new_interpreter else "not a new interpreter (torch already imported)",
                 f"Inductor cache: {folder(self.cache_entries)}", f"TMPDIR: {folder(self.tmp_entries)}",
                 f"C++ compiler: {compiler}"]
        if self.settings:
            parts.append("set: " + ", ".join(self.settings))
        return "conditions: " + " | ".join(parts)


@dataclass(frozen=True)
class FreshRun:
    """A script's run in a new interpreter: its output, its conditions and the compiler calls it made."""

    returncode: int
    stdout: str
    stderr: str
    conditions: Conditions
    compiler_calls: list[str] = field(default_factory=list)
    headers_left: int = 0  # precompiled C++ headers torch wrote to its TMPDIR (removed after the run)

    def check(self) -> FreshRun:
        """This run if the script exited with 0; a ``RuntimeError`` with the end of its stderr otherwise."""
        if self.returncode != 0:
            tail = "\n".join(self.stderr.splitlines()[-15:])
            raise RuntimeError(f"run_fresh: the script exited with {self.returncode}; the end of its stderr:\n{tail}")
        return self

    @property
    def lines(self) -> list[str]:
        """The script's standard output, line by line."""
        return self.stdout.splitlines()


def compiler_stand_in(folder: str | os.PathLike, name: str, *, runs_gxx: bool) -> Path:
    """Write an executable shell script to use as ``CXX``: it appends its arguments to the file named by
    ``$CXX_LOG`` (when set), then runs ``g++`` with them (``runs_gxx=True``) or exits with 127, as a missing
    compiler would."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"compiler_stand_in: folder {str(folder)!r} is not a directory; create it first")
    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"compiler_stand_in: name must be a file name (no '/'), got {name!r}")
    if not isinstance(runs_gxx, bool):
        raise TypeError(f"compiler_stand_in: runs_gxx must be True or False, got {runs_gxx!r}")
    if runs_gxx:
        gxx = shutil.which("g++")
        if gxx is None:
            raise RuntimeError("compiler_stand_in: runs_gxx=True needs g++ on PATH "
                               "(Debian/Ubuntu: apt-get install g++); pass runs_gxx=False for a missing compiler")
        then = f'exec "{gxx}" "$@"'
    else:
        then = "exit 127"
    script = folder / name
    script.write_text(f'#!/bin/sh\nif [ -n "$CXX_LOG" ]; then echo "$*" >> "$CXX_LOG"; fi\n{then}\n')
    script.chmod(0o755)
    return script


def kernel_compiles(calls: Iterable[str]) -> list[str]:
    """The compiler calls that built a model's generated code, which Inductor writes to ``<hash>.main.cpp``
    (Inductor also calls the compiler for checks of its own; those are left out).

    >>> kernel_compiles(["-dM -E -x c++ /dev/null", "/tmp/k/ab.main.cpp -shared -o ab.so"])
    ['/tmp/k/ab.main.cpp -shared -o ab.so']
    """
    if isinstance(calls, str):
        raise TypeError("kernel_compiles: calls must be a list of logged command lines, got one str; "
                        "pass FreshRun.compiler_calls or str.splitlines()")
    return [call for call in calls if call.split(" ", 1)[0].endswith(".main.cpp")]


def run_fresh(script: str | os.PathLike, *arguments: object, folder: str | os.PathLike,
              cxx: str | os.PathLike | None = None, cwd: str | os.PathLike | None = None,
              **environment: str) -> FreshRun:
    """Run ``python script arguments...`` in a new interpreter with an empty Inductor cache folder
    (``TORCHINDUCTOR_CACHE_DIR``) and temporary folder (``TMPDIR``) of its own, made under ``folder``,
    ``CXX=cxx`` (a stand-in from :func:`compiler_stand_in` logs its calls; without one, ``CXX`` is unset and
    Inductor finds ``g++`` on ``PATH``), in the working folder ``cwd`` (this process's, by default), with the
    extra ``environment``.

    torch keeps precompiled C++ headers in ``TMPDIR`` whatever ``TORCHINDUCTOR_CACHE_DIR`` says, about
    130 MB each: the temporary folder is counted (``headers_left``) and removed after the run."""
    script, folder = Path(script), Path(folder)
    if not script.is_file():
        raise FileNotFoundError(f"run_fresh: no script at {str(script)!r}; write it first")
    if not folder.is_dir():
        raise ValueError(f"run_fresh: folder {str(folder)!r} is not a directory; pass one to hold the run's "
                         "cache and temporary folders (tempfile.mkdtemp())")
    if cwd is not None and not Path(cwd).is_dir():
        raise ValueError(f"run_fresh: cwd {str(cwd)!r} is not a directory")
    if cxx is not None and not os.access(cxx, os.X_OK):
        raise ValueError(f"run_fresh: cxx {str(cxx)!r} is not an executable file; "
                         "make one with compiler_stand_in(folder, name, runs_gxx=...)")
    for name, value in environment.items():
        if not isinstance(value, str):
            raise TypeError(f"run_fresh: environment variable {name} must be given as a str, got {value!r}")
    cache, temporary = Path(tempfile.mkdtemp(dir=folder)), Path(tempfile.mkdtemp(dir=folder))
    report, log = Path(tempfile.mkdtemp(dir=folder)) / "conditions.json", cache.parent / f"{cache.name}.cxx.log"
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache), "TMPDIR": str(temporary),
           "FXGUIDE_CONDITIONS_FILE": str(report), **environment}
    env.pop("CXX", None)
    if cxx is not None:
        env.update(CXX=str(cxx), CXX_LOG=str(log))
    try:
        done = subprocess.run([sys.executable, "-c", _BOOT, str(script.resolve()), *map(str, arguments)],
                              env=env, capture_output=True, text=True, cwd=cwd)
        headers = len(list(temporary.glob("torchinductor_*/precompiled_headers/*.gch")))
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    if not report.exists():
        raise RuntimeError(f"run_fresh: the new interpreter did not start the script (exit {done.returncode}):\n"
                           + "\n".join(done.stderr.splitlines()[-15:]))
    measured = json.loads(report.read_text())
    conditions = Conditions(new_interpreter=not measured["torch imported at start"],
                            cache_entries=measured["cache entries"], tmp_entries=measured["tmp entries"],
                            compiler=measured["compiler"],
                            settings=tuple(f"{name}={value}" for name, value in sorted(environment.items())))
    calls = log.read_text().splitlines() if log.exists() else []
    return FreshRun(done.returncode, done.stdout, done.stderr, conditions, calls, headers)


def _config_entry(dotted: str) -> tuple[object, object]:
    """The current value and the default of a torch config entry named ``module.path.name``."""
    module_name, _, name = dotted.rpartition(".")
    try:
        module = importlib.import_module(module_name)
        entry = module._config[name]  # torch's config modules keep each entry's default there
    except (ImportError, AttributeError, KeyError, TypeError, ValueError):
        raise ValueError(f"settings_here: {dotted!r} is not an entry of a torch config module "
                         "(e.g. 'torch._dynamo.config.capture_scalar_outputs')") from None
    return getattr(module, name), entry.default


def settings_here(*, configs: Iterable[str] = (), unset: Iterable[str] = ()) -> str:
    """One ``conditions:`` line for this process: each config entry with its value and whether that is its
    default, each environment variable of ``unset`` as unset or with its value."""
    if isinstance(configs, str) or isinstance(unset, str):
        raise TypeError("settings_here: configs and unset take lists of names, not one str")
    configs, unset = list(configs), list(unset)
    if not configs and not unset:
        raise ValueError("settings_here: name at least one config entry or environment variable")
    parts = []
    for dotted in configs:
        value, default = _config_entry(dotted)
        parts.append(f"{dotted}={value!r} " + ("(its default)" if value == default else f"(not the default {default!r})"))
    for name in unset:
        value = os.environ.get(name)
        parts.append(f"{name} unset" if value is None else f"{name}={value} (set, not unset)")
    return "conditions: " + " | ".join(parts)
