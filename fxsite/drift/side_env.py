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
reference environment itself. Exit status: 0 when the report was written and
shows no drift; 1 when it was written and shows drift (an output that differs,
a test that fails); 2 when the check could not run, in which case no report is
written and a committed one stays as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable

from fxsite.drift.extract import ROOT
from fxsite.drift.report import REFERENCE_TORCH, check_version

# Bumped when the way a side environment is built changes, so that old ones are rebuilt.
_RECIPE = "2: torch libraries installed one by one"
_TORCH_PIN = re.compile(r"^torch==\S+$", re.MULTILINE)


class DriftToolingError(RuntimeError):
    """The side environment or the checks could not be run (as opposed to: they found drift)."""


def cache_dir() -> Path:
    """Where side environments live: ``$FXGUIDE_CACHE`` or ``~/.cache/fxguide``."""
    return Path(os.environ.get("FXGUIDE_CACHE") or Path.home() / ".cache" / "fxguide")


def env_key(root: Path = ROOT) -> str:
    """A short hash of what a side environment installs: the pins and fxguide's requirements.

    That is ``constraints.txt`` and the ``[project]`` table of ``pyproject.toml``
    (dependencies and extras), not the tools' settings in the rest of that file: a
    change of pytest's options must not rebuild an environment of several GB.

    >>> len(env_key())
    12
    """
    import tomllib

    digest = hashlib.sha256(_RECIPE.encode())
    for name in ("constraints.txt", "pyproject.toml"):
        path = Path(root) / name
        if not path.is_file():
            raise FileNotFoundError(f"env_key: {path} is missing; pass the repository root")
    digest.update((Path(root) / "constraints.txt").read_bytes())
    project = tomllib.loads((Path(root) / "pyproject.toml").read_text())["project"]
    digest.update(json.dumps(project, sort_keys=True).encode())
    return digest.hexdigest()[:12]


def companion_torchvision(torch_version: str) -> str:
    """The torchvision release line built for ``torch_version``: same major, minor + 15.

    >>> companion_torchvision("2.13.0"), companion_torchvision("2.15.0")
    ('0.28', '0.30')
    """
    major, minor, _ = (int(p) for p in check_version(torch_version).split("."))
    if major != 2:
        raise ValueError(f"companion_torchvision: only torch 2.x has a known torchvision line, got {torch_version}")
    return f"0.{minor + 15}"


def _pin_name(line: str) -> str:
    return re.split(r"[=<>!~\[; ]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")


def side_constraints(constraints: str, torch_version: str, *, follow_torch: frozenset[str] | set[str] = frozenset()
                     ) -> str:
    """``constraints`` (the text of constraints.txt) adapted to ``torch_version``.

    torch is pinned to ``torch_version``; torchvision to the release line built for
    it (its patch release left to pip); the packages of ``follow_torch`` (torch's own
    build dependencies: CUDA libraries, triton) lose their pins, since each torch
    build requires exact versions of its own. Everything else stays as pinned.

    >>> side_constraints("numpy==2.4.6\\ntorch==2.14.1\\ntorchvision==0.29.1\\ntriton==3.8.0\\n", "2.15.0",
    ...                  follow_torch={"triton"})
    'numpy==2.4.6\\ntorch==2.15.0\\ntorchvision==0.30.*\\n'
    """
    check_version(torch_version)
    if len(_TORCH_PIN.findall(constraints)) != 1:
        raise ValueError("side_constraints: constraints.txt must pin torch exactly once (a line 'torch==X.Y.Z')")
    follow = {name.lower().replace("_", "-") for name in follow_torch}
    lines = []
    for line in constraints.splitlines(keepends=True):
        name = _pin_name(line) if line.strip() and not line.lstrip().startswith("#") else ""
        if name == "torch":
            line = f"torch=={torch_version}\n"
        elif name == "torchvision":
            line = f"torchvision=={companion_torchvision(torch_version)}.*\n"
        elif name in follow:
            continue
        lines.append(line)
    return "".join(lines)


def conflicting_pins(constraints: str, requires: list[str]) -> set[str]:
    """The pinned packages whose pin another torch release rules out (``torch 2.11.0 depends on setuptools<82``).

    ``requires`` are that release's requirement strings; those guarded by a marker
    that does not hold here are ignored. A side environment leaves these packages to
    pip, as it does torch's build dependencies.

    >>> sorted(conflicting_pins("setuptools==84.2.1\\nsympy==1.14.0\\n", ["setuptools<82", "sympy>=1.13.3",
    ...                                                                  'pywin32; sys_platform == "win32"']))
    ['setuptools']
    """
    pins = {}
    for line in constraints.splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            pins[_pin_name(line)] = line.split("==", 1)[1].split(";")[0].strip()
    found = set()
    for text in requires:
        req = _requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = req.name.lower().replace("_", "-")
        if name in pins and not req.specifier.contains(pins[name], prereleases=True):
            found.add(name)
    return found


def release_requires(package: str, version: str) -> list[str]:
    """The requirement strings of one release on the package index, read without installing it."""
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
                           "--quiet", "--report", "-", f"{package}=={version}"], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise DriftToolingError(f"pip could not read the requirements of {package} {version} "
                                f"(exit {done.returncode}):\n{done.stderr[-2000:]}")
    (item,) = json.loads(done.stdout)["install"]
    return item["metadata"].get("requires_dist") or []


def _name(requirement: str) -> str:
    return _requirement(requirement).name.lower().replace("_", "-")


def _requirement(text: str):
    from packaging.requirements import Requirement

    return Requirement(text)


def torch_build_packages(requires: Callable[[str], list[str] | None]) -> set[str]:
    """The packages a torch build brings for its platform (CUDA libraries, triton), closed under their needs.

    ``requires(name)`` gives a distribution's requirement strings (``importlib.metadata.requires``
    of the reference environment). These are torch's requirements guarded by a
    platform marker, plus everything they need in turn (extras included); their
    versions follow the torch build, so a side environment must not pin them.

    >>> reqs = {"torch": ["sympy>=1.13", 'triton~=3.8.0; platform_system == "Linux"',
    ...                   'cuda-toolkit[cublas]==13.0.3; platform_system == "Linux"'],
    ...         "cuda-toolkit": ['nvidia-cublas==13.1; extra == "cublas"', 'nvidia-cufft; extra == "cufft"'],
    ...         "triton": [], "nvidia-cublas": []}
    >>> sorted(torch_build_packages(reqs.get))
    ['cuda-toolkit', 'nvidia-cublas', 'triton']
    """
    found: set[str] = set()
    todo = []
    for text in requires("torch") or []:
        req = _requirement(text)
        if req.marker is not None and "platform_system" in str(req.marker) and req.marker.evaluate({"extra": ""}):
            todo.append(req)
    while todo:
        req = todo.pop()
        name = req.name.lower().replace("_", "-")
        if name in found:
            continue
        found.add(name)
        for text in requires(name) or []:
            sub = _requirement(text)
            extras = req.extras or {""}
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in extras):
                todo.append(sub)
    return found


def extra_requirements(pyproject: str, extras: list[str]) -> list[str]:
    """The requirements ``pip install '.[extras]'`` asks for, with the project's own extras expanded.

    >>> text = ('[project]\\nname = "fxguide"\\ndependencies = ["torch>=2.5"]\\n'
    ...         '[project.optional-dependencies]\\nmodels = ["torchvision>=0.20", "timm>=1.0"]\\n'
    ...         'docs = ["fxguide[models]", "sphinx>=8"]\\n')
    >>> extra_requirements(text, ["docs"])
    ['torch>=2.5', 'torchvision>=0.20', 'timm>=1.0', 'sphinx>=8']
    """
    import tomllib

    project = tomllib.loads(pyproject)["project"]
    name, optional = project["name"].lower(), project.get("optional-dependencies", {})
    result: list[str] = list(project.get("dependencies", []))
    seen: set[str] = set()

    def add(extra: str) -> None:
        if extra in seen:
            return
        if extra not in optional:
            raise ValueError(f"extra_requirements: pyproject.toml has no extra {extra!r} (it has {sorted(optional)})")
        seen.add(extra)
        for text in optional[extra]:
            req = _requirement(text)
            if req.name.lower() == name:
                for sub in sorted(req.extras):
                    add(sub)
            elif text not in result:
                result.append(text)

    for extra in extras:
        add(extra)
    return result


def torch_libraries(requirements: list[str], requires: Callable[[str], list[str] | None]) -> list[str]:
    """The requirements that are libraries built against torch (they need torch, or one of these), in install order.

    A side environment tries each of them on its own: a torch build may have none
    it can import (a local CPU build beside PyPI's torchvision), or none released yet.

    >>> reqs = {"torchvision": ["torch (>=2.14.0)", "numpy"], "timm": ["torch", "torchvision", "pyyaml"],
    ...         "transformers": ["numpy", 'torch>=2.2; extra == "torch"'], "sphinx": ["docutils"]}
    >>> torch_libraries(["timm>=1.0", "sphinx>=8", "torchvision>=0.20", "transformers<4.58"], reqs.get)
    ['torchvision>=0.20', 'timm>=1.0']
    """
    by_name = {_name(r): r for r in requirements}
    needs = {name: {_name(t) for t in requires(name) or [] if _requirement(t).marker is None} for name in by_name}
    libs: set[str] = set()
    while grown := {n for n in by_name if n not in libs and needs[n] & ({"torch"} | libs)}:
        libs |= grown
    ordered: list[str] = []
    while len(ordered) < len(libs):  # each after the libraries it needs
        ordered += [n for n in by_name if n in libs and n not in ordered and needs[n] & libs <= set(ordered)]
    return [by_name[n] for n in ordered]


def dependents(library: str, libraries: list[str], requires: Callable[[str], list[str] | None]) -> list[str]:
    """The names among ``libraries`` that need ``library``, directly or through another.

    >>> dependents("torchvision", ["torchvision", "timm"], {"timm": ["torch", "torchvision"]}.get)
    ['timm']
    """
    names = [_name(r) for r in libraries]
    lost = {library.lower().replace("_", "-")}
    changed = True
    while changed:
        changed = False
        for name in names:
            if name not in lost and any(_name(t) in lost for t in requires(name) or []
                                        if _requirement(t).marker is None):
                lost.add(name)
                changed = True
    return [name for name in names if name in lost and name != library.lower().replace("_", "-")]


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
            hint = ("\npip on this machine is capped by a pip configuration file (`pip config debug` names it; "
                    "here /etc/xdg/pip lists the torch releases on the machine's disk): "
                    "`PIP_CONFIG_FILE=/dev/null make drift TORCH=...` lifts the cap for one run.")
        raise DriftToolingError(f"{' '.join(command[:4])} ... failed (exit {done.returncode}); "
                                f"last lines of {log}:\n{tail}{hint}")
    print(f"  {' '.join(command[2:5])} ... {time.monotonic() - started:.0f} s", flush=True)


def _reference_requires(name: str) -> list[str] | None:
    """A distribution's requirements in the environment running this (the reference one)."""
    import importlib.metadata as metadata

    try:
        return metadata.requires(name)
    except metadata.PackageNotFoundError:
        return None


def _module_of(requirement: str) -> str:
    """The module a library's distribution provides, as the guide imports it (``torchvision``, ``timm``)."""
    return _name(requirement).replace("-", "_")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def pip_error(text: str) -> str:
    """The line of pip's output that says why it failed (its first ``ERROR:``), else its last line.

    >>> pip_error("Collecting x\\nERROR: Cannot install x because of conflicts.\\nERROR: ResolutionImpossible: see")
    'ERROR: Cannot install x because of conflicts.'
    """
    errors = [line.strip() for line in text.splitlines() if line.strip().startswith("ERROR:")]
    return errors[0][:300] if errors else _last_line(text)


UNAVAILABLE = ".fxguide-unavailable.json"


def unavailable_libraries(python: Path) -> dict[str, str]:
    """What a side environment could not install: library name -> why (read from the environment)."""
    path = Path(python).parent.parent / UNAVAILABLE
    return json.loads(path.read_text()) if path.is_file() else {}


def _install_torch_libraries(python: Path, constraints: Path, torch_version: str, libraries: list[str],
                             log: Path, root: Path,
                             requires: Callable[[str], list[str] | None] = _reference_requires) -> dict[str, str]:
    """Install each library built against torch on its own; return those that cannot be installed or imported.

    ``requires`` gives each library's requirements (to skip those needing one that failed).
    """
    unavailable: dict[str, str] = {}
    names = [_name(r) for r in libraries]
    for requirement, name in zip(libraries, names):
        if name in unavailable:
            continue
        reason = ""
        try:
            _run([str(python), "-m", "pip", "install", "--quiet", "-c", str(constraints), requirement], log, cwd=root)
        except DriftToolingError as error:
            pins = [line.strip() for line in Path(constraints).read_text().splitlines() if _pin_name(line) == name]
            reason = (f"not installable with torch {torch_version} (pip: {pip_error(str(error)).rstrip('.')}"
                      + (f"; constraint {pins[0]}" if pins else "") + ")")
        else:
            probe = subprocess.run([str(python), "-c", f"import {_module_of(requirement)}"], capture_output=True,
                                   text=True, check=False)
            if probe.returncode != 0:
                reason = f"not installable with torch {torch_version} (import fails: {_last_line(probe.stderr)})"
                _run([str(python), "-m", "pip", "uninstall", "--quiet", "-y", name], log)
        if reason:
            print(f"  {name}: {reason}", flush=True)
            unavailable[name] = reason
            for other in dependents(name, libraries, requires):
                unavailable.setdefault(other, f"needs {name}, which is {reason}")
    return unavailable


def _index_only_env() -> dict[str, str]:
    """The environment for a pip that installs from the package index alone (no local wheel folder)."""
    env = {k: v for k, v in os.environ.items() if k != "PIP_FIND_LINKS"}
    return {**env, "PIP_CONFIG_FILE": os.devnull}


def _torch_version(python: Path) -> subprocess.CompletedProcess:
    """``torch.__version__`` as the environment of ``python`` prints it (the process, for its errors)."""
    return subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True, check=False)


def _use_the_index_torch(python: Path, constraints: Path, torch_version: str, log: Path, root: Path) -> None:
    """Replace a local torch build (``2.13.0+cpu`` from a wheel folder) with the package index's build.

    PyPI's torchvision and timm are built against PyPI's torch: beside another build
    of the same release their compiled operators do not load (``operator
    torchvision::nms does not exist``). A machine whose pip finds a local wheel first
    gets that build; the index's one is installed in its place. PyPI's own Linux builds
    carry a CUDA tag (``2.11.0+cu130``): those are the index's build already, kept as they are.
    """
    found = _torch_version(python).stdout.strip()
    if "+" not in found or found.split("+", 1)[1].startswith("cu"):
        return
    print(f"  torch {found} is a local build: installing the package index's torch {torch_version} "
          "(the build torchvision and timm are made for)", flush=True)
    _run([str(python), "-m", "pip", "install", "--quiet", "--force-reinstall", "-c", str(constraints),
          f"torch=={torch_version}"], log, cwd=root, env=_index_only_env())


#: The free space a side environment is built in: about 6 GB when built, and pip's downloads and unpacking beside it.
SIDE_ENV_ROOM = 10 * 2**30


def _check_room(venv: Path) -> None:
    """Refuse to start a build that would fill the disk half-way (pip's "No space left on device", a broken
    environment, and every other process on the machine failing with it)."""
    where = next(p for p in (venv, *venv.parents) if p.exists())
    free = shutil.disk_usage(where).free
    if free < SIDE_ENV_ROOM:
        raise DriftToolingError(
            f"building the side environment {venv} needs about {SIDE_ENV_ROOM / 2**30:.0f} GB free; {where} has "
            f"{free / 2**30:.1f} GB. Free some (side environments of other releases in {venv.parent}, "
            f"Inductor's caches in {tempfile.gettempdir()}/torchinductor_*), or set "
            f"FXGUIDE_CACHE to a folder on a disk with room")


def ensure_venv(torch_version: str, root: Path = ROOT) -> Path:
    """The Python of a side environment with ``torch_version``, built on first use; reused after.

    Everything is installed as pinned in ``constraints.txt`` (see :func:`side_constraints`),
    except the libraries built against torch (torchvision, timm): each is installed
    and imported on its own, and one that fails is left out and listed in
    ``<venv>/.fxguide-unavailable.json`` with the reason, for the report to say which
    pages and tests it kept from running.
    """
    venv = venv_dir(torch_version, root)
    python = venv / "bin" / "python"
    stamp = venv / ".fxguide-installed"
    log = venv / "install.log"
    if not stamp.is_file():
        if venv.exists():
            shutil.rmtree(venv)  # a half-built environment from an interrupted run
        for old in venv.parent.glob(f"venv-torch-{torch_version}-*"):
            print(f"removing {old} (built for other pins; about 6 GB)", file=sys.stderr, flush=True)
            shutil.rmtree(old)
        _check_room(venv)
        venv.mkdir(parents=True)
        print(f"building the side environment {venv} (torch {torch_version}; several GB) ...", file=sys.stderr, flush=True)
        constraints = venv / "constraints.txt"
        pinned = (Path(root) / "constraints.txt").read_text()
        follow = torch_build_packages(_reference_requires) | conflicting_pins(
            pinned, release_requires("torch", torch_version))
        constraints.write_text(side_constraints(pinned, torch_version, follow_torch=follow))
        requirements = extra_requirements((Path(root) / "pyproject.toml").read_text(), ["docs", "test"])
        libraries = torch_libraries(requirements, _reference_requires)
        base = getattr(sys, "_base_executable", sys.executable)
        _run([base, "-m", "venv", str(venv)], log)
        pip = [str(python), "-m", "pip", "install", "--quiet", "-c", str(constraints)]
        _run(pip + ["setuptools"], log)
        # fxguide's own torch range is left out: a release outside it is what a drift check may be asked about
        # (the package warns at import there), so torch is pinned alone and fxguide installed without deps.
        _run(pip + [f"torch=={torch_version}",
                    *[r for r in requirements if r not in libraries and _name(r) != "torch"]], log, cwd=root)
        # Built in isolation: the environment's setuptools follows that torch (2.11 needs <82), and an
        # older one rejects this pyproject's licence field.
        _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "-e", "."], log, cwd=root)
        if libraries:
            _use_the_index_torch(python, constraints, torch_version, log, root)
        unavailable = _install_torch_libraries(python, constraints, torch_version, libraries, log, root)
        (venv / UNAVAILABLE).write_text(json.dumps(unavailable, indent=1, sort_keys=True) + "\n")
        stamp.write_text(str(Path(root).resolve()))
    elif stamp.read_text() != str(Path(root).resolve()):
        # Another clone built it: point the editable install at this one (the pins are the same).
        _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "-e", "."], log, cwd=root)
        stamp.write_text(str(Path(root).resolve()))
    found = _torch_version(python)
    if found.returncode != 0 or found.stdout.strip().split("+")[0] != torch_version:
        raise DriftToolingError(f"{venv} should hold torch {torch_version} but `import torch` gave "
                                f"{found.stdout.strip() or found.stderr.strip()[-2000:]}; delete it and retry")
    return python


def junit_results(junit: Path, unavailable: dict[str, str] | None = None) -> list[dict[str, str]]:
    """Each test of a pytest ``--junitxml`` file with its outcome: passed, failed, error, skipped or xfailed.

    JUnit has no expected failure: pytest writes one as ``skipped`` of type ``pytest.xfail``,
    and it is reported as ``xfailed`` here, so a real skip is not counted with them.

    A test that failed only because it imports a library of ``unavailable`` (library -> why)
    gets the outcome ``not run`` and says which library, instead of counting as a failure.
    """
    results = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome, detail = "passed", ""
        for kind in ("failure", "error", "skipped"):
            node = case.find(kind)
            if node is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[kind]
                if kind == "skipped" and node.get("type") == "pytest.xfail":
                    outcome = "xfailed"
                detail = (node.get("message") or "").splitlines()[0][:300] if node.get("message") else ""
                if outcome not in {"skipped", "xfailed"}:
                    for lib, why in (unavailable or {}).items():
                        module = lib.lower().replace("-", "_")
                        if re.search(rf"No module named '{re.escape(module)}[.']",
                                     f"{node.get('message') or ''}\n{node.text or ''}"):
                            outcome, detail = "not run", f"needs {lib}, {why}"
                            break
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
             f"pytest (`-m 'not slow'`): " + (", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
                                             or "not run in this check (`--outputs-only`)"), ""]
    # Every test that did not pass is named, skipped and expected failures included.
    lines += [f"- `{r['test']}`: **{r['outcome']}** {r['detail']}".rstrip() for r in results
              if r["outcome"] != "passed"]
    md_path.write_text(md_path.read_text().rstrip("\n") + "\n" + "\n".join(lines).rstrip("\n") + "\n")


def found_drift(report: dict) -> bool:
    """Whether a finished report shows drift: a snippet that differs, or a test that failed.

    Snippets and tests that could not run for want of a library the torch cannot install are not drift.

    >>> found_drift({"summary": {"same": 3, "missing library": 2}, "tests": {"summary": {"passed": 9, "not run": 1}}})
    False
    >>> found_drift({"summary": {"same": 3, "changed": 1}, "tests": {"summary": {"passed": 9}}})
    True
    """
    from fxsite.drift.compare import DRIFT

    tests = report.get("tests", {}).get("summary", {})
    return any(report["summary"].get(s) for s in DRIFT) or bool(tests.get("failed") or tests.get("error"))


def publish(staged: Path, final: Path) -> None:
    """Move a finished report (``report.json``, ``report.md``) from ``staged`` into ``final``.

    Each file replaces the committed one in a single rename, and only once the whole
    report is finished: a run that fails on the way leaves the committed report as it was.
    """
    staged, final = Path(staged), Path(final)
    names = ("report.json", "report.md")
    missing = [n for n in names if not (staged / n).is_file()]
    if missing:
        raise DriftToolingError(f"the report in {staged} is unfinished (no {', '.join(missing)}); "
                                f"{final} was left as it was")
    final.mkdir(parents=True, exist_ok=True)
    for name in names:
        temporary = final / f".{name}.new"
        shutil.copyfile(staged / name, temporary)
        os.replace(temporary, final / name)


def run_drift(torch_version: str, root: Path = ROOT, tests: bool = True) -> Path:
    """Run every check against ``torch_version``; return the report folder.

    Without ``tests``, only the docs build and output check (CI's quick look at the newest
    release): the report says the unit tests were not run.

    The report is written in the build folder and moved into ``drift/torch-<version>/``
    only when both steps finished (:func:`publish`); on any failure the committed
    report stays untouched and :class:`DriftToolingError` says what failed.
    """
    check_version(torch_version)
    started = time.monotonic()
    root = Path(root).resolve()
    if torch_version == REFERENCE_TORCH:
        python = Path(sys.executable)
        print(f"torch {torch_version} is the reference: checking in the reference environment", flush=True)
        unavailable: dict[str, str] = {}
    else:
        python = ensure_venv(torch_version, root)
        unavailable = unavailable_libraries(python)
    for lib, why in unavailable.items():
        print(f"  {lib}: {why} (pages, examples and tests that need it are reported as not run)", flush=True)
    build = root / "_build" / f"drift-torch-{torch_version}"
    staged = build / "report"
    report_dir = root / "drift" / f"torch-{torch_version}"
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(parents=True)
    (staged / "unavailable.json").write_text(json.dumps(unavailable))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(python.parent), env.get("PATH", "")])  # kernels run this Python

    print(f"[1/2] docs build and output check on torch {torch_version} ...", flush=True)
    check = subprocess.run([str(python), "-m", "fxsite.drift", "check", "--build-dir", str(build),
                            "--report", str(staged), "--unavailable", str(staged / "unavailable.json")],
                           cwd=root, env=env, check=False)
    if check.returncode not in (0, 1) or not (staged / "report.json").is_file():
        raise DriftToolingError(f"the output check on torch {torch_version} could not run (exit {check.returncode}; "
                                f"its messages are above); {report_dir} was left as it was")

    if not tests:
        _add_tests_to_report(staged, [], time.monotonic() - started)
        publish(staged, report_dir)
        return report_dir
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
                                f"{report_dir} was left as it was; see {log}:\n{log.read_text()[-3000:]}")
    _add_tests_to_report(staged, junit_results(junit, unavailable), time.monotonic() - started)
    publish(staged, report_dir)
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


EXIT_SAME, EXIT_DRIFT, EXIT_COULD_NOT_RUN = 0, 1, 2


def run_survey(torch_version: str, root: Path = ROOT) -> int:
    """Run the whole model-zoo survey (:mod:`fxsite.survey`) on ``torch_version``; return its exit status.

    It writes ``drift/torch-<version>/survey.json`` beside the drift report. The
    reference torch runs it in this environment, another torch in its side environment.
    """
    python = sys.executable if torch_version == REFERENCE_TORCH else str(ensure_venv(torch_version, root))
    print(f"model-zoo survey on torch {torch_version} (takes hours on 2 cores; see `make survey`) ...", flush=True)
    return subprocess.run([python, "-m", "fxsite.survey"], cwd=root, check=False).returncode


def refresh_reports(root: Path = ROOT) -> int:
    """Bring every committed report but the reference's up to date with today's outputs (``--outputs-only`` each).

    Each release's build folder and execution cache stay in the checkout's ``_build`` and its side
    environment in the cache: after a change, only what changed runs again (a page whose code
    changed, everything after a change of ``fxguide``). The gallery scripts write into the checkout's
    shared ``docs/gallery``, so each release's build after another's runs them all again: one to two
    minutes per release where nothing else changed. Exit 0 when every report was written (drift or
    not), 2 when one could not be (the others are still refreshed; that one is left as it was).
    """
    from fxsite.drift.compat import load_reports

    versions = [r["torch"] for r in load_reports(Path(root) / "drift") if r["torch"] != REFERENCE_TORCH]
    if not versions:
        print("make drift: no committed report besides the reference's: nothing to refresh")
        return EXIT_SAME
    failed = []
    for version in versions:
        started = time.monotonic()
        print(f"refreshing the report of torch {version} (outputs only) ...", flush=True)
        try:
            run_drift(version, root, tests=False)
        except (DriftToolingError, ValueError, OSError) as error:
            print(f"make drift: the report of torch {version} could not be refreshed: {error}", file=sys.stderr)
            failed.append(version)
            continue
        print(f"torch {version}: refreshed in {time.monotonic() - started:.0f} s", flush=True)
    if failed:
        print(f"make drift: not refreshed: torch {', '.join(failed)} (their committed reports are unchanged)",
              file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    return EXIT_SAME


def main(argv: list[str] | None = None) -> int:
    """Exit 0: report written, no drift; 1: report written, drift found; 2: could not run, nothing written.

    ``--survey`` after the version runs the model-zoo survey first, so that the report's tests
    (the survey sample among them) compare with the survey just made, not with an older one.
    """
    args = sys.argv[1:] if argv is None else argv
    survey = "--survey" in args[1:]
    outputs_only = "--outputs-only" in args[1:]
    args = [a for a in args if a not in ("--survey", "--outputs-only")]
    if args[:1] == ["--python"] and len(args) == 2:
        try:  # the interpreter to run anything else on that torch (a survey shard, say)
            print(sys.executable if args[1] == REFERENCE_TORCH else ensure_venv(check_version(args[1]), ROOT))
        except (DriftToolingError, ValueError, OSError) as error:
            print(f"make drift: could not make the environment of torch {args[1]}: {error}", file=sys.stderr)
            return EXIT_COULD_NOT_RUN
        return EXIT_SAME
    if args == ["--newest"]:
        try:
            print(newest_torch())
        except DriftToolingError as error:
            print(f"make drift: could not run: {error}", file=sys.stderr)
            return EXIT_COULD_NOT_RUN
        return EXIT_SAME
    if args == ["--refresh"]:
        return refresh_reports()
    if len(args) != 1 or args[0] in ("-h", "--help"):
        asked = args in (["-h"], ["--help"])
        print("usage: python -m fxsite.drift.side_env TORCH_VERSION [--survey] [--outputs-only]  (e.g. 2.14.1)\n"
              "       python -m fxsite.drift.side_env --refresh  (every committed report but the reference's, "
              "outputs only)\n"
              "       python -m fxsite.drift.side_env --newest  (print the newest torch pip would install)\n"
              "       python -m fxsite.drift.side_env --python TORCH_VERSION  (print that torch's interpreter)\n"
              "exit status: 0 no drift, 1 drift found (both write the report), 2 could not run (nothing written)",
              file=sys.stdout if asked else sys.stderr)
        return EXIT_SAME if asked else EXIT_COULD_NOT_RUN
    started = time.monotonic()
    survey_failed = False
    if survey:
        try:
            survey_failed = run_survey(check_version(args[0])) != 0
        except (DriftToolingError, ValueError, OSError) as error:
            print(f"make drift: the model-zoo survey could not run on torch {args[0]}: {error}", file=sys.stderr)
            survey_failed = True
    try:
        report_dir = run_drift(check_version(args[0]), tests=not outputs_only)
        data = json.loads((report_dir / "report.json").read_text())
    except (DriftToolingError, ValueError, OSError) as error:
        if not isinstance(error, DriftToolingError):  # not the tooling's own words: say where it came from
            traceback.print_exc()
        print(f"make drift: the check could not run on torch {args[0]}: {error}\n"
              f"make drift: no report was written (a committed one is unchanged)", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    print(f"\ndrift report for torch {args[0]} written to {report_dir.relative_to(ROOT)}/ "
          f"in {time.monotonic() - started:.0f} s")
    print("snippets: " + ", ".join(f"{n} {s}" for s, n in data["summary"].items()))
    print("tests: " + ", ".join(f"{n} {s}" for s, n in data["tests"]["summary"].items()))
    for lib, why in data.get("unavailable", {}).items():
        print(f"not installed: {lib}, {why}")
    if survey_failed:
        print(f"make drift: the model-zoo survey could not finish on torch {args[0]} (the drift report is written)",
              file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    if found_drift(data):
        print(f"make drift: the check ran and found drift on torch {args[0]} (exit {EXIT_DRIFT}); "
              f"see {report_dir.relative_to(ROOT)}/report.md")
        return EXIT_DRIFT
    print(f"make drift: no drift on torch {args[0]}")
    return EXIT_SAME


if __name__ == "__main__":
    sys.exit(main())
