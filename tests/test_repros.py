"""The reproductions of :mod:`fxguide.atlas.repros`: each raises its message under its tool, the lookup recognises
the inventory entry it records, and its fix runs under the same tool and matches eager mode."""

from __future__ import annotations

import re

import pytest

from fxguide.atlas.messages import table
from fxguide.atlas.repros import all_repros, cleaned, reproduce
from fxguide.atlas.tools import TOOLS
from fxguide.explain import explain

REPROS = all_repros()


def test_there_are_at_least_100_reproductions_in_every_subsystem():
    assert len(REPROS) >= 100
    assert {item.group for item in REPROS} == {"aot_autograd", "compile_api", "control_flow", "custom_ops", "dynamo",
                                            "export", "func", "fx", "pt2e"}
    assert len({(item.code, item.tool) for item in REPROS}) == len(REPROS)


def test_every_graph_break_id_the_atlas_meets_has_a_reproduction():
    import json
    from importlib import resources
    outcomes = json.loads(resources.files("fxguide.atlas").joinpath("outcomes.json").read_text())
    met = {gb for row in outcomes["rows"] for cell in row["tools"].values() for gb in cell["breaks"]}
    assert met and met <= {item.entry for item in REPROS}


@pytest.mark.parametrize("item", REPROS, ids=lambda item: f"{item.group}-{item.code.__name__}")
def test_reproduction_raises_is_recognised_answered_and_its_fix_matches_eager(item):
    assert item.tool in TOOLS or not isinstance(item.code, type)
    outcome = reproduce(item)
    assert outcome.raised, "nothing raised"
    assert outcome.hit is not False, (item.entry, outcome.recognised, outcome.error)
    # a message marked "not recognised" on the page is not: the mark goes when the lookup learns it
    assert not item.missed or item.missed not in outcome.recognised, f"{item.missed} is recognised now: entry="
    assert outcome.fix_matches, outcome.fix_note
    if not item.entry:  # the words explain finds it by, where the inventory does not hold it
        assert re.search(item.identified_by, outcome.error), (item.identified_by, outcome.error)
    status, report = explain(outcome.error)
    assert status == 0, f"python -m fxguide.explain has no answer for the reproduced message:\n{report}"


def test_every_identifying_pattern_starts_with_words_and_bounds_its_wildcards_so_a_long_paste_stays_linear():
    """A pattern that starts with a wildcard (``\\w+ has no attribute``) is tried at every position of a pasted
    token and runs to its end each time, and so does an unbounded ``.*`` at every repetition of the words before
    it: a 1 MB paste would take hours (``tests/test_lookup_claims.py`` times such pastes through explain)."""
    leading_wildcard, unbounded = re.compile(r"\\[wWsSdD]|\.|\[|\("), re.compile(r"(?<!\\)\.[*+]")
    patterns = {item.code.__name__: item.identified_by for item in REPROS if not item.entry}
    assert patterns and not {name: p for name, p in patterns.items()
                             if leading_wildcard.match(p) or unbounded.search(p)}


def test_every_recorded_entry_is_in_the_inventory():
    from fxguide.diagnose.torch_messages import entries
    ids = {entry.id for entry in entries()}
    recorded = {item.entry for item in REPROS if item.entry} | {item.missed for item in REPROS if item.missed}
    assert recorded and recorded <= ids
    assert not [item.message for item in REPROS if item.entry and item.missed]


def test_the_page_text_names_no_path_or_address():
    text = cleaned('File "/tmp/x/y.py", line 3 at 0x7f00 in /work/a/b.py id 140676929258320\nfrom user code:\n  File "z"')
    assert text == 'File "y.py", line 3 in b.py id <id>'
    assert cleaned("types: [<class 'str'>, <class 'int'>]") == "types: [<class 'int'>, <class 'str'>]"
    outcomes = [reproduce(item) for item in REPROS[:3]]
    page = table(outcomes)
    assert page.count("\n", 0, page.index("\n\n")) == 3 and "/work/" not in page and "0x" not in page
    assert "<details>" in page._repr_html_()
