"""The drift guard catches drift: fake drift is injected and each kind must be reported, with the right words.

Most tests run small "cells" in-process with :func:`run_cell` (stdout captured,
an exception recorded as ``Type: message``, exactly like the build's notebooks),
record them as the reference, then patch torch to behave like another release
and check what :func:`compare` says. One slow test does the same through a real
throwaway docs build.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
import warnings
import textwrap
from pathlib import Path

import pytest
import torch
import torch.fx as fx

from fxsite.drift import compat, side_env, snapshots
from fxsite.drift.build import build_docs
from fxsite.drift.compare import (CHANGED, MISSING_LIBRARY, NEWLY_HANGS, NEWLY_RAISING, NO_LONGER_RAISING, NO_LONGER_SHOWN,
                                   NOT_RECORDED, ROUNDING, SAME, compare)
from fxsite.drift.extract import ROOT, Snippet, gallery_snippets, page_snippets
from fxsite.drift.normalize import normalize
from fxsite.drift.report import REFERENCE_TORCH, write_report

SOURCE = "docs/limitations.md"
OTHER = "9.9.9"  # the torch version the fake drift pretends to come from


def run_cell(code: str, index: int, *, line: int | None = None, tagged_raises: bool = False,
             source: str = SOURCE) -> Snippet:
    """Execute ``code`` like a notebook cell and return what a reader would be shown."""
    out, raised = io.StringIO(), None
    with contextlib.redirect_stdout(out):
        try:
            exec(textwrap.dedent(code), {"torch": torch, "fx": fx})
        except Exception as error:  # noqa: BLE001 - a cell may raise anything; that is what we record
            raised = normalize(f"{type(error).__name__}: {error}")  # what ipykernel records
    return Snippet(source, index, line or 10 * index, normalize(out.getvalue()), raised, tagged_raises)


def record(snippets: list[Snippet], source: str = SOURCE) -> dict[int, snapshots.Expected]:
    """Record ``snippets`` the way `make update-expected` does, and read the record back."""
    return snapshots.loads(snapshots.dumps(source, snippets, REFERENCE_TORCH))


def verdicts(expected, actual, source: str = SOURCE):
    return {f.index: f for f in compare(source, expected, actual, OTHER)}


GRAPH_CELL = """
def f(x):
    return torch.relu(x).sum(dim=1)
print(fx.symbolic_trace(f).graph)
"""

LIMITATION_CELL = """
def f(x):
    if x.sum() > 0:
        return x
    return -x
fx.symbolic_trace(f)
"""


# -- fake drift is caught ---------------------------------------------------------


def test_a_changed_graph_printer_is_reported_as_changed_with_a_unified_diff(monkeypatch):
    expected = record([run_cell(GRAPH_CELL, 1)])
    # Another torch prints graphs without the num_users annotation.
    original = fx.Graph.__str__
    monkeypatch.setattr(fx.Graph, "__str__", lambda self: original(self).replace(" : [num_users=1] = ", " = "))
    finding = verdicts(expected, [run_cell(GRAPH_CELL, 1)])[1]
    assert finding.status == CHANGED
    assert "-    %x : [num_users=1] = placeholder[target=x]" in finding.diff
    assert "+    %x = placeholder[target=x]" in finding.diff
    assert finding.message.startswith(f"{SOURCE}, cell 1 (line 10), torch {OTHER}: output changed\n")


def test_a_renamed_node_is_reported_as_changed(monkeypatch):
    expected = record([run_cell(GRAPH_CELL, 1)])
    # Another torch names the sum node "sum_2" instead of "sum_1".
    original = fx.symbolic_trace

    def renaming_trace(root, *args, **kwargs):
        gm = original(root, *args, **kwargs)
        for node in gm.graph.nodes:
            if node.name == "sum_1":
                node._rename("sum_2")
        return gm

    monkeypatch.setattr(fx, "symbolic_trace", renaming_trace)
    finding = verdicts(expected, [run_cell(GRAPH_CELL, 1)])[1]
    assert finding.status == CHANGED
    assert "-    return sum_1" in finding.diff and "+    return sum_2" in finding.diff


def test_a_limitation_that_silently_stops_raising_says_update_the_guide(monkeypatch):
    reference = run_cell(LIMITATION_CELL, 2, tagged_raises=True)
    assert reference.raised is not None and reference.raised.startswith("TraceError: symbolically traced variables")
    expected = record([reference])
    assert expected[2].raises
    # Another torch lets a traced value decide an `if` (as if the limitation were lifted).
    monkeypatch.setattr(fx.Proxy, "__bool__", lambda self: True)
    finding = verdicts(expected, [run_cell(LIMITATION_CELL, 2, tagged_raises=True)])[2]
    assert finding.status == NO_LONGER_RAISING
    assert f"no longer raises on torch {OTHER} — update the guide" in finding.message
    assert finding.message.startswith(f"{SOURCE}, cell 2 (line 20), torch {OTHER}:")
    assert "-TraceError: symbolically traced variables cannot be used as inputs to control flow" in finding.diff


def test_a_cell_that_starts_raising_is_reported_as_newly_raising(monkeypatch):
    expected = record([run_cell(GRAPH_CELL, 1)])

    def refuse(*args, **kwargs):
        raise NotImplementedError("symbolic_trace was removed")

    monkeypatch.setattr(fx, "symbolic_trace", refuse)
    finding = verdicts(expected, [run_cell(GRAPH_CELL, 1)])[1]
    assert finding.status == NEWLY_RAISING
    assert f"now raises NotImplementedError on torch {OTHER}" in finding.message
    assert "+NotImplementedError: symbolic_trace was removed" in finding.diff


def test_a_changed_error_message_is_reported_as_changed(monkeypatch):
    expected = record([run_cell(LIMITATION_CELL, 1, tagged_raises=True)])

    def reworded(self):
        raise fx.proxy.TraceError("data-dependent control flow is not supported")

    monkeypatch.setattr(fx.Proxy, "__bool__", reworded)
    finding = verdicts(expected, [run_cell(LIMITATION_CELL, 1, tagged_raises=True)])[1]
    assert finding.status == CHANGED
    assert "+TraceError: data-dependent control flow is not supported" in finding.diff


def test_only_normalized_differences_count_as_the_same():
    # Each trace makes a new <eval_with_key>.N and a new function at a new address.
    cell = "gm = fx.symbolic_trace(lambda x: x + 1)\nprint(gm.forward.__code__.co_filename, object())"
    first, second = run_cell(cell, 1), run_cell(cell, 1)
    assert "<eval_with_key>.N" in first.output and "0x<addr>" in first.output
    assert verdicts(record([first]), [second])[1].status == SAME


def test_a_new_cell_without_a_recording_and_a_vanished_cell_are_both_reported():
    expected = record([run_cell("print('kept')", 1), run_cell("print('gone')", 3)])
    found = verdicts(expected, [run_cell("print('kept')", 1), run_cell("print('new')", 2)])
    assert found[1].status == SAME
    assert found[2].status == NOT_RECORDED and "run `make update-expected`" in found[2].message
    assert found[3].status == NO_LONGER_SHOWN and "cell 3 (line 30)" in found[3].message


def test_a_page_without_any_recording_is_reported():
    (finding,) = compare(SOURCE, None, [run_cell("print(1)", 1)], OTHER)
    assert finding.status == NOT_RECORDED
    assert "tests/expected/docs/limitations.md.txt is missing" in finding.message


def test_a_gallery_block_is_named_as_a_block():
    expected = record([run_cell("print(1)", 1, source="gallery/x.py")], "gallery/x.py")
    finding = verdicts(expected, [run_cell("print(2)", 1, source="gallery/x.py")], "gallery/x.py")[1]
    assert finding.message.startswith(f"gallery/x.py, block 1 (line 10), torch {OTHER}: output changed")
    assert "--- expected (tests/expected/gallery/x.py.txt)" in finding.diff
    assert f"+++ actual (torch {OTHER})" in finding.diff


# -- normalize: each rule, and nothing more --------------------------------------------


@pytest.mark.parametrize("raw, shown", [
    ("<function f at 0x7f3a2b1c9d30>", "<function f at 0x<addr>>"),
    ('File "<eval_with_key>.37", line 5', 'File "<eval_with_key>.N", line 5'),
    ("took 1.73 ms", "took <time>"),
    ("took 12.0µs and 0.5s", "took <time> and <time>"),
    ("2.41x faster", "<ratio>x faster"),
    ("line one   \nline two\t", "line one\nline two"),
    ("\n\n\ndef forward(self, x):\n    return x\n\n\n", "def forward(self, x):\n    return x"),
    (f"{ROOT}/fxguide/models.py", "<repo>/fxguide/models.py"),
    (f"{torch.__file__}", "<site-packages>/torch/__init__.py"),
])
def test_normalize_removes_each_meaningless_difference(raw, shown):
    assert normalize(raw) == shown


def test_normalize_hides_line_numbers_inside_installed_packages():
    # torch 2.13.0, 2.14.1 and 2.15.0 raise this warning from lines 997, 1015 and 1026.
    site = str(Path(torch.__file__).parents[1])
    for line in (997, 1015, 1026):
        assert normalize(f"{site}/torch/fx/_symbolic_trace.py:{line}: UserWarning: Was not able") == \
            "<site-packages>/torch/fx/_symbolic_trace.py:<line>: UserWarning: Was not able"
        assert normalize(f'File "{site}/torch/fx/proxy.py", line {line}, in iter') == \
            'File "<site-packages>/torch/fx/proxy.py", line <line>, in iter'
    # the guide's own files keep their line numbers
    assert normalize(f"{ROOT}/fxguide/models.py:12: UserWarning") == "<repo>/fxguide/models.py:12: UserWarning"


def test_a_warning_torch_raises_from_another_line_is_the_same():
    cell = """
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fx.symbolic_trace(lambda x: x + 1, concrete_args={"x": torch.ones(2)})
for w in caught:
    print(f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}")
"""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(cell, {"torch": torch, "fx": fx})
    raw = out.getvalue()
    assert "_symbolic_trace.py:" in raw and "UserWarning" in raw
    lineno = raw.split("_symbolic_trace.py:")[1].split(":")[0]
    moved = raw.replace(f"_symbolic_trace.py:{lineno}:", f"_symbolic_trace.py:{int(lineno) + 18}:")
    expected = record([Snippet(SOURCE, 1, 5, normalize(raw))])
    assert verdicts(expected, [Snippet(SOURCE, 1, 5, normalize(moved))])[1].status == SAME
    reworded = raw.replace("UserWarning", "FutureWarning")
    assert verdicts(expected, [Snippet(SOURCE, 1, 5, normalize(reworded))])[1].status == CHANGED


def test_normalize_hides_temporary_paths(tmp_path):
    assert normalize(f"wrote {tmp_path}/graph.svg") == "wrote <tmp>/…"


@pytest.mark.parametrize("text", [
    "tensor([3.1253, 3.0184], grad_fn=<SumBackward1>)",  # values: seeded, never normalized
    "%sum_1 : [num_users=1] = call_method[target=sum]",  # node names
    "mask 0x1f",  # a short hex number is a value, not an address
    "batch of 3 s",  # an integer count followed by a word that looks like a unit
    "    indented line",  # leading whitespace is part of the output
])
def test_normalize_keeps_everything_else(text):
    assert normalize(text) == text


def test_a_difference_normalize_does_not_remove_is_caught():
    expected = record([Snippet(SOURCE, 1, 5, normalize("tensor([3.1253, 3.0184])"))])
    actual = [Snippet(SOURCE, 1, 5, normalize("tensor([3.1253, 3.0185])"))]
    assert verdicts(expected, actual)[1].status == CHANGED


def test_normalize_refuses_what_is_not_text():
    with pytest.raises(TypeError, match="normalize: text must be a str, got"):
        normalize(b"bytes")


# -- snapshots: what is written is what is read -------------------------------------------


def test_a_snapshot_round_trips():
    shown = [
        Snippet(SOURCE, 1, 12, "graph():\n    %x : [num_users=1] = placeholder[target=x]\n\n    return x"),
        Snippet(SOURCE, 2, 20, ""),  # shows nothing: not recorded
        Snippet(SOURCE, 3, 31, "", "TraceError: symbolically traced variables cannot be used", True),
        Snippet(SOURCE, 4, 40, "printed first", "ValueError: then raised", True),
    ]
    text = snapshots.dumps(SOURCE, shown, REFERENCE_TORCH)
    back = snapshots.loads(text)
    assert sorted(back) == [1, 3, 4]
    assert back[1] == snapshots.Expected(1, 12, shown[0].output, False)
    assert back[3] == snapshots.Expected(3, 31, "TraceError: symbolically traced variables cannot be used", True)
    assert back[4].output == "printed first\nValueError: then raised" and back[4].raises
    assert snapshots.dumps(SOURCE, shown, REFERENCE_TORCH) == text  # writing is deterministic
    assert all(f.status == SAME for f in compare(SOURCE, back, shown, REFERENCE_TORCH))


def test_a_snapshot_with_text_before_its_first_header_is_refused():
    with pytest.raises(ValueError, match="text before the first"):
        snapshots.loads("stray line\n=== cell 1 (line 3) ===\nx\n")


def test_snapshot_paths_must_name_a_page_or_script():
    with pytest.raises(ValueError, match="must be a path like"):
        snapshots.snapshot_path("/abs/page.md")


# -- reports and the Compatibility page ---------------------------------------------------


def _report(tmp_path: Path, monkeypatch) -> tuple[dict, dict]:
    """A drift report of two snippets (one the same, one changed) against recorded snapshots in tmp_path."""
    monkeypatch.setattr(snapshots, "EXPECTED", tmp_path / "expected")
    shown = [run_cell("print('same')", 1), run_cell(GRAPH_CELL, 2)]
    snapshots.write(SOURCE, shown, REFERENCE_TORCH)
    drifted = [shown[0], Snippet(SOURCE, 2, 20, shown[1].output.replace("sum_1", "sum_2"))]
    findings = compare(SOURCE, snapshots.load(SOURCE), drifted, OTHER)
    json_path, md_path = write_report(tmp_path / f"drift/torch-{OTHER}", OTHER, findings, ["a.md:3: WARNING: x"])
    return json.loads(json_path.read_text()), compat.current_snapshots(tmp_path / "expected")


def test_a_report_lists_every_snippet_with_its_status_and_diff(tmp_path, monkeypatch):
    data, _ = _report(tmp_path, monkeypatch)
    assert data["torch"] == OTHER and data["summary"] == {"changed": 1, "same": 1}
    assert [(s["index"], s["status"]) for s in data["snippets"]] == [(1, SAME), (2, CHANGED)]
    assert "+    return sum_2" in data["snippets"][1]["diff"]
    assert data["build_problems"] == ["a.md:3: WARNING: x"]
    md = (tmp_path / f"drift/torch-{OTHER}/report.md").read_text()
    assert f"## {SOURCE}, snippet 2 (line 20): changed" in md and "```diff" in md


def test_the_compatibility_page_shows_each_difference_and_the_versions_checked(tmp_path, monkeypatch):
    _, current = _report(tmp_path, monkeypatch)
    reports = compat.load_reports(tmp_path / "drift")
    page = compat.render_page(reports, current)
    assert (f"- **torch {OTHER}**, checked on {reports[0]['date']}: 1 of 2 outputs the same, 1 differ (1 changed), "
            "0 not checked yet. Unit tests and doctests: not run.") in page
    assert f"(`{SOURCE}`): 1 output differs on {OTHER}" in page
    assert f"({compat.anchor_of(SOURCE)})=" in page  # the page's changes have an anchor its line links to
    assert (f"- **torch {OTHER}**, cell 2 (line 20): node or variable names changed (a numeric suffix)." in page
            and "+    return sum_2" in page and "<details><summary>The difference</summary>" in page)
    assert compat.page_status(SOURCE, reports, current) == [f"Verified on torch {REFERENCE_TORCH}",
                                                             f"1 output differs on {OTHER}"]
    assert compat.verified_sentence(reports, current) == (
        f"Verified on torch {REFERENCE_TORCH} (every output) and {OTHER} (1 of 2 outputs the same).")


def test_an_output_re_recorded_after_a_report_counts_as_not_checked(tmp_path, monkeypatch):
    _, current = _report(tmp_path, monkeypatch)
    snapshots.write(SOURCE, [run_cell("print('same, but edited')", 1), run_cell(GRAPH_CELL, 2)], REFERENCE_TORCH)
    current = compat.current_snapshots(tmp_path / "expected")
    cov = compat.coverage(compat.load_reports(tmp_path / "drift")[0], current)
    assert cov.unchecked == [(SOURCE, 1)] and cov.same == []
    assert compat.verified_sentence(compat.load_reports(tmp_path / "drift"), current) == (
        f"Verified on torch {REFERENCE_TORCH} (every output) and {OTHER} (0 of 2 outputs the same, 1 not checked yet).")


def test_releases_where_every_output_is_the_same_are_simply_listed(tmp_path, monkeypatch):
    _, current = _report(tmp_path, monkeypatch)
    report = compat.load_reports(tmp_path / "drift")[0]
    for entry in report["snippets"]:
        entry["status"], entry["diff"] = SAME, ""
    newer = dict(report, torch="10.0.0")
    assert compat.verified_sentence([report, newer], current) == (
        f"Every output shown here is verified on torch {REFERENCE_TORCH}, {OTHER} and 10.0.0.")


def test_a_page_that_raises_on_an_older_release_says_which_torch_it_needs(tmp_path, monkeypatch):
    _, current = _report(tmp_path, monkeypatch)
    report = compat.load_reports(tmp_path / "drift")[0]
    older = json.loads(json.dumps(report))
    older["torch"] = "2.0.0"
    older["snippets"][1]["status"] = NEWLY_RAISING
    newer = json.loads(json.dumps(report))
    for entry in newer["snippets"]:
        entry["status"], entry["diff"] = SAME, ""
    assert compat.page_status(SOURCE, [older, newer], current) == [
        f"Verified on torch {REFERENCE_TORCH}", f"same on {OTHER}", "1 output differs on 2.0.0",
        f"needs torch ≥ {OTHER}"]


def test_a_page_that_raises_on_a_newer_release_shows_drift_not_a_need(tmp_path, monkeypatch):
    """Raising on a release newer than the reference is a change to look at, not an older torch to avoid."""
    _, current = _report(tmp_path, monkeypatch)
    newer = json.loads(json.dumps(compat.load_reports(tmp_path / "drift")[0]))
    newer["torch"] = "99.0.0"
    newer["snippets"][1]["status"] = NEWLY_RAISING
    parts = compat.page_status(SOURCE, [newer], current)
    assert parts[-1].endswith("on 99.0.0") and not any(p.startswith("needs torch") for p in parts)


@pytest.mark.docs
def test_each_built_page_shows_the_line_its_drift_reports_give(built_site):
    """The line under each title agrees with the committed reports (fxsite.drift.compat.page_status)."""
    import html as html_lib
    reports, current = compat.load_reports(), compat.current_snapshots()
    checked = 0
    for source in sorted(current):
        page = built_site / "html" / (source.removesuffix(".md").removeprefix("docs/") + ".html" if source.endswith(".md")
                             else "gallery/" + Path(source).stem + ".html")
        text = html_lib.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))
        line = " · ".join(compat.page_status(source, reports, current))
        assert line in re.sub(r"\s*·\s*", " · ", text), f"{page}: no line {line!r}"
        checked += 1
    assert checked == len(current) > 30


def test_the_committed_reports_are_well_formed():
    statuses = {SAME, CHANGED, NEWLY_RAISING, NEWLY_HANGS, NO_LONGER_RAISING, NOT_RECORDED, NO_LONGER_SHOWN,
                MISSING_LIBRARY, ROUNDING}
    for folder in sorted((ROOT / "drift").glob("torch-*")):
        report = compat.read_report(folder / "report.json")  # a corrupt one fails here, named by its path
        assert folder.name == f"torch-{side_env.check_version(report['torch'])}"
        counts: dict[str, int] = {}
        for entry in report["snippets"]:
            assert entry["status"] in statuses, entry
            assert bool(entry["diff"]) == (entry["status"] in {CHANGED, NEWLY_RAISING, ROUNDING}) or entry["status"] in {
                NO_LONGER_RAISING}, entry
            if entry["status"] == MISSING_LIBRARY:
                assert any(f"needs {lib}, " in entry["message"] for lib in report["unavailable"]), entry
            counts[entry["status"]] = counts.get(entry["status"], 0) + 1
        assert report["summary"] == dict(sorted(counts.items())), folder


def test_a_report_behind_todays_recordings_is_named_with_the_command_that_refreshes_it(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshots, "EXPECTED", tmp_path / "expected")
    shown = [run_cell(f"print({i})", i) for i in range(1, 41)]
    snapshots.write(SOURCE, shown, REFERENCE_TORCH)
    current = compat.current_snapshots(tmp_path / "expected")
    report = {"torch": "2.99.0", "date": "2026-11-28", "summary": {}, "snippets": [
        {"source": SOURCE, "index": i, "status": SAME, "expected_digest": snapshots.digest(str(i))}
        for i in range(1, 41)]}
    older = dict(report, torch="2.98.0", snippets=report["snippets"][:38])  # 2 of 40 behind: 5 %
    assert compat.behind([older, report], current) == []
    report["snippets"] = report["snippets"][1:]  # the newest release: one output behind is too many
    older["snippets"] = older["snippets"][:37]  # 3 of 40: over 5 %
    found = compat.behind([older, report], current)
    assert found == [
        "torch 2.98.0: 3 of 40 outputs not checked yet (at most 2); refresh it with "
        "`python -m fxsite.drift.side_env 2.98.0 --outputs-only`",
        "torch 2.99.0: 1 of 40 outputs not checked yet (at most 0 on the newest release); refresh it with "
        "`python -m fxsite.drift.side_env 2.99.0 --outputs-only`"]
    assert compat.behind([dict(report, torch=REFERENCE_TORCH)], current) == []  # the suite checks the reference


def test_the_committed_reports_are_current():
    """The newest reported release has compared every output recorded today; each older one all but 5 %."""
    stale = compat.behind(compat.load_reports(), compat.current_snapshots())
    assert not stale, "\n".join(stale)


# -- the side environment -----------------------------------------------------------------


# What the reference environment's metadata says (importlib.metadata.requires), cut down: the tests
# must not depend on the environment running them (a drift run runs them beside another torch).
REQUIRES = {
    "torch": ["filelock", "sympy>=1.13.3", "networkx>=2.5.1", "jinja2",
              'cuda-toolkit[cublas,cudart]==13.0.3; platform_system == "Linux"',
              'cuda-bindings<14,>=13.0.3; platform_system == "Linux" and python_version < "3.15"',
              'nvidia-cudnn-cu13==9.24.0.43; platform_system == "Linux"',
              'triton~=3.8.0; platform_system == "Linux" and python_version < "3.15"'],
    "cuda-toolkit": ['nvidia-cublas==13.1.1.3; extra == "cublas"', 'nvidia-cuda-runtime==13.0.96; extra == "cudart"',
                     'nvidia-cufft==12.0.0.61; extra == "cufft"'],
    "cuda-bindings": ["cuda-pathfinder~=1.1"],
    "nvidia-cudnn-cu13": ["nvidia-cublas"],
    "torchvision": ["numpy", "torch (>=2.14.0)", "pillow (!=8.3.*,>=5.3.0)"],
    "timm": ["torch", "torchvision", "pyyaml", "huggingface_hub", "safetensors"],
    "transformers": ["filelock", "numpy>=1.17", 'torch>=2.2; extra == "torch"'],
    "sphinx": ["docutils"],
}


def _reference_requires(name: str):
    return REQUIRES.get(name, [])


def test_the_reference_environment_has_what_the_cut_down_metadata_says():
    if side_env._reference_requires("torchvision") is None:
        pytest.skip("runs beside the reference torch only (this environment has no torchvision)")
    for name in ("torchvision", "timm"):
        assert {side_env._name(r) for r in side_env._reference_requires(name) if ";" not in r} == \
            {side_env._name(r) for r in REQUIRES[name]}, name
    assert "triton" in side_env.torch_build_packages(side_env._reference_requires)


def test_a_side_environment_pins_everything_but_torch_and_what_is_built_for_it():
    text = (ROOT / "constraints.txt").read_text()
    build = side_env.torch_build_packages(_reference_requires)
    side = side_env.side_constraints(text, "2.15.0", follow_torch=build)
    assert "torch==2.15.0" in side and f"torch=={REFERENCE_TORCH}" not in side
    assert "torchvision==0.30.*" in side.splitlines()
    kept = {"torch", "torchvision"} | build
    assert [l for l in side.splitlines() if side_env._pin_name(l) not in kept] == \
        [l for l in text.splitlines() if side_env._pin_name(l) not in kept]
    assert not [l for l in side.splitlines() if side_env._pin_name(l) in build]


def test_torch_build_packages_are_its_cuda_libraries_and_triton_not_its_portable_needs():
    assert side_env.torch_build_packages(_reference_requires) == {
        "cuda-toolkit", "nvidia-cublas", "nvidia-cuda-runtime", "cuda-bindings", "cuda-pathfinder",
        "nvidia-cudnn-cu13", "triton"}, "nvidia-cufft is behind an extra torch does not ask for"


@pytest.mark.parametrize("torch_version, line", [("2.13.0", "0.28"), ("2.14.1", "0.29"), ("2.15.0", "0.30")])
def test_torchvision_follows_torch_minor_plus_15(torch_version, line):
    assert side_env.companion_torchvision(torch_version) == line
    assert f"torchvision=={line}.*" in side_env.side_constraints("torch==2.14.1\ntorchvision==0.29.1\n", torch_version)


def test_the_libraries_built_against_torch_are_found_from_the_project_and_installed_first_needed_first():
    requirements = side_env.extra_requirements((ROOT / "pyproject.toml").read_text(), ["docs", "test"])
    assert any(r.startswith("transformers") for r in requirements) and "fxguide[draw,models]" not in requirements
    libraries = side_env.torch_libraries(requirements, _reference_requires)
    assert [side_env._name(r) for r in libraries] == ["torchvision", "timm"]
    assert side_env.dependents("torchvision", libraries, _reference_requires) == ["timm"]


def test_an_unknown_extra_is_refused():
    with pytest.raises(ValueError, match="has no extra 'doc'"):
        side_env.extra_requirements((ROOT / "pyproject.toml").read_text(), ["doc"])


def _fake_side_env(monkeypatch, tmp_path, *, installs: set[str], imports: set[str]) -> list[list[str]]:
    """Make pip install only ``installs`` and Python import only ``imports``; return the commands run."""
    commands: list[list[str]] = []

    (tmp_path / "c.txt").write_text("numpy==2.4.6\ntorchvision==0.30.*\n")

    def run(command, log, **kwargs):
        commands.append(command)
        if command[3] == "install" and command[-1].split(">")[0].split("=")[0] not in installs:
            raise side_env.DriftToolingError(f"pip ... failed (exit 1); last lines of {log}:\n"
                                             f"ERROR: No matching distribution found for {command[-1]}\n"
                                             "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io")

    def probe(command, **kwargs):
        module = command[-1].removeprefix("import ")
        if module in imports:
            return side_env.subprocess.CompletedProcess(command, 0, "", "")
        return side_env.subprocess.CompletedProcess(command, 1, "", "RuntimeError: operator torchvision::nms does "
                                                                    "not exist")

    monkeypatch.setattr(side_env, "_run", run)
    monkeypatch.setattr(side_env.subprocess, "run", probe)
    return commands


LIBS = ["torchvision>=0.20", "timm>=1.0"]


def test_a_library_that_installs_but_cannot_import_is_removed_and_so_is_what_needs_it(tmp_path, monkeypatch):
    commands = _fake_side_env(monkeypatch, tmp_path, installs={"torchvision", "timm"}, imports={"timm"})
    unavailable = side_env._install_torch_libraries(tmp_path / "python", tmp_path / "c.txt", "2.13.0", LIBS,
                                                    tmp_path / "log", tmp_path, _reference_requires)
    assert unavailable == {
        "torchvision": "not installable with torch 2.13.0 (import fails: RuntimeError: operator torchvision::nms "
                       "does not exist)",
        "timm": "needs torchvision, which is not installable with torch 2.13.0 (import fails: RuntimeError: "
                "operator torchvision::nms does not exist)"}
    assert [c[3:] for c in commands] == [["install", "--quiet", "-c", str(tmp_path / "c.txt"), "torchvision>=0.20"],
                                         ["uninstall", "--quiet", "-y", "torchvision"]], "timm is not even tried"


def test_a_library_pip_cannot_resolve_is_reported_with_pips_words(tmp_path, monkeypatch):
    _fake_side_env(monkeypatch, tmp_path, installs={"timm"}, imports={"timm"})
    unavailable = side_env._install_torch_libraries(tmp_path / "python", tmp_path / "c.txt", "2.15.0", LIBS,
                                                    tmp_path / "log", tmp_path, _reference_requires)
    assert unavailable["torchvision"] == ("not installable with torch 2.15.0 (pip: ERROR: No matching distribution "
                                          "found for torchvision>=0.20; constraint torchvision==0.30.*)")
    assert unavailable["timm"].startswith("needs torchvision, which is not installable with torch 2.15.0")


def test_libraries_that_install_and_import_are_kept(tmp_path, monkeypatch):
    _fake_side_env(monkeypatch, tmp_path, installs={"torchvision", "timm"}, imports={"torchvision", "timm"})
    assert side_env._install_torch_libraries(tmp_path / "python", tmp_path / "c.txt", "2.14.0", LIBS,
                                             tmp_path / "log", tmp_path, _reference_requires) == {}


# -- what a missing library keeps from running is reported apart from drift ----------------------

WHY = "not installable with torch 2.13.0 (import fails: RuntimeError: operator torchvision::nms does not exist)"


def _page_needing_torchvision() -> tuple[dict, list[Snippet]]:
    reference = [Snippet(SOURCE, 1, 5, "tensor([1.])"), Snippet(SOURCE, 2, 9, "resnet18: 68 nodes"),
                 Snippet(SOURCE, 3, 14, "fused")]
    shown = [Snippet(SOURCE, 1, 5, "tensor([2.])"),  # real drift before the import
             Snippet(SOURCE, 2, 9, "", "ModuleNotFoundError: No module named 'torchvision'"),
             Snippet(SOURCE, 3, 14, "")]  # never ran: execution stopped at cell 2
    return record(reference), shown


def test_snippets_a_missing_library_kept_from_running_are_not_drift_but_say_what_they_need():
    expected, shown = _page_needing_torchvision()
    found = {f.index: f for f in compare(SOURCE, expected, shown, "2.13.0", unavailable={"torchvision": WHY})}
    assert found[1].status == CHANGED, "drift before the failed import is still drift"
    assert found[2].status == found[3].status == MISSING_LIBRARY
    assert found[2].message == (f"{SOURCE}, cell 2 (line 9), torch 2.13.0: needs torchvision, {WHY}; "
                                "not run, not counted as drift")


def test_without_the_unavailable_list_a_missing_module_is_plain_drift():
    expected, shown = _page_needing_torchvision()
    assert [f.status for f in compare(SOURCE, expected, shown, "2.13.0")] == [CHANGED, NEWLY_RAISING, CHANGED]
    found = compare(SOURCE, expected, shown, "2.13.0", unavailable={"timm": WHY})
    assert [f.status for f in found] == [CHANGED, NEWLY_RAISING, CHANGED], "only the library that is missing counts"


def test_the_report_and_the_compatibility_page_list_what_could_not_run(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshots, "EXPECTED", tmp_path / "expected")
    expected, shown = _page_needing_torchvision()
    snapshots.write(SOURCE, [Snippet(SOURCE, e.index, e.line, e.output) for e in expected.values()], REFERENCE_TORCH)
    findings = compare(SOURCE, snapshots.load(SOURCE), shown, "2.13.0", unavailable={"torchvision": WHY})
    json_path, md_path = write_report(tmp_path / "drift/torch-2.13.0", "2.13.0", findings,
                                      unavailable={"torchvision": WHY})
    data = json.loads(json_path.read_text())
    assert data["summary"] == {CHANGED: 1, MISSING_LIBRARY: 2} and data["unavailable"] == {"torchvision": WHY}
    md = md_path.read_text()
    assert f"## Not run: libraries torch 2.13.0 cannot install\n\n- **torchvision**: {WHY}" in md
    assert f"- {SOURCE}, cell 2 (line 9): needs torchvision, not installable with torch 2.13.0" in md
    assert f"## {SOURCE}, snippet 1 (line 5): changed" in md and "snippet 2" not in md.split("not counted as drift")[1]
    current = compat.current_snapshots(tmp_path / "expected")
    reports = compat.load_reports(tmp_path / "drift")
    page = compat.render_page(reports, current)
    assert (f"- **torch 2.13.0**, checked on {data['date']}: 0 of 3 outputs the same, 1 differ (1 changed), "
            "0 not checked yet, 2 not run (needs torchvision).") in page
    assert f"(`{SOURCE}`): 1 output differs, 2 not run on 2.13.0" in page
    assert f"Not installed: **torchvision**, {WHY}." in page
    assert compat.verified_sentence(reports, current) == (f"Verified on torch {REFERENCE_TORCH} (every output) and "
                                                          "2.13.0 (0 of 3 outputs the same, 2 not run without "
                                                          "torchvision).")


def test_a_side_environment_is_keyed_by_the_pins(tmp_path, monkeypatch):
    for name in ("constraints.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    monkeypatch.setenv("FXGUIDE_CACHE", str(tmp_path / "cache"))
    before = side_env.venv_dir("2.14.1", tmp_path)
    assert before.parent == tmp_path / "cache" and before.name.startswith("venv-torch-2.14.1-")
    (tmp_path / "constraints.txt").write_text((tmp_path / "constraints.txt").read_text() + "six==1.16.0\n")
    assert side_env.venv_dir("2.14.1", tmp_path) != before


def test_a_torch_version_must_be_a_full_release():
    with pytest.raises(ValueError, match="must look like 2.14.1"):
        side_env.venv_dir("latest")


def test_refresh_reruns_every_reported_release_but_the_reference_outputs_only(tmp_path, monkeypatch, capsys):
    for version in ("2.9.1", REFERENCE_TORCH, "2.15.0"):
        (tmp_path / "drift" / f"torch-{version}").mkdir(parents=True)
        (tmp_path / "drift" / f"torch-{version}" / "report.json").write_text(json.dumps(
            {"torch": version, "date": "2026-11-28", "summary": {}, "snippets": []}))
    ran = []

    def run_drift(version, root, tests=True):
        ran.append((version, tests))
        if version == "2.9.1":
            raise side_env.DriftToolingError("no wheel for this Python")
        return root / "drift" / f"torch-{version}"

    monkeypatch.setattr(side_env, "run_drift", run_drift)
    assert side_env.refresh_reports(tmp_path) == side_env.EXIT_COULD_NOT_RUN  # one could not be refreshed
    assert ran == [("2.9.1", False), ("2.15.0", False)]  # the others still were, outputs only
    err = capsys.readouterr().err
    assert "torch 2.9.1 could not be refreshed: no wheel for this Python" in err and "not refreshed: torch 2.9.1" in err
    (tmp_path / "drift" / "torch-2.9.1" / "report.json").unlink()
    ran.clear()
    assert side_env.refresh_reports(tmp_path) == 0 and ran == [("2.15.0", False)]


def test_help_prints_the_usage_and_exits_0_while_a_wrong_call_prints_it_and_exits_2(capsys):
    assert side_env.main(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: python -m fxsite.drift.side_env TORCH_VERSION")
    assert side_env.main([]) == side_env.EXIT_COULD_NOT_RUN
    assert capsys.readouterr().err.startswith("usage:")


def test_junit_results_give_each_test_its_outcome(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_a" name="test_ok"/>'
        '<testcase classname="tests.test_a" name="test_bad"><failure message="assert 1 == 2&#10;more">x</failure>'
        '</testcase><testcase classname="fxguide.x" name="f"><skipped message="no"/></testcase>'
        '<testcase classname="tests.test_b" name="test_gap"><skipped type="pytest.xfail" message="a known gap"/>'
        "</testcase></testsuite></testsuites>")
    assert side_env.junit_results(junit) == [
        {"test": "tests.test_a::test_ok", "outcome": "passed", "detail": ""},
        {"test": "tests.test_a::test_bad", "outcome": "failed", "detail": "assert 1 == 2"},
        {"test": "fxguide.x::f", "outcome": "skipped", "detail": "no"},
        {"test": "tests.test_b::test_gap", "outcome": "xfailed", "detail": "a known gap"},
    ]


def test_a_test_that_fails_only_for_a_missing_library_is_not_run_not_failed(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_real" name="test_resnet"><error message="collection failure">'
        "ImportError while importing test module\nE   ModuleNotFoundError: No module named 'torchvision'</error>"
        '</testcase><testcase classname="tests.test_a" name="test_bad"><failure message="assert 1 == 2">'
        "ModuleNotFoundError: No module named 'torchvisionx'</failure></testcase>"
        "</testsuite></testsuites>")
    assert side_env.junit_results(junit, {"torchvision": WHY}) == [
        {"test": "tests.test_real::test_resnet", "outcome": "not run", "detail": f"needs torchvision, {WHY}"},
        {"test": "tests.test_a::test_bad", "outcome": "failed", "detail": "assert 1 == 2"},
    ]


# -- the same, through a real (throwaway) docs build ---------------------------------------

FAKE_TORCH = '''\
"""Loaded at interpreter start-up (sphinx and every kernel): torch behaves like a drifted release."""
import torch.fx as fx

_str = fx.Graph.__str__
fx.Graph.__str__ = lambda self: _str(self).replace(" : [num_users=1] = ", " = ")  # a new graph printer
fx.Proxy.__bool__ = lambda self: True  # a limitation that silently stopped raising
'''


@pytest.mark.slow
def test_a_drifted_torch_is_caught_through_a_real_docs_build(tmp_path, monkeypatch):
    from test_guard_rails import GOOD_SCRIPT, PAGE_HEAD, make_site

    cells = [("import torch\nimport torch.fx as fx", False), (GRAPH_CELL.strip(), False),
             (LIMITATION_CELL.strip(), True)]
    page = "".join(f"```{{code-cell}} python\n{':tags: [raises-exception]' + chr(10) if tagged else ''}{code}\n```\n\n"
                   for code, tagged in cells)
    script = GOOD_SCRIPT + "\n# %%\n# The graph.\n\nimport torch\nimport torch.fx as fx\n" + GRAPH_CELL
    site = make_site(tmp_path, page, script=script)
    (site / "sitecustomize.py").write_text(FAKE_TORCH)
    monkeypatch.setenv("PYTHONPATH", str(site))
    # Execute through myst-nb's cache, as `make test` does locally.
    done = build_docs(site / "_build", cwd=site, force=False)
    assert done.returncode == 0, done.stdout[-5000:]

    # What the reference torch (this process, unpatched) shows for the same cells.
    reference = [run_cell(code, i, tagged_raises=tagged) for i, (code, tagged) in enumerate(cells, 1)]
    assert reference[2].raised and reference[2].raised.startswith("TraceError:")
    shown = page_snippets(site / "docs" / "page.md", site / "_build", root=site)
    found = {f.index: f for f in compare("docs/page.md", record(reference, "docs/page.md"), shown, "9.9.9")}
    assert found[2].status == CHANGED and "+    %x = placeholder[target=x]" in found[2].diff
    fence = [n for n, line in enumerate((PAGE_HEAD + page).splitlines(), 1) if line.startswith("```{code-cell}")][1]
    assert found[2].message.startswith(f"docs/page.md, cell 2 (line {fence}), torch 9.9.9: output changed\n")
    assert found[3].status == NO_LONGER_RAISING
    assert "no longer raises on torch 9.9.9 — update the guide" in found[3].message

    # Edit the page's prose: it is read again, its outputs now come from the execution
    # cache, and the check must still see every one of them.
    (site / "docs" / "page.md").write_text((site / "docs" / "page.md").read_text() + "\nMore prose.\n")
    again = build_docs(site / "_build", cwd=site, force=False)
    assert again.returncode == 0 and "Using cached notebook" in again.stdout, again.stdout[-5000:]
    assert page_snippets(site / "docs" / "page.md", site / "_build", root=site) == shown

    blocks = gallery_snippets(site / "gallery" / "example.py", root=site)
    expected_blocks = record([Snippet("gallery/example.py", 1, 8, "fine"),
                              run_cell(GRAPH_CELL, 2, source="gallery/example.py")], "gallery/example.py")
    found = {f.index: f for f in compare("gallery/example.py", expected_blocks, blocks, "9.9.9")}
    assert found[1].status == SAME
    assert found[2].status == CHANGED and "-    %x : [num_users=1] = placeholder[target=x]" in found[2].diff


def test_a_tagged_cell_that_stops_raising_without_a_recording_still_says_update_the_guide():
    (finding,) = compare(SOURCE, {}, [Snippet(SOURCE, 4, 40, "", None, True)], OTHER)
    assert finding.status == NO_LONGER_RAISING
    assert finding.message == (f"{SOURCE}, cell 4 (line 40), torch {OTHER}: tagged raises-exception but no longer "
                               f"raises on torch {OTHER} — update the guide")


def test_normalize_drops_blank_lines_whose_placement_depends_on_kernel_chunking():
    assert normalize("a\n\nb\n") == normalize("a\nb") == "a\nb"


def test_stream_chunks_are_joined_exactly_as_streamed():
    from fxsite.drift.extract import merge_streams_exactly

    chunked = [{"output_type": "stream", "name": "stdout", "text": "removed something:"},
               {"output_type": "stream", "name": "stdout", "text": " True\n"},
               {"output_type": "stream", "name": "stdout", "text": "done\n"}]
    merged = merge_streams_exactly(chunked)
    assert len(merged) == 1 and merged[0]["text"] == "removed something: True\ndone\n"
    assert chunked[0]["text"] == "removed something:", "the notebook itself must stay unchanged"


@pytest.mark.parametrize("installed, replaced", [("2.13.0+cpu", True), ("2.13.0", False), ("2.13.0+cu130", False)])
def test_a_local_torch_build_is_replaced_by_the_index_build_before_torchvision(tmp_path, monkeypatch, installed, replaced):
    """PyPI's torchvision loads its operators only beside PyPI's torch (a local +cpu wheel breaks nms)."""
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho {installed}\n")
    python.chmod(0o755)
    monkeypatch.setenv("PIP_FIND_LINKS", "/some/wheel/folder")
    calls = []
    monkeypatch.setattr(side_env, "_run", lambda command, log, **kwargs: calls.append((command, kwargs)))
    side_env._use_the_index_torch(python, tmp_path / "constraints.txt", "2.13.0", tmp_path / "log", tmp_path)
    assert bool(calls) == replaced
    if replaced:
        (command, kwargs), = calls
        assert "--force-reinstall" in command and "torch==2.13.0" in command
        assert "PIP_FIND_LINKS" not in kwargs["env"] and kwargs["env"]["PIP_CONFIG_FILE"] == "/dev/null"


# -- `python -m fxsite.drift check`: drift is drift, "could not run" is the tooling's ---------------------------


def _failed_build(log: str):
    import subprocess

    return lambda *args, **kwargs: subprocess.CompletedProcess(["sphinx"], 1, stdout=log)


def _run_check(monkeypatch, capsys, log: str, shown: list[Snippet], recorded: list[Snippet], *args: str):
    from fxsite.drift import __main__ as cli
    from fxsite.drift import build, extract

    source = shown[0].source if shown else recorded[0].source
    monkeypatch.setattr(build, "build_docs", _failed_build(log))
    monkeypatch.setattr(extract, "collect", lambda build_dir: {source: shown})
    monkeypatch.setattr(snapshots, "load", lambda s: record(recorded, s))
    status = cli.main(["check", *args])
    return status, capsys.readouterr()


EXAMPLE_FAILED = ("WARNING: \n../gallery/x.py unexpectedly failed to execute correctly:\n"
                  "    RuntimeError: broken on torch 9.9.9\n")


def test_an_example_that_starts_raising_is_drift_without_a_report(monkeypatch, capsys):
    # Issue 23: without --report the check said "could not run" when the build failed.
    good = run_cell("print('fine')", 1, source="gallery/x.py")
    broken = Snippet("gallery/x.py", 1, 10, "", "RuntimeError: broken on torch 9.9.9")
    status, out = _run_check(monkeypatch, capsys, EXAMPLE_FAILED, [broken], [good])
    assert status == 1, out
    assert "gallery/x.py, block 1 (line 10)" in out.out and "now raises RuntimeError" in out.out
    assert "could not run" not in out.err


def test_a_build_that_fails_while_every_output_is_the_same_could_not_run(monkeypatch, capsys):
    good = run_cell("print('fine')", 1, source="gallery/x.py")
    status, out = _run_check(monkeypatch, capsys, "docs/x.md:3: WARNING: undefined label: nowhere\n", [good], [good])
    assert status == 2
    assert "the failure is not an output's" in out.err and "the check could not run" in out.err


def test_a_snippet_stopped_at_the_time_limit_newly_hangs(monkeypatch, capsys):
    from fxsite.drift.compare import NEWLY_HANGS
    from fxsite.drift.extract import LIMIT_EXCEEDED

    good = run_cell("print('fine')", 1, source="gallery/x.py")
    stopped = Snippet("gallery/x.py", 1, 10, "", f"{LIMIT_EXCEEDED}: gallery/x.py ran longer than its time limit")
    assert verdicts(record([good], "gallery/x.py"), [stopped], "gallery/x.py")[1].status == NEWLY_HANGS
    status, out = _run_check(monkeypatch, capsys, EXAMPLE_FAILED, [stopped], [good])
    assert status == 1 and "gallery/x.py, block 1 (line 10), torch" in out.out and "now hangs" in out.out


def test_a_build_the_watchdog_stopped_reports_the_example_as_hanging(monkeypatch, capsys, tmp_path):
    from fxsite.drift.extract import stopped_line

    good = run_cell("print('fine')", 1, source="gallery/x.py")
    log = "generating gallery...\n" + stopped_line("gallery/x.py", 30, 4242) + "\n"
    status, out = _run_check(monkeypatch, capsys, log, [], [good], "--report", str(tmp_path))
    assert status == 1
    assert "gallery/x.py, torch" in out.out and "now hangs, and could not be interrupted" in out.out
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["summary"] == {"newly hangs": 1}


# -- one page: make check PAGE= and make update-expected PAGE= ---------------------------------


def test_recording_one_page_rewrites_its_snapshot_and_leaves_every_other(built_site, tmp_path, monkeypatch):
    from fxsite.drift.__main__ import main as drift_main

    store = tmp_path / "expected"
    shutil.copytree(snapshots.EXPECTED, store)
    monkeypatch.setattr(snapshots, "EXPECTED", store)
    page, other = store / "docs" / "quickstart.md.txt", store / "docs" / "ir.md.txt"
    page.write_text(page.read_text().replace("def forward", "def changed_forward"))
    other_before = other.read_text()
    other.write_text(other_before.replace("def forward", "def also_changed"))
    assert drift_main(["check", "--no-build", "--build-dir", str(built_site), "--page", "docs/quickstart.md"]) == 1
    assert drift_main(["record", "--no-build", "--build-dir", str(built_site), "--page", "docs/quickstart.md"]) == 0
    assert "def changed_forward" not in page.read_text()
    assert "def also_changed" in other.read_text(), "another page's snapshot was rewritten"
    assert drift_main(["check", "--no-build", "--build-dir", str(built_site), "--page", "docs/quickstart.md"]) == 0
    assert drift_main(["check", "--no-build", "--build-dir", str(built_site), "--page", "docs/nope.md"]) == 2


def test_make_drift_with_survey_surveys_first_so_the_reports_tests_compare_with_the_new_survey(tmp_path, monkeypatch):
    order = []
    report = tmp_path / "drift" / "torch-2.13.0"
    report.mkdir(parents=True)
    (report / "report.json").write_text(json.dumps({"summary": {"same": 1}, "tests": {"summary": {"passed": 1}}}))
    monkeypatch.setattr(side_env, "ROOT", tmp_path)
    monkeypatch.setattr(side_env, "run_survey", lambda version: order.append("survey") or 0)
    monkeypatch.setattr(side_env, "run_drift", lambda version, tests=True: order.append("report") or report)
    monkeypatch.setattr(side_env, "found_drift", lambda data: False)
    assert side_env.main(["2.13.0", "--survey"]) == 0
    assert order == ["survey", "report"]
    order.clear()
    monkeypatch.setattr(side_env, "run_survey", lambda version: order.append("survey") or 1)
    assert side_env.main(["2.13.0", "--survey"]) == 2 and order == ["survey", "report"]  # the report is still written


def test_the_declared_torch_range_is_the_range_the_drift_reports_checked():
    """pyproject's torch requirement, fxguide's import-time check and the committed reports agree."""
    import tomllib
    from fxguide import _torch_range
    checked = sorted({_torch_range.release(r["torch"]) for r in compat.load_reports()}
                     | {_torch_range.release(REFERENCE_TORCH)})
    assert (_torch_range.OLDEST_CHECKED, _torch_range.NEWEST_CHECKED) == (checked[0], checked[-1])
    [torch_requirement] = [d for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
                           if d.startswith("torch")]
    oldest, newest = checked[0], checked[-1]
    assert torch_requirement == f"torch>={oldest[0]}.{oldest[1]},<{newest[0]}.{newest[1] + 1}"


def test_fxguide_warns_at_import_on_a_torch_it_was_not_checked_on(monkeypatch):
    from importlib import metadata
    from fxguide import _torch_range
    monkeypatch.setattr(metadata, "version", lambda name: "2.8.0+cu128")
    with pytest.warns(_torch_range.UncheckedTorchWarning, match=r"checked on torch 2\.9 to 2\.15, and torch "
                                                                  r"2\.8\.0\+cu128 is installed"):
        _torch_range.check_installed_torch()
    monkeypatch.setattr(metadata, "version", lambda name: "2.14.1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _torch_range.check_installed_torch()


def test_outputs_only_skips_the_unit_tests_and_the_report_says_so(tmp_path, monkeypatch):
    """CI's quick look at the newest release: the docs build and output check only."""
    monkeypatch.setattr(side_env, "ensure_venv", lambda version, root: Path(sys.executable))
    monkeypatch.setattr(side_env, "unavailable_libraries", lambda python: {})
    calls = []

    def fake_run(cmd, **kwargs):
        calls.append(cmd)
        staged = Path(cmd[cmd.index("--report") + 1])
        from fxsite.drift.compare import Finding
        write_report(staged, "2.13.0", [Finding(SOURCE, 1, 3, SAME)])
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(side_env.subprocess, "run", fake_run)
    report_dir = side_env.run_drift("2.13.0", root=tmp_path, tests=False)
    assert len(calls) == 1 and "pytest" not in calls[0]
    assert "not run in this check (`--outputs-only`)" in (report_dir / "report.md").read_text()


_REQUIRES = re.compile(r'^requires_torch\("(?P<oldest>[\d.]+)"', re.MULTILINE)


@pytest.mark.parametrize("script", sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "gallery").glob("*.py")))
def test_a_gallery_script_states_at_its_start_the_torch_its_reports_say_it_needs(script):
    """A script that raised on an older release checked says, before anything else runs, which torch it needs.

    The release is the one the page's verified-on line names (``needs torch ≥ X``, from the committed
    reports); a script that ran on every release checked declares nothing.
    """
    parts = compat.page_status(script, compat.load_reports(), compat.current_snapshots())
    needs = [part.removeprefix("needs torch ≥ ") for part in parts if part.startswith("needs torch")]
    text = (ROOT / script).read_text()
    declared = [m["oldest"] for m in _REQUIRES.finditer(text)]

    def release(version: str) -> tuple[int, ...]:  # 2.13 and 2.13.0 are the same release
        parts = [int(p) for p in version.split(".")]
        while len(parts) > 2 and parts[-1] == 0:
            parts.pop()
        return tuple(parts)

    assert [release(v) for v in declared] == [release(v) for v in needs], (f"{script}: the reports say it needs {needs or 'no newer torch'}, the script declares "
                               f"{declared or 'nothing'}; start it with `requires_torch(\"X\", \"what older releases "
                               f"lack\")` (from fxguide import requires_torch) or remove the call")
    if declared:
        body = text.split('"""', 2)[2]  # after the docstring
        first = next(line for line in body.splitlines()
                     if line.strip() and not line.startswith(("#", "import ", "from ")))
        assert first.startswith("requires_torch("), f"{script}: requires_torch(...) must run before anything else"


def test_requires_torch_stops_an_older_torch_with_the_release_to_install(monkeypatch):
    from importlib import metadata
    from fxguide import TorchTooOldError, requires_torch
    monkeypatch.setattr(metadata, "version", lambda name: "2.11.0+cu130")
    with pytest.raises(TorchTooOldError, match=r"needs torch >= 2\.13 \(Graph\.create_size_node\), and torch "
                                               r"2\.11\.0\+cu130 is installed: pip install 'torch>=2\.13'"):
        requires_torch("2.13", "Graph.create_size_node")
    requires_torch("2.11")
    requires_torch("2.11.0")
    monkeypatch.setattr(metadata, "version", lambda name: "2.13.0")
    requires_torch("2.13")
    with pytest.raises(TorchTooOldError):
        requires_torch("2.13.1")
    monkeypatch.setattr(metadata, "version", lambda name: "2.13.0rc2")  # a pre-release counts as its release
    requires_torch("2.13")
    with pytest.raises(TorchTooOldError):  # not as 2.13.2, from the digits of "0rc2"
        requires_torch("2.13.1")


def test_a_side_environment_pins_torch_alone_so_a_release_outside_fxguides_range_installs(tmp_path, monkeypatch):
    """fxguide declares the releases it was checked on; a drift check of an older one must still install it."""
    monkeypatch.setenv("FXGUIDE_CACHE", str(tmp_path / "cache"))
    calls = []
    monkeypatch.setattr(side_env, "_run", lambda command, log, **kwargs: calls.append(command))
    monkeypatch.setattr(side_env, "_use_the_index_torch", lambda *args: None)
    monkeypatch.setattr(side_env, "_install_torch_libraries", lambda *args: {})
    monkeypatch.setattr(side_env, "release_requires", lambda package, version: ["setuptools<82", "sympy>=1.13.3"])
    monkeypatch.setattr(side_env, "_torch_version",
                        lambda python: subprocess.CompletedProcess(["python"], 0, "2.9.1\n", ""))
    side_env.ensure_venv("2.9.1")
    installs = [c for c in calls if "install" in c]
    torch_lines = [arg for c in installs for arg in c if arg.startswith("torch") and _name_is_torch(arg)]
    assert torch_lines == ["torch==2.9.1"], "only the release asked for, never fxguide's own range"
    [editable] = [c for c in installs if "-e" in c]
    assert "--no-deps" in editable
    written = next((tmp_path / "cache").glob("venv-torch-2.9.1-*")) / "constraints.txt"
    assert "setuptools==" not in written.read_text(), "a pin the release rules out is left to pip"
    assert "sympy==" in written.read_text(), "a pin the release accepts is kept"


def test_a_side_environment_is_not_started_on_a_disk_without_room_for_it(tmp_path, monkeypatch):
    """A build that fills the disk half-way breaks more than itself (a CI run failed in its first minute so)."""
    monkeypatch.setenv("FXGUIDE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(side_env, "_run", lambda command, log, **kwargs: pytest.fail("nothing may be installed"))
    monkeypatch.setattr(side_env.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(100 * 2**30, 99 * 2**30,
                                                                                              2**30))
    with pytest.raises(side_env.DriftToolingError, match=r"needs about 10 GB free; .* has 1\.0 GB\. Free some"):
        side_env.ensure_venv("2.9.1")
    assert not list((tmp_path / "cache").glob("venv-torch-*")), "no half-made environment is left"


def _name_is_torch(requirement: str) -> bool:
    return re.match(r"torch\b(?![-_a-z])", requirement) is not None
