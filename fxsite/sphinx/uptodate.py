"""Let ``make docs`` skip Sphinx when nothing Sphinx reads has changed since its last good build.

Sphinx's own no-op run still costs about 3 s on the reference machine: importing
myst-nb, sphinx-gallery and the theme (about 1.5 s of imports alone), loading the
pickled environment and rewriting the index and search pages. ``make docs`` is
the command a reader repeats, so it runs Sphinx through this wrapper, which
compares a digest of everything the build depends on with the digest written by
the last build that succeeded into the same folder:

- the Sphinx command line;
- every file of the checkout that git sees (tracked, or new and not ignored), by
  path, size and modification time: an edit, a new file, a deletion or a rename
  all change it, while the build's own products are ignored files;
- every installed distribution and its version, and the Python version
  (:func:`fxsite.sphinx.fingerprint.environment`, the key of the execution caches).

The wrapper first starts the build's kernel server (:mod:`fxsite.sphinx.warm_kernels`),
so that its import of torch overlaps the digest and Sphinx's start-up; the build
uses that server, which stops when the wrapper exits (at once, when Sphinx is not run).

A forced build (``CI`` set, or ``FXGUIDE_EXECUTE=force``) always runs, and so
does every build where git cannot list the files. The digest is taken before
Sphinx starts, so a file edited during a build makes the next one run. A failed
build removes the stamp.

    python -m fxsite.sphinx.uptodate STAMP -- python -m fxsite.sphinx.run -b html ...
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from fxsite import ROOT
from fxsite.sphinx.fingerprint import environment, forced_execution


def digest(command: list[str], root: Path | None = None) -> str | None:
    """The digest of ``command``, the checkout's files and the environment, or None without git."""
    root = ROOT if root is None else Path(root)
    if not isinstance(command, list) or not all(isinstance(part, str) for part in command):
        raise TypeError(f"digest: command must be a list of strings, got {command!r}")
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                cwd=root, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    h = hashlib.sha256("\0".join(command).encode() + b"\0\0" + "\n".join(environment()).encode())
    for name in sorted(set(listed.decode().split("\0")) - {""}):
        try:
            st = (root / name).stat()
        except FileNotFoundError:  # listed by the index, deleted from the folder
            h.update(f"{name}\0gone\n".encode())
            continue
        h.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m fxsite.sphinx.uptodate STAMP -- COMMAND...", file=sys.stderr)
        return 2
    stamp, command = Path(args[0]), args[2:]
    env = dict(os.environ)
    if env.get("FXGUIDE_WARM_KERNELS", "1") != "0":
        # Started first, the kernel server imports torch while the digest is taken and Sphinx starts
        # up: an edited page's kernel is the longest path of a rebuild. When Sphinx is not run,
        # the server is stopped on exit, before its import is done.
        from fxsite.sphinx import warm_kernels

        warm_kernels.start(env)
    key = None if forced_execution() else digest(command)
    if key is not None and stamp.is_file() and stamp.read_text() == key:
        print(f"make docs: nothing has changed since the last build into {stamp.parent} "
              f"(no source, installed package or option): Sphinx not run")
        return 0
    stamp.unlink(missing_ok=True)
    code = subprocess.run(command, check=False, env=env).returncode
    if code == 0 and key is not None:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(key)
    return code


if __name__ == "__main__":
    sys.exit(main())
