"""The build refuses broken examples: a throwaway copy of the site, broken on purpose.

Each test builds a minimal site in a temporary folder (the real conf.py and
fxguide package, one page, one gallery script), never the real tree.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from fxguide.drift.build import build_docs
from fxguide.drift.extract import ROOT

pytestmark = pytest.mark.slow

INDEX = """\
# Throwaway site

```{toctree}
page
gallery/index
```
"""

PAGE_HEAD = """\
---
file_format: mystnb
kernelspec:
  name: python3
  display_name: Python 3
---

# A page

"""

GOOD_SCRIPT = '''\
"""
A fine example
==============

It prints.
"""

print("fine")
'''


def make_site(tmp_path: Path, page_cells: str, script: str = GOOD_SCRIPT) -> Path:
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "gallery").mkdir()
    shutil.copy(ROOT / "conf.py", site / "conf.py")
    shutil.copytree(ROOT / "fxguide", site / "fxguide", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "docs" / "index.md").write_text(INDEX)
    (site / "docs" / "page.md").write_text(PAGE_HEAD + textwrap.dedent(page_cells))
    (site / "gallery" / "README.rst").write_text("Gallery\n=======\n")
    (site / "gallery" / "example.py").write_text(script)
    return site


def build(site: Path):
    return build_docs(site / "_build", force=True, cwd=site)


def test_an_unexpected_exception_in_a_page_fails_the_build_naming_file_and_line(tmp_path):
    cells = """\
        ```{code-cell} python
        x = 1
        ```

        ```{code-cell} python
        1 / 0
        ```
        """
    site = make_site(tmp_path, cells)
    done = build(site)
    assert done.returncode != 0, done.stdout
    line = (PAGE_HEAD + textwrap.dedent(cells)).splitlines().index("1 / 0")  # 1-based: the fence above it
    assert f"page.md:{line}: WARNING: cell 2 raised ZeroDivisionError: division by zero" in done.stdout, done.stdout[-3000:]


def test_a_cell_tagged_raises_exception_may_raise(tmp_path):
    site = make_site(tmp_path, """\
        ```{code-cell} python
        :tags: [raises-exception]
        1 / 0
        ```
        """)
    done = build(site)
    assert done.returncode == 0, done.stdout[-5000:]


def test_a_failing_gallery_script_fails_the_build_naming_file_and_line(tmp_path):
    broken = GOOD_SCRIPT + "\n# %%\n# Now it breaks.\n\nraise RuntimeError('broken on purpose')\n"
    site = make_site(tmp_path, "```{code-cell} python\nx = 1\n```\n", script=broken)
    done = build(site)
    assert done.returncode != 0, done.stdout
    line = broken.splitlines().index("raise RuntimeError('broken on purpose')") + 1
    assert "example.py" in done.stdout and f"line {line}" in done.stdout, done.stdout[-3000:]
    assert "RuntimeError: broken on purpose" in done.stdout
    # The drift check reads the failure as the block's exception (on another torch: "newly raising").
    from fxguide.drift.extract import gallery_snippets

    blocks = gallery_snippets(site / "gallery" / "example.py", root=site)
    assert [(b.output, b.raised) for b in blocks] == [("fine", None), ("", "RuntimeError: broken on purpose")]
