"""Cache keys for the docs build: what must change for cached output to be stale."""

from __future__ import annotations

import hashlib
import sys
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


def environment() -> list[str]:
    """Every installed distribution as ``name==version``, sorted, plus the Python version.

    Any of them can shape what a page prints (tabulate lays out tables, numpy and
    sympy print numbers and symbols, the Python version words error messages), so
    all of them key the execution caches, not only torch.

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
    return [f"python=={python}"] + sorted(f"{name}=={version}" for name, version in names.items())


SOURCES = ("fxguide", "fxsite/sphinx")
"""What of the repository shapes executed output: the reader's package and the Sphinx extensions."""


def fingerprint(root: Path) -> str:
    """Return a short key naming torch's version and hashing the whole environment.

    Execution caches are stored under this key, so installing, upgrading or
    removing any package (:func:`environment`), changing the Python version, or
    editing any module of ``fxguide`` or of the site's Sphinx extensions
    re-executes every page and example.

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


def invalidate_stale_gallery(gallery_out: Path, key: str, *, force: bool = False) -> bool:
    """Delete sphinx-gallery's per-example md5 files when ``key`` changed (or ``force``).

    sphinx-gallery skips an example whose source md5 is unchanged; it knows
    nothing of torch. Dropping the md5 files makes it execute every example again.
    Returns True when the gallery was invalidated.
    """
    gallery_out = Path(gallery_out)
    stamp = gallery_out / ".fxguide-fingerprint"
    if not force and stamp.is_file() and stamp.read_text() == key:
        return False
    if gallery_out.is_dir():
        for md5 in gallery_out.rglob("*.md5"):
            md5.unlink()
    gallery_out.mkdir(parents=True, exist_ok=True)
    stamp.write_text(key)
    return True

