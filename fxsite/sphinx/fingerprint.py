"""Cache keys for the docs build: what must change for cached output to be stale."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path


def torch_version() -> str:
    """The installed torch's version (``2.13.0+cpu``), read from its metadata: importing
    torch costs a second that a no-op rebuild would otherwise spend on this one string.

    The release part always agrees with ``torch.__version__``; the local tag may not
    (PyPI's ``2.14.1`` wheel says ``2.14.1+cu130`` once imported).

    >>> import torch
    >>> torch_version().split("+")[0] == torch.__version__.split("+")[0]
    True
    """
    return metadata.version("torch")


# Variables read once, when Python or torch (and its OpenMP, MKL and oneDNN) start. ATEN_CPU_CAPABILITY picks
# torch's CPU kernels, OMP_NUM_THREADS its thread count, PYTHONHASHSEED the order of sets of strings.
IMPORT_TIME_PREFIXES = ("ATEN_", "OMP_", "KMP_", "GOMP_", "MKL_", "ONEDNN_", "DNNL_", "TORCH_", "PYTORCH_",
                        "CUDA_", "PYTHONHASHSEED", "PYTHONMALLOC", "PYTHONWARNINGS", "LD_PRELOAD", "LD_LIBRARY_PATH")


def import_time_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of ``env`` (default: this process's) that take effect when Python or torch starts.

    They key the execution caches (:func:`environment`), and a warm kernel server
    (:mod:`fxsite.sphinx.warm_kernels`) forks a kernel only for a launcher whose reading
    equals its own: a fork keeps the server's CPU kernels, thread count and hash seed.

    >>> import_time_env({"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1", "HOME": "/root"})
    {'ATEN_CPU_CAPABILITY': 'default', 'OMP_NUM_THREADS': '1'}
    """
    env = os.environ if env is None else env
    return {k: v for k, v in sorted(env.items()) if k.startswith(IMPORT_TIME_PREFIXES)}


def inductor_cache_dir(env: Mapping[str, str] | None = None) -> str | None:
    """Where Inductor should cache compiled code under ``env``'s start-up settings, or None for its default.

    torch 2.14's FX graph cache keys its entries on the graph, the inputs and Inductor's config,
    but not on the vector width Inductor compiles for, which ``ATEN_CPU_CAPABILITY`` (or the
    machine) decides: code generated for 16 lanes under AVX-512, loaded under ``avx2`` (8 lanes),
    leaves half of every output uncomputed. So a process started with CPU settings of its own
    gets a cache folder of its own, named after them; one that sets ``TORCHINDUCTOR_CACHE_DIR``
    itself keeps it.

    >>> inductor_cache_dir({"ATEN_CPU_CAPABILITY": "avx2", "TMPDIR": "/scratch"})
    '/scratch/torchinductor-ATEN_CPU_CAPABILITY=avx2'
    >>> inductor_cache_dir({"HOME": "/root"}) is None
    True
    """
    env = os.environ if env is None else env
    if env.get("TORCHINDUCTOR_CACHE_DIR"):
        return None
    settings = {k: v for k, v in import_time_env(env).items() if k.startswith(("ATEN_", "ONEDNN_", "DNNL_"))}
    if not settings:
        return None
    name = ",".join(f"{k}={v}" for k, v in settings.items())
    return os.path.join(env.get("TMPDIR") or tempfile.gettempdir(), "torchinductor-" + name)


def environment() -> list[str]:
    """Every installed distribution as ``name==version``, sorted, plus the Python version and the
    start-up settings of :func:`import_time_env`.

    Any of them can shape what a page prints (tabulate lays out tables, numpy and
    sympy print numbers and symbols, the Python version words error messages, a CPU
    capability picks other kernels), so all of them key the execution caches, not only torch.

    >>> env = environment()
    >>> env[0].startswith("python==") and any(line.startswith("torch==") for line in env)
    True
    """
    names = {}
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name:
            names[name] = dist.version
    python = ".".join(map(str, sys.version_info[:3])) + f" {sys.implementation.name} {sys.platform}"
    settings = [f"env:{name}={value}" for name, value in import_time_env().items()]
    return [f"python=={python}"] + sorted(f"{name}=={version}" for name, version in names.items()) + settings


def forced_execution() -> bool:
    """Whether this build must execute every page and example, cached or not: in CI
    (``CI`` set to 1, true or yes) or when asked with ``FXGUIDE_EXECUTE=force``."""
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"} or os.environ.get("FXGUIDE_EXECUTE") == "force"


SOURCES = ("fxguide", "fxsite/sphinx")
"""What of the repository shapes executed output: the reader's package and the Sphinx extensions."""



def fingerprint(root: Path) -> str:
    """Return a short key naming torch's version and hashing the whole environment.

    Execution caches are stored under this key, so installing, upgrading or
    removing any package (:func:`environment`), changing the Python version,
    or editing any module of ``fxguide`` or of the site's Sphinx extensions
    re-executes every page and example. Data that a page's cells read (the
    model-zoo surveys) re-executes that page alone: the page declares it
    (:func:`fxsite.sphinx.prerun.declared_reads`).

    >>> key = fingerprint(Path(__file__).parents[2])
    >>> key.startswith("torch" + torch_version().split("+")[0].replace(".", "_"))
    True
    """
    root = Path(root)
    for folder in SOURCES:
        if not (root / folder).is_dir():
            raise FileNotFoundError(f"fingerprint: {root / folder} is not a directory; pass the repository root")
    digest = hashlib.sha256("\n".join(environment()).encode())
    for folder in SOURCES:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in {".py", ".html"} and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode())
                digest.update(path.read_bytes())
    version = torch_version().split("+")[0].replace(".", "_")
    return f"torch{version}-{digest.hexdigest()[:12]}"


STAMP = ".fxguide-fingerprint"
"""The file, in the gallery's output folder, naming the key its examples last ran under."""


def gallery_is_stale(gallery_out: Path, key: str, *, force: bool = False) -> bool:
    """Whether the examples' outputs in ``gallery_out`` were made under another ``key`` (or ``force``).

    sphinx-gallery skips an example whose source md5 is unchanged; it knows
    nothing of torch or of the environment. When this is True, the build sets
    sphinx-gallery's ``run_stale_examples`` so that every example runs again.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as out:
    ...     before = gallery_is_stale(Path(out), "key-a")
    ...     record_gallery_key(Path(out), "key-a")
    ...     before, gallery_is_stale(Path(out), "key-a"), gallery_is_stale(Path(out), "key-b")
    (True, False, True)
    """
    stamp = Path(gallery_out) / STAMP
    return bool(force) or not (stamp.is_file() and stamp.read_text() == key)


def record_gallery_key(gallery_out: Path, key: str) -> None:
    """Note that every example in ``gallery_out`` ran under ``key`` (after a build that ran them)."""
    stamp = Path(gallery_out) / STAMP
    stamp.parent.mkdir(parents=True, exist_ok=True)
    if not (stamp.is_file() and stamp.read_text() == key):  # left alone otherwise: a watcher sees no change
        stamp.write_text(key)


def rerun_gallery_when_stale(app, gallery_out: Path, key: str, *, force: bool = False) -> None:
    """Make sphinx-gallery re-run every example when :func:`gallery_is_stale`; record ``key`` once they ran.

    Connected from ``conf.py``. The option is set on sphinx-gallery's filled-in
    configuration when the builder starts, not in ``conf.py``: the value Sphinx
    compares between builds stays the same, so the build after a stale one is
    not told "the configuration has changed". A stale build removes the recorded
    key before the examples run and records its own only when it finishes without
    an error (a failing example raises there), so the build after an interrupted
    or failed one re-runs everything, whatever key it has.
    """
    gallery_out = Path(gallery_out)

    def before_examples(app) -> None:
        if gallery_is_stale(gallery_out, key, force=force):
            app.config.sphinx_gallery_conf["run_stale_examples"] = True
            # The examples' pages are about to be rewritten under ``key``: the record of the key they
            # ran under goes first, so that a build that fails or stops half-way leaves no record at all.
            # Kept, it would tell the next build under that older key that the pages are its own,
            # and that build would show this one's outputs (a drift report of one torch showing
            # another's, when the builds for several releases share the checkout's docs/gallery).
            (gallery_out / STAMP).unlink(missing_ok=True)

    def after_build(app, exception) -> None:
        if exception is None:
            record_gallery_key(gallery_out, key)

    # sphinx-gallery fills its configuration at builder-inited (priority 10) and runs
    # the examples there (priority 500); it reports failing examples at build-finished (500).
    app.connect("builder-inited", before_examples, priority=400)
    app.connect("build-finished", after_build, priority=900)
