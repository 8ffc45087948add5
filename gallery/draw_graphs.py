"""
Draw an FX graph, before and after a transform
==============================================

A printed graph is exact but long; a picture shows its shape at a glance:
where it branches, where a residual connection rejoins, what a transform
removed. :mod:`fxguide.display.drawing` writes a graph as Graphviz DOT (one box per
node, coloured by opcode, one arrow per use) and lets ``dot`` lay it out. This
example draws a residual block, then the same block after conv/batch-norm
fusion. torch has a drawer of its own,
``torch.fx.passes.graph_drawer.FxGraphDrawer`` (it needs ``pydot``), one
record per node with its name, opcode, target and number of users: :ref:`the IR page shows it <ir-drawing>`, and
:ref:`pass-infrastructure-drawer` compares the two.
"""

# %%
# A picture and its text form
# ---------------------------
#
# :func:`fxguide.display.drawing.draw` returns a ``GraphPicture``. Its text form lists
# the graph's edges in graph order: that is what a notebook shows when it
# cannot show the picture, and what the guide's output checks compare.

import matplotlib.pyplot as plt
import torch.fx as fx

from fxguide.display.drawing import draw, plot_graphs, to_dot
from fxguide.transforms.fuse import fuse_conv_bn
from fxguide.models import ResidualBlock
from fxguide.models import seeded

block = seeded(ResidualBlock, 8).eval()
before = draw(fx.symbolic_trace(block), title="ResidualBlock")
print(repr(before))

# %%
# The DOT source
# --------------
#
# The picture is made from plain text; ``to_dot`` shows it. Each node becomes
# a labelled box and each input of a node an arrow.

print("\n".join(to_dot(fx.symbolic_trace(block)).splitlines()[:8]))

# %%
# The picture
# -----------
#
# ``GraphPicture.show`` renders it with ``dot`` and displays it as a
# matplotlib image (in a notebook, the picture displays as SVG by itself). The
# arrow from ``x`` to ``add`` is the residual connection.

before.show()
plt.show()

# %%
# Before and after fusion
# -----------------------
#
# :func:`fxguide.transforms.fuse.fuse_conv_bn` folds each batch norm into the
# convolution before it. Side by side, the two green ``BatchNorm2d`` boxes are
# gone and nothing else moved.

# sphinx_gallery_thumbnail_number = 2
after = draw(fuse_conv_bn(block), title="after fuse_conv_bn")
plot_graphs(before, after)
plt.show()
print(repr(after))
