"""fxguide: the companion package of a checked guide to ``torch.fx``.

Small, readable pieces the guide's pages and gallery scripts import instead of
pasting them, grouped like the guide's table of contents:

- :mod:`fxguide.models`: every demo model, from one place;
- :mod:`fxguide.tracing`: what symbolic tracing cannot follow (limitations,
  ``wrap`` helpers), custom tracers, feature extraction, the concrete tracer,
  and one model through every capture tool;
- :mod:`fxguide.transforms`: op replacement, decomposition, shape recording,
  conv/batch-norm fusion, observers and fake quantization, per-node profiling;
- :mod:`fxguide.display`: printing graphs and code, drawing them
  (:mod:`fxguide.display.drawing`) and timing side by side
  (:mod:`fxguide.display.timing`);
- :mod:`fxguide.conditions`: a witness run in the conditions a claim names (a new
  interpreter, an empty Inductor cache, no compiler, the default settings), which it
  measures and prints;
- :mod:`fxguide.diagnose`: every capture tool run on your own model, each
  failure linked to the guide section that fixes it. ``fxguide.diagnose(model, x)``
  (imported on first use, so ``import fxguide`` stays free of torch).

The machinery that builds and checks the guide's site is not part of this
package: it lives beside it in the repository (``fxsite/``).
"""

__version__ = "0.2.0"

from fxguide._torch_range import check_installed_torch as _check_installed_torch  # noqa: E402

from fxguide._torch_range import TorchTooOldError, requires_torch  # noqa: E402,F401

_check_installed_torch()  # a warning, from the package metadata only: importing fxguide stays free of torch


def __getattr__(name: str):
    if name == "diagnose":  # the package fxguide.diagnose is callable: fxguide.diagnose(model, x)
        import importlib
        return importlib.import_module("fxguide.diagnose")
    raise AttributeError(f"module 'fxguide' has no attribute {name!r}")
