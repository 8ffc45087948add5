"""The drift guard: every output the guide shows, recorded and re-checked.

The docs build executes every page and gallery script. This package reads what
that build printed (:mod:`.extract`), normalizes it once (:mod:`.normalize`),
compares it with the expectations committed under ``tests/expected``
(:mod:`.snapshots`, :mod:`.compare`), and reports drift across torch versions
(:mod:`.report`).

The build itself is shaped here too: :mod:`.sphinx_ext` fails it at the line of
a cell that raised unexpectedly, :mod:`.fingerprint` keys its caches,
:mod:`.warm_kernels` and :mod:`.prerun` make executing the pages fast.
"""
