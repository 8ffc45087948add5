"""The built site has no broken internal link and loads nothing from another host (no browser needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fxsite.web.links import check_site


def _site(tmp_path: Path, pages: dict[str, str]) -> Path:
    for name, body in pages.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"<html><body>{body}</body></html>")
    return tmp_path


def test_the_checker_reports_a_missing_page_a_missing_anchor_and_an_offsite_script(tmp_path):
    site = _site(tmp_path, {
        "index.html": '<a href="a.html#here">ok</a> <a href="a.html#gone">anchor</a> <a href="nope.html">page</a>'
                      '<script src="https://cdn.example/x.js"></script> <a href="https://example.org">fine</a>',
        "a.html": '<h1 id="here">A</h1><img src="img/missing.png">',
    })
    found = check_site(site)
    assert found.pages == ["a.html", "index.html"]
    assert found.broken == [
        "index.html: a.html#gone -> a.html has no element with id 'gone'",
        "index.html: nope.html -> no file nope.html",
        "a.html: img/missing.png -> no file img/missing.png",
    ]
    assert found.offsite_resources == ["index.html: loads https://cdn.example/x.js"]


@pytest.mark.docs
def test_built_site_has_no_broken_internal_link(built_site):
    found = check_site(built_site / "html")
    assert "reference/torch-fx-api.html" in found.pages, "the crawl from index.html did not reach the reference"
    assert found.broken == [], "broken internal links:\n" + "\n".join(found.broken)


@pytest.mark.docs
def test_built_site_loads_nothing_from_another_host(built_site):
    found = check_site(built_site / "html")
    assert found.offsite_resources == [], "the site would not work offline:\n" + "\n".join(found.offsite_resources)


def test_sphinx_gallerys_timing_table_keeps_its_rows_and_loses_its_cdn_scripts(tmp_path):
    """The execution-times page sphinx-gallery writes, as this site's build reads it."""
    from sphinx_gallery.gen_gallery import write_computation_times
    from sphinx_gallery.gen_rst import ExampleCost

    from fxsite.sphinx.offline import drop_remote_html

    script = tmp_path / "example.py"
    script.write_text("print(1)\n")
    conf = {"write_computation_times": True, "src_dir": str(tmp_path)}
    write_computation_times(conf, str(tmp_path), [ExampleCost(1.5, 10.0, str(script), str(tmp_path))])
    written = (tmp_path / "sg_execution_times.rst").read_text()
    assert "https://" in written  # what sphinx-gallery writes: scripts and styles from CDNs
    kept = drop_remote_html(written)
    assert "https://" not in kept and "<script" not in kept
    assert ".. list-table::" in kept and "example.py" in kept and "01.500" in kept


@pytest.mark.slow
def test_code_cells_keep_their_links_when_a_rebuild_rereads_an_unchanged_page(tmp_path):
    """sphinx-codeautolink links pages whose source changed; a page re-read because the
    environment changed (here: an fxguide module) is rewritten too, and must keep its links
    (fxsite.sphinx.codelinks.link_every_written_page)."""
    from throwaway import build, make_site

    site = make_site(tmp_path, "```{code-cell} python\nimport torch\n\nx = torch.randn(2)\n```\n")
    page = site / "_build" / "html" / "page.html"
    link = 'href="https://docs.pytorch.org/docs/'

    done = build(site, force=False)
    assert done.returncode == 0, done.stdout[-5000:]
    assert link in page.read_text(), "the first build must link torch.randn to pytorch.org"
    before = page.stat().st_mtime_ns
    module = site / "fxguide" / "models" / "basics.py"
    module.write_text(module.read_text() + "\n# an edit\n")
    done = build(site, force=False)
    assert done.returncode == 0, done.stdout[-5000:]
    assert page.stat().st_mtime_ns != before, "the page must have been rewritten"
    assert link in page.read_text(), "the rewritten page lost its code links"


def test_the_torch_inventory_gives_each_documented_name_its_pytorch_org_address(tmp_path):
    """fxsite.sphinx.torch_inventory on a miniature of PyTorch's docs/source, read back as intersphinx reads it."""
    from sphinx.util.inventory import InventoryFile

    from fxsite.sphinx.torch_inventory import docs_url, entries_from_sources, write_inventory

    sources = tmp_path / "source"
    sources.mkdir()
    (sources / "torch.md").write_text(
        "# torch\n\n```{eval-rst}\n.. currentmodule:: torch\n```\n\n```{eval-rst}\n.. autosummary::\n"
        "    :toctree: generated\n    :nosignatures:\n\n    randn\n    no_such_function\n```\n\n"
        "```{eval-rst}\n.. autosummary::\n    :toctree: generated\n    :template: classtemplate.rst\n\n"
        "    nn.Linear\n```\n")
    (sources / "tensor_attributes.rst").write_text(".. currentmodule:: torch\n\n.. class:: dtype\n\n   Text.\n")
    entries = {e.name: e for e in entries_from_sources(sources)}
    assert entries["torch.randn"].uri == "generated/torch.randn.html#torch.randn"
    assert entries["torch.nn.Linear"].uri == "generated/torch.nn.Linear.html#torch.nn.Linear"
    assert entries["torch.nn.Linear.forward"].uri == "generated/torch.nn.Linear.html#torch.nn.Linear.forward"
    assert entries["torch.nn.modules.linear.Linear"].uri == entries["torch.nn.Linear"].uri  # where it is defined
    assert entries["torch.dtype"].uri == "tensor_attributes.html#torch.dtype"
    assert "torch.no_such_function" not in entries  # only what the installed torch has

    inventory = tmp_path / "objects.inv"
    write_inventory(list(entries.values()), inventory, "2.14")
    read = InventoryFile.loads(inventory.read_bytes(), uri=docs_url("2.14.1"))
    assert read["py:function", "torch.randn"].uri == "https://docs.pytorch.org/docs/2.14/generated/torch.randn.html#torch.randn"
    assert read["py:class", "torch.dtype"].uri.endswith("/tensor_attributes.html#torch.dtype")
