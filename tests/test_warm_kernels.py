"""Warm kernels (fxsite/sphinx/warm_kernels.py): fresh kernels for every page, minus the imports."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from jupyter_client.manager import start_new_kernel

from fxsite.sphinx import warm_kernels

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = "import os, sys; print(os.getpid(), os.getcwd(), 'torch' in sys.modules, os.environ.get('PROBE'))"


def run_in_kernel(code: str, cwd: str) -> str:
    km, kc = start_new_kernel(kernel_name="python3", cwd=cwd)
    out: list[str] = []
    try:
        kc.execute_interactive(code, timeout=60, output_hook=lambda m: out.append(m["content"].get("text", "")))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    return "".join(out).strip()


@pytest.fixture
def server_env(tmp_path, monkeypatch):
    """This test process as a docs build: a kernel server and the kernelspec that uses it."""
    monkeypatch.setenv("PYTHONPATH", ROOT)
    env = dict(os.environ, PROBE="from the build")
    home = warm_kernels.start(env)
    for name in ("JUPYTER_PATH", warm_kernels.SERVER_ENV, "PROBE"):
        monkeypatch.setenv(name, env[name])
    deadline = time.monotonic() + 60
    while not (home / "server.sock").exists():  # the server binds once torch is imported
        assert time.monotonic() < deadline, "the kernel server did not start within 60 s"
        time.sleep(0.05)
    return tmp_path


def test_each_kernel_is_a_fresh_process_with_torch_already_imported(server_env):
    first = run_in_kernel(PROBE + "\nleft_behind = 1", cwd=str(server_env)).split()
    second = run_in_kernel(PROBE + "\nprint('left_behind' in globals())", cwd=str(server_env)).split()
    assert first[2] == "True", "a warm kernel should start with torch imported"
    assert first[0] != second[0], "two pages must not share a kernel process"
    assert second[-1] == "False", "a page must not see what an earlier page defined"


def test_a_warm_kernel_runs_where_and_with_what_the_launcher_was_given(server_env):
    pid, cwd, _, probe = run_in_kernel(PROBE, cwd=str(server_env)).split(maxsplit=3)
    assert cwd == str(server_env)
    assert probe == "from the build"


def test_a_warm_kernel_puts_the_launchers_pythonpath_first_as_a_fresh_python_would(server_env, monkeypatch):
    """A throwaway site sets its own PYTHONPATH after the server started: its kernels import from that site."""
    site = server_env / "site"
    (site / "probe_pkg").mkdir(parents=True)
    (site / "probe_pkg" / "__init__.py").write_text("WHERE = 'the site'\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), ROOT]))
    printed = run_in_kernel("import sys, probe_pkg; print(sys.path[:3] == [sys.path[0], {!r}, {!r}], probe_pkg.WHERE)"
                            .format(str(site), ROOT), cwd=str(server_env))
    assert printed == "True the site"


def test_a_launcher_whose_python_would_run_other_startup_code_gets_a_cold_kernel(server_env, monkeypatch):
    """A sitecustomize.py on the launcher's PYTHONPATH (the drift guard's simulated torch) runs before torch's
    import in a fresh Python: a fork of the server, which never ran it, would not be that kernel."""
    hooked = server_env / "hooked"
    hooked.mkdir()
    (hooked / "sitecustomize.py").write_text("import os\nos.environ['STARTED_BY'] = 'sitecustomize'\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(hooked), ROOT]))
    printed = run_in_kernel("import os, sys; print('torch' in sys.modules, os.environ.get('STARTED_BY'))",
                            cwd=str(server_env))
    assert printed == "False sitecustomize"


def test_a_launcher_started_under_other_cpu_settings_gets_a_cold_kernel_that_uses_them(server_env, monkeypatch):
    """torch reads ATEN_CPU_CAPABILITY and OMP_NUM_THREADS when it starts: a fork of the server (started without
    them) would run the page with the server's kernels and threads, whatever the launcher's environment says."""
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    printed = run_in_kernel("import sys; cold = 'torch' not in sys.modules; import torch; "
                            "print(cold, torch.backends.cpu.get_cpu_capability(), torch.get_num_threads())",
                            cwd=str(server_env))
    assert printed == "True DEFAULT 1"


def test_a_warm_kernel_imports_this_checkouts_packages_afresh(server_env):
    """The server imported fxsite and part of fxguide for itself; a page edited since must see its edits."""
    assert run_in_kernel("import sys; print(sorted(m for m in sys.modules if m.startswith(('fxguide', 'fxsite'))))",
                         cwd=str(server_env)) == "[]"


def test_a_session_server_hands_out_cold_kernels_once_the_installed_packages_change(tmp_path, monkeypatch):
    """make livehtml's server lives through many builds: after a pip install its torch may be gone."""
    packages = tmp_path / "site-packages"
    packages.mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([ROOT, str(packages)]))
    env = dict(os.environ)
    home = warm_kernels.start(env, watch_environment=True)
    for name in ("JUPYTER_PATH", warm_kernels.SERVER_ENV):
        monkeypatch.setenv(name, env[name])
    deadline = time.monotonic() + 60
    while not (home / "server.sock").exists():
        assert time.monotonic() < deadline, "the kernel server did not start within 60 s"
        time.sleep(0.05)
    assert run_in_kernel(PROBE, cwd=str(tmp_path)).split()[2] == "True", "unchanged packages: a warm kernel"
    installed = packages / "newly_installed-1.0.dist-info"
    installed.mkdir()
    (installed / "METADATA").write_text("Metadata-Version: 2.1\nName: newly-installed\nVersion: 1.0\n")
    assert run_in_kernel(PROBE, cwd=str(tmp_path)).split()[2] == "False", "a package changed: a cold kernel"


def test_without_a_server_the_launcher_is_a_plain_cold_kernel(server_env, monkeypatch):
    monkeypatch.delenv(warm_kernels.SERVER_ENV)
    assert run_in_kernel(PROBE, cwd=str(server_env)).split()[2] == "False"


def test_a_server_that_does_not_answer_means_a_cold_kernel(server_env, monkeypatch, tmp_path):
    monkeypatch.setenv(warm_kernels.SERVER_ENV, str(tmp_path / "nobody-listens.sock"))
    assert run_in_kernel(PROBE, cwd=str(server_env)).split()[2] == "False"


def test_killing_the_launcher_kills_its_kernel(server_env):
    connection = server_env / "kernel.json"
    from jupyter_client.connect import write_connection_file

    write_connection_file(str(connection))
    launcher = subprocess.Popen([sys.executable, "-m", "fxsite.sphinx.warm_kernels", "-f", str(connection)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 90  # a loaded 2-core machine forks slowly
        kernel = None
        while kernel is None and time.monotonic() < deadline:
            # A forked kernel keeps the server's command line: it is the server's only child.
            children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(server_pid())],
                                      capture_output=True, text=True).stdout.split()
            kernel = int(children[0]) if children else None
            time.sleep(0.1)
        assert kernel is not None, "the server did not fork a kernel for the launcher"
    finally:
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
    deadline = time.monotonic() + 10
    while alive(kernel):
        assert time.monotonic() < deadline, f"kernel {kernel} outlived its killed launcher"
        time.sleep(0.1)


def server_pid() -> int:
    out = subprocess.run(["pgrep", "-f", "warm_kernels --serve " + os.environ[warm_kernels.SERVER_ENV]],
                         capture_output=True, text=True).stdout.split()
    assert out, "no kernel server running"
    return int(out[0])


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_start_rejects_an_environment_that_is_not_a_mapping():
    with pytest.raises(TypeError, match="env must be a mapping"):
        warm_kernels.start(["PATH=/bin"])


def test_serve_and_launch_reject_what_they_cannot_use(tmp_path):
    with pytest.raises(ValueError, match="new socket path in an existing folder"):
        warm_kernels.serve(tmp_path / "missing" / "server.sock")
    with pytest.raises(TypeError, match="list of strings"):
        warm_kernels.launch("-f kernel.json")
