"""Bounded execution (fxsite/sphinx/limits.py): the pieces, without a docs build.

The build itself, with a page and examples that hang or grow, is in tests/test_guard_rails.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import nbformat
import pytest

from fxsite.drift.extract import LIMIT_EXCEEDED, stopped_line
from fxsite.sphinx import limits

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_exception_is_the_one_the_drift_check_looks_for():
    assert limits.ExecutionLimitExceeded.__name__ == LIMIT_EXCEEDED


@pytest.fixture
def watched():
    """A stand-in build (``sleep 60``) and a watchdog over it, both killed after the test."""
    victim = subprocess.Popen(["sleep", "60"])
    watchdog = subprocess.Popen([sys.executable, "-m", "fxsite.sphinx.limits", "--watch", str(victim.pid), "0.2"],
                                stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                env=dict(os.environ, PYTHONPATH=ROOT))
    yield victim, watchdog
    victim.kill()
    watchdog.kill()


def test_the_watchdog_stops_a_build_whose_example_does_not_stop_and_names_it(watched):
    victim, watchdog = watched
    watchdog.stdin.write("arm 0.3 gallery/stuck.py\n")
    watchdog.stdin.flush()
    assert victim.wait(timeout=30) != 0  # killed, long before its 60 s
    _, err = watchdog.communicate(timeout=30)
    assert stopped_line("gallery/stuck.py", 0.2, victim.pid) in err


def test_a_disarmed_watchdog_stops_nothing_and_ends_with_the_build(watched):
    victim, watchdog = watched
    watchdog.stdin.write("arm 0.3 gallery/quick.py\ndisarm\n")
    watchdog.stdin.flush()
    time.sleep(1.5)
    assert victim.poll() is None
    watchdog.stdin.close()  # the build ended
    assert watchdog.wait(timeout=30) == 0


def test_a_page_cell_past_the_limit_is_stopped_and_shows_the_stop():
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("print('before')"),
        nbformat.v4.new_code_cell("import time\nwhile True:\n    time.sleep(0.01)"),
        nbformat.v4.new_code_cell("print('never')"),
    ])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    started = time.monotonic()
    result = limits.execute_notebook(notebook, cwd=ROOT, timeout=2, allow_errors=False)
    assert time.monotonic() - started < 60
    assert type(result.err).__name__ == "CellExecutionError"
    (error,) = [o for o in notebook.cells[1].outputs if o.output_type == "error"]
    assert (error.ename, error.evalue) == (LIMIT_EXCEEDED, limits._stopped(2))
    assert notebook.cells[2].outputs == []


def test_page_kernels_talk_over_unix_sockets_not_tcp():
    manager = limits.ipc_kernel_manager()()
    assert manager.transport == "ipc"
    assert os.path.isabs(manager.ip) and os.stat(os.path.dirname(manager.ip)).st_mode & 0o077 == 0


def test_page_kernels_are_waited_for_with_a_shorter_poll_than_jupyter_clients():
    """The override only works while jupyter-client still waits through ``_async_wait(pollinterval=...)``:
    an update that renames it would quietly bring back the 0.1 s after every page."""
    import inspect

    from jupyter_client import AsyncKernelManager

    manager = limits.ipc_kernel_manager()
    assert "pollinterval" in inspect.signature(AsyncKernelManager._async_wait).parameters
    assert manager._async_wait is not AsyncKernelManager._async_wait


def test_the_memory_budget_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(limits.MEMORY_ENV, "300")
    assert limits.memory_budget() == 300 << 20
    monkeypatch.setenv(limits.MEMORY_ENV, "lots")
    with pytest.raises(ValueError, match="FXGUIDE_MEMORY_MB must be a positive number of megabytes, got 'lots'"):
        limits.memory_budget()
