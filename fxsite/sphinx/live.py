"""``make livehtml``: sphinx-autobuild, with one kernel server for the whole session.

sphinx-autobuild runs a new Sphinx process for every rebuild, and each would start
its own kernel server (:mod:`fxsite.sphinx.warm_kernels`) and import torch again
before the edited page can run. Here the server is started once, before
sphinx-autobuild, and every rebuild's kernels are forked from it. It watches the
installed packages: after a ``pip install`` the next page runs in a plain kernel
that imports them as they are, so a long session never shows output of packages
that are gone. The server stops with the session. Each rebuild's Sphinx runs as
:mod:`fxsite.sphinx.run`, which does not wait for the interpreter's teardown.

    python -m fxsite.sphinx.live SPHINX-AUTOBUILD-ARGUMENTS...
"""

from __future__ import annotations

import os
import subprocess
import sys


def sphinx_through_run(command: list[str]) -> list[str]:
    """sphinx-autobuild's Sphinx command, run by :mod:`fxsite.sphinx.run`; any other command as it is.

    >>> sphinx_through_run(["python", "-m", "sphinx", "build", "-b", "html", "docs", "out"])
    ['python', '-m', 'fxsite.sphinx.run', '-b', 'html', 'docs', 'out']
    >>> sphinx_through_run(["make", "something"])
    ['make', 'something']
    """
    if command[1:3] == ["-m", "sphinx"]:
        rest = command[3:]
        return [command[0], "-m", "fxsite.sphinx.run", *(rest[1:] if rest[:1] == ["build"] else rest)]
    return list(command)


class _Subprocess:
    """The ``subprocess`` module as sphinx-autobuild's builder sees it here: ``run`` goes through
    :func:`sphinx_through_run` (sphinx-autobuild has no option for the command it runs)."""

    def __getattr__(self, name: str):
        return getattr(subprocess, name)

    @staticmethod
    def run(command, *args, **kwargs):
        return subprocess.run(sphinx_through_run(command), *args, **kwargs)


def main(argv: list[str] | None = None) -> int:
    import sphinx_autobuild.build
    from sphinx_autobuild.__main__ import main as autobuild

    from fxsite.sphinx import warm_kernels

    sphinx_autobuild.build.subprocess = _Subprocess()

    argv = sys.argv[1:] if argv is None else argv
    if os.environ.get("FXGUIDE_WARM_KERNELS", "1") != "0" and not {"-h", "--help", "--version"} & set(argv):
        warm_kernels.start(os.environ, watch_environment=True)
    return autobuild(argv) or 0


if __name__ == "__main__":
    sys.exit(main())
