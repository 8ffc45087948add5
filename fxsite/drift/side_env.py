"""Run every check of the guide against another torch, in a side environment.

``python -m fxsite.drift.side_env 2.14.1`` (or ``make drift TORCH=2.14.1``):

1. finds or builds a virtual environment pinned exactly like the reference one
   (``constraints.txt``) except for torch, which is the version asked for. It
   lives outside the clone, in ``~/.cache/fxguide/venv-torch-<version>-<key>``
   (``$FXGUIDE_CACHE`` moves it), where ``<key>`` hashes ``constraints.txt`` and
   ``pyproject.toml``: a CUDA build of torch is several GB, so every clone on the
   machine reuses it until the pins change;
2. builds the docs there and compares every shown output with the recorded one
   (``python -m fxsite.drift check --report``);
3. runs the unit tests and doctests there with pytest, recording each result;
4. writes ``drift/torch-<version>/report.json`` and ``report.md``.

The reference torch (``fxsite.drift.report.REFERENCE_TORCH``) uses the
reference environment itself. Exit status: 0 when the report was written,
whatever drift it shows; 2 when the tooling could not produce one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from fxsite.drift.extract import ROOT
from fxsite.drift.report import REFERENCE_TORCH

_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_TORCH_PIN = re.compile(r"^torch==\S+$", re.MULTILINE)


class DriftToolingError(RuntimeError):
    """The side environment or the checks could not be run (as opposed to: they found drift)."""


def check_version(version: str) -> str:
    """Return ``version`` if it names one torch release like ``2.14.1``.

    >>> check_version("2.14.1")
    '2.14.1'
    >>> check_version("2.14")
    Traceback (most recent call last):
    ...
    ValueError: torch version must look like 2.14.1 (major.minor.patch), got '2.14'
    """
    if not isinstance(version, str) or not _VERSION.match(version):
        raise ValueError(f"torch version must look like 2.14.1 (major.minor.patch), got {version!r}")
    return version


def cache_dir() -> Path:
    """Where side environments live: ``$FXGUIDE_CACHE`` or ``~/.cache/fxguide``."""
    return Path(os.environ.get("FXGUIDE_CACHE") or Path.home() / ".cache" / "fxguide")


def env_key(root: Path = ROOT) -> str:
    """A short hash of the pins (``constraints.txt`` + ``pyproject.toml``) a side environment follows.

    >>> len(env_key())
    12
    """
    digest = hashlib.sha256()
    for name in ("constraints.txt", "pyproject.toml"):
        path = Path(root) / name
        if not path.is_file():
            raise FileNotFoundError(f"env_key: {path} is missing; pass the repository root")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def side_constraints(constraints: str, torch_version: str) -> str:
    """``constraints`` (the text of constraints.txt) with torch pinned to ``torch_version`` instead.

    >>> side_constraints("numpy==2.4.6\\ntorch==2.13.0\\n", "2.14.1")
    'numpy==2.4.6\\ntorch==2.14.1\\n'
    """
    check_version(torch_version)
    if len(_TORCH_PIN.findall(constraints)) != 1:
        raise ValueError("side_constraints: constraints.txt must pin torch exactly once (a line 'torch==X.Y.Z')")
    return _TORCH_PIN.sub(f"torch=={torch_version}", constraints)


def venv_dir(torch_version: str, root: Path = ROOT) -> Path:
    """The side environment for ``torch_version`` under the current pins."""
    return cache_dir() / f"venv-torch-{check_version(torch_version)}-{env_key(root)}"


def _run(command: list[str], log: Path, **kwargs) -> None:
    started = time.monotonic()
    with log.open("a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, text=True, check=False, **kwargs)
    if done.returncode != 0:
        tail = "".join(log.read_text().splitlines(keepends=True)[-30:])
        hint = ""
        if "torch<=" in tail and "constraint" in tail:
            hint = ("\npip on this machine is capped by /etc/xdg/pip (it lists the torch releases on its disk); "
                    "`rm -r /etc/xdg/pip` lifts the cap and lets pip download newer releases.")
        raise DriftToolingError(f"{' '.join(command[:4])} ... failed (exit {done.returncode}); "
                                f"last lines of {log}:\n{tail}{hint}")
    print(f"  {' '.join(command[2:5])} ... {time.monotonic() - started:.0f} s", flush=True)


def ensure_venv(torch_version: str, root: Path = ROOT) -> Path:
    """The Python of a side environment with ``torch_version``, built on first use; reused after."""
    venv = venv_dir(torch_version, root)
    python = venv / "bin" / "python"
    stamp = venv / ".fxguide-installed"
    log = venv / "install.log"
    if not stamp.is_file():
        if venv.exists():
            shutil.rmtree(venv)  # a half-built environment from an interrupted run
        for old in venv.parent.glob(f"venv-torch-{torch_version}-*"):
            print(f"removing {old} (built for other pins; about 6 GB)", flush=True)
            shutil.rmtree(old)
        venv.mkdir(parents=True)
        print(f"building the side environment {venv} (torch {torch_version}; several GB) ...", flush=True)
        constraints = venv / "constraints.txt"
        constraints.write_text(side_constraints((Path(root) / "constraints.txt").read_text(), torch_version))
        base = getattr(sys, "_base_executable", sys.executable)
        _run([base, "-m", "venv", str(venv)], log)
        pip = [str(python), "-m", "pip", "install", "--quiet", "-c", str(constraints)]
        _run(pip + ["setuptools"], log)
        _run(pip + ["--no-build-isolation", "-e", ".[docs,test]", f"torch=={torch_version}"], log, cwd=root)
        stamp.write_text(str(Path(root).resolve()))
    elif stamp.read_text() != str(Path(root).resolve()):
        # Another clone built it: point the editable install at this one (the pins are the same).
        _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "-e", "."],
             log, cwd=root)
        stamp.write_text(str(Path(root).resolve()))
    found = subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True, check=False)
    if found.returncode != 0 or found.stdout.strip().split("+")[0] != torch_version:
        raise DriftToolingError(f"{venv} should hold torch {torch_version} but `import torch` gave "
                                f"{found.stdout.strip() or found.stderr.strip()[-2000:]}; delete it and retry")
    return python


def junit_results(junit: Path) -> list[dict[str, str]]:
    """Each test of a pytest ``--junitxml`` file with its outcome: passed, failed, error or skipped."""
    results = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome, detail = "passed", ""
        for kind in ("failure", "error", "skipped"):
            node = case.find(kind)
            if node is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[kind]
                detail = (node.get("message") or "").splitlines()[0][:300] if node.get("message") else ""
                break
        results.append({"test": f"{case.get('classname')}::{case.get('name')}", "outcome": outcome,
                        "detail": detail})
    return results


def _add_tests_to_report(report_dir: Path, results: list[dict[str, str]], seconds: float) -> None:
    data_path, md_path = report_dir / "report.json", report_dir / "report.md"
    data = json.loads(data_path.read_text())
    counts: dict[str, int] = {}
    for r in results:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    data["tests"] = {"summary": dict(sorted(counts.items())), "results": results}
    data["seconds"] = round(seconds)
    data_path.write_text(json.dumps(data, indent=1) + "\n")
    lines = ["", "## Unit tests and doctests", "",
             f"pytest (`-m 'not slow'`): " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())), ""]
    lines += [f"- `{r['test']}`: **{r['outcome']}** {r['detail']}".rstrip() for r in results
              if r["outcome"] not in {"passed", "skipped"}]
    md_path.write_text(md_path.read_text().rstrip("\n") + "\n" + "\n".join(lines).rstrip("\n") + "\n")


def run_drift(torch_version: str, root: Path = ROOT) -> Path:
    """Run every check against ``torch_version``; return the report folder."""
    check_version(torch_version)
    started = time.monotonic()
    root = Path(root).resolve()
    if torch_version == REFERENCE_TORCH:
        python = Path(sys.executable)
        print(f"torch {torch_version} is the reference: checking in the reference environment", flush=True)
    else:
        python = ensure_venv(torch_version, root)
    build = root / "_build" / f"drift-torch-{torch_version}"
    report_dir = root / "drift" / f"torch-{torch_version}"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(python.parent), env.get("PATH", "")])  # kernels run this Python

    print(f"[1/2] docs build and output check on torch {torch_version} ...", flush=True)
    check = subprocess.run([str(python), "-m", "fxsite.drift", "check", "--build-dir", str(build),
                            "--report", str(report_dir)], cwd=root, env=env, check=False)
    if check.returncode not in (0, 1) or not (report_dir / "report.json").is_file():
        raise DriftToolingError(f"the output check on torch {torch_version} did not produce a report "
                                f"(exit {check.returncode})")

    print(f"[2/2] unit tests and doctests on torch {torch_version} ...", flush=True)
    junit = build / "junit.xml"
    junit.unlink(missing_ok=True)
    test_env = {k: v for k, v in env.items() if k != "CI"}  # reuse the build step 1 just made
    test_env["FXGUIDE_BUILD_DIR"] = str(build)
    log = build / "pytest.log"
    with log.open("w") as out:  # the log, not the console: a drift run's failures are findings, not CI's verdict
        tests = subprocess.run([str(python), "-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider",
                                f"--junitxml={junit}"], cwd=root, env=test_env, check=False,
                               stdout=out, stderr=subprocess.STDOUT)
    if tests.returncode not in (0, 1) or not junit.is_file():
        raise DriftToolingError(f"pytest on torch {torch_version} did not run (exit {tests.returncode}); "
                                f"see {log}:\n{log.read_text()[-3000:]}")
    _add_tests_to_report(report_dir, junit_results(junit), time.monotonic() - started)
    return report_dir


def newest_torch() -> str:
    """The newest torch release pip would install on this machine, honouring its pip configuration.

    ``pip index versions torch`` lists releases without applying pip's constraints
    (a machine may cap torch at what lies on its disk); a dry-run install applies them.
    """
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
                           "--quiet", "--report", "-", "torch"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise DriftToolingError(f"pip could not tell the newest torch (exit {done.returncode}):\n{done.stderr[-2000:]}")
    (item,) = json.loads(done.stdout)["install"]
    return check_version(item["metadata"]["version"].split("+")[0])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--newest"]:
        try:
            print(newest_torch())
        except DriftToolingError as error:
            print(f"make drift: {error}", file=sys.stderr)
            return 2
        return 0
    if len(args) != 1:
        print("usage: python -m fxsite.drift.side_env TORCH_VERSION   (e.g. 2.14.1)\n"
              "       python -m fxsite.drift.side_env --newest  (print the newest torch pip would install)",
              file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        report_dir = run_drift(check_version(args[0]))
    except (DriftToolingError, ValueError, FileNotFoundError) as error:
        print(f"make drift: {error}", file=sys.stderr)
        return 2
    data = json.loads((report_dir / "report.json").read_text())
    print(f"\ndrift report for torch {args[0]} written to {report_dir.relative_to(ROOT)}/ "
          f"in {time.monotonic() - started:.0f} s")
    print("snippets: " + ", ".join(f"{n} {s}" for s, n in data["summary"].items()))
    print("tests: " + ", ".join(f"{n} {s}" for s, n in data["tests"]["summary"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
