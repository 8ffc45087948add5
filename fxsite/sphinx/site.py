"""The Sphinx extension that shapes the rendered guide (``fxsite.sphinx.site`` in ``conf.py``).

It holds what the site needs beyond the stock theme, each part in its own module:

- :mod:`fxsite.sphinx.notebooks`: a "download this page as a notebook" link on
  every executed page, pointing at the executed notebook copied beside the page;
- :mod:`fxsite.sphinx.running`: on every executed page, what to install to run it (pinned to
  the torch it ran with), its source and edit links, and notebooks whose first cell installs;
- :mod:`fxsite.sphinx.outputs`: outputs without the build machine's paths, errors shown as
  the reader's line and the message (the full traceback folded), long outputs folded;
- :mod:`fxsite.sphinx.thumbnails`: each gallery example's thumbnail, a card saying its part of
  the guide (FX or PT2) and what it does, readable at thumbnail size;
- :mod:`fxsite.sphinx.apiref`: the directives that render the reference pages
  (the ``torch.fx`` API from the installed torch, the ``fxguide`` API from its
  docstrings), each ``torch.fx`` entry listing the guide's examples that use it;
- :mod:`fxsite.sphinx.survey`: the ``zoo-survey`` directive that renders the
  model-zoo survey page from the committed ``drift/torch-*/survey.json``;
- ``templates/``: the sidebar that shows the whole guide, section by section, and the
  theme's search button with an accessible name that matches its text;
- ``static/fxguide.css``: code and outputs wrap to the column; the run block; folded tracebacks;
- ``static/fxguide.js``: the phone's navigation drawer opens scrolled to the current page;
- ``static/favicon.svg``, ``static/fxguide-card.png``: the site's icon and its OpenGraph picture;
- ``static/accessibility.css``: gives sphinx-gallery's thumbnail links back their names;
- :mod:`fxsite.sphinx.search` and ``static/search-scorer.js``: the site search takes a pasted
  error (a traceback's line, Dynamo's explanation, torch's values in it) and lands it on the section of
  the catalogue of causes that answers it; headings the query covers come first, generated pages last.

Beside it, :mod:`fxsite.web.serve` serves the built site (``make serve``).
"""

from __future__ import annotations

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATIC = Path(__file__).resolve().parent / "static"


def _add_templates(app, config) -> None:
    if str(TEMPLATES) not in config.templates_path:
        config.templates_path.append(str(TEMPLATES))
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))
    if not config.html_search_scorer:
        config.html_search_scorer = str(STATIC / "search-scorer.js")


def _redirects_written_only_when_changed() -> None:
    """sphinx-reredirects writes every redirect page on every build; a no-op rebuild must write nothing
    (tests/test_caching.py), so a redirect page whose content is already on disk is left untouched."""
    from sphinx_reredirects import Reredirects

    original = Reredirects._create_redirect_file
    if getattr(original, "_fxguide", False):
        return

    def create_redirect_file(self, at_path, to_uri: str) -> None:
        if at_path.is_file() and at_path.read_text(encoding="utf-8") == self._render_redirect_template(to_uri):
            return
        original(self, at_path, to_uri)

    create_redirect_file._fxguide = True  # type: ignore[attr-defined]
    Reredirects._create_redirect_file = create_redirect_file


def setup(app) -> dict:
    # Imported here, not at the top: ``python -m fxsite.web.serve`` should not load Sphinx or torch.
    from fxsite.sphinx import apiref, notebooks, outputs, running, search, survey, thumbnails

    app.connect("config-inited", _add_templates)
    app.add_css_file("accessibility.css")
    app.add_css_file("fxguide.css")
    app.add_js_file("fxguide.js")
    notebooks.setup(app)
    running.setup(app)
    outputs.setup(app)
    thumbnails.setup(app)
    apiref.setup(app)
    survey.setup(app)
    search.setup(app)
    _redirects_written_only_when_changed()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
