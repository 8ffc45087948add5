"""Serve a built site on this machine only: ``python -m fxsite.web.serve _build/html``.

``make serve`` runs this, and the browser tests serve the site through
:func:`serving`, so readers and tests get the same server. It binds
127.0.0.1 and needs no network: everything the site loads is inside it.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HOST = "127.0.0.1"


class _Handler(SimpleHTTPRequestHandler):
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".ipynb": "application/x-ipynb+json"}


class _QuietHandler(_Handler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base class's name)
        pass


def _server(directory: Path, port: int, quiet: bool) -> ThreadingHTTPServer:
    directory = Path(directory)
    if not (directory / "index.html").is_file():
        raise FileNotFoundError(f"no site in {directory} (no index.html): build it first with `make docs`")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an int from 0 (any free port) to 65535, got {port!r}")
    handler = functools.partial(_QuietHandler if quiet else _Handler, directory=str(directory))
    return ThreadingHTTPServer((HOST, port), handler)


@contextlib.contextmanager
def serving(directory: Path, port: int = 0) -> Iterator[str]:
    """Serve ``directory`` from a background thread while the block runs; yield its URL.

    ``port=0`` picks a free port.

    >>> import tempfile, urllib.request
    >>> with tempfile.TemporaryDirectory() as site:
    ...     _ = (Path(site) / "index.html").write_text("<h1>hi</h1>")
    ...     with serving(Path(site)) as url:
    ...         urllib.request.urlopen(url).read()
    b'<h1>hi</h1>'
    """
    server = _server(directory, port, quiet=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m fxsite.web.serve", description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="the built site, e.g. _build/html")
    parser.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0: any free port)")
    args = parser.parse_args(argv)
    try:
        server = _server(args.directory, args.port, quiet=False)
    except (FileNotFoundError, ValueError) as error:
        parser.exit(1, f"serve: {error}\n")
    print(f"serving {args.directory} on http://{HOST}:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
    with server:
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
