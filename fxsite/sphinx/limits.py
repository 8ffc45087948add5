"""Bounded execution: a page or an example that runs too long fails the build, named, in bounded time.

One time limit, ``nb_execution_timeout`` in ``conf.py`` (120 s; ``FXGUIDE_TIMEOUT``
changes it), applies to each cell of a page and to each gallery example as a
whole; one memory budget (:func:`memory_budget`: 4096 MB; ``FXGUIDE_MEMORY_MB``
changes it), to each page's kernel and each example.

- **Pages** run in Jupyter kernels. :func:`execute_notebook` is how every page is
  executed (:mod:`fxsite.sphinx.prerun` calls it, and it takes the place of
  jupyter-cache's executor inside myst-nb): a cell still running at the limit is
  interrupted, and it shows the error ``ExecutionLimitExceeded: ...`` in place of
  whatever the interrupt did, so the build names the cell
  (:mod:`fxsite.sphinx.sphinx_ext`) and the drift check reads it as a hang. The
  kernels talk to the build over Unix sockets in a private folder (IPC), not TCP
  (:func:`ipc_kernel_manager`), and each caps its own memory at start
  (:func:`cap_data`, called by :mod:`fxsite.sphinx.warm_kernels`' launcher; with
  ``FXGUIDE_WARM_KERNELS=0`` Jupyter's own launcher runs, and only the time limit holds).
- **Examples** run inside Sphinx's own process, where nothing else bounds them.
  While an example runs, a ``SIGALRM`` timer raises ``ExecutionLimitExceeded``
  in its code at the limit (sphinx-gallery then reports the example and the line
  as failing), and a thread watching the process's resident size makes its code
  raise ``MemoryError`` once it has grown by more than the budget. Only the
  example's code is interrupted: a cap on the whole process would also fail the
  allocations of Sphinx's other threads and leave modules half imported.
- **A backstop** for code a signal cannot interrupt (a C call that never returns
  to Python): a watchdog process (:func:`watch`) stops the whole build, naming the
  example, ``fxguide_grace_seconds`` (30 s) after its limit.
"""

from __future__ import annotations

import functools
import os
import re
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from fxsite.drift.extract import LIMIT_EXCEEDED, relative, stopped_line

DEFAULT_TIMEOUT = 120
DEFAULT_MEMORY_MB = 4096
MEMORY_ENV = "FXGUIDE_MEMORY_MB"


class ExecutionLimitExceeded(Exception):
    """An example ran past the build's time limit and was stopped (the drift check knows it by this name)."""


def memory_budget() -> int:
    """The memory budget in bytes: ``$FXGUIDE_MEMORY_MB`` megabytes, 4096 by default.

    >>> memory_budget() >= 1 << 20
    True
    """
    text = os.environ.get(MEMORY_ENV, str(DEFAULT_MEMORY_MB))
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{MEMORY_ENV} must be a positive number of megabytes, got {text!r}")
    return int(text) << 20


def data_size() -> int:
    """This process's data size in bytes (``VmData``: heap and private writable mappings, what ``RLIMIT_DATA`` caps)."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"^VmData:\s+(\d+) kB", status, re.MULTILINE).group(1)) << 10


def cap_data() -> None:
    """Cap this process's data size at its current size plus :func:`memory_budget` (a page's kernel calls it).

    The kernel runs nothing but the page, so an allocation past the cap fails the page's cell.
    """
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    soft = data_size() + memory_budget()
    resource.setrlimit(resource.RLIMIT_DATA, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


# -- pages ---------------------------------------------------------------------------


@functools.cache
def ipc_kernel_manager() -> type:
    """jupyter-client's ``AsyncKernelManager``, with kernels on Unix sockets in a private folder instead of TCP.

    Over TCP, any process of the machine can connect to a kernel's loopback ports
    (messages are signed, not encrypted). A Unix socket in a folder only this user
    can open (``mkdtemp`` makes it ``0700``) keeps everyone else out; the folder
    goes when the build ends.
    """
    import atexit
    import shutil
    import tempfile
    import uuid

    from jupyter_client import AsyncKernelManager
    from traitlets import default

    folder = tempfile.mkdtemp(prefix="fxguide-ipc-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)

    class IpcKernelManager(AsyncKernelManager):
        @default("transport")
        def _transport_default(self) -> str:
            return "ipc"

        @default("ip")
        def _ip_default(self) -> str:
            # An absolute path: jupyter-client's default is relative to each process's own folder,
            # and a page's kernel runs in the page's folder, not in the build's.
            return os.path.join(folder, f"kernel-{uuid.uuid4().hex[:12]}")

        async def _async_wait(self, pollinterval: float = 0.1) -> None:
            # How jupyter-client waits for a kernel to exit after asking it to: by polling, 0.1 s
            # apart, so that every page paid up to 0.1 s after its last cell. A warm kernel exits
            # within milliseconds.
            await super()._async_wait(pollinterval=min(pollinterval, 0.01))

    return IpcKernelManager


def _stopped(timeout: float) -> str:
    return (f"ran longer than its time limit of {timeout:g} s and was stopped (nb_execution_timeout in conf.py; "
            f"FXGUIDE_TIMEOUT changes it): it hangs, or it is too slow for a page")


def _show_the_stop(cell, cell_index: int, execute_reply: dict) -> None:
    """nbclient's ``on_cell_error``: a cell stopped at the limit shows the stop, not the interrupt's traceback."""
    content = execute_reply.get("content", {})
    if content.get("ename") != LIMIT_EXCEEDED:
        return
    import nbformat

    cell.outputs = [o for o in cell.outputs if o.get("output_type") != "error"]
    cell.outputs.append(nbformat.v4.new_output("error", ename=LIMIT_EXCEEDED, evalue=content["evalue"],
                                               traceback=[f"{LIMIT_EXCEEDED}: {content['evalue']}"]))


def execute_notebook(nb, cwd, timeout, allow_errors, meta_override=True, record_timing=False, **kwargs):
    """jupyter-cache's ``single_nb_execution``, with IPC kernels and a cell stopped at the time limit named so.

    The arguments are that function's; every page of the build is executed through this one.
    """
    from jupyter_cache.executors.utils import single_nb_execution

    if meta_override and "timeout" in nb.metadata.get("execution", {}):
        timeout = nb.metadata.execution.timeout  # what single_nb_execution will use
    if timeout is None or timeout <= 0:
        timeout = DEFAULT_TIMEOUT  # never unbounded
    return single_nb_execution(
        nb, cwd, timeout, allow_errors, meta_override=False, record_timing=record_timing,
        kernel_manager_class=ipc_kernel_manager(), interrupt_on_timeout=True,
        error_on_timeout={"ename": LIMIT_EXCEEDED, "evalue": _stopped(timeout), "traceback": []},
        on_cell_error=_show_the_stop, **kwargs)


# -- examples --------------------------------------------------------------------------


def resident_size() -> int:
    """This process's resident memory in bytes (what it holds in RAM now)."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize()


class _Example:
    """The example now running: its name, its limits, and whether its code is running now."""

    def __init__(self) -> None:
        self.name = ""
        self.limit = float(DEFAULT_TIMEOUT)
        self.deadline = 0.0  # 0: no example is running
        self.memory_cap = 0  # the resident size the process may reach while the example runs
        self.in_code = False  # inside one of the example's blocks (not sphinx-gallery's own code)
        self.pending: Exception | None = None  # a stop that arrived between two blocks
        self.watchdog: subprocess.Popen | None = None
        self.monitor: threading.Thread | None = None

    def stop_now(self) -> Exception:
        if time.monotonic() >= self.deadline:
            return ExecutionLimitExceeded(
                f"{self.name} ran longer than its time limit of {self.limit:g} s and was stopped "
                f"(nb_execution_timeout in conf.py; FXGUIDE_TIMEOUT changes it): it hangs, or it is too slow")
        return MemoryError(f"{self.name} grew by more than {memory_budget() >> 20} MB and was stopped "
                           f"({MEMORY_ENV} changes the budget)")


_NOW = _Example()


def _on_alarm(signum, frame) -> None:
    """SIGALRM, from the timer at the deadline or from the memory monitor: stop the example's code."""
    if not _NOW.deadline:
        return
    error = _NOW.stop_now()
    if _NOW.in_code:
        raise error
    _NOW.pending = error  # in sphinx-gallery's own code: the next block raises it at once


def _monitor(main: int) -> None:
    """A thread: while an example runs, interrupt it once it holds more memory than its cap."""
    while True:
        time.sleep(0.05)
        if _NOW.deadline and _NOW.in_code and resident_size() > _NOW.memory_cap:
            signal.pthread_kill(main, signal.SIGALRM)
            time.sleep(0.5)  # let it stop before looking again


def _tell_watchdog(line: str, grace: float) -> None:
    if _NOW.watchdog is None or _NOW.watchdog.poll() is not None:
        _NOW.watchdog = subprocess.Popen([sys.executable, "-m", "fxsite.sphinx.limits", "--watch", str(os.getpid()),
                                          str(grace)], stdin=subprocess.PIPE, text=True)
    try:
        _NOW.watchdog.stdin.write(line + "\n")
        _NOW.watchdog.stdin.flush()
    except OSError:
        pass


def _bounded_script(execute_script, grace: float, limit: float):
    """sphinx-gallery's ``execute_script``, run with a deadline and a memory cap.

    Signals reach only the main thread, where sphinx-gallery runs the examples;
    elsewhere the watchdog process alone bounds them.
    """

    @functools.wraps(execute_script)
    def run(script_blocks, script_vars, gallery_conf, file_conf):
        main = threading.current_thread() is threading.main_thread()
        _NOW.name = relative(Path(script_vars.get("src_file", "an example")))
        _NOW.limit, _NOW.memory_cap, _NOW.pending = limit, resident_size() + memory_budget(), None
        _NOW.deadline = time.monotonic() + limit
        if main:
            previous = signal.signal(signal.SIGALRM, _on_alarm)
            signal.setitimer(signal.ITIMER_REAL, limit, 1.0)  # again every second, should the code catch it
            if _NOW.monitor is None:
                _NOW.monitor = threading.Thread(target=_monitor, args=(threading.main_thread().ident,),
                                                name="fxguide-example-memory", daemon=True)
                _NOW.monitor.start()
        _tell_watchdog(f"arm {limit + grace} {_NOW.name}", grace)
        try:
            return execute_script(script_blocks, script_vars, gallery_conf, file_conf)
        finally:
            _NOW.deadline = 0.0
            _tell_watchdog("disarm", grace)
            if main:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)

    return run


def _bounded_block(exec_and_get_memory):
    """sphinx-gallery's ``_exec_and_get_memory`` (one code block), where the example's code may be stopped.

    It runs inside sphinx-gallery's ``try``, so what it raises is reported as the
    example's failure, with the line it stopped at.
    """

    @functools.wraps(exec_and_get_memory)
    def run(*args, **kwargs):
        if not _NOW.deadline:  # not inside an example (sphinx-gallery's own tests)
            return exec_and_get_memory(*args, **kwargs)
        if _NOW.pending is not None or time.monotonic() >= _NOW.deadline:
            raise _NOW.pending or _NOW.stop_now()
        _NOW.in_code = True
        try:
            return exec_and_get_memory(*args, **kwargs)
        finally:
            _NOW.in_code = False

    return run


def _bound_the_gallery(app) -> None:
    """builder-inited, before sphinx-gallery runs the examples: wrap its execution."""
    from sphinx_gallery import gen_rst

    limit = app.config.nb_execution_timeout
    limit = float(limit) if limit and limit > 0 else float(DEFAULT_TIMEOUT)
    script, block = gen_rst.execute_script, gen_rst._exec_and_get_memory
    script = getattr(script, "__wrapped__", script) if getattr(script, "fxguide_bounded", False) else script
    block = getattr(block, "__wrapped__", block) if getattr(block, "fxguide_bounded", False) else block
    gen_rst.execute_script = _bounded_script(script, float(app.config.fxguide_grace_seconds), limit)
    gen_rst._exec_and_get_memory = _bounded_block(block)
    gen_rst.execute_script.fxguide_bounded = gen_rst._exec_and_get_memory.fxguide_bounded = True


def _bound_myst_nb(app) -> None:
    """Every page myst-nb executes goes through :func:`execute_notebook`."""
    from myst_nb.core.execute import cache, direct

    cache.single_nb_execution = execute_notebook
    direct.single_nb_execution = execute_notebook


# -- the backstop ------------------------------------------------------------------------


def watch(pid: int, grace: float, fd: int = 0) -> None:
    """Stop process ``pid`` when an armed deadline passes: read ``arm SECONDS NAME`` and ``disarm`` lines from ``fd``.

    The build arms it when an example starts (its limit plus the grace) and disarms
    it when the example ends; the watchdog ends when the build closes its end (stdin).
    """
    deadline, name, pending = None, "", b""
    while True:
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([fd], [], [], wait)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                return
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                word, *rest = line.decode().split(" ", 2)
                if word == "arm" and len(rest) == 2:
                    deadline, name = time.monotonic() + float(rest[0]), rest[1].strip()
                else:
                    deadline = None
            continue
        if deadline is None:
            continue
        print(stopped_line(name, grace, pid), file=sys.stderr, flush=True)
        for sig, wait_for in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 0.0)):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                return
            end = time.monotonic() + wait_for
            while time.monotonic() < end and _running(pid):
                time.sleep(0.1)
            if not _running(pid):
                return
        return


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie, ended but not yet reaped by its parent, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def setup(app) -> dict:
    """``fxsite.sphinx.limits`` in ``conf.py``'s extensions."""
    app.add_config_value("fxguide_grace_seconds", 30.0, "")
    app.connect("builder-inited", _bound_the_gallery, priority=100)  # sphinx-gallery runs its examples at 500
    app.connect("builder-inited", _bound_myst_nb, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--watch"] and len(sys.argv) == 4:
        watch(int(sys.argv[2]), float(sys.argv[3]))
    else:
        sys.exit("usage: python -m fxsite.sphinx.limits --watch PID GRACE_SECONDS")
