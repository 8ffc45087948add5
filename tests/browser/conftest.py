"""The built site served on localhost and a headless Chromium to read it.

The server is the one ``make serve`` runs (:mod:`fxsite.web.serve`), on
127.0.0.1 and a free port. Chromium is Debian's (:mod:`fxsite.web.chromium`,
installed by ``.ci/ensure-tools``), driven through Playwright's Python API; every request it
makes to another host is refused and recorded, so a page that needs the network
fails the tests instead of loading slowly.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from fxsite.web import chromium
from fxsite.web.serve import HOST, serving

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture(scope="session")
def site_url(built_site: Path) -> Iterator[str]:
    """The built site served over HTTP on 127.0.0.1 and a free port, for the whole session."""
    with serving(built_site / "html") as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    """Headless Debian Chromium, started once per session."""
    try:
        chromium.executable()
    except FileNotFoundError as error:
        pytest.fail(str(error), pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = chromium.launch(playwright)
        try:
            yield browser
        finally:
            browser.close()


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
