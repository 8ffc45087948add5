"""
Annotate every node with its shape and dtype
============================================

A traced graph says what is computed but not on what: a node knows its
operation, not the size of the tensor it will produce. Running the graph once
on an example input fills that in. ``torch.fx.passes.shape_prop.ShapeProp``
is an ``Interpreter`` that does exactly this and stores the result in each
node's ``meta``; passes that need shapes (memory planning, fusion checks,
pictures like the one below) read it from there. (The tutorial page
:doc:`/interpreters` builds the same idea by hand first.)
"""

# %%
# Propagate an example input
# --------------------------
#
# ``ShapeProp(gm).propagate(x)`` runs the graph on ``x`` and writes a
# ``TensorMetadata`` into ``node.meta["tensor_meta"]`` for every node that
# produced a tensor.

import matplotlib.pyplot as plt
import torch
import torch.fx as fx
from torch.fx.passes.shape_prop import ShapeProp

from fxguide.display.drawing import draw
from fxguide.models import SmallResNet
from fxguide.models import seeded

model = seeded(SmallResNet, channels=8, blocks=1).eval()
gm = fx.symbolic_trace(model)
x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(0))
ShapeProp(gm).propagate(x)

meta = gm.graph.find_nodes(op="call_module", target="stem")[0].meta["tensor_meta"]
print(type(meta).__name__, meta.shape, meta.dtype, meta.requires_grad)

# %%
# The annotated graph
# -------------------
#
# One line per node: its name, its opcode, and the shape and dtype of what it
# produced. The output node holds the model's result, so it has the last
# shape too.


def annotated(gm: fx.GraphModule) -> str:
    rows = []
    for node in gm.graph.nodes:
        meta = node.meta.get("tensor_meta")
        shape = "×".join(map(str, meta.shape)) if meta is not None else "-"
        dtype = str(meta.dtype).removeprefix("torch.") if meta is not None else "-"
        rows.append(f"{node.name:<16}{node.op:<15}{shape:<12}{dtype}")
    return "\n".join(rows)


print(annotated(gm))

# %%
# The same, as a picture
# ----------------------
#
# :func:`fxguide.display.drawing.draw` adds each node's shape under its name once
# ``ShapeProp`` has run.

draw(gm, title="SmallResNet, input 2×3×16×16").show()
plt.show()

# %%
# Shapes belong to the example, not the graph
# -------------------------------------------
#
# The graph is the same for every input; the annotations describe only the
# last propagated one. A batch of 5 smaller ``float64`` images gives other
# shapes and another dtype (the model is converted to ``float64`` to match).

ShapeProp(gm.double()).propagate(torch.zeros(5, 3, 8, 8, dtype=torch.float64))
print("\n".join(annotated(gm).splitlines()[-3:]))
