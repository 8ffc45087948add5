"""``python -m fxsite.sphinx.run ARGS``: ``sphinx-build ARGS`` that exits as soon as the build is done.

A build that re-read a page has imported torch (sphinx-codeautolink and the API
reference resolve the names of its code), and an interpreter that imported torch
takes about 1.3 s to tear itself down after Sphinx has written everything:
freeing every module and object, one by one, a fifth of a one-page rebuild. Here
Sphinx's own ``main`` runs as ``python -m sphinx`` would run it; then the exit
handlers run as usual (logging's flush, the kernel server's shutdown, temporary
folders), and the process ends with Sphinx's exit status without the teardown.
"""

from __future__ import annotations

import atexit
import os
import sys

_status = 1  # what the process exits with unless Sphinx's main returns (an uncaught exception)


def _exit_now() -> None:
    """The last exit handler (registered first): flush the streams and end the process, skipping the teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(_status)


def main(argv: list[str] | None = None) -> int:
    """Run ``sphinx-build`` with ``argv`` (default: this process's arguments); its exit status."""
    global _status
    from sphinx.cmd.build import main as sphinx_build

    _status = sphinx_build(sys.argv[1:] if argv is None else argv)
    return _status


if __name__ == "__main__":
    atexit.register(_exit_now)  # before Sphinx and its extensions register theirs, so it runs after them
    try:
        main()
    except SystemExit as stop:  # --help, --version, a bad option: the status argparse chose
        _status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        raise
    sys.exit(_status)
