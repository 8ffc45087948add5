"""``make docs`` skips Sphinx only when nothing it reads changed (fxsite/sphinx/uptodate.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fxsite.sphinx import fingerprint as fingerprint_module
from fxsite.sphinx import uptodate

COMMAND = ["sphinx-build", "-b", "html", "docs", "_build/html"]


@pytest.fixture
def checkout(tmp_path, monkeypatch) -> Path:
    """A small git checkout with a page, an ignored build folder, and the wrapper pointed at it."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("_build/\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# A page\n")
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    monkeypatch.setattr(uptodate, "ROOT", tmp_path)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("FXGUIDE_EXECUTE", raising=False)
    return tmp_path


def test_the_digest_is_stable_when_nothing_changes(checkout):
    assert uptodate.digest(COMMAND) == uptodate.digest(COMMAND) is not None


@pytest.mark.parametrize("change", ["edit a page", "add a page", "delete a page", "rename a page",
                                    "another option", "another installed package"])
def test_the_digest_changes_with_any_input_of_the_build(checkout, monkeypatch, change):
    page = checkout / "docs" / "page.md"
    before = uptodate.digest(COMMAND)
    command = COMMAND
    if change == "edit a page":
        page.write_text("# A page, edited\n")
    elif change == "add a page":
        (checkout / "docs" / "new.md").write_text("# New\n")  # untracked, not ignored: Sphinx reads it
    elif change == "delete a page":
        page.unlink()
    elif change == "rename a page":
        page.rename(checkout / "docs" / "renamed.md")
    elif change == "another option":
        command = [*COMMAND, "-E"]
    else:
        real = fingerprint_module.environment()
        monkeypatch.setattr(uptodate, "environment", lambda: [*real, "tabulate==99.0"])
    assert uptodate.digest(command) != before


def test_the_builds_own_products_do_not_change_the_digest(checkout):
    before = uptodate.digest(COMMAND)
    (checkout / "_build" / "html").mkdir(parents=True)
    (checkout / "_build" / "html" / "index.html").write_text("<html></html>")
    assert uptodate.digest(COMMAND) == before


def test_without_git_there_is_no_digest(tmp_path):
    assert uptodate.digest(COMMAND, root=tmp_path) is None


def test_digest_rejects_a_command_that_is_not_a_list_of_strings(checkout):
    with pytest.raises(TypeError, match="command must be a list of strings"):
        uptodate.digest("sphinx-build docs _build")


def counting_command(checkout: Path, exit_code: int = 0) -> list[str]:
    """A stand-in for Sphinx that counts its runs in a file and exits with ``exit_code``."""
    counter = checkout / "_build" / "runs"
    return [sys.executable, "-c",
            f"import pathlib, sys; p = pathlib.Path({str(counter)!r}); p.parent.mkdir(exist_ok=True); "
            f"p.write_text(str(int(p.read_text()) + 1 if p.exists() else 1)); sys.exit({exit_code})"]


def runs(checkout: Path) -> int:
    counter = checkout / "_build" / "runs"
    return int(counter.read_text()) if counter.exists() else 0


def test_a_second_build_with_nothing_changed_does_not_run_sphinx(checkout, capsys):
    stamp, command = checkout / "_build" / "html" / ".stamp", counting_command(checkout)
    assert uptodate.main([str(stamp), "--", *command]) == 0
    assert uptodate.main([str(stamp), "--", *command]) == 0
    assert runs(checkout) == 1
    assert "Sphinx not run" in capsys.readouterr().out
    (checkout / "docs" / "page.md").write_text("# An edited page\n")
    assert uptodate.main([str(stamp), "--", *command]) == 0
    assert runs(checkout) == 2


@pytest.mark.parametrize("variable, value", [("CI", "true"), ("FXGUIDE_EXECUTE", "force")])
def test_a_forced_build_always_runs_sphinx(checkout, monkeypatch, variable, value):
    stamp, command = checkout / "_build" / "html" / ".stamp", counting_command(checkout)
    assert uptodate.main([str(stamp), "--", *command]) == 0
    monkeypatch.setenv(variable, value)
    assert uptodate.main([str(stamp), "--", *command]) == 0
    assert runs(checkout) == 2


def test_a_failed_build_is_never_skipped(checkout):
    stamp = checkout / "_build" / "html" / ".stamp"
    assert uptodate.main([str(stamp), "--", *counting_command(checkout)]) == 0
    (checkout / "docs" / "page.md").write_text("# Broken\n")
    assert uptodate.main([str(stamp), "--", *counting_command(checkout, exit_code=1)]) == 1
    assert not stamp.exists()
    assert uptodate.main([str(stamp), "--", *counting_command(checkout, exit_code=1)]) == 1
    assert runs(checkout) == 3


def test_the_wrapper_says_how_to_call_it(capsys):
    assert uptodate.main(["only-a-stamp"]) == 2
    assert "usage: python -m fxsite.sphinx.uptodate STAMP -- COMMAND" in capsys.readouterr().err
