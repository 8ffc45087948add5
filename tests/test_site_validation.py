"""Bad input to the site engine (fxsite): refused with a message, never accepted silently.

Each row is a call the bad-input audit of issue 23 found accepted: a value
that went on into a command line, a report, a path or a sentence.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fxsite.drift import compat, extract, side_env
from fxsite.drift.build import sphinx_command
from fxsite.drift.compare import Finding
from fxsite.drift.report import write_report
from fxsite.sphinx.notebooks import executed_notebook
from fxsite.web.serve import serving

FINDING = Finding("docs/index.md", 1, 1, "same")


def _site(tmp_path: Path) -> Path:
    (tmp_path / "index.html").write_text("<h1>site</h1>")
    return tmp_path


TABLE = [
    ("sphinx_command-jobs-None", lambda tmp: sphinx_command(tmp, jobs=None), ValueError,
     'sphinx_command: jobs must be "auto" or a positive int, got None'),
    ("sphinx_command-jobs-negative", lambda tmp: sphinx_command(tmp, jobs=-3), ValueError, "got -3"),
    ("version_key-negative", lambda tmp: compat.version_key("-1.2.3"), ValueError,
     "version_key: '-1.2.3' is not a release number like 2.14.1"),
    ("write_report-version-None", lambda tmp: write_report(tmp, None, [FINDING]), ValueError,
     "torch version must look like 2.14.1 (major.minor.patch), got None"),
    ("write_report-problems-str", lambda tmp: write_report(tmp, "2.14.1", [FINDING], build_problems="abc"),
     TypeError, "write_report: build_problems must be a list of log lines (str), got 'abc'"),
    ("check_version-newline", lambda tmp: side_env.check_version("2.14.1\n"), ValueError, "got '2.14.1\\n'"),
    ("executed_notebook-escapes", lambda tmp: executed_notebook(tmp, "../../etc"), ValueError,
     "docname must be a relative Sphinx docname"),
    ("serving-port-bool", lambda tmp: serving(_site(tmp), port=True).__enter__(), ValueError,
     "port must be an int from 0 (any free port) to 65535, got True"),
]


@pytest.mark.parametrize(("call", "error", "fragment"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_bad_input_is_refused_with_a_message(tmp_path, call, error, fragment):
    with pytest.raises(error) as caught:
        call(tmp_path)
    assert fragment in str(caught.value)
    assert not (tmp_path / "report.json").exists()


def test_a_report_in_the_folder_of_another_torch_is_damaged_not_read(tmp_path):
    folder = tmp_path / "torch-2.14.1"
    folder.mkdir()
    (folder / "report.json").write_text(json.dumps({"torch": "2.15.0", "date": "2026-01-01", "summary": {},
                                                    "snippets": []}))
    reports = compat.load_reports(tmp_path)
    assert list(reports) == []
    assert "it reports torch 2.15.0 but lies in torch-2.14.1/" in reports.damaged[folder / "report.json"]


def test_with_nothing_recorded_the_home_page_claims_nothing_verified():
    sentence = compat.verified_sentence([], {})
    assert not sentence.startswith("Every output")
    assert sentence.startswith("No output of this guide is recorded yet")


def test_a_generated_gallery_page_that_is_not_one_is_refused(tmp_path):
    (tmp_path / "gallery").mkdir()
    (tmp_path / "docs" / "gallery").mkdir(parents=True)
    (tmp_path / "gallery" / "x.py").write_text("print(1)\n")
    (tmp_path / "docs" / "gallery" / "x.rst").write_text("garbage\n")
    with pytest.raises(ValueError, match="is not a page sphinx-gallery generated"):
        extract.gallery_snippets(tmp_path / "gallery" / "x.py", root=tmp_path)
