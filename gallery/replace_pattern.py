"""
Find subgraphs with ``SubgraphMatcher``, rewrite only where it is valid
=======================================================================

The tutorial's :ref:`replace_pattern section <transformations-pattern>`
shows how the matcher compares graphs node by node, what spellings it misses
and how a filter restricts a rewrite. This example applies it to a rewrite
that is only valid for some matches: a matrix product followed by an addition,
``torch.matmul(a, b) + c``, becomes one ``torch.addmm(c, a, b)`` call, which
accepts matrices only. First it looks at the matches with
``SubgraphMatcher``, the matcher ``replace_pattern`` uses; then it replaces
only the matches whose inputs have the right shape, read from
``ShapeProp``.
"""

# %%
# A model and the pattern
# -----------------------
#
# Three matrix products with a bias: two on a batch of vectors (2-D), one on
# a batch of sequences (3-D), where ``matmul`` broadcasts but ``addmm`` would
# refuse.

import contextlib
import io

import torch
import torch.fx as fx
from torch.fx.passes.shape_prop import ShapeProp
from torch.fx.passes.utils.matcher_utils import SubgraphMatcher
from torch.fx.subgraph_rewriter import replace_pattern, replace_pattern_with_filters

from fxguide.display import show_code


def model(x, seq, w1, b1, w2, b2):
    h = torch.relu(torch.matmul(x, w1) + b1)  # (batch, features)
    out = torch.matmul(h, w2) + b2  # (batch, classes)
    s = torch.matmul(seq, w1) + b1  # (batch, time, features): 3-D
    return out, s


def pattern(a, b, c):
    return torch.matmul(a, b) + c


def replacement(a, b, c):
    return torch.addmm(c, a, b)


gen = torch.Generator().manual_seed(0)
inputs = (torch.randn(5, 4, generator=gen), torch.randn(5, 7, 4, generator=gen),
          torch.randn(4, 6, generator=gen), torch.randn(6, generator=gen),
          torch.randn(6, 3, generator=gen), torch.randn(3, generator=gen))
gm = fx.symbolic_trace(model)
show_code(gm)

# %%
# Look at the matches first
# -------------------------
#
# ``SubgraphMatcher(pattern_graph).match(graph)`` returns every place the
# pattern occurs, without changing anything. Each match maps the pattern's
# nodes to the graph's: its placeholders ``a``, ``b``, ``c`` to whatever
# feeds the match.

pattern_graph = fx.symbolic_trace(pattern).graph
for match in SubgraphMatcher(pattern_graph).match(gm.graph):
    bound = {p.name: n.name for p, n in match.nodes_map.items() if p.op == "placeholder"}
    print("matched", [n.name for n in match.returning_nodes], "with", bound)

# %%
# .. _replace-pattern-every-match:
#
# Replacing every match breaks the model
# --------------------------------------
#
# All three are matches: the matcher sees operations, not shapes. Replaced
# everywhere, the 3-D one fails at run time. When a ``GraphModule`` call
# fails, FX also writes to stderr which line of the generated ``forward``
# raised; it is captured here and printed below the error.

everywhere = fx.symbolic_trace(model)
print(len(replace_pattern(everywhere, pattern, replacement)), "matches replaced")
report = io.StringIO()
try:
    with contextlib.redirect_stderr(report):
        everywhere(*inputs)
except RuntimeError as error:
    print("RuntimeError:", error)
print(report.getvalue()[report.getvalue().index("Call using"):].strip())

# %%
# A filter that reads shapes
# --------------------------
#
# ``ShapeProp`` records each node's shape in ``node.meta["tensor_meta"]``. A
# filter receives the match and both graphs; this one accepts a match only
# when what the pattern's ``a`` matched is a matrix.


def a_is_a_matrix(match, original_graph, pattern_graph) -> bool:
    a = next(p for p in pattern_graph.nodes if p.op == "placeholder" and p.name == "a")
    return len(match.nodes_map[a].meta["tensor_meta"].shape) == 2


ShapeProp(gm).propagate(*inputs)
replaced = replace_pattern_with_filters(gm, pattern, replacement, match_filters=[a_is_a_matrix])
print(len(replaced), "matches replaced")
show_code(gm)

expected = model(*inputs)
for got, want in zip(gm(*inputs), expected):
    torch.testing.assert_close(got, want)
print("both outputs match the original model")

# %%
# The two 2-D products became ``addmm``; the 3-D one kept ``matmul`` and
# ``+``. Shapes are a property of the example the graph was propagated with:
# a graph rewritten this way is valid for inputs of the same rank only.
