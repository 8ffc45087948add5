"""The rebuild's memos: they save reading pages again, and never change what a build shows.

Two things every rebuild used to redo for every page: the reference's "used in" links
(each page read, its code's torch.fx names worked out, torch imported) and the check of
which pages the execution cache lacks (each page read into a notebook). Both now
remember what they found by a hash of each page's text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fxsite.sphinx import apiref, prerun

PAGE = """---
file_format: mystnb
kernelspec:
  name: python3
{matter}---
# A page

{prose}

```{{code-cell}} python
import torch.fx

gm = torch.fx.symbolic_trace(lambda x: x + 1)
{code}
```
"""


def write_page(path: Path, prose: str = "Some prose.", code: str = "", reads: str = "") -> Path:
    matter = f"fxguide:\n  reads: [{reads!r}]\n" if reads else ""
    path.write_text(PAGE.format(prose=prose, code=code, matter=matter))
    return path


def refuse(*_args, **_kwargs):
    raise AssertionError("called, though the memo knows the answer")


@pytest.fixture
def docs(tmp_path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    write_page(folder / "a.md")
    write_page(folder / "b.md", code="gm.recompile()")
    return folder


def test_the_usage_memo_reads_only_changed_pages_and_works_out_names_only_for_changed_code(docs, monkeypatch):
    from fxsite.drift import extract
    from fxsite.sphinx import usage

    memo: dict = {}
    first = apiref._examples(docs, [], memo)
    assert [doc for doc, _ in first["torch.fx.GraphModule.recompile"]] == ["b"]
    assert sorted(doc for doc, _ in first["torch.fx.symbolic_trace"]) == ["a", "b"]

    monkeypatch.setattr(extract, "code_cells", refuse)
    monkeypatch.setattr(usage, "uses_in_code", refuse)
    assert apiref._examples(docs, [], memo) == first, "nothing changed: nothing may be read again"

    monkeypatch.undo()
    monkeypatch.setattr(usage, "uses_in_code", refuse)
    write_page(docs / "a.md", prose="Other prose.")
    assert apiref._examples(docs, [], memo) == first, "a prose edit leaves the code, and its names, alone"

    monkeypatch.undo()
    write_page(docs / "a.md", prose="Other prose.", code="gm.recompile()")
    again = apiref._examples(docs, [], memo)
    assert [doc for doc, _ in again["torch.fx.GraphModule.recompile"]] == ["a", "b"], "a code edit is read again"


def test_the_usage_memo_is_kept_under_the_build_fingerprint_and_the_code_that_reads_pages():
    assert apiref.memo_key("torch2_14_1-aaaa") != apiref.memo_key("torch2_14_1-bbbb")
    assert apiref.memo_key("torch2_14_1-aaaa") == apiref.memo_key("torch2_14_1-aaaa")
    root = Path(apiref.__file__).resolve().parents[2]
    assert all((root / name).is_file() for name in apiref._MEMO_CODE), "the memo key must read existing files"


def test_a_memo_of_another_fingerprint_is_not_used(docs, monkeypatch):
    from types import SimpleNamespace

    app = SimpleNamespace(srcdir=str(docs), env=SimpleNamespace(), config=SimpleNamespace(
        fxguide_fingerprint="torch2_14_1-aaaa", sphinx_gallery_conf={}))
    monkeypatch.setattr(apiref, "_USAGE", None)
    apiref._usage(app)
    key, memo = app.env.fxguide_usage_memo
    assert key == apiref.memo_key("torch2_14_1-aaaa") and memo
    # A stored answer that this page's code would not give: used under its own key, ignored under another.
    poisoned = {k: (["torch.fx.Tracer"] if k.startswith("code:") else v) for k, v in memo.items()}
    app.env.fxguide_usage_memo = (key, poisoned)
    monkeypatch.setattr(apiref, "_USAGE", None)
    assert "torch.fx.Tracer" in apiref._usage(app)
    app.config.fxguide_fingerprint = "torch2_14_1-bbbb"  # a package or fxguide changed
    monkeypatch.setattr(apiref, "_USAGE", None)
    assert "torch.fx.Tracer" not in apiref._usage(app)
    assert app.env.fxguide_usage_memo[0] == apiref.memo_key("torch2_14_1-bbbb")


@pytest.fixture
def sphinx_app(docs, tmp_path):
    from sphinx.application import Sphinx

    (tmp_path / "conf.py").write_text(
        "extensions = ['myst_nb']\n"
        f"nb_execution_cache_path = {str(tmp_path / 'cache')!r}\n"
        "nb_execution_mode = 'cache'\n")
    return Sphinx(str(docs), str(tmp_path), str(tmp_path / "out"), str(tmp_path / "doctrees"), "html",
                  status=None, warning=None)


def test_the_stale_page_check_reads_a_page_again_only_when_its_text_changed(sphinx_app, docs, monkeypatch):
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    from fxsite.drift import extract

    reads: list[str] = []
    real_read = extract.read_page
    monkeypatch.setattr(extract, "read_page", lambda path, **kw: reads.append(Path(path).name) or real_read(path, **kw))

    stale = prerun.stale_pages(sphinx_app)
    assert sorted(p.name for p, _ in stale) == ["a.md", "b.md"] and sorted(reads) == ["a.md", "b.md"]
    cache = get_cache(sphinx_app.config.nb_execution_cache_path)
    notebook = dict(stale)[docs / "a.md"]
    cache.cache_notebook_bundle(CacheBundleIn(notebook, str(docs / "a.md")), check_validity=False)

    reads.clear()
    assert [p.name for p, _ in prerun.stale_pages(sphinx_app)] == ["b.md"]
    reads.clear()
    assert [p.name for p, _ in prerun.stale_pages(sphinx_app)] == ["b.md"]
    assert reads == ["b.md"], "a page the cache held at the last check, unchanged since, is not read again"

    write_page(docs / "a.md", prose="Other prose.")
    reads.clear()
    assert [p.name for p, _ in prerun.stale_pages(sphinx_app)] == ["b.md"], "a prose edit: still cached"
    assert sorted(reads) == ["a.md", "b.md"], "an edited page is read again"

    write_page(docs / "a.md", prose="Other prose.", code="print(1)")
    assert sorted(p.name for p, _ in prerun.stale_pages(sphinx_app)) == ["a.md", "b.md"], "a code edit is stale"


def test_a_new_execution_cache_starts_without_a_memo(sphinx_app, docs, tmp_path):
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    stale = dict(prerun.stale_pages(sphinx_app))
    get_cache(sphinx_app.config.nb_execution_cache_path).cache_notebook_bundle(
        CacheBundleIn(stale[docs / "a.md"], str(docs / "a.md")), check_validity=False)
    assert [p.name for p, _ in prerun.stale_pages(sphinx_app)] == ["b.md"]
    assert (Path(sphinx_app.config.nb_execution_cache_path) / prerun.MEMO).is_file()
    sphinx_app.config.nb_execution_cache_path = str(tmp_path / "another-cache")  # another environment's
    assert sorted(p.name for p, _ in prerun.stale_pages(sphinx_app)) == ["a.md", "b.md"]


def _cache_every_stale_page(app) -> None:
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(app.config.nb_execution_cache_path)
    for path, notebook in prerun.stale_pages(app):
        cache.cache_notebook_bundle(CacheBundleIn(notebook, str(path)), check_validity=False, overwrite=True)
        prerun._remember(app, [path])


def test_a_page_runs_again_when_the_data_it_declares_changes_and_no_other_page_does(sphinx_app, docs, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "one.json").write_text("1")
    write_page(docs / "a.md", reads="../data/*.json")
    _cache_every_stale_page(sphinx_app)
    assert prerun.stale_pages(sphinx_app) == []
    (data / "one.json").write_text("2")
    assert [p.name for p, _ in prerun.stale_pages(sphinx_app)] == ["a.md"], "changed data: its reader runs again"
    assert [p.name for p, _ in prerun.stale_pages(sphinx_app)] == ["a.md"], "... until it has run"
    _cache_every_stale_page(sphinx_app)
    assert prerun.stale_pages(sphinx_app) == []
    (data / "two.json").write_text("new")
    assert [p.name for p, _ in prerun.stale_pages(sphinx_app)] == ["a.md"], "a new file its glob matches counts"


def test_a_bad_reads_declaration_names_the_page(docs):
    page = docs / "a.md"
    page.write_text(PAGE.format(prose="", code="", matter="fxguide:\n  reads: {a: 1}\n"))
    with pytest.raises(ValueError, match=r"a\.md: fxguide: reads must be a glob or a list of globs"):
        prerun.data_key(page)


def test_the_guide_pages_that_read_the_surveys_declare_it():
    """Every page whose code opens a survey file says so, or a new survey would leave it stale."""
    from fxsite import ROOT
    from fxsite.drift.extract import code_cells, page_sources

    readers = [page for page in page_sources() if any("survey.json" in cell.source for cell in code_cells(page))]
    assert readers, "no page reads a survey any more: this test should go"
    for page in readers:
        assert any("survey.json" in glob for glob in prerun.declared_reads(page.read_text())), \
            f"{page.relative_to(ROOT)} reads a survey file: declare it (fxguide: reads: [...] in its front matter)"
