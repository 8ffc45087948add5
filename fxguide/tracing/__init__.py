"""Tracing tools: what symbolic tracing cannot follow, and the ways around it.

- :mod:`fxguide.tracing.limitations`: small functions and modules that break
  ``symbolic_trace``, each beside its traceable rewrite;
- :mod:`fxguide.tracing.wrapping`: helpers registered with ``torch.fx.wrap``;
- :mod:`fxguide.tracing.tracers`: custom tracers (leaf modules, module paths,
  tagging);
- :mod:`fxguide.tracing.features`: feature extraction by node name;
- :mod:`fxguide.tracing.concrete`: a tracer that runs the model on a real input
  and guards every decision Python took;
- :mod:`fxguide.tracing.tool_survey`: the bookkeeping around a capture function
  (call it, try another input, name what happened) behind the tools table.
"""
