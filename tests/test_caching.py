"""Caches never serve stale output: torch, fxguide or the page changing re-executes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from importlib import metadata
from types import SimpleNamespace

import pytest
from throwaway import build, make_site

from fxsite.drift.extract import ROOT
from fxsite.sphinx import fingerprint as fingerprint_module
from fxsite.sphinx.fingerprint import fingerprint, gallery_is_stale, record_gallery_key, rerun_gallery_when_stale


@pytest.fixture
def repo_copy(tmp_path) -> Path:
    for folder in fingerprint_module.SOURCES:
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_fingerprint_changes_with_torch_version(repo_copy, monkeypatch):
    before = fingerprint(repo_copy)
    monkeypatch.setattr(fingerprint_module.metadata, "version",
                        lambda name: "9.9.9+cpu" if name == "torch" else metadata.version(name))
    after = fingerprint(repo_copy)
    assert before != after and after.startswith("torch9_9_9-")


def test_fingerprint_changes_with_any_fxguide_source(repo_copy):
    before = fingerprint(repo_copy)
    module = repo_copy / "fxguide" / "models" / "basics.py"
    module.write_text(module.read_text() + "\n# an edit\n")
    assert fingerprint(repo_copy) != before


def test_a_committed_survey_leaves_the_fingerprint_alone(repo_copy):
    """Only the pages that read a survey run again for a new one (they declare it: test_build_memos.py)."""
    survey = repo_copy / "drift" / "torch-9.9.9" / "survey.json"
    survey.parent.mkdir(parents=True)
    survey.write_text('{"models": []}')
    before = fingerprint(repo_copy)
    survey.write_text('{"models": [{"model": "resnet18"}]}')
    assert fingerprint(repo_copy) == before


class _FakeDist:
    def __init__(self, name: str, version: str) -> None:
        self.metadata, self.version = {"Name": name}, version


@pytest.mark.parametrize("change", ["upgrade", "install", "remove"])
def test_fingerprint_changes_with_any_installed_distribution(repo_copy, monkeypatch, change):
    real = list(metadata.distributions())
    monkeypatch.setattr(fingerprint_module.metadata, "distributions",
                        lambda: real + [_FakeDist("tabulate-like", "1.0")])
    before = fingerprint(repo_copy)
    changed = {
        "upgrade": real + [_FakeDist("tabulate-like", "1.1")],
        "install": real + [_FakeDist("tabulate-like", "1.0"), _FakeDist("another", "0.1")],
        "remove": real,
    }[change]
    monkeypatch.setattr(fingerprint_module.metadata, "distributions", lambda: changed)
    assert fingerprint(repo_copy) != before


def test_fingerprint_changes_with_the_python_version(repo_copy, monkeypatch):
    before = fingerprint(repo_copy)
    monkeypatch.setattr(fingerprint_module.sys, "version_info", (3, 99, 0, "final", 0))
    assert fingerprint(repo_copy) != before


def test_fingerprint_changes_with_a_sphinx_extension(repo_copy):
    before = fingerprint(repo_copy)
    module = repo_copy / "fxsite" / "sphinx" / "sphinx_ext.py"
    module.write_text(module.read_text() + "\n# an edit\n")
    assert fingerprint(repo_copy) != before


def test_fingerprint_is_stable_when_nothing_changes(repo_copy):
    assert fingerprint(repo_copy) == fingerprint(repo_copy)


def test_fingerprint_rejects_a_folder_without_fxguide(tmp_path):
    with pytest.raises(FileNotFoundError, match="pass the repository root"):
        fingerprint(tmp_path)


class _App:
    """What rerun_gallery_when_stale needs of Sphinx: sphinx-gallery's filled-in options and connect()."""

    def __init__(self) -> None:
        self.config = SimpleNamespace(sphinx_gallery_conf={"run_stale_examples": False})
        self.handlers: dict[str, object] = {}

    def connect(self, event, handler, priority=500) -> None:
        self.handlers[event] = handler

    def build(self, exception=None) -> bool:
        """Run the handlers as a build would; whether sphinx-gallery was told to re-run every example."""
        self.config.sphinx_gallery_conf["run_stale_examples"] = False
        self.handlers["builder-inited"](self)
        rerun = self.config.sphinx_gallery_conf["run_stale_examples"]
        self.handlers["build-finished"](self, exception)
        return rerun


def test_gallery_reruns_every_example_when_the_key_changes_and_only_then(tmp_path):
    out = tmp_path / "gallery"
    first, same, forced, other = _App(), _App(), _App(), _App()
    rerun_gallery_when_stale(first, out, "key-a")
    rerun_gallery_when_stale(same, out, "key-a")
    rerun_gallery_when_stale(forced, out, "key-a", force=True)
    rerun_gallery_when_stale(other, out, "key-b")
    assert first.build() is True  # no record yet
    assert same.build() is False  # ran under key-a already: sphinx-gallery's md5 check decides
    assert forced.build() is True  # CI: every example runs
    assert other.build() is True  # a new environment or fxguide: every example runs


def test_a_failed_build_leaves_the_gallery_stale(tmp_path):
    out = tmp_path / "gallery"
    failed, next_build = _App(), _App()
    rerun_gallery_when_stale(failed, out, "key-b")
    rerun_gallery_when_stale(next_build, out, "key-b")
    record_gallery_key(out, "key-a")
    assert failed.build(exception=RuntimeError("an example failed")) is True
    assert gallery_is_stale(out, "key-b"), "a build that failed must not record its key"
    assert next_build.build() is True


def test_a_failed_build_under_another_key_leaves_no_key_for_the_first_to_find(tmp_path):
    """Builds for two torch releases share docs/gallery: the failed one rewrote some examples' pages."""
    out = tmp_path / "gallery"
    record_gallery_key(out, "key-a")  # every example ran under key-a
    failed, back = _App(), _App()
    rerun_gallery_when_stale(failed, out, "key-b")
    rerun_gallery_when_stale(back, out, "key-a")
    assert failed.build(exception=RuntimeError("an example failed under key-b")) is True
    assert back.build() is True, "the pages now hold key-b's outputs: key-a's build must run every example again"


PROBE_PAGE = """\
```{code-cell} python
from fxguide._probe import VALUE
print(VALUE)
```
"""

DATA_PAGE = """\
---
file_format: mystnb
kernelspec:
  name: python3
  display_name: Python 3
fxguide:
  reads: ["../data/*.json"]
---

# A page that reads data

```{code-cell} python
import json
print(json.load(open("../data/data.json"))["value"])
```
"""

PROBE_SCRIPT = '''\
"""
Probe
=====

Prints a value from fxguide, and appends a line to a file each time it runs.
"""

from fxguide._probe import VALUE

with open({runs!r}, "a") as runs:
    runs.write("ran\\n")

print(VALUE)
'''


def shown(site: Path, page: str = "page") -> tuple[str, str]:
    notebook = json.loads((site / "_build" / "jupyter_execute" / f"{page}.ipynb").read_text())
    shown_page = "".join(notebook["cells"][-1]["outputs"][0]["text"]).strip()
    rst = (site / "docs" / "gallery" / "example.rst").read_text()
    script = rst.split(".. code-block:: none", 1)[1].split("\n\n")[1].strip()
    return shown_page, script


@pytest.fixture(scope="module")
def writers_edits(tmp_path_factory) -> dict[str, tuple[str, str, int]]:
    """One throwaway site rebuilt through a writer's session, shared by the two tests below.

    The builds, in order: the first (local, cached workflow), one with nothing
    changed, a forced one, one after an edit of fxguide, one after an edit of the
    page, one after an edit of the data a second page reads. After each: (what the
    page shows, what the example shows, how many times the example has run so far,
    what the data page shows, whether the page was executed).
    """
    tmp = tmp_path_factory.mktemp("edits")
    runs = tmp / "runs.txt"
    site = make_site(tmp, PROBE_PAGE, script=PROBE_SCRIPT.format(runs=str(runs)))
    probe = site / "fxguide" / "_probe.py"
    probe.write_text('VALUE = "one"\n')
    (site / "docs" / "data.md").write_text(DATA_PAGE)
    index = site / "docs" / "index.md"
    index.write_text(index.read_text().replace("page\n", "page\ndata\n"))
    data = site / "data" / "data.json"  # not drift/: a site with drift/ gets a compatibility page
    data.parent.mkdir()
    data.write_text('{"value": "first data"}')
    after: dict[str, tuple] = {}

    def rebuild(step: str, force: bool = False) -> None:
        done = build(site, force=force)
        assert done.returncode == 0, f"the build {step!r} failed:\n{done.stdout[-5000:]}"
        after[step] = (*shown(site), runs.read_text().count("ran"), shown(site, "data")[0],
                       "executed page.md" in done.stdout)

    rebuild("first")
    rebuild("nothing changed")
    rebuild("forced", force=True)
    probe.write_text('VALUE = "two"\n')
    rebuild("fxguide edited")
    page = site / "docs" / "page.md"
    page.write_text(page.read_text().replace("print(VALUE)", "print(VALUE * 2)"))
    rebuild("page edited")
    data.write_text('{"value": "new data"}')
    rebuild("data edited")
    (site / "data" / "more.json").write_text("{}")  # a new file the page's glob matches
    data.write_text('{"value": "data with a new file beside it"}')
    rebuild("data file added")
    return after


@pytest.mark.slow
@pytest.mark.xdist_group("caching-writers-edits")  # one worker builds the shared site
def test_cached_builds_reexecute_after_fxguide_or_page_edits(writers_edits):
    shows = {step: (page, script) for step, (page, script, *_) in writers_edits.items()}
    assert shows["first"] == ("one", "one")
    assert shows["nothing changed"] == ("one", "one"), "nothing changed: cached output is still right"
    assert shows["fxguide edited"] == ("two", "two"), "a change of fxguide must re-execute pages and examples"
    assert shows["page edited"] == ("twotwo", "two"), "a change of the page must re-execute it"


@pytest.mark.slow
@pytest.mark.xdist_group("caching-writers-edits")
def test_examples_rerun_under_a_new_fingerprint_and_in_forced_builds_only(writers_edits):
    runs = {step: count for step, (_, _, count, *_) in writers_edits.items()}
    assert runs["first"] == 1
    assert runs["nothing changed"] == 1, "nothing changed: the example must not run again"
    assert runs["forced"] == 2, "a forced build runs every example, unchanged or not"
    assert runs["fxguide edited"] == 3, "a new fingerprint runs every example again"
    assert runs["page edited"] == 3, "the example did not change (only a page did): it must not run again"
    assert runs["data edited"] == 3, "the example reads no data: it must not run again"


@pytest.mark.slow
@pytest.mark.xdist_group("caching-writers-edits")
def test_a_page_that_declares_the_data_it_reads_runs_again_when_the_data_changes_and_alone(writers_edits):
    data_shown = {step: shown_data for step, (*_, shown_data, _) in writers_edits.items()}
    others_ran = {step: ran for step, (*_, ran) in writers_edits.items()}
    assert data_shown["first"] == data_shown["page edited"] == "first data"
    assert data_shown["data edited"] == "new data", "a change of the data the page reads must re-execute it"
    assert data_shown["data file added"] == "data with a new file beside it"
    assert not others_ran["data edited"], "only the page that reads the data may run again"


API_PAGE = """\
# API

```{eval-rst}
.. torch-fx-api::
```
"""


def rebuilt(site: Path) -> set[str]:
    """Rebuild; the docnames the build read again (their pickled doctrees were rewritten)."""
    doctrees = site / "_build" / "html" / ".doctrees"
    before = {p: p.stat().st_mtime_ns for p in doctrees.rglob("*.doctree")}
    done = build(site, force=False)
    assert done.returncode == 0, done.stdout[-5000:]
    return {p.relative_to(doctrees).with_suffix("").as_posix() for p in doctrees.rglob("*.doctree")
            if p.stat().st_mtime_ns != before.get(p)}


@pytest.mark.slow
def test_the_api_page_is_reread_only_when_its_used_in_links_change(tmp_path):
    site = make_site(tmp_path, "```{code-cell} python\nprint(1)\n```\n")
    index = site / "docs" / "index.md"
    index.write_text(index.read_text().replace("page\n", "page\napi\n"))
    (site / "docs" / "api.md").write_text(API_PAGE)
    script = site / "gallery" / "example.py"
    assert build(site, force=False).returncode == 0

    script.write_text(script.read_text() + "\n# a comment changes no link\n")
    read = rebuilt(site)
    assert "gallery/example" in read and "api" not in read, read

    script.write_text(script.read_text() + "\nimport torch.fx\n\ntorch.fx.symbolic_trace(lambda x: x)\n")
    assert "api" in rebuilt(site), "a new use of a torch.fx name must re-read the API page"
    html = (site / "_build" / "html" / "api.html").read_text()
    entry = html.split('id="torch.fx.symbolic_trace"', 1)[1].split('id="torch.fx.', 1)[0]
    assert "gallery/example.html" in entry, "the API entry must link the example that now uses it"


@pytest.fixture(scope="module")
def forced_then_local(tmp_path_factory) -> SimpleNamespace:
    """One throwaway site built forced, then locally, then locally again with nothing changed.

    Shared by the two tests below: what each build printed, whether the forced
    build filled the local cache, and which outputs the last build rewrote.
    """
    site = make_site(tmp_path_factory.mktemp("forced-then-local"), "```{code-cell} python\nprint('ran')\n```\n")
    forced = build(site, force=True)
    assert forced.returncode == 0, forced.stdout[-5000:]
    forced_filled_local_cache = (site / ".jupyter_cache").exists()
    local = build(site, force=False)
    assert local.returncode == 0, local.stdout[-5000:]
    html = site / "_build" / "html"
    # Sphinx writes its index and search pages anew on every build (they are cheap), and so the 404
    # page (sphinx-notfound-page's additional page); every other page, every doctree and
    # sphinx-gallery's record of executed examples must be left alone.
    always_written = {"genindex.html", "search.html", "py-modindex.html", "404.html"}
    outputs = [*(p for p in html.rglob("*.html") if p.name not in always_written),
               *(site / "docs" / "gallery").glob("*.md5"), *html.rglob("*.doctree")]
    before = {p: p.stat().st_mtime_ns for p in outputs}
    again = build(site, force=False)
    assert again.returncode == 0, again.stdout[-5000:]
    touched = [str(p.relative_to(site)) for p, mtime in before.items() if p.stat().st_mtime_ns != mtime]
    return SimpleNamespace(forced=forced.stdout, forced_filled_local_cache=forced_filled_local_cache,
                           local=local.stdout, again=again.stdout, touched=touched)


@pytest.mark.slow
@pytest.mark.xdist_group("caching-forced-then-local")  # one worker builds the shared site
def test_pages_execute_before_sphinx_reads_them_and_forced_builds_keep_their_own_cache(forced_then_local):
    built = forced_then_local
    assert "executing 1 page(s) while the gallery runs" in built.forced
    assert "Executing notebook" not in built.forced, "myst-nb must find the page executed already"
    assert "Using cached notebook" in built.forced
    assert not built.forced_filled_local_cache, "a forced build must not fill the local cache"
    assert "executing 1 page(s)" in built.local, "the local build must execute the page into its own cache"
    assert "executing" not in built.again, "a cached page must not run again"


def test_stale_pages_wants_the_sphinx_application():
    from fxsite.sphinx.prerun import stale_pages

    with pytest.raises(TypeError, match="expected the Sphinx application"):
        stale_pages("docs")


@pytest.mark.slow
@pytest.mark.xdist_group("caching-forced-then-local")
def test_a_no_op_rebuild_executes_reads_and_writes_nothing(forced_then_local):
    """A second local ``make docs`` with nothing changed: no example or page runs, no page is read or written.

    (Sphinx may still log "The configuration has changed" for html-only values that the theme,
    sphinx-gallery and sphinx-copybutton fill in after Sphinx compares configurations; those
    values never make Sphinx re-read or re-write a page, which is what this test pins.)
    """
    again = forced_then_local.again
    assert "executing" not in again and "Executing" not in again, "nothing changed: nothing may execute"
    assert "targets for 0 source files that are out of date" in again, again[-3000:]
    assert "updating environment: 0 added, 0 changed, 0 removed" in again, again[-3000:]
    assert forced_then_local.touched == [], f"a no-op rebuild rewrote {forced_then_local.touched}"


def test_pages_start_longest_first_by_their_bench_time(tmp_path):
    from fxsite.sphinx.prerun import longest_first

    results = tmp_path / "results.json"
    results.write_text(json.dumps({"items": {"docs/short.md": {"seconds": 0.1}, "docs/long.md": {"seconds": 7.0},
                                             "docs/pt2/middle.md": {"seconds": 3.0}}}))
    docs = tmp_path / "docs"
    pages = [docs / "long.md", docs / "new.md", docs / "pt2" / "middle.md", docs / "short.md"]
    assert longest_first(sorted(pages), docs, results) == [docs / "new.md", docs / "long.md",
                                                          docs / "pt2" / "middle.md", docs / "short.md"]
    results.write_text("not json")
    assert longest_first(sorted(pages), docs, results) == sorted(pages), "unreadable results: the sources' order"


@pytest.mark.slow
def test_a_setting_that_changes_only_the_html_reads_every_page_again_and_builds_without_warnings(tmp_path):
    # Sphinx writes every page without reading it when such a setting changes, and sphinx-codeautolink then
    # cannot match the code blocks it noted while reading: one warning per block, an error under -W.
    site = make_site(tmp_path, "```{code-cell} python\nimport torch\n\nprint(torch.zeros(2).sum())\n```\n")
    assert build(site, force=False).returncode == 0
    conf = site / "conf.py"
    conf.write_text(conf.read_text() + '\nhtml_title = "a retitled guide"\n')
    assert {"index", "page"} <= rebuilt(site)  # rebuilt() asserts the build passed
    assert "a retitled guide" in (site / "_build" / "html" / "page.html").read_text()
