"""Cache keys for the docs build: what must change for cached output to be stale."""

from __future__ import annotations

import hashlib
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


def fingerprint(root: Path) -> str:
    """Return a short key naming torch's version and the fxguide package's sources.

    Execution caches are stored under this key, so installing another torch or
    editing any module of ``fxguide`` re-executes every page and example.

    >>> key = fingerprint(Path(__file__).parents[2])
    >>> key.startswith("torch" + torch_version().split("+")[0].replace(".", "_"))
    True
    """
    root = Path(root)
    package = root / "fxguide"
    if not package.is_dir():
        raise FileNotFoundError(f"fingerprint: {package} is not a directory; pass the repository root")
    digest = hashlib.sha256(torch_version().encode())
    for path in sorted(package.rglob("*.py")):
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

