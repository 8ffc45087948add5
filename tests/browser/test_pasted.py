"""Found from the error as it is pasted: messages made by running snippets with values of their own
(tests/pasted_errors.py), typed into the built site's search box as a reader pastes them, and a reader's
words for each page's subject.

Forms of a pasted message: the traceback's last line (module-qualified class, torch's values filled in),
Dynamo's ``Explanation:`` line alone, six words from the middle of the first sentence. In each form, at least
95 % must list the answering section of the error index (page and anchor) among the first three results.
Each descriptive query must list its page among the first three.
"""

from __future__ import annotations

import pytest

from browser.searching import TOP, pages, search_page, type_and_search  # noqa: F401

pytestmark = [pytest.mark.docs, pytest.mark.browser]

SHARE = 0.95
FORMS = ("traceback", "explanation", "fragment")

# what a reader types for the subject of each page of the guide -> the page
DESCRIBED = {
    "what is fx": "what-is-fx.html",
    "fx quickstart": "quickstart.html",
    "graph nodes": "ir.html",
    "limitations of symbolic tracing": "limitations.html",
    "make model code traceable": "real-model-code.html",
    "custom tracer leaf modules": "custom-tracers.html",
    "writing a transformation": "transformations.html",
    "interpreter transformer": "interpreters.html",
    "debugging a transformed module": "debugging.html",
    "feature extraction": "feature-extraction.html",
    "concrete tracing": "concrete-tracing.html",
    "capture tools compared": "capture-tools.html",
    "fx and pytorch 2": "fx-and-pt2.html",
    "exported graph pass": "pt2/export-passes.html",
    "read an exported graph": "pt2/exported-graphs.html",
    "torch.compile backend": "pt2/compile-backends.html",
    "debugging pt2 captures": "pt2/debugging.html",
    "dynamic shapes in a pass": "pt2/dynamic-shapes.html",
    "export a real model": "pt2/export-real-models.html",
    "higher-order operators": "pt2/higher-order-ops.html",
    "ir level": "pt2/ir-levels.html",
    "node metadata after a pass": "pt2/metadata.html",
    "opaque regions custom op": "pt2/opaque-regions.html",
    "pass infrastructure": "pt2/pass-infrastructure.html",
    "inductor pattern matcher": "pt2/pattern-matcher.html",
    "pt2e quantization": "pt2/quantization.html",
    "save and load an exported program": "pt2/saving.html",
    "diagnose my model": "problems/diagnose.html",
    "error index": "reference/errors.html",
    "which models trace survey": "survey.html",
    "behaviour atlas": "atlas/index.html",
    "logger.warning torch.compile": "atlas/side-effects.html",
    "warnings.warn torch.export": "atlas/side-effects.html",
    "numpy random torch.compile": "atlas/randomness.html",
    "item in an if torch.export": "atlas/tensor-data.html",
    "requires_grad_ intermediate fullgraph": "atlas/autograd-state.html",
    "buffer assigned in forward": "atlas/module-state.html",
    "print inside torch.cond branch": "atlas/calls-out.html",
    "register_pytree_node flatten_with_keys_fn": "atlas/export-contracts.html",
    "split_module exported program": "atlas/fx-tools.html",
}


@pytest.fixture(scope="module")
def pasted_messages():
    from pasted_errors import pasted

    return pasted()


@pytest.fixture(scope="module")
def outcomes(search_page, site_url, pasted_messages) -> dict[str, list[tuple[str, str, list[str]]]]:
    """form -> (query, expected section, first results) for every pasted message."""
    found: dict[str, list] = {form: [] for form in FORMS}
    for form, text, anchor in pasted_messages:
        links = [url[len(site_url):] for url in type_and_search(search_page, text)]
        found[form].append((text, f"reference/errors.html#{anchor}", links[:TOP]))
    return found


@pytest.mark.parametrize("form", FORMS)
def test_a_pasted_message_lands_on_its_section(outcomes, form):
    tried = outcomes[form]
    missed = [(query[:120], expected, top) for query, expected, top in tried if expected not in top]
    assert len(tried) >= (4 if form == "explanation" else 35)
    share = 1 - len(missed) / len(tried)
    assert share >= SHARE, f"{form}: {share:.0%} in the first {TOP}; missed: {missed}"


@pytest.mark.parametrize(("query", "page"), DESCRIBED.items())
def test_a_readers_words_find_the_page(search_page, site_url, query, page):
    found = pages(type_and_search(search_page, query), site_url)
    assert page in found[:TOP], f"searching {query!r}: first results {found[:5]}"


def _interpreter_without_its_input():
    import torch.fx as fx
    from torch import nn

    fx.Interpreter(fx.symbolic_trace(nn.Linear(2, 3))).run()


def _shapes_propagated_with_a_wrong_input():
    import torch
    import torch.fx as fx
    from torch import nn
    from torch.fx.passes.shape_prop import ShapeProp

    ShapeProp(fx.symbolic_trace(nn.Linear(4, 2))).propagate(torch.ones(5, 3))


def _an_export_below_its_dimension_range():
    import torch
    from torch import nn

    torch.export.export(nn.Linear(2, 2), (torch.ones(3, 2),), dynamic_shapes={"input": {0: torch.export.Dim("n", min=6)}})


#: Errors the catalogue has no cause for, raised by running code, and the guide's page on the part of torch
#: their traceback's last torch frame is in (fxguide.diagnose.topics)
RAISED_IN_A_PART = {
    "an Interpreter run without the graph's input": (_interpreter_without_its_input, "interpreters.html"),
    "shapes propagated with an input of the wrong size": (_shapes_propagated_with_a_wrong_input, "interpreters.html"),
    "an export given a size below its dimension's range": (_an_export_below_its_dimension_range,
                                                           "pt2/dynamic-shapes.html"),
}


@pytest.mark.parametrize("error", RAISED_IN_A_PART)
def test_a_pasted_traceback_no_cause_knows_lands_on_the_page_for_the_part_of_torch_that_raised_it(
        search_page, site_url, error):
    import traceback

    raise_it, page = RAISED_IN_A_PART[error]
    with pytest.raises(Exception) as raised:
        raise_it()
    pasted = "".join(traceback.format_exception(raised.value))
    found = pages(type_and_search(search_page, pasted), site_url)
    assert page in found[:TOP], f"{error}: first results {found[:5]} for\n{pasted[-1500:]}"


def test_a_search_that_finds_nothing_says_where_to_look(search_page):
    search_page.goto("search.html?q=qzxv+wqyk")
    search_page.wait_for_function("document.querySelector('#search-results h2')?.textContent === 'Search Results'")
    summary = search_page.locator("#search-results p.search-summary")
    assert "error index" in summary.inner_text() and "python -m fxguide.explain" in summary.inner_text()
    assert summary.locator("a").get_attribute("href").endswith("reference/errors.html")
