# pytorch/pytorch#187945: replace_pattern on an exported graph inserts replacement nodes without meta["val"],
# so a later filtered rewrite that reads meta["val"] of its match output silently skips them.
# PR #187956 propagates the metadata. Checks the inserted nodes and a filtered second rewrite.
import torch
from torch.fx import subgraph_rewriter


class M(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


ep = torch.export.export(M(), (torch.randn(4),))
gm = ep.module()


def pattern(x):
    return torch.ops.aten.relu.default(x)


def replacement(x):
    return torch.ops.aten.sigmoid.default(x)


replaced = subgraph_rewriter.replace_pattern(gm, pattern, replacement)
new_nodes = [n for n in gm.graph.nodes if n.op == "call_function" and n.target == torch.ops.aten.sigmoid.default]
print("replaced:", len(replaced), "| meta['val'] on inserted nodes:", [type(n.meta.get("val")).__name__ for n in new_nodes])


def has_tensor_val(match, original_graph, pattern_graph):
    return all(isinstance(n.meta.get("val"), torch.Tensor) for n in match.returning_nodes)


def pattern2(x):
    return torch.ops.aten.sigmoid.default(x)


def replacement2(x):
    return torch.ops.aten.tanh.default(x)


second = subgraph_rewriter.replace_pattern_with_filters(gm, pattern2, replacement2, match_filters=[has_tensor_val])
gm.recompile()
x = torch.randn(4)
print("filtered second rewrite matched:", len(second), "| result matches tanh(x)*2:", torch.allclose(gm(x), torch.tanh(x) * 2))
