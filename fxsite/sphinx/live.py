"""``make livehtml``: sphinx-autobuild, with one kernel server for the whole session.

sphinx-autobuild runs a new Sphinx process for every rebuild, and each would start
its own kernel server (:mod:`fxsite.sphinx.warm_kernels`) and import torch again
before the edited page can run. Here the server is started once, before
sphinx-autobuild, and every rebuild's kernels are forked from it. It watches the
installed packages: after a ``pip install`` the next page runs in a plain kernel
that imports them as they are, so a long session never shows output of packages
that are gone. The server stops with the session.

    python -m fxsite.sphinx.live SPHINX-AUTOBUILD-ARGUMENTS...
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    from sphinx_autobuild.__main__ import main as autobuild

    from fxsite.sphinx import warm_kernels

    argv = sys.argv[1:] if argv is None else argv
    if os.environ.get("FXGUIDE_WARM_KERNELS", "1") != "0" and not {"-h", "--help", "--version"} & set(argv):
        warm_kernels.start(os.environ, watch_environment=True)
    return autobuild(argv) or 0


if __name__ == "__main__":
    sys.exit(main())
