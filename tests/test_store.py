"""The expected-output store and the drift reports survive damage: each damaged file is named, never fatal
to the site, repaired by re-recording; the check says apart "found drift" (exit 1) and "could not run" (exit 2).

Each scenario is a store (or a drift folder) in ``tmp_path`` with one file damaged the way
it happens in practice; one slow test does the same through a real throwaway docs build.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fxsite.drift import __main__ as cli
from fxsite.drift import compat, side_env, snapshots
from fxsite.drift.compare import CHANGED, MISSING_LIBRARY, SAME, UNREADABLE, compare
from fxsite.drift.extract import ROOT, Snippet
from fxsite.drift.report import REFERENCE_TORCH, write_report

TORCH = torch.__version__.split("+")[0]  # what `record` writes in each snapshot's first line
PAGE = "docs/page.md"
SCRIPT = "gallery/example.py"

CONFLICTED = """\
# Expected outputs of docs/page.md, recorded on torch 2.14.1.

=== cell 1 (line 3) ===
<<<<<<< HEAD
tensor([1., 2.])
=======
tensor([1., 3.])
>>>>>>> other-branch
"""


def shown(source: str = PAGE, output: str = "tensor([1., 2.])") -> list[Snippet]:
    return [Snippet(source, 1, 3, output), Snippet(source, 2, 9, "", "TraceError: no", True)]


@pytest.fixture
def store(tmp_path, monkeypatch) -> Path:
    """A healthy store in tmp_path holding the snapshots of one page and one script."""
    expected = tmp_path / "tests" / "expected"
    monkeypatch.setattr(snapshots, "EXPECTED", expected)
    snapshots.write(PAGE, shown(), TORCH)
    snapshots.write(SCRIPT, [Snippet(SCRIPT, 1, 8, "fine")], TORCH)
    assert snapshots.damage(expected) == {}
    return expected


def found() -> dict[str, list[Snippet]]:
    """What a healthy build of the page and the script shows."""
    return {PAGE: shown(), SCRIPT: [Snippet(SCRIPT, 1, 8, "fine")]}


# -- one damaged file: named, with what is wrong ---------------------------------------------


@pytest.mark.parametrize("name, text, says", [
    ("README.md", "# What this folder is\n", "not a snapshot"),
    ("README.txt", "Snapshots live here.\n", "not a snapshot"),
    ("docs/page.md.txt", CONFLICTED, "line 4: merge-conflict marker '<<<<<<< HEAD'"),
    ("docs/page.md.txt", "stray\n=== cell 1 (line 3) ===\nx\n", "line 1: text before the first"),
    ("docs/page.md.txt", "=== cell 1 (line 3) ===\nx\n=== cell 1 (line 5) ===\ny\n", "cell 1 is recorded twice"),
    ("docs/page.md.txt", "=== cell one ===\nx\n", "line 1: malformed header"),
])
def test_a_damaged_store_file_is_named_with_what_is_wrong(store, name, text, says):
    (store / name).write_text(text)
    damaged = snapshots.damage(store)
    assert list(damaged) == [store / name]
    assert says in damaged[store / name]


def test_a_file_that_is_not_utf8_is_named(store):
    (store / "docs" / "page.md.txt").write_bytes(b"=== cell 1 (line 3) ===\n\xff\xfe\n")
    assert "not UTF-8 text" in snapshots.damage(store)[store / "docs" / "page.md.txt"]


def test_loading_a_damaged_snapshot_names_its_path(store):
    (store / "docs" / "page.md.txt").write_text(CONFLICTED)
    with pytest.raises(snapshots.SnapshotError, match=r"page\.md\.txt, line 4: merge-conflict marker"):
        snapshots.load(PAGE)


def test_the_site_reads_the_rest_of_a_damaged_store_and_says_which_file_it_skipped(store, capsys):
    (store / "README.txt").write_text("Snapshots live here.\n")
    (store / "docs" / "page.md.txt").write_text(CONFLICTED)
    current = compat.current_snapshots(store)  # what the Sphinx extension calls: it must not raise
    assert list(current) == [SCRIPT]
    assert set(current.damaged) == {store / "README.txt", store / "docs" / "page.md.txt"}
    err = capsys.readouterr().err
    assert f"{store / 'README.txt'} cannot be read: not a snapshot" in err
    assert f"{store / 'docs' / 'page.md.txt'} cannot be read: line 4: merge-conflict marker" in err
    page = compat.render_page(compat.load_reports(store.parent / "no-drift"), current)
    assert "```{warning}" in page and "page.md.txt`: line 4: merge-conflict marker" in page
    assert compat.verified_sentence([], current) == (f"Every output shown here is verified on torch {REFERENCE_TORCH}."
                                                     " The expected outputs in 2 damaged files of the store are not "
                                                     "counted (see Compatibility).")


# -- the check: drift (1) and could not run (2) are told apart -------------------------------


def run_check(monkeypatch, build: dict, *args: str) -> int:
    monkeypatch.setattr("fxsite.drift.extract.collect", lambda build_dir: build)
    return cli.main(["check", "--no-build", *args])


def test_the_check_exits_0_when_every_output_is_the_same(store, monkeypatch, capsys):
    assert run_check(monkeypatch, found()) == cli.EXIT_SAME == 0
    assert "3 same, 0 drifted" in capsys.readouterr().out


def test_the_check_exits_1_and_says_it_found_drift(store, monkeypatch, capsys):
    drifted = {**found(), PAGE: shown(output="tensor([1., 5.])")}
    assert run_check(monkeypatch, drifted) == cli.EXIT_DRIFT == 1
    out = capsys.readouterr().out
    assert "output changed" in out and "the check ran and found drift: 1 output(s) differ" in out


def test_the_check_exits_2_and_names_the_damaged_file_it_could_not_compare(store, monkeypatch, capsys):
    (store / "docs" / "page.md.txt").write_text(CONFLICTED)
    assert run_check(monkeypatch, found()) == cli.EXIT_COULD_NOT_RUN == 2
    err = capsys.readouterr().err
    assert "docs/page.md: its expected outputs cannot be read" in err and "merge-conflict marker" in err
    assert "the check could not run completely: 1 file(s) of the expected-output store are damaged" in err


def test_a_foreign_file_in_the_store_makes_the_check_say_it_could_not_run_cleanly(store, monkeypatch, capsys):
    (store / "README.md").write_text("# notes\n")
    assert run_check(monkeypatch, found()) == cli.EXIT_COULD_NOT_RUN
    assert "README.md: not a snapshot" in capsys.readouterr().err


def test_a_tooling_failure_is_could_not_run_never_drift(store, monkeypatch, capsys):
    def broken(build_dir):
        raise FileNotFoundError("docs/page.md: no executed notebook at _build/x.ipynb; build the docs first")

    monkeypatch.setattr("fxsite.drift.extract.collect", broken)
    assert cli.main(["check", "--no-build"]) == cli.EXIT_COULD_NOT_RUN
    assert "the check could not run: FileNotFoundError: docs/page.md: no executed notebook" in capsys.readouterr().err


def test_a_failed_build_is_could_not_run_and_nothing_is_recorded(store, monkeypatch, capsys):
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    monkeypatch.setattr("fxsite.drift.build.build_docs", lambda out: subprocess.CompletedProcess(
        [], 1, "docs/page.md:3: WARNING: cell 1 raised ValueError: boom"))
    assert cli.main(["record"]) == cli.EXIT_COULD_NOT_RUN
    assert "the docs build failed (exit 1); nothing was recorded" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before


# -- recording repairs the store, and never records what it must not --------------------------


def record(monkeypatch, build: dict) -> int:
    monkeypatch.setattr("fxsite.drift.extract.collect", lambda build_dir: build)
    return cli.main(["record", "--no-build"])


@pytest.mark.parametrize("name, text", [("README.md", "# notes\n"), ("README.txt", "notes\n"),
                                        ("docs/page.md.txt", CONFLICTED), ("docs/gone.md.txt", "")])
def test_re_recording_repairs_the_store_and_says_what_it_did(store, monkeypatch, capsys, name, text):
    healthy = {p: p.read_text() for p in store.rglob("*.txt")}
    (store / name).write_text(text)
    assert record(monkeypatch, found()) == cli.EXIT_SAME
    assert snapshots.damage(store) == {}
    assert {p: p.read_text() for p in store.rglob("*") if p.is_file()} == healthy
    out = capsys.readouterr().out
    assert name in out and ("repaired" in out or "removed" in out)


def test_re_recording_replaces_a_link_instead_of_writing_through_it(store, monkeypatch, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("not the store's\n")
    (store / "docs" / "page.md.txt").unlink()
    (store / "docs" / "page.md.txt").symlink_to(outside)
    assert "symbolic link" in snapshots.damage(store)[store / "docs" / "page.md.txt"]
    assert record(monkeypatch, found()) == cli.EXIT_SAME
    assert outside.read_text() == "not the store's\n"
    assert not (store / "docs" / "page.md.txt").is_symlink() and snapshots.load(PAGE)[1].output == "tensor([1., 2.])"


def test_a_cell_that_raised_without_its_tag_is_never_recorded(store, monkeypatch, capsys):
    before = (store / "docs" / "page.md.txt").read_text()
    failed = {**found(), PAGE: [Snippet(PAGE, 1, 3, "", "RuntimeError: CUDA out of memory", False)]}
    assert record(monkeypatch, failed) == cli.EXIT_COULD_NOT_RUN
    err = capsys.readouterr().err
    assert "docs/page.md, cell 1 (line 3): raised RuntimeError: CUDA out of memory without the raises-exception" in err
    assert "nothing was recorded" in err and (store / "docs" / "page.md.txt").read_text() == before


def test_a_path_of_this_machine_is_never_recorded(store, monkeypatch, capsys):
    before = (store / "docs" / "page.md.txt").read_text()
    leaked = f"File {Path(sys.executable).parent}/python, line 3"  # what normalize does not know about
    assert record(monkeypatch, {**found(), PAGE: shown(output=leaked)}) == cli.EXIT_COULD_NOT_RUN
    assert "docs/page.md, cell 1 (line 3): shows a path of this machine" in capsys.readouterr().err
    assert (store / "docs" / "page.md.txt").read_text() == before


def test_the_checkout_path_never_reaches_the_store():
    from fxsite.drift.normalize import normalize

    for path in (str(ROOT), str(ROOT.resolve()), sys.prefix, sys.base_prefix):
        assert cli.machine_paths(normalize(f"File {path}/fxguide/x.py, line 3")) == [], path


# -- what an output shows comes back exactly ---------------------------------------------------


@pytest.mark.parametrize("output", [
    "=== cell 2 (line 5) ===",
    "=== block 1 (line 8) raises ===",
    "<<<<<<< HEAD\n=======\n>>>>>>> main",
    "||||||| base",
    "\\n is a newline; \\\\ a backslash",
    "\\=== already escaped-looking",
    "# a comment-like first line\nthen text",
])
def test_an_output_that_looks_like_snapshot_syntax_round_trips(output):
    snippets = [Snippet(PAGE, 1, 3, output), Snippet(PAGE, 2, 9, "after")]
    back = snapshots.loads(snapshots.dumps(PAGE, snippets, REFERENCE_TORCH))
    assert back[1].output == output and back[2].output == "after"
    assert [f.status for f in compare(PAGE, back, snippets, REFERENCE_TORCH)] == [SAME, SAME]


# -- a snapshot path stays inside the store -----------------------------------------------------


@pytest.mark.parametrize("source", ["docs/../../../etc/passwd.md", "/etc/passwd.md", "docs/./page.md",
                                    "docs\\..\\page.md", "gallery/x.txt", "docs//page.md", "conf.py", ""])
def test_a_snapshot_path_cannot_escape_the_store(source):
    with pytest.raises(ValueError, match="inside the repository"):
        snapshots.snapshot_path(source)


def test_a_linked_folder_cannot_lead_a_snapshot_out_of_the_store(store, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (store / "docs" / "sub").symlink_to(elsewhere)
    with pytest.raises(ValueError, match="leads out of the store"):
        snapshots.snapshot_path("docs/sub/page.md")


# -- drift reports: a failed run keeps the committed one, a corrupt one is named ---------------


def committed(tmp_path: Path, version: str = "9.9.9") -> Path:
    folder = tmp_path / "drift" / f"torch-{version}"
    write_report(folder, version, [compare(PAGE, None, [], version)[0]])
    return folder


def test_an_unfinished_report_never_replaces_the_committed_one(tmp_path):
    folder = committed(tmp_path)
    before = {p.name: p.read_text() for p in folder.iterdir()}
    staged = tmp_path / "staged"
    staged.mkdir()
    (staged / "report.json").write_text("{}")  # the check ran, the tests did not: no report.md
    with pytest.raises(side_env.DriftToolingError, match="unfinished .no report.md.*left as it was"):
        side_env.publish(staged, folder)
    assert {p.name: p.read_text() for p in folder.iterdir()} == before


@pytest.mark.parametrize("fails", ["check", "tests"])
def test_a_failed_drift_run_leaves_the_committed_report_as_it_was(tmp_path, monkeypatch, fails):
    """run_drift on the reference torch (no side environment), with the check or pytest failing."""
    for name in ("constraints.txt", "pyproject.toml"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    folder = committed(tmp_path, REFERENCE_TORCH)
    before = {p.name: p.read_text() for p in folder.iterdir()}

    def fake_run(command, **kwargs):
        if "fxsite.drift" in command:
            staged = Path(command[command.index("--report") + 1])
            (staged / "report.json").write_text(json.dumps({"summary": {"same": 1}}))  # a partial report
            return subprocess.CompletedProcess(command, 2 if fails == "check" else 0)
        return subprocess.CompletedProcess(command, 3)  # pytest: internal error

    monkeypatch.setattr(side_env.subprocess, "run", fake_run)
    with pytest.raises(side_env.DriftToolingError, match="left as it was"):
        side_env.run_drift(REFERENCE_TORCH, tmp_path)
    assert {p.name: p.read_text() for p in folder.iterdir()} == before


@pytest.mark.parametrize("text, says", [
    ('{"torch": "2.15.0", "date": ', "not valid JSON"),
    ("[]", "a JSON list, not an object"),
    ('{"torch": "2.15.0"}', "missing ['date', 'snippets', 'summary']"),
    ('{"torch": "2.15.0", "date": "d", "summary": {}, "snippets": [{"source": "docs/a.md"}]}', "lack source"),
])
def test_a_corrupt_report_is_named_by_path_and_the_others_still_count(tmp_path, capsys, text, says):
    committed(tmp_path, "9.9.9")
    bad = tmp_path / "drift" / "torch-2.15.0" / "report.json"
    bad.parent.mkdir()
    bad.write_text(text)
    reports = compat.load_reports(tmp_path / "drift")
    assert [r["torch"] for r in reports] == ["9.9.9"]
    assert list(reports.damaged) == [bad] and says in reports.damaged[bad]
    assert f"drift report {bad} cannot be read" in capsys.readouterr().err
    with pytest.raises(ValueError, match=f"^{bad}: not a drift report"):
        compat.read_report(bad)


def test_make_drift_exit_codes_tell_drift_from_could_not_run(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "drift" / "torch-9.9.9"
    folder.mkdir(parents=True)
    monkeypatch.setattr(side_env, "ROOT", tmp_path)

    def finished(summary: dict, tests: dict):
        (folder / "report.json").write_text(json.dumps({"summary": summary, "tests": {"summary": tests}}))
        return lambda version, tests=True: folder

    monkeypatch.setattr(side_env, "run_drift", finished({"same": 3}, {"passed": 5}))
    assert side_env.main(["9.9.9"]) == side_env.EXIT_SAME == 0
    assert "no drift on torch 9.9.9" in capsys.readouterr().out
    monkeypatch.setattr(side_env, "run_drift", finished({"same": 2, "changed": 1}, {"passed": 5}))
    assert side_env.main(["9.9.9"]) == side_env.EXIT_DRIFT == 1
    assert "the check ran and found drift on torch 9.9.9" in capsys.readouterr().out
    monkeypatch.setattr(side_env, "run_drift", finished({"same": 3}, {"passed": 4, "failed": 1}))
    assert side_env.main(["9.9.9"]) == side_env.EXIT_DRIFT
    capsys.readouterr()
    monkeypatch.setattr(side_env, "run_drift", finished({"same": 2, MISSING_LIBRARY: 1}, {"passed": 4, "not run": 1}))
    assert side_env.main(["9.9.9"]) == side_env.EXIT_SAME, "a snippet that could not run is not drift"
    capsys.readouterr()

    def broken(version, tests=True):
        raise side_env.DriftToolingError("pip could not install torch==9.9.9")

    monkeypatch.setattr(side_env, "run_drift", broken)
    assert side_env.main(["9.9.9"]) == side_env.EXIT_COULD_NOT_RUN == 2
    err = capsys.readouterr().err
    assert "the check could not run on torch 9.9.9: pip could not install" in err
    assert "no report was written (a committed one is unchanged)" in err


def test_the_check_reports_an_unreadable_snapshot_apart_from_drift(store, monkeypatch, tmp_path):
    (store / "docs" / "page.md.txt").write_text(CONFLICTED)
    assert run_check(monkeypatch, found(), "--report", str(tmp_path / "report")) == cli.EXIT_COULD_NOT_RUN
    data = json.loads((tmp_path / "report" / "report.json").read_text())
    assert data["summary"] == {SAME: 1, UNREADABLE: 1}
    assert CHANGED not in data["summary"]


# -- the same, through a real throwaway build ------------------------------------------------------


@pytest.mark.slow
def test_a_damaged_store_does_not_stop_the_build_and_re_recording_repairs_it(tmp_path):
    from throwaway import build, make_site

    site = make_site(tmp_path, "```{code-cell} python\nprint('hello')\n```\n")
    store = site / "tests" / "expected"
    (store / "docs").mkdir(parents=True)
    (store / "README.txt").write_text("Snapshots live here.\n")
    (store / "docs" / "page.md.txt").write_text(CONFLICTED)
    done = build(site, force=False)
    assert done.returncode == 0, done.stdout[-5000:]
    assert "README.txt cannot be read: not a snapshot" in done.stdout
    assert "page.md.txt cannot be read: line 4: merge-conflict marker" in done.stdout

    def drift(command: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "fxsite.drift", command, "--no-build"], cwd=site, text=True,
                              capture_output=True, check=False)

    check = drift("check")
    assert check.returncode == cli.EXIT_COULD_NOT_RUN, check.stdout + check.stderr
    assert "docs/page.md: its expected outputs cannot be read" in check.stderr
    repaired = drift("record")
    assert repaired.returncode == cli.EXIT_SAME, repaired.stdout + repaired.stderr
    assert "removed tests/expected/README.txt (not a snapshot" in repaired.stdout
    assert "repaired tests/expected/docs/page.md.txt (it was damaged: line 4" in repaired.stdout
    assert "=== cell 1 (line " in (store / "docs" / "page.md.txt").read_text()
    again = drift("check")
    assert again.returncode == cli.EXIT_SAME, again.stdout + again.stderr
