"""fxsite.bench.timeline: the pytest plugin records each test's span and CPU; the report ranks them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fxsite import ROOT
from fxsite.bench import timeline

SAMPLE = """
import time

def test_busy():
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass

def test_sleeping():
    time.sleep(0.3)
"""


def test_the_plugin_records_each_test_and_the_report_ranks_them_by_cpu(tmp_path):
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    folder = tmp_path / "timeline"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "fxsite.bench.timeline",
                           "-o", "addopts=", "test_sample.py"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "FXGUIDE_TIMELINE": str(folder), "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {row["test"]: row for row in map(json.loads, (folder / "main.jsonl").read_text().splitlines())}
    assert set(rows) == {"test_sample.py::test_busy", "test_sample.py::test_sleeping"}
    busy, sleeping = rows["test_sample.py::test_busy"], rows["test_sample.py::test_sleeping"]
    assert busy["cpu"] >= 0.25 > sleeping["cpu"] and sleeping["end"] - sleeping["start"] >= 0.3
    text = timeline.report(folder)
    assert text.index("test_sample.py::test_busy") < text.index("test_sample.py::test_sleeping")
    assert "main: 2," in text


def test_the_report_says_how_to_make_a_timeline_when_there_is_none(tmp_path, capsys):
    assert timeline.main([str(tmp_path)]) == 1
    assert 'make test PYTEST_ARGS="-p fxsite.bench.timeline"' in capsys.readouterr().err
