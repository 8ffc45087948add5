"""The build refuses broken examples: a throwaway copy of the site, broken on purpose.

Each test builds a minimal site in a temporary folder (the real conf.py and
fxguide package, one page, one gallery script), never the real tree.
"""

from __future__ import annotations

import textwrap

import pytest
from throwaway import PAGE_HEAD, GOOD_SCRIPT, build, make_site

pytestmark = pytest.mark.slow


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
    from fxsite.drift.extract import gallery_snippets

    blocks = gallery_snippets(site / "gallery" / "example.py", root=site)
    assert [(b.output, b.raised) for b in blocks] == [("fine", None), ("", "RuntimeError: broken on purpose")]


def test_a_rebuild_does_not_hide_a_page_that_failed(tmp_path):
    site = make_site(tmp_path, "```{code-cell} python\n1 / 0\n```\n")
    first = build(site, force=False)
    again = build(site, force=False)  # nothing changed: Sphinx would not re-read the page by itself
    assert first.returncode != 0 and again.returncode != 0, again.stdout[-3000:]
    assert "cell 1 raised ZeroDivisionError" in again.stdout
