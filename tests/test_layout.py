"""Two homes: the reader's package (fxguide) and the site engine (fxsite) stay apart, with no import cycle.

The contracts live in pyproject.toml (``[tool.importlinter]``); import-linter checks them.
"""

from __future__ import annotations

import subprocess
import sys

from fxsite import ROOT


def test_import_contracts_are_kept():
    done = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.argv = ['lint-imports', '--no-cache']; lint_imports_command()"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_the_reader_package_does_not_ship_site_machinery():
    shipped = {p.relative_to(ROOT / "fxguide").parts[0] for p in (ROOT / "fxguide").rglob("*.py")}
    assert not shipped & {"drift", "site", "sphinx", "web", "bench"}, shipped
