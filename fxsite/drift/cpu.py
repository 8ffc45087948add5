"""The site built again on other CPU kernels and thread counts: no output may move.

torch picks its CPU kernels when it starts (``ATEN_CPU_CAPABILITY``: ``default``,
``avx2``, ``avx512`` on x86-64; Inductor compiles its generated code for the same
vector width) and splits work over ``OMP_NUM_THREADS`` threads. Both change how
floating-point sums are ordered, so a value printed at rounding level (a difference
from eager, an error against a float64 reference) is a property of the recording
machine, not of torch. Every output the site shows must be the same under any of
them; this module builds a copy of the checkout under another setting and compares
what it shows with the recorded expectations (``tests/expected``), cell by cell.

``python -m fxsite.drift.cpu`` (or ``--capability avx2 --threads 2``, any setting) does it from the
command line (exit 0: every output the same, 1: some moved, 2: could not run).
``make test`` (``tests/test_cpu_independence.py``) pays for no second build of the pages: each page
runs there once anyway, as the notebook a reader downloads, and that run is made under the other
setting and compared (:func:`moved_in_notebook`); only the gallery scripts run in a copy built
with ``build_under(..., pages=False)``.

Why one extra build and not every combination: the main build already runs with
the machine's best capability and its own thread count; one build that changes
both (the ``default`` kernels, and the other thread count) differs from it in each
setting, so an output that depends on either moves. (Two differences could in
principle cancel out in one value; the command runs any other combination by hand,
and the closing notes of the work that added it list the combinations run.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from fxsite import ROOT

CAPABILITIES = ("default", "avx2", "avx512", "sve128", "sve256", "zvector")
"""The values ``ATEN_CPU_CAPABILITY`` takes (x86-64: ``avx2``, ``avx512``; ARM: ``sve*``; s390x: ``zvector``)."""


@dataclass(frozen=True)
class Setting:
    """One CPU setting a build runs under: the kernels torch may use and its thread count.

    >>> str(Setting("avx2", 2))
    'ATEN_CPU_CAPABILITY=avx2 OMP_NUM_THREADS=2'
    >>> Setting("sse", 1)
    Traceback (most recent call last):
    ...
    ValueError: Setting: capability must be one of default, avx2, avx512, sve128, sve256, zvector, got 'sse'
    """

    capability: str
    threads: int

    def __post_init__(self) -> None:
        if self.capability not in CAPABILITIES:
            raise ValueError(f"Setting: capability must be one of {', '.join(CAPABILITIES)}, got "
                             f"{self.capability!r}")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise ValueError(f"Setting: threads must be a positive int, got {self.threads!r}")

    @property
    def env(self) -> dict[str, str]:
        """The variables that select it; torch reads them when it starts."""
        return {"ATEN_CPU_CAPABILITY": self.capability, "OMP_NUM_THREADS": str(self.threads)}

    def __str__(self) -> str:
        return f"ATEN_CPU_CAPABILITY={self.capability} OMP_NUM_THREADS={self.threads}"


def torch_reads(env: dict[str, str] | None = None) -> Setting:
    """The kernels and thread count torch picks in a fresh process started with ``env`` (default: this one's)."""
    code = "import torch; print(torch.backends.cpu.get_cpu_capability().lower(), torch.get_num_threads())"
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ) if env is None else env,
                         capture_output=True, text=True, check=True)
    capability, threads = out.stdout.split()
    return Setting(capability, int(threads))


def other_setting() -> Setting:
    """The setting the test builds under, other than this process's in both respects where the machine allows.

    The kernels: ``default`` (the baseline every CPU runs), or the machine's best when this process
    already runs ``default``. The threads: 1, or 2 when this process runs one.
    """
    now = torch_reads()
    if now.capability != "default":
        capability = "default"
    else:
        capability = torch_reads({k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}).capability
    return Setting(capability, 1 if now.threads > 1 else 2)


def checkout_files(root: Path = ROOT) -> list[str]:
    """The files a clean clone of ``root`` would hold, plus new files git does not ignore (a writer's own)."""
    if shutil.which("git") is None:
        raise RuntimeError("fxsite.drift.cpu: needs git to list the checkout's files; install git "
                           "(e.g. sudo apt-get install git)")
    done = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"fxsite.drift.cpu: {root} is not a git checkout ({done.stderr.decode().strip()}); "
                           "run it from a clone of the repository")
    return [name for name in done.stdout.decode().split("\0") if name and (root / name).is_file()]


def copy_checkout(dest: Path, root: Path = ROOT) -> Path:
    """Copy the checkout's files into ``dest`` (emptied first); returns ``dest``.

    A copy, because sphinx-gallery writes its pages into the source tree (``docs/gallery``):
    two builds of one tree would overwrite each other's examples.
    """
    dest, root = Path(dest).resolve(), Path(root).resolve()
    if dest == root or root in dest.parents and not dest.is_relative_to(root / "_build"):
        raise ValueError(f"copy_checkout: {dest} must be outside the checkout (or inside its _build folder)")
    keep = dest / ".jupyter_cache"  # a previous copy's execution cache: keyed on code and environment
    cache = None
    if keep.is_dir():
        cache = dest.parent / (dest.name + ".cache")
        shutil.rmtree(cache, ignore_errors=True)
        keep.rename(cache)
    shutil.rmtree(dest, ignore_errors=True)
    for name in checkout_files(root):
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    if cache is not None:
        cache.rename(keep)
    return dest


def build_under(setting: Setting, site: Path, *, force: bool | None = None,
                pages: bool = True) -> subprocess.CompletedProcess[str]:
    """Build the copy ``site`` into ``site/_build`` under ``setting``, with a kernel server of its own.

    ``pages=False`` runs the gallery scripts only (the pages are read, not executed): ``make test``
    runs each page under the other setting as the notebook a reader downloads
    (``tests/test_notebooks.py``), and compares it with :func:`moved_in_notebook`.

    Inductor's compiled code is cached in ``site/_build/inductor-cache``: torch 2.14's cache key
    leaves out the vector width ``ATEN_CPU_CAPABILITY`` makes Inductor compile for, so code cached
    under one setting and loaded under another computes garbage (``fxsite.sphinx.fingerprint.inductor_cache_dir``).
    """
    from fxsite.drift.build import SERVER_ENV, build_docs

    site = Path(site).resolve()
    # SERVER_ENV removed: a shared server was started under this process's settings, and its forks keep them
    env = {**setting.env, "TORCHINDUCTOR_CACHE_DIR": str(site / "_build" / "inductor-cache"), SERVER_ENV: None}
    return build_docs(site / "_build", force=force, cwd=site, env=env,
                      settings=None if pages else {"nb_execution_mode": "off"})


def moved(site: Path, setting: Setting, sources: list[str] | None = None) -> dict[str, list[str]]:
    """Per page or script of the copy ``site`` (built by :func:`build_under`): what differs from its recording.

    Each message names the cell, the setting, and gives the diff. Sources whose outputs equal
    their recording are left out; ``sources`` limits the comparison (paths relative to the checkout).
    """
    from fxsite.drift import snapshots
    from fxsite.drift.compare import SAME, compare
    from fxsite.drift.extract import gallery_snippets, page_snippets, page_sources, gallery_sources

    torch_version = f"{_torch_version()} under {setting}"
    site = Path(site).resolve()
    found: dict[str, list[str]] = {}
    pages = [p for p in page_sources() if sources is None or str(p.relative_to(ROOT)) in sources]
    scripts = [p for p in gallery_sources() if sources is None or str(p.relative_to(ROOT)) in sources]
    for path in pages + scripts:
        name = str(path.relative_to(ROOT))
        copy = site / name
        if path.suffix == ".md":
            snippets = page_snippets(copy, site / "_build", root=site)
        else:
            snippets = gallery_snippets(copy, root=site)
        findings = [f for f in compare(name, snapshots.load(name), snippets, torch_version) if f.status != SAME]
        if findings:
            found[name] = [f.message for f in findings]
    return found


def moved_in_notebook(page: str, notebook: dict, setting: Setting) -> list[str]:
    """What differs from the recording of ``page`` (a path relative to the checkout) in ``notebook``:
    its code cells executed under ``setting``, in order, paths as this checkout's (a reader's download,
    without its install cell). One message per cell that differs; empty when every output is the same.
    """
    from fxsite.drift import snapshots
    from fxsite.drift.compare import SAME, compare
    from fxsite.drift.extract import notebook_snippets

    where = f"the notebook of {page} run under {setting}"
    snippets = notebook_snippets(ROOT / page, notebook, ROOT, where=where)
    return [f.message for f in compare(page, snapshots.load(page), snippets, f"{_torch_version()} under {setting}")
            if f.status != SAME]


def _torch_version() -> str:
    import torch

    return torch.__version__.split("+")[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fxsite.drift.cpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--capability", choices=CAPABILITIES, default=None,
                        help="default: as other_setting() picks (the baseline kernels, or the best if this runs them)")
    parser.add_argument("--threads", type=int, default=None, help="default: 1, or 2 where torch runs one thread")
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "cpu-check",
                        help="where the copy is built (default: _build/cpu-check)")
    parser.add_argument("--page", action="append", default=None, help="compare this page or script only")
    args = parser.parse_args(argv)
    args.site = args.site.resolve()
    other = other_setting() if args.capability is None or args.threads is None else None
    setting = Setting(args.capability or other.capability, args.threads or other.threads)
    print(f"building a copy of the checkout in {args.site} under {setting}", flush=True)
    done = build_under(setting, copy_checkout(args.site))
    if done.returncode != 0:
        print(done.stdout[-5000:])
        print(f"the build under {setting} failed (exit {done.returncode}); the compared outputs below "
              "may name the cell", file=sys.stderr)
    try:
        found = moved(args.site, setting, args.page)
    except (FileNotFoundError, ValueError) as error:
        print(f"could not compare: {error}", file=sys.stderr)
        return 2
    for messages in found.values():
        print("\n\n".join(messages), end="\n\n")
    cells = sum(len(messages) for messages in found.values())
    print(f"{cells} outputs in {len(found)} pages or scripts differ from their recording under {setting}"
          if found else f"every output equals its recording under {setting}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
