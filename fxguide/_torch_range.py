"""The torch releases fxguide was checked on, and a warning when the installed one is outside them.

The guide's drift reports (``drift/torch-*/report.json`` in the repository) say which releases its
pages, examples and tests were run on; the package declares the same range in its metadata
(``torch>=2.9,<2.16``). A torch outside it may still import fxguide (a ``--no-deps`` install,
a checkout on ``PYTHONPATH``): then this warning says which torch the examples need, at the
start, instead of a missing attribute halfway through a script.
"""

from __future__ import annotations

import re
import warnings
from importlib import metadata

OLDEST_CHECKED = (2, 9)
"""The oldest torch release (major, minor) the guide's checks ran on."""
NEWEST_CHECKED = (2, 15)
"""The newest torch release (major, minor) the guide's checks ran on."""


class UncheckedTorchWarning(UserWarning):
    """The installed torch is outside the releases fxguide was checked on."""


def release(version: str, parts: int = 2) -> tuple[int, ...]:
    """The first ``parts`` numbers of a version like ``2.14.1+cu130``: ``(major, minor)`` by default.

    Each number is the digits a part starts with, so a pre-release counts as its release.

    >>> release("2.14.1+cu130")
    (2, 14)
    >>> release("2.15.0rc1", 3)
    (2, 15, 0)
    >>> release("2.14.1", parts=-1)
    Traceback (most recent call last):
    ...
    ValueError: release: parts must be a positive int (how many numbers to keep), got -1
    """
    if not isinstance(version, str) or not re.match(r"\d", version):
        raise ValueError(f"release: version must be a version string like '2.14.1', got {version!r}")
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise ValueError(f"release: parts must be a positive int (how many numbers to keep), got {parts!r}")
    numbers = version.split("+")[0].split(".")[:parts]
    found = tuple(int(re.match(r"\d*", number).group() or 0) for number in numbers)  # type: ignore[union-attr]
    return found + (0,) * (parts - len(found))


def check_installed_torch() -> None:
    """Warn (:class:`UncheckedTorchWarning`) when the installed torch is outside the checked releases."""
    try:
        found = metadata.version("torch")
    except metadata.PackageNotFoundError:
        return  # importing torch will say so
    if not OLDEST_CHECKED <= release(found) <= NEWEST_CHECKED:
        oldest, newest = (".".join(map(str, v)) for v in (OLDEST_CHECKED, NEWEST_CHECKED))
        warnings.warn(f"fxguide was checked on torch {oldest} to {newest}, and torch {found} is installed: "
                      f"some examples may fail on it (pip install 'torch>={oldest},<{NEWEST_CHECKED[0]}."
                      f"{NEWEST_CHECKED[1] + 1}' installs a checked one)", UncheckedTorchWarning, stacklevel=3)


class TorchTooOldError(RuntimeError):
    """The installed torch is older than what an example needs."""


def requires_torch(oldest: str, why: str = "") -> None:
    """Stop at once, with a clear message, when the installed torch is older than ``oldest``.

    A gallery script calls it first, with the release its drift reports say it needs
    (a test keeps the two the same), so a reader on an older torch learns which one to
    install instead of meeting a missing attribute halfway through. ``why`` names what
    the older releases lack.

    >>> requires_torch("2.0")
    >>> requires_torch("99.0", "a future API")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fxguide._torch_range.TorchTooOldError: this example needs torch >= 99.0 (a future API), and torch ... is installed: pip install 'torch>=99.0'
    >>> requires_torch("latest")
    Traceback (most recent call last):
    ...
    ValueError: requires_torch: oldest must be a release like '2.13', not 'latest'
    """
    if not isinstance(oldest, str) or not re.fullmatch(r"\d+\.\d+(\.\d+)?", oldest):
        raise ValueError(f"requires_torch: oldest must be a release like '2.13', not {oldest!r}")
    if not isinstance(why, str):
        raise TypeError(f"requires_torch: why must be a string saying what older releases lack, not {type(why).__name__}")
    found = metadata.version("torch")
    wanted = release(oldest, oldest.count(".") + 1)
    if release(found, len(wanted)) < wanted:
        reason = f" ({why})" if why else ""
        raise TorchTooOldError(f"this example needs torch >= {oldest}{reason}, and torch {found} is installed: "
                               f"pip install 'torch>={oldest}'")
