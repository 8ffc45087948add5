"""fxguide: the companion package of a checked guide to ``torch.fx``.

Small, readable pieces the guide's pages and gallery scripts import instead of
pasting them:

- models: :mod:`fxguide.models` (tutorial), :mod:`fxguide.zoo` (tracing
  pages), :mod:`fxguide.gallery_models` (gallery), :mod:`fxguide.dynamic_models`
  (shape- and value-dependent code);
- printing and pictures: :mod:`fxguide.display`, :mod:`fxguide.drawing`;
- transforms: :mod:`fxguide.transforms` (op replacement, decomposition, shape
  recording), :mod:`fxguide.fuse`, :mod:`fxguide.observers`,
  :mod:`fxguide.profiling`, :mod:`fxguide.timing`;
- tracing: :mod:`fxguide.limitations`, :mod:`fxguide.wrapping`,
  :mod:`fxguide.tracers`, :mod:`fxguide.features`, :mod:`fxguide.concrete`,
  :mod:`fxguide.tool_survey`;
- the drift guard that checks every output the guide shows: :mod:`fxguide.drift`.
"""

__version__ = "0.1.0"
