"""
Inline a submodule call into its parent graph
=============================================

A custom tracer can keep a submodule opaque: the parent graph then holds one
``call_module`` node for it, and passes that work on the parent cannot see or
optimize what happens inside. Inlining undoes that for one call: trace the
submodule on its own and copy its nodes into the parent graph in place of the
call. This is how a pass can open up exactly the submodules it cares about.
"""

# %%
# A model traced with an opaque block
# -----------------------------------
#
# ``Block`` is not a standard ``torch.nn`` module, so the default tracer would
# trace through it; a tracer that declares it a leaf keeps it as one node.

import matplotlib.pyplot as plt
import torch
import torch.fx as fx
from torch import nn

from fxguide.display import show_code
from fxguide.display.drawing import draw, plot_graphs
from fxguide.models import seeded


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.linear = nn.Linear(width, width)

    def forward(self, x):
        return x + torch.relu(self.linear(x))


class Net(nn.Module):
    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.first = Block(width)
        self.second = Block(width)

    def forward(self, x):
        return self.second(self.first(x)).sum(dim=1)


class BlocksAreLeaves(fx.Tracer):
    def is_leaf_module(self, m: nn.Module, qualname: str) -> bool:
        return isinstance(m, Block) or super().is_leaf_module(m, qualname)


net = seeded(Net)
gm = fx.GraphModule(net, BlocksAreLeaves().trace(net))
show_code(gm)

# %%
# The inliner
# -----------
#
# Trace the submodule, then copy its nodes just before the call with
# ``node_copy``. Its placeholders stand for the call's arguments; its
# ``call_module`` and ``get_attr`` targets are relative to the submodule, so
# they get the submodule's path as prefix (``linear`` becomes
# ``first.linear``, which the parent ``GraphModule`` already owns). Finally the
# call's users read the copied output, and the call node goes.


def inline(gm: fx.GraphModule, target: str) -> None:
    (call,) = gm.graph.find_nodes(op="call_module", target=target)
    inner = fx.symbolic_trace(gm.get_submodule(target))
    arguments = iter(call.args)
    env: dict[fx.Node, object] = {}
    with gm.graph.inserting_before(call):
        for node in inner.graph.nodes:
            if node.op == "placeholder":
                env[node] = next(arguments)
            elif node.op == "output":
                result = fx.node.map_arg(node.args[0], lambda n: env[n])
            else:
                copied = gm.graph.node_copy(node, lambda n: env[n])
                if copied.op in {"call_module", "get_attr"}:
                    copied.target = f"{target}.{copied.target}"
                env[node] = copied
    call.replace_all_uses_with(result)
    gm.graph.erase_node(call)
    gm.graph.lint()
    gm.recompile()


before = draw(gm, title="first and second opaque")
inline(gm, "first")
show_code(gm)

# %%
# Check and look
# --------------
#
# The first block's linear layer, ReLU and addition now sit in the parent
# graph; the second block is still one call. The values are unchanged.

x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
torch.testing.assert_close(gm(x), net(x))
plot_graphs(before, draw(gm, title="first inlined"))
plt.show()
