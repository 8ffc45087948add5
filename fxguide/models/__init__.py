"""Every demo model of the guide, importable from one place.

``from fxguide.models import TinyMLP`` works for all of them; the submodules
group them by the part of the guide that introduces them:

- :mod:`fxguide.models.basics`: the tutorial's first models (:class:`TinyMLP`,
  :class:`AllOpcodes`, :class:`GatedBlock`) and :func:`seeded`, which builds any
  model with fixed random weights;
- :mod:`fxguide.models.tracer_demos`: models for the customizing-tracing pages
  (:class:`SmallCNN`, :class:`ScaledResidual`, :class:`TwoStageMLP`);
- :mod:`fxguide.models.gallery`: the gallery's worked transforms
  (:class:`SmallResNet`, :class:`ResidualBlock`, :class:`SmallMLP`);
- :mod:`fxguide.models.dynamic`: code that depends on the input's shapes or
  values, each model with the inputs it is traced and re-run on (:func:`cases`);
- :mod:`fxguide.models.capture`: code that ``torch.export`` meets in real
  models (a size read from data, Python that only non-strict export runs);
- :mod:`fxguide.models.real`: real torchvision, timm and Hugging Face models,
  small and seeded (import them from there: ``from fxguide.models.real import
  resnet18``; the libraries themselves are imported only when a builder runs).
"""

from fxguide.models.basics import AllOpcodes, GatedBlock, TinyMLP, seeded
from fxguide.models.dynamic import Case, DataBranch, DataBranchCond, HalfSplit, LoopOverRows, ShapeBranch, cases
from fxguide.models.gallery import ResidualBlock, SmallMLP, SmallResNet
from fxguide.models.tracer_demos import ScaledResidual, SmallCNN, TwoStageMLP

__all__ = [
    "AllOpcodes", "Case", "DataBranch", "DataBranchCond", "GatedBlock", "HalfSplit", "LoopOverRows",
    "ResidualBlock", "ScaledResidual", "ShapeBranch", "SmallCNN", "SmallMLP", "SmallResNet", "TinyMLP",
    "TwoStageMLP", "cases", "seeded",
]
