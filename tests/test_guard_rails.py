"""The build refuses broken examples: a throwaway copy of the site, broken on purpose.

Each test builds a minimal site in a temporary folder (the real conf.py and
fxguide package, one page, one gallery script), never the real tree.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from throwaway import PAGE_HEAD, GOOD_SCRIPT, build, make_site

pytestmark = pytest.mark.slow


BROKEN_CELLS = """\
```{code-cell} python
x = 1
```

```{code-cell} python
1 / 0
```
"""

TAGGED_PAGE = PAGE_HEAD + """\
```{code-cell} python
:tags: [raises-exception]
1 / 0
```
"""

BROKEN_SCRIPT = GOOD_SCRIPT + "\n# %%\n# Now it breaks.\n\nraise RuntimeError('broken on purpose')\n"


@pytest.fixture(scope="module")
def broken_site(tmp_path_factory):
    """One forced build of a site with a page that raises unexpectedly, a page whose tagged cell
    raises on purpose and a gallery script that raises: (the site, the finished build)."""
    site = make_site(tmp_path_factory.mktemp("broken"), BROKEN_CELLS, script=BROKEN_SCRIPT)
    (site / "docs" / "tagged.md").write_text(TAGGED_PAGE)
    index = site / "docs" / "index.md"
    index.write_text(index.read_text().replace("page\n", "page\ntagged\n"))
    return site, build(site)


@pytest.mark.xdist_group("guard-rails-broken-site")  # one worker builds the shared site
def test_an_unexpected_exception_in_a_page_fails_the_build_naming_file_and_line(broken_site):
    _, done = broken_site
    assert done.returncode != 0, done.stdout
    line = (PAGE_HEAD + BROKEN_CELLS).splitlines().index("1 / 0")  # 1-based: the fence above it
    assert f"page.md:{line}: WARNING: cell 2 raised ZeroDivisionError: division by zero" in done.stdout, done.stdout[-3000:]


@pytest.mark.xdist_group("guard-rails-broken-site")
def test_a_cell_tagged_raises_exception_may_raise(broken_site):
    site, done = broken_site
    notebook = json.loads((site / "_build" / "jupyter_execute" / "tagged.ipynb").read_text())
    assert [o.get("ename") for o in notebook["cells"][-1]["outputs"]] == ["ZeroDivisionError"], "the page shows the error"
    problems = [line for line in done.stdout.splitlines() if "tagged" in line and ("WARNING" in line or "ERROR" in line)]
    assert not problems, "a cell tagged raises-exception that raises is no failure:\n" + "\n".join(problems)


@pytest.mark.xdist_group("guard-rails-broken-site")
def test_a_failing_gallery_script_fails_the_build_naming_file_and_line(broken_site):
    site, done = broken_site
    assert done.returncode != 0, done.stdout
    line = BROKEN_SCRIPT.splitlines().index("raise RuntimeError('broken on purpose')") + 1
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


RUNAWAY = '''"""
A runaway example
=================

It keeps allocating.
"""

import itertools

kept = []
for i in itertools.count():
    kept.append(b"x" * 10**7)  # 10 MB more each time, written
'''


def test_pages_and_examples_that_hang_or_grow_fail_the_build_named_within_their_limit(tmp_path, monkeypatch):
    # Issue 23: an example that never ends ran for more than 10 minutes at 11 GB inside Sphinx's process.
    import re
    import time

    from fxsite.drift.compare import NEWLY_HANGS, compare
    from fxsite.drift.extract import gallery_snippets, page_snippets
    from fxsite.drift.snapshots import Expected

    monkeypatch.setenv("FXGUIDE_TIMEOUT", "3")  # conf.py's nb_execution_timeout, for pages and examples
    monkeypatch.setenv("FXGUIDE_MEMORY_MB", "300")
    cells = """\
        ```{code-cell} python
        print("before")
        ```

        ```{code-cell} python
        :tags: [raises-exception]
        import time
        while True:
            time.sleep(0.01)
        ```
        """
    hangs = GOOD_SCRIPT + "\n# %%\n# Then it never ends.\n\nimport itertools\n\nfor i in itertools.count():\n    pass\n"
    site = make_site(tmp_path, cells, script=hangs)
    (site / "gallery" / "runaway.py").write_text(RUNAWAY)
    started = time.monotonic()
    done = build(site)
    seconds = time.monotonic() - started
    log = done.stdout
    assert done.returncode != 0, log[-3000:]
    assert seconds < 300, f"the build took {seconds:.0f} s"  # without the limits it never ends
    # The example: stopped at its limit, named with the line it was running.
    ran = float(re.search(r"gallery/example\.py:\s+([\d.]+) sec", log).group(1))
    assert ran < 3 + 2, f"the example ran {ran} s past a 3 s limit"
    loop = hangs.splitlines().index("    pass") + 1  # the loop is its line or the one above
    assert re.search(rf'gallery/example\.py", line ({loop - 1}|{loop}), in <module>', log), log[-5000:]
    assert "ExecutionLimitExceeded: gallery/example.py ran longer than its time limit of 3 s" in log
    # The runaway: stopped by the memory budget, named with its line.
    assert re.search(r'gallery/runaway\.py", line (11|12), in <module>', log), log[-5000:]
    assert "MemoryError: gallery/runaway.py grew by more than 300 MB and was stopped" in log
    # The page: the hanging cell is named even though it may raise (a tagged cell may raise, never hang).
    fence = (PAGE_HEAD + textwrap.dedent(cells)).splitlines().index(":tags: [raises-exception]")
    assert f"page.md:{fence}: WARNING: cell 2 ran longer than its time limit of 3 s and was stopped" in log

    # The drift check reads both as hangs.
    shown = page_snippets(site / "docs" / "page.md", site / "_build", root=site)
    recorded = {1: Expected(1, 8, "before", False), 2: Expected(2, 12, "", False)}
    found = {f.index: f for f in compare("docs/page.md", recorded, shown, "9.9.9")}
    assert found[2].status == NEWLY_HANGS and "now hangs on torch 9.9.9" in found[2].message
    blocks = gallery_snippets(site / "gallery" / "example.py", root=site)
    assert blocks[1].hung and not blocks[0].hung
    assert compare("gallery/example.py", {1: Expected(1, 8, "fine", False)}, blocks, "9.9.9")[1].status == NEWLY_HANGS
