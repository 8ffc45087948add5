"""fxguide: the companion package of a checked guide to ``torch.fx``.

Small, readable pieces the guide's pages and gallery scripts import instead of
pasting them:

- models: :mod:`fxguide.models` (tutorial), :mod:`fxguide.models` (tracing
  pages), :mod:`fxguide.models` (gallery), :mod:`fxguide.models`
  (shape- and value-dependent code);
- printing and pictures: :mod:`fxguide.display`, :mod:`fxguide.display.drawing`;
- transforms: :mod:`fxguide.transforms` (op replacement, decomposition, shape
  recording), :mod:`fxguide.transforms.fuse`, :mod:`fxguide.transforms.observers`,
  :mod:`fxguide.transforms.profiling`, :mod:`fxguide.display.timing`;
- tracing: :mod:`fxguide.tracing.limitations`, :mod:`fxguide.tracing.wrapping`,
  :mod:`fxguide.tracing.tracers`, :mod:`fxguide.tracing.features`, :mod:`fxguide.tracing.concrete`,
  :mod:`fxguide.tracing.tool_survey`;
- the drift guard that checks every output the guide shows: :mod:`fxsite.drift`.
"""

__version__ = "0.2.0"
