"""The Sphinx extension that shapes the rendered guide (``fxguide.site`` in ``conf.py``).

It holds what the site needs beyond the stock theme, each part in its own module:

- :mod:`fxguide.site.notebooks`: a "download this page as a notebook" link on
  every executed page, pointing at the executed notebook copied beside the page;
- :mod:`fxguide.site.apiref`: the directives that render the reference pages
  (the ``torch.fx`` API from the installed torch, the ``fxguide`` API from its
  docstrings), each ``torch.fx`` entry listing the guide's examples that use it;
- ``templates/``: the sidebar that shows the whole guide, section by section.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

from fxguide.site import apiref, notebooks

TEMPLATES = Path(__file__).resolve().parent / "templates"


def _add_templates(app: Sphinx, config) -> None:
    if str(TEMPLATES) not in config.templates_path:
        config.templates_path.append(str(TEMPLATES))


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _add_templates)
    notebooks.setup(app)
    apiref.setup(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
