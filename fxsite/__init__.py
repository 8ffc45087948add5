"""The engine that builds and checks the fxguide site; not part of the ``fxguide`` package.

Readers import :mod:`fxguide`; this package only serves the repository's
``conf.py``, Makefile and tests, the way scientific-Python projects keep their
docs tooling beside the docs instead of inside the package they document:

- :mod:`fxsite.sphinx`: the Sphinx extensions (cell errors, cache fingerprint,
  warm kernels, pre-running, the reference pages' directives, templates);
- :mod:`fxsite.drift`: the drift guard (extract the outputs of a build, compare
  them with ``tests/expected``, report across torch versions);
- :mod:`fxsite.inventory`: the inventory of torch's messages, harvested per
  release from torch's source (the data the reader's lookup recognises);
- :mod:`fxsite.web`: serving and checking the built site;
- :mod:`fxsite.bench`: ``make bench``.

Dependencies point one way: ``bench`` -> ``web``/``sphinx`` -> ``drift``; nothing
here is imported by ``fxguide``.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The repository's root: the folder holding ``conf.py``."""
