"""The built site served on localhost and a headless Chromium to read it.

The server is the same one ``make serve`` runs (``http.server``), on 127.0.0.1 and
a free port. Chromium is Debian's (``/usr/bin/chromium``, installed by
``.ci/ensure-tools``), driven through Playwright's Python API; every request it
makes to another host is refused and recorded, so a page that needs the network
fails the tests instead of loading slowly.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

CHROMIUM = os.environ.get("FXGUIDE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
HOST = "127.0.0.1"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base class's name)
        pass


@pytest.fixture(scope="session")
def site_url(built_site: Path) -> Iterator[str]:
    """The built site served over HTTP on 127.0.0.1 and a free port, for the whole session."""
    handler = functools.partial(_QuietHandler, directory=str(built_site / "html"))
    server = ThreadingHTTPServer((HOST, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def browser():
    """Headless Debian Chromium, started once per session."""
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        pytest.fail(f"no Chromium at {CHROMIUM}: run `bash .ci/ensure-tools` (installs Debian's chromium)",
                    pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


class OffsiteGuard:
    """Refuses every request that leaves 127.0.0.1 and remembers it."""

    def __init__(self) -> None:
        self.refused: list[str] = []

    def __call__(self, route) -> None:
        url = route.request.url
        parts = urlsplit(url)
        if parts.scheme in {"data", "blob", "about"} or parts.hostname == HOST:
            route.continue_()
        else:
            self.refused.append(url)
            route.abort("blockedbyclient")


@pytest.fixture(scope="session")
def offsite() -> OffsiteGuard:
    return OffsiteGuard()


@pytest.fixture(scope="session")
def context(browser, site_url, offsite):
    """One browser context for the session: clipboard allowed, every off-site request refused."""
    ctx = browser.new_context(
        viewport={"width": 1280, "height": 900},
        permissions=["clipboard-read", "clipboard-write"],
        base_url=site_url,
    )
    ctx.route("**/*", offsite)
    ctx.set_default_timeout(15_000)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def page(context):
    tab = context.new_page()
    try:
        yield tab
    finally:
        tab.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """``test-artifacts/`` (git-ignored): screenshots the browser tests leave for people to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
