"""How the tests and :mod:`fxsite.web.weigh` start a browser: Debian's Chromium, headless, quiet.

Playwright's own browser downloads are not used (they need the network);
``.ci/ensure-tools`` installs Debian's ``chromium``. The flags keep Chromium
from reaching out on its own (updates, sync, QUIC probes), so every request it
makes comes from the page.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CHROMIUM = os.environ.get("FXGUIDE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
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


def launch(playwright):
    """Start headless Chromium through a running ``sync_playwright()``."""
    return playwright.chromium.launch(executable_path=executable(), args=ARGS, headless=True)
