"""The built site served on localhost and read by a headless Chromium through pytest-playwright.

The server is the one ``make serve`` runs (:mod:`fxsite.web.serve`), on
127.0.0.1 and a free port. The browser is pytest-playwright's ``browser``
fixture, launched with Debian's Chromium (installed by ``.ci/ensure-tools``;
Playwright's own browser downloads need the network) and flags that keep it
from reaching out on its own (updates, sync, QUIC probes). Every request a page
makes to another host is refused and recorded, so a page that needs the network
fails the tests instead of loading slowly.
Its ``page`` fixture (a fresh context per test) serves the tests that drive one feature;
the crawl shares one context for the whole session (``site_context``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from fxsite.web.serve import HOST, serving

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = os.environ.get("FXGUIDE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def site_url(built_site: Path) -> Iterator[str]:
    """The built site served over HTTP on 127.0.0.1 and a free port, for the whole session."""
    with serving(built_site / "html") as url:
        yield url


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    """pytest-playwright launches Debian's Chromium (``$FXGUIDE_CHROMIUM`` moves it), headless, with the
    offline flags (``--headed`` still works)."""
    found = CHROMIUM if Path(CHROMIUM).is_file() else shutil.which(CHROMIUM)
    if not found:
        pytest.fail(f"no Chromium at {CHROMIUM}: run `bash .ci/ensure-tools` (installs Debian's chromium) "
                    "or point FXGUIDE_CHROMIUM at one", pytrace=False)
    return {"executable_path": found, "args": list(CHROMIUM_ARGS), "headless": True, **browser_type_launch_args}


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
