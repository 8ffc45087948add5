"""Which Chromium the browser tests drive, and the flags that keep it offline.

Playwright's own browser downloads are not used (they need the network);
``.ci/ensure-tools`` installs Debian's ``chromium``, and the tests hand it to
pytest-playwright as the executable (``tests/browser/conftest.py``). The flags
keep Chromium from reaching out on its own (updates, sync, QUIC probes), so
every request it makes comes from the page.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CHROMIUM = os.environ.get("FXGUIDE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def executable() -> str:
    """The Chromium to drive: ``$FXGUIDE_CHROMIUM`` or ``/usr/bin/chromium``; says how to get one if missing."""
    found = CHROMIUM if Path(CHROMIUM).is_file() else shutil.which(CHROMIUM)
    if not found:
        raise FileNotFoundError(
            f"no Chromium at {CHROMIUM}: run `bash .ci/ensure-tools` (installs Debian's chromium) "
            "or point FXGUIDE_CHROMIUM at one")
    return found


def launch_args() -> dict:
    """Playwright's ``launch()`` options for that Chromium: its path and the offline flags.

    Headless unless the caller says otherwise (pytest-playwright's ``--headed``).
    """
    return {"executable_path": executable(), "args": list(ARGS), "headless": True}
