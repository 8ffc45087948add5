"""The drift guard: every output the guide shows, recorded and re-checked.

The docs build executes every page and gallery script. This package reads what
that build printed (:mod:`.extract`), normalizes it once (:mod:`.normalize`),
compares it with the expectations committed under ``tests/expected``
(:mod:`.snapshots`, :mod:`.compare`), and reports drift across torch versions
(:mod:`.report`).
"""
