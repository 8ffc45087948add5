"""make livehtml: sphinx-autobuild with the site's options, blind to what the build itself writes into docs/."""

from __future__ import annotations

import os
import queue
import random
import shlex
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from fxsite import ROOT
from throwaway import make_site


def _dry_run() -> str:
    """The commands ``make livehtml`` runs, as a top-level make prints them (under ``make test``, an
    inherited MAKELEVEL would add "make[1]: Leaving directory ..." after them)."""
    env = {k: v for k, v in os.environ.items() if k not in {"MAKELEVEL", "MAKEFLAGS", "MFLAGS"}}
    done = subprocess.run(["make", "-n", "--no-print-directory", "livehtml"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    return done.stdout


def _livehtml_arguments() -> list[str]:
    """The arguments ``make livehtml`` gives ``python -m fxsite.sphinx.live``, as its shell would split them."""
    words = shlex.split(_dry_run().replace("\\\n", " "))
    start = words.index("fxsite.sphinx.live") + 1
    return words[start:]


def _ignore_filter(arguments: list[str]):
    """sphinx-autobuild's own filter, made from its own reading of ``arguments``, run from the root as make does."""
    from sphinx_autobuild.__main__ import _get_parser
    from sphinx_autobuild.filter import IgnoreFilter

    options, _ = _get_parser().parse_known_args(arguments)
    return IgnoreFilter(options.ignore, options.re_ignore)


def test_what_a_build_writes_where_livehtml_watches_is_ignored_and_the_sources_are_not(monkeypatch) -> None:
    """Checked with sphinx-autobuild's own filter: it resolves each --ignore against its folder, so a
    glob such as '*/docs/gallery/*' matched nothing, and every rebuild started the next."""
    monkeypatch.chdir(ROOT)
    ignored = _ignore_filter(_livehtml_arguments())
    generated = [line.strip().rstrip("/") for line in (ROOT / ".gitignore").read_text().splitlines()
                 if line.strip().startswith("docs/")]
    assert generated, "no generated path under docs/ in .gitignore"
    written = [f"{path}/page.md" if not path.endswith(".md") else path for path in generated]
    written += ["docs/gallery/.fxguide-fingerprint", ".jupyter_cache/global.db", "fxguide/__pycache__/x.pyc"]
    for path in written:
        assert ignored(str(ROOT / path)), f"{path} is written by the build but not ignored by make livehtml"
    for source in ("docs/quickstart.md", "docs/problems/index.md", "gallery/fuse_conv_bn.py", "fxguide/models/basics.py"):
        assert not ignored(str(ROOT / source)), f"make livehtml ignores the source {source}"


def _lines(process: subprocess.Popen) -> queue.Queue:
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _wait_for(lines: queue.Queue, text: str, seen: list[str], within: float) -> bool:
    deadline = time.monotonic() + within
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            return False
        if line is None:
            return False
        seen.append(line)
        if text in line:
            return True
    return False


def _port_nobody_else_is_given() -> int:
    """A free port below the range the system hands out for port 0.

    sphinx-autobuild serves only after its first build, so a port picked now must stay free for
    that long; in a busy test run, a port of the system's range may be given to a browser or a
    client meanwhile. Below it, a port goes only to a program that asks for it by number.
    """
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except OSError:  # not Linux: the start of Linux's own default range is below most systems' ranges
        low = 32768
    for port in random.Random().sample(range(max(1024, low - 8000), low), 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port between {low - 8000} and {low}")


def _serving(port: int, within: float = 60) -> None:
    """Wait until the throwaway site's home page is served on ``port``."""
    deadline = time.monotonic() + within
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
                assert "Throwaway site" in page.read().decode(), f"port {port} serves another site"
                break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    time.sleep(1)  # the watcher is a task the server starts; give it a moment to be in place


@pytest.mark.slow
def test_a_saved_page_rebuilds_once_and_the_rebuild_starts_no_other(tmp_path) -> None:
    """make livehtml's own command, run on a throwaway site: one save, one rebuild, then quiet."""
    site = make_site(tmp_path, "```{code-cell} python\nprint('ran')\n```\n")
    port = _port_nobody_else_is_given()
    arguments = _livehtml_arguments()
    arguments[arguments.index("--port") + 1] = str(port)
    process = subprocess.Popen([sys.executable, "-m", "fxsite.sphinx.live", *arguments], cwd=site,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "PYTHONPATH": str(site), "NO_COLOR": "1"})
    seen: list[str] = []
    try:
        lines = _lines(process)
        assert _wait_for(lines, "Waiting to detect changes", seen, 300), "".join(seen[-60:])
        try:
            _serving(port)  # the watcher starts with the web server
        except OSError as error:
            raise AssertionError(f"the throwaway site is not served ({error}):\n" + "".join(seen[-60:])) from error
        page = site / "docs" / "page.md"
        page.write_text(page.read_text() + "\nOne more sentence.\n")
        assert _wait_for(lines, "Detected changes", seen, 60), "".join(seen[-60:])
        assert _wait_for(lines, "build succeeded", seen, 120), "".join(seen[-60:])
        rebuilds = [line for line in seen if "Detected changes" in line]
        assert len(rebuilds) == 1 and "page.md" in rebuilds[0], rebuilds
        # The rebuild's own writes would be reported within watchfiles' debounce (1.6 s); wait well past it.
        after: list[str] = []
        _wait_for(lines, "Detected changes", after, 15)
        assert not [line for line in after if "Detected changes" in line], "".join(after[-60:])
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def test_livehtml_runs_sphinx_autobuild_with_the_site_config_and_watches_the_package_and_gallery() -> None:
    command = _dry_run()
    assert "-m fxsite.sphinx.live -b html -c ." in command and " docs _build/html" in command
    assert "--watch fxguide" in command and "--watch gallery" in command
    done = subprocess.run([sys.executable, "-m", "fxsite.sphinx.live", "--help"], capture_output=True, text=True,
                          cwd=ROOT)
    assert "sphinx-autobuild" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 0, "sphinx-autobuild is missing: `make venv` installs it (the docs extra)"



def test_each_rebuild_runs_sphinx_through_the_fast_exit_runner(monkeypatch) -> None:
    """live.main hands sphinx-autobuild a subprocess module whose run starts fxsite.sphinx.run."""
    import sphinx_autobuild.__main__
    import sphinx_autobuild.build

    from fxsite.sphinx import live

    monkeypatch.setenv("FXGUIDE_WARM_KERNELS", "0")
    monkeypatch.setattr(sphinx_autobuild.build, "subprocess", subprocess)  # restored after the test
    ran: list[list[str]] = []

    def autobuild(argv):  # one rebuild, as sphinx-autobuild's server would start it
        sphinx_autobuild.build.Builder(argv, url_host="127.0.0.1:0", pre_build_commands=[],
                                       post_build_commands=[])(changed_paths=[])
        return 0

    monkeypatch.setattr(sphinx_autobuild.__main__, "main", autobuild)
    monkeypatch.setattr(subprocess, "run", lambda command, *a, **k: ran.append(command))
    assert live.main(["-b", "html", "docs", "out"]) == 0
    assert ran == [[sys.executable, "-m", "fxsite.sphinx.run", "-b", "html", "docs", "out"]]
