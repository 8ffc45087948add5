"""
Rewrite subgraphs by example with ``replace_pattern``
=====================================================

Many rewrites are "wherever these few operations appear together, use this
instead". ``torch.fx.subgraph_rewriter.replace_pattern`` takes both sides as
ordinary Python functions, traces them, finds every place in the graph where
the first one occurs and splices in the second. This example fuses the two
operations of SiLU (``x * sigmoid(x)``) into one ``F.silu`` call, shows what
the matcher does not see, and restricts a rewrite with a filter.
"""

# %%
# Pattern and replacement
# -----------------------
#
# The model computes SiLU three times, once with the operands of ``*``
# swapped.

import matplotlib.pyplot as plt
import torch
import torch.fx as fx
import torch.nn.functional as F
from torch.fx.subgraph_rewriter import replace_pattern, replace_pattern_with_filters

from fxguide.display import show_code
from fxguide.display.drawing import draw, plot_graphs


def model(x):
    a = x * torch.sigmoid(x)
    b = torch.sigmoid(a) * a  # the same function, written the other way round
    return b * torch.sigmoid(b)


def pattern(x):
    return x * torch.sigmoid(x)


def replacement(x):
    return F.silu(x)


gm = fx.symbolic_trace(model)
show_code(gm)

# %%
# Replace every match
# -------------------
#
# ``replace_pattern`` edits ``gm`` in place and returns one entry per match.
# Two of the three were found: matching is structural, so ``sigmoid(a) * a``
# (arguments in the other order) is not the pattern, even though
# multiplication commutes.

before = draw(gm, title="traced")
matches = replace_pattern(gm, pattern, replacement)
print(len(matches), "matches")
show_code(gm)

x = torch.randn(6, generator=torch.Generator().manual_seed(0))
torch.testing.assert_close(gm(x), model(x))

# %%
# A second pattern catches the swapped form; the rewritten module still
# computes what the model does. Six nodes became three.

replace_pattern(gm, lambda x: torch.sigmoid(x) * x, replacement)
show_code(gm)
torch.testing.assert_close(gm(x), model(x))
plot_graphs(before, draw(gm, title="both patterns replaced"))
plt.show()

# %%
# Only some matches: a filter
# ---------------------------
#
# ``replace_pattern_with_filters`` asks each filter about each match before
# replacing it. A filter receives the match (which maps pattern nodes to graph
# nodes) and both graphs. This one accepts a match only when the pattern's
# input is the model's own input, so only the first SiLU is rewritten.


def reads_model_input(match, original_graph, pattern_graph) -> bool:
    return all(node.op == "placeholder" for node in match.placeholder_nodes)


gm = fx.symbolic_trace(model)
replaced = replace_pattern_with_filters(gm, pattern, replacement, match_filters=[reads_model_input])
print(len(replaced), "match passed the filter")
show_code(gm)
torch.testing.assert_close(gm(x), model(x))
