"""The built site served on localhost and read by a headless Chromium through pytest-playwright.

The server is the one ``make serve`` runs (:mod:`fxsite.web.serve`), on
127.0.0.1 and a free port. The browser is pytest-playwright's ``browser``
fixture, launched with Debian's Chromium as the executable and the flags that
keep it offline (:mod:`fxsite.web.chromium`; installed by ``.ci/ensure-tools``).
Every request a page makes to another host is refused and recorded, so a page
that needs the network fails the tests instead of loading slowly.
Its ``page`` fixture (a fresh context per test) serves the tests that drive one feature;
the crawl shares one context for the whole session (``site_context``).
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
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    """pytest-playwright launches Debian's Chromium, with the offline flags (``--headed`` still works)."""
    try:
        ours = chromium.launch_args()
    except FileNotFoundError as error:
        pytest.fail(str(error), pytrace=False)
    return {**ours, **browser_type_launch_args}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict, site_url: str) -> dict:
    """Every context: the served site as base URL, a desktop viewport, the clipboard allowed."""
    return {**browser_context_args, "base_url": site_url, "viewport": {"width": 1280, "height": 900},
            "permissions": ["clipboard-read", "clipboard-write"]}


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


def _guard(ctx, offsite: OffsiteGuard):
    ctx.route("**/*", offsite)
    ctx.set_default_timeout(15_000)
    return ctx


@pytest.fixture
def context(context, offsite):
    """pytest-playwright's context for one test, with every off-site request refused."""
    return _guard(context, offsite)


@pytest.fixture(scope="session")
def site_context(browser, browser_context_args, offsite):
    """One context for the whole session (the crawl): the same settings and guard as ``context``."""
    ctx = _guard(browser.new_context(**browser_context_args), offsite)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """``test-artifacts/`` (git-ignored): screenshots the browser tests leave for people to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
