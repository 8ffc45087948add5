"""The survey page's tables: counts per zoo and tool, causes grouped and linked, every model listed."""

from __future__ import annotations

import json
import re

import pytest

from fxsite.sphinx.survey import models_html
from fxsite.survey.causes import causes, summary

CONTROL_FLOW = "symbolically traced variables cannot be used as inputs to control flow"


def _result(captured=True, error_type="", error="", nodes=10, matches=True, mismatch=""):
    return {"captured": captured, "error_type": error_type, "error": error, "nodes": nodes if captured else None,
            "matches": matches if captured else None, "mismatch": mismatch, "seconds": 0.1}


@pytest.fixture
def survey() -> dict:
    ok, flow = _result(), _result(False, "TraceError", CONTROL_FLOW)
    models = [
        {"zoo": "torchvision", "category": "classification", "model": "a", "input": "1x3", "status": "surveyed",
         "reason": "", "params": 10, "tools": {"symbolic_trace": ok, "hf_symbolic_trace": None, "export": ok}},
        {"zoo": "torchvision", "category": "detection", "model": "b", "input": "1x3", "status": "surveyed",
         "reason": "", "params": 10, "tools": {"symbolic_trace": flow, "hf_symbolic_trace": None,
                                               "export": _result(matches=False, mismatch="values differ")}},
        {"zoo": "timm", "category": "vit", "model": "c", "input": "1x3", "status": "surveyed", "reason": "",
         "params": 10, "tools": {"symbolic_trace": flow, "hf_symbolic_trace": None, "export": ok}},
        {"zoo": "transformers", "category": "encoder", "model": "d", "input": "ids", "status": "not surveyed",
         "reason": "no record", "tools": {}},
    ]
    return {"tools": ["symbolic_trace", "hf_symbolic_trace", "export"], "models": models}


def test_summary_counts_captures_and_matches_per_zoo_and_in_total(survey) -> None:
    rows = {row["zoo"]: row for row in summary(survey["models"], survey["tools"])}
    assert rows["torchvision"]["tools"]["symbolic_trace"] == {"applies": 2, "captured": 1, "matches": 1}
    assert rows["torchvision"]["tools"]["export"] == {"applies": 2, "captured": 2, "matches": 1}
    assert rows["torchvision"]["tools"]["hf_symbolic_trace"] is None
    assert (rows["transformers"]["models"], rows["transformers"]["surveyed"]) == (1, 0)
    assert rows["total"]["tools"]["symbolic_trace"]["captured"] == 1


def test_failures_group_by_cause_across_zoos_and_link_to_the_guide(survey) -> None:
    found = causes(survey["models"])
    first = found[0]
    assert (first.stage, first.count, first.link.path) == ("capture", 2, "reference/errors.html#error-control-flow")
    assert first.models["symbolic_trace"] == ["torchvision/b", "timm/c"]
    assert [(c.stage, c.pattern) for c in found[1:]] == [("second input", "values differ")]


def test_the_table_lists_every_model_and_links_failures_to_their_cause(survey) -> None:
    page = models_html("2.14.1", survey)
    assert page.count("<tr data-zoo=") == 4
    assert "not surveyed: no record" in page
    assert page.count('href="#survey-2-14-1-cause-1"') == 2
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=", page), "the table must not load anything"


def test_stale_records_are_counted_against_todays_survey_code_not_the_files_count() -> None:
    from fxsite.sphinx.survey import stale_records
    from fxsite.survey.data import fxguide_key

    models = [{"status": "surveyed", "fxguide": fxguide_key()}, {"status": "surveyed", "fxguide": "0123456789ab"},
              {"status": "not surveyed", "fxguide": "0123456789ab"}]
    assert stale_records({"stale": 0, "models": models}) == 1


def test_a_library_that_cannot_be_installed_is_explained_with_the_drift_reports_pip_error(tmp_path) -> None:
    from fxsite.sphinx.survey import install_failures

    folder = tmp_path / "torch-2.15.0"
    folder.mkdir()
    assert install_failures(folder) == {}
    why = "not installable with torch 2.15.0 (pip: ERROR: Cannot install torchvision>=0.20)"
    (folder / "report.json").write_text(json.dumps({"unavailable": {"torchvision": why}}))
    assert install_failures(folder) == {"torchvision": why}


def test_every_failure_of_the_reference_survey_has_a_cause_with_a_section() -> None:
    from fxsite.drift.report import REFERENCE_TORCH
    from fxsite.survey.data import survey_path

    models = json.loads(survey_path(REFERENCE_TORCH).read_text())["models"]
    unclassified = [f"{cause.stage}: {cause.example} ({dict(cause.models)})" for cause in causes(models)
                    if cause.link is None]
    assert not unclassified, "failures with no cause in fxguide.diagnose.causes.CAUSES:\n" + "\n".join(unclassified)


def test_an_unknown_failure_is_counted_as_unclassified(survey) -> None:
    # the test above can fail: a message no cause matches has no link
    odd = _result(False, "RuntimeError", "a failure no cause of the catalogue explains")
    survey["models"][0]["tools"]["export"] = odd
    assert [c.link for c in causes(survey["models"]) if "no cause" in c.example] == [None]
