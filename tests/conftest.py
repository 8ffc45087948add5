"""Shared fixtures: the docs build every output check reads, built once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fxsite.drift.build import build_docs
from fxsite.drift.extract import ROOT

BUILD_DIR = Path(os.environ.get("FXGUIDE_BUILD_DIR", ROOT / "_build"))


@pytest.fixture(scope="session")
def built_site() -> Path:
    """Build the whole site the way ``make docs`` would here (CI re-executes everything)."""
    done = build_docs(BUILD_DIR)
    if done.returncode != 0:
        pytest.fail(f"the docs build failed (exit {done.returncode}):\n{done.stdout[-15000:]}", pytrace=False)
    return BUILD_DIR
