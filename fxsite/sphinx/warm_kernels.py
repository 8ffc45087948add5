"""Warm notebook kernels: forked from a process that has already imported torch.

Every page of the guide runs in a fresh Jupyter kernel, and a fresh kernel spends
most of its life starting Python, ipykernel and torch before the page's first line
runs: about 1.5 s per page, when most pages then run in well under a second. So
during a docs build that has pages to execute, this Sphinx extension starts one
*kernel server* (:func:`start`): a process
that imports torch, ``torch.fx`` and ipykernel once, then waits. The build's
kernels are launched as ``python -m fxsite.sphinx.warm_kernels -f <connection file>``
(a ``python3`` kernelspec put first on ``JUPYTER_PATH``); that launcher asks the
server to fork a child, and the child becomes the kernel.

The child is still a fresh kernel for the page: its own process, with the
launcher's working directory, environment, arguments and standard streams, and
nothing the page ran before. It only skips the imports (torch is imported, not
used, before the fork: no threads exist yet). The launcher stays the process
Jupyter watches: it forwards signals to the kernel and exits with its exit code;
if Jupyter kills the launcher, the server kills the kernel.

Without a server (``FXGUIDE_KERNEL_SERVER`` unset, not answering, or running
another Python), the launcher simply becomes a plain ``ipykernel`` kernel.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from fxsite.drift.build import SERVER_ENV
from fxsite.sphinx import limits
from fxsite.sphinx.fingerprint import import_time_env

PRELOAD = ("torch", "torch.fx", "ipykernel.kernelapp", "ipykernel.ipkernel", "IPython", "numpy")
CHECKOUT_PACKAGES = ("fxguide", "fxsite")  # never handed to a kernel pre-imported: they change under a writer


def start(env: dict[str, str] | None = None, *, watch_environment: bool = False) -> Path:
    """Start a kernel server for this process's lifetime and route ``python3`` kernels to it.

    Writes a ``python3`` kernelspec into a fresh temporary directory, puts that
    directory first on ``JUPYTER_PATH`` and points ``FXGUIDE_KERNEL_SERVER`` at the
    server's socket, in ``env`` (default: ``os.environ``), which child processes
    (Sphinx's parallel readers, the kernels) inherit. The server stops when this
    process exits. Returns the temporary directory.

    ``watch_environment`` is for a server that outlives one build (``make livehtml``):
    before each fork it compares the installed distributions with those it started
    with, and after any change answers "cold", so the launcher runs a plain kernel
    that imports the packages as they are now.
    """
    env = os.environ if env is None else env
    if not isinstance(env, (dict, type(os.environ))):
        raise TypeError(f"start: env must be a mapping of environment variables, not {type(env).__name__}")
    home = Path(tempfile.mkdtemp(prefix="fxguide-kernels-"))
    spec = home / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": ["python", "-m", "fxsite.sphinx.warm_kernels", "-f", "{connection_file}"],
        "display_name": "Python 3 (fxguide warm kernel)",
        "language": "python",
        "metadata": {"debugger": False},
    }, indent=1))
    sock = home / "server.sock"
    server = subprocess.Popen([sys.executable, "-m", "fxsite.sphinx.warm_kernels", "--serve", str(sock),
                               *(["--watch-environment"] if watch_environment else [])],
                              env=dict(env), stdin=subprocess.DEVNULL)

    def stop() -> None:
        server.terminate()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(home, ignore_errors=True)

    atexit.register(stop)
    env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(home), env.get("JUPYTER_PATH")]))
    env[SERVER_ENV] = str(sock)
    return home


# -- the server ---------------------------------------------------------------------


def _read_request(conn: socket.socket) -> tuple[dict, list[int]]:
    """One request: the launcher's stdin/stdout/stderr (as file descriptors), then a JSON line."""
    _, fds, _, _ = socket.recv_fds(conn, 1, 3)
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1 << 16)
        if not chunk:
            raise ConnectionError("launcher hung up mid-request")
        data += chunk
    return json.loads(data), fds


def kernel_path(server_path: list[str], served: str, given: str, cwd: str) -> list[str]:
    """The ``sys.path`` a fresh ``python -m ipykernel_launcher`` would have: its folder, then the
    launcher's ``PYTHONPATH``, then the installation's folders (the server's, minus its own ``PYTHONPATH``).

    >>> kernel_path(["/srv", "/old", "/lib"], "/old", "/site:/more", "/site/docs")
    ['/site/docs', '/site', '/more', '/lib']
    """
    def entries(value: str) -> list[str]:
        return [os.path.abspath(p) for p in value.split(os.pathsep) if p]

    dropped = set(entries(served))
    return [cwd, *entries(given), *(p for p in server_path[1:] if os.path.abspath(p) not in dropped)]


def startup_hooks(pythonpath: str) -> dict[str, bytes]:
    """The ``sitecustomize``/``usercustomize`` modules a Python started with ``pythonpath`` would run first,
    with their text: a kernel whose launcher's would differ from the server's cannot be one of its forks."""
    hooks = {}
    for folder in filter(None, pythonpath.split(os.pathsep)):
        for name in ("sitecustomize.py", "usercustomize.py"):
            path = Path(folder, name)
            if path.is_file() and name not in hooks:
                hooks[name] = path.read_bytes()
    return hooks


def _become_kernel(request: dict, fds: list[int]) -> None:
    """In the forked child: take the launcher's streams, place and environment, run ipykernel."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    os.chdir(request["cwd"])
    served = os.environ.get("PYTHONPATH", "")
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ.pop(SERVER_ENV, None)
    limits.cap_data()  # the page's memory budget, from its size now
    sys.argv = [request["argv0"], *request["args"]]
    sys.path[:] = kernel_path(sys.path, served, os.environ.get("PYTHONPATH", ""), os.getcwd())
    # The server imported fxsite (and through it part of fxguide) for itself; the page imports them
    # afresh, from its own PYTHONPATH and as they are now (a server that lives through edits: livehtml).
    for name in [m for m in sys.modules if m.partition(".")[0] in CHECKOUT_PACKAGES]:
        del sys.modules[name]
    code = 0
    try:
        from ipykernel import kernelapp

        args = list(request["args"])
        if os.environ.get("JPY_PARENT_PID"):
            # ipykernel reads JPY_PARENT_PID when it is imported, which here was before the
            # fork, in the server: pass it on, or the kernel thinks no client started it.
            args.append(f"--IPKernelApp.parent_handle={os.environ['JPY_PARENT_PID']}")
        kernelapp.launch_new_instance(argv=args)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def serve(path: Path, *, watch_environment: bool = False) -> None:
    """Import the heavy modules, then fork one kernel per launcher until the parent goes away.

    With ``watch_environment``, a launcher that asks after the installed distributions
    changed (:func:`fxsite.sphinx.fingerprint.environment`) is told to run a plain kernel.
    """
    import importlib

    from fxsite.sphinx.fingerprint import environment

    path = Path(path)
    if not path.parent.is_dir() or path.exists():
        raise ValueError(f"serve: {path} must be a new socket path in an existing folder")

    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(64)  # launchers that connect during the imports below wait in this queue
    installed = environment() if watch_environment else None
    hooks = startup_hooks(os.environ.get("PYTHONPATH", ""))
    started_with = import_time_env(dict(os.environ))
    for name in PRELOAD:
        importlib.import_module(name)
    kernels: dict[int, socket.socket] = {}  # kernel pid -> its launcher's connection

    def stop(*_) -> None:
        # At once: no kernel of this build is still needed, and unwinding an interpreter
        # that imported torch would keep the build waiting for a second or two.
        for pid in kernels:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    # A kernel's exit wakes the loop at once (its launcher, and Jupyter behind it, wait for the news);
    # the 0.2 s timeout only bounds how late the server notices that its parent has gone.
    woken, wake = socket.socketpair()
    woken.setblocking(False)
    wake.setblocking(False)
    signal.set_wakeup_fd(wake.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while os.getppid() == parent:
        ready, _, _ = select.select([listener, woken, *kernels.values()], [], [], 0.2)  # retried on EINTR (PEP 475)
        for conn in ready:
            if conn is woken:
                try:
                    woken.recv(4096)
                except BlockingIOError:
                    pass
                continue
            if conn is listener:
                conn, _ = listener.accept()
                try:
                    request, fds = _read_request(conn)
                except (OSError, ValueError):
                    conn.close()
                    continue
                if request.get("executable") != sys.executable or \
                        startup_hooks(request["env"].get("PYTHONPATH", "")) != hooks or \
                        import_time_env(request["env"]) != started_with or \
                        (installed is not None and environment() != installed):
                    # another Python, startup code, start-up settings or packages: the launcher runs a plain kernel
                    conn.sendall(b"cold\n")
                    conn.close()
                    for fd in fds:
                        os.close(fd)
                    continue
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    for open_ in (listener, woken, wake, conn, *kernels.values()):
                        if open_ is not None:
                            open_.close()
                    _become_kernel(request, fds)
                for fd in fds:
                    os.close(fd)
                conn.sendall(f"pid {pid}\n".encode())
                kernels[pid] = conn
            else:  # a launcher hung up before its kernel ended: Jupyter killed it
                pid = next(p for p, c in kernels.items() if c is conn)
                os.kill(pid, signal.SIGKILL)
                conn.close()
                kernels[pid] = None  # reaped below
        while kernels:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = kernels.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
                except OSError:
                    pass
                conn.close()
        kernels = {p: c for p, c in kernels.items() if c is not None}
    for pid in kernels:
        os.kill(pid, signal.SIGKILL)


# -- the launcher ---------------------------------------------------------------------


def _cold(args: list[str]) -> None:
    limits.cap_data()  # kept across exec: the budget includes the kernel's own imports
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *args])


def launch(args: list[str]) -> int:
    """Be a kernel for Jupyter: a forked one if the server answers, a plain one otherwise.

    ``args`` are ipykernel's (``["-f", "<connection file>"]``), as a kernelspec passes them.
    """
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise TypeError(f"launch: args must be a list of strings (ipykernel's arguments), got {args!r}")
    path = os.environ.get(SERVER_ENV)
    if not path:
        _cold(args)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        socket.send_fds(conn, [b"."], [0, 1, 2])
        request = {"executable": sys.executable, "argv0": sys.argv[0], "args": args,
                   "cwd": os.getcwd(), "env": dict(os.environ)}
        conn.sendall(json.dumps(request).encode() + b"\n")
        reader = conn.makefile("r")
        first = reader.readline().split()
    except OSError:
        first = []
    if len(first) != 2 or first[0] != "pid":
        conn.close()
        _cold(args)
    pid = int(first[1])

    def forward(sig, _frame) -> None:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, forward)
    while True:
        try:
            line = reader.readline()
            break
        except InterruptedError:
            continue
    words = line.split()
    return int(words[1]) if len(words) == 2 and words[0] == "exit" else 1


# -- the Sphinx extension ------------------------------------------------------------


def start_for(app) -> None:
    """Start this build's kernel server, once (:mod:`fxsite.sphinx.prerun` may have already).

    A server that ``make docs`` started before Sphinx (:mod:`fxsite.sphinx.uptodate`)
    is used as it is: its socket and kernelspec are already in the environment.
    """
    if getattr(app, "_fxguide_kernels", None) is not None or not app.config.fxguide_warm_kernels:
        return
    given = os.environ.get(SERVER_ENV)
    if given and Path(given).parent.joinpath("kernels", "python3", "kernel.json").is_file() and \
            str(Path(given).parent) in os.environ.get("JUPYTER_PATH", "").split(os.pathsep):
        app._fxguide_kernels = Path(given).parent
    else:
        app._fxguide_kernels = start()


def _start_if_pages_execute(app, env, docnames: list[str]) -> None:
    """Before Sphinx reads (and forks its parallel readers): a server, if a notebook page may run.

    With :mod:`fxsite.sphinx.prerun` on (the guide's setting) in cache mode, the pages
    to execute have run already, and reading only executes one that failed there:
    that one runs in a plain kernel rather than paying a server's torch import on
    every build that reads a page.
    """
    if app.config.nb_execution_mode == "off":
        return
    if app.config.nb_execution_mode == "cache" and getattr(app.config, "fxguide_prerun", False):
        return
    if any(env.doc2path(name).suffix in {".md", ".ipynb"} for name in docnames):
        start_for(app)


def setup(app) -> dict:
    """``fxsite.sphinx.warm_kernels`` in ``conf.py``'s extensions; ``fxguide_warm_kernels = False`` turns it off."""
    app.add_config_value("fxguide_warm_kernels", True, "")
    app.connect("env-before-read-docs", _start_if_pages_execute, priority=50)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(Path(sys.argv[2]), watch_environment="--watch-environment" in sys.argv[3:])
    else:
        sys.exit(launch(sys.argv[1:]))
