"""Names in the site's code and prose link to their reference: code cells through sphinx-codeautolink,
torch's names through the committed intersphinx inventory."""

from __future__ import annotations

import pytest


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


class _Chain:
    def __init__(self, *components: str) -> None:
        self.import_components = list(components)


def test_resolved_names_are_remembered_per_environment_and_inventory(tmp_path):
    """fxsite.sphinx.codelinks.ResolutionMemo: a name resolved once (found or not) is not resolved again
    while the environment and the inventory stay the same; either changing starts an empty memo."""
    from sphinx_codeautolink.extension.resolve import CouldNotResolve

    from fxsite.sphinx.codelinks import ResolutionMemo

    calls: list[tuple[str, ...]] = []

    def resolve(chain, inventory):
        calls.append(tuple(chain.import_components))
        if chain.import_components[0] == "missing":
            raise CouldNotResolve("no module named missing")
        return ".".join(chain.import_components)

    path, inventory = tmp_path / "memo.json", {"torch.randn": "url"}

    def build(environment: str, inv: dict) -> list:
        memo = ResolutionMemo(resolve, path, environment)
        memo.start(inv)
        found = [memo(_Chain("torch", "randn"), inv)]
        with pytest.raises(CouldNotResolve, match="no module named missing"):
            memo(_Chain("missing", "thing"), inv)
        memo.save()
        return found

    assert build("env-a", inventory) == ["torch.randn"] and len(calls) == 2
    assert build("env-a", inventory) == ["torch.randn"] and len(calls) == 2, "remembered: nothing resolved again"
    build("env-b", inventory)
    assert len(calls) == 4, "another environment (a new torch, an edited fxguide) resolves again"
    build("env-b", {**inventory, "torch.fx.Graph": "url"})
    assert len(calls) == 6, "another inventory resolves again"
