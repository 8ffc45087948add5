"""Every output the site shows equals the output recorded in tests/expected."""

from __future__ import annotations

import pytest
import torch

from fxsite.drift import snapshots
from fxsite.drift.compare import SAME, compare
from fxsite.drift.extract import ROOT, gallery_snippets, gallery_sources, page_snippets, page_sources

TORCH = torch.__version__.split("+")[0]


def _check(source: str, actual) -> None:
    try:
        expected = snapshots.load(source)
    except snapshots.SnapshotError as error:
        pytest.fail(f"{error}\n\n`make update-expected` rewrites it from the build.", pytrace=False)
    drift = [f for f in compare(source, expected, actual, TORCH) if f.status != SAME]
    if drift:
        pytest.fail("\n\n".join(f.message for f in drift) + "\n\nIf torch's new output is right: "
                    "`make update-expected`, then review `git diff tests/expected`.", pytrace=False)


@pytest.mark.docs
@pytest.mark.parametrize("doc", page_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_page_outputs_match_expected(built_site, doc):
    _check(str(doc.relative_to(ROOT)), page_snippets(doc, built_site))


@pytest.mark.docs
@pytest.mark.parametrize("script", gallery_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_gallery_outputs_match_expected(built_site, script):
    _check(str(script.relative_to(ROOT)), gallery_snippets(script))


def test_every_source_has_a_snapshot_and_no_snapshot_is_orphaned():
    sources = {str(p.relative_to(ROOT)) for p in page_sources() + gallery_sources()}
    recorded = {str(p.relative_to(snapshots.EXPECTED))[: -len(".txt")] for p in snapshots.EXPECTED.rglob("*.txt")}
    assert sources - recorded == set(), "pages or scripts without expected outputs: run `make update-expected`"
    assert recorded - sources == set(), "snapshots of sources that no longer exist: run `make update-expected`"


def test_the_expected_output_store_holds_only_readable_snapshots():
    damaged = snapshots.damage()
    assert not damaged, "damaged files in the expected-output store (`make update-expected` repairs them):\n" + \
        "\n".join(f"{path.relative_to(ROOT)}: {why}" for path, why in damaged.items())
