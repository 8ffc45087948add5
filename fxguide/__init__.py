"""fxguide: the companion package of a checked guide to ``torch.fx``.

Small, readable pieces the guide's pages and gallery scripts import instead of
pasting: demo models (:mod:`fxguide.models`), display helpers
(:mod:`fxguide.display`), and the drift guard that checks every output the
guide shows (:mod:`fxguide.drift`).
"""

__version__ = "0.1.0"
