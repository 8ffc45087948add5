"""The drift guard: every output the guide shows, recorded and re-checked.

The docs build executes every page and gallery script. This package reads what
that build printed (:mod:`.extract`), normalizes it once (:mod:`.normalize`),
compares it with the expectations committed under ``tests/expected``
(:mod:`.snapshots`, :mod:`.compare`), reports drift across torch versions
(:mod:`.report`, :mod:`.side_env`) and turns the reports into the Compatibility
page (:mod:`.compat`). :mod:`.build` runs the docs build as ``make docs`` does.

The build itself is shaped by the Sphinx extensions in :mod:`fxsite.sphinx`.
"""
