"""Conv/batch-norm fusion for inference, written out in full.

In eval mode a batch norm is a fixed per-channel scale and shift. A convolution
followed by it can therefore be replaced by one convolution whose weights and
bias already include that scale and shift: one pass over the activations instead
of two. :func:`fuse_conv_bn` finds ``Conv2d -> BatchNorm2d`` pairs in the traced
graph and folds each pair into a new ``Conv2d``.
"""

from __future__ import annotations

import copy

import torch
import torch.fx as fx
from torch import nn

from fxguide.transforms import carry_input_guard, to_graph_module


def fold_bn_into_conv(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> nn.Conv2d:
    """Return a new ``Conv2d`` that computes ``bn(conv(x))`` of eval mode in one step.

    With ``s = bn.weight / sqrt(bn.running_var + bn.eps)`` (one factor per output
    channel), the fused weight is ``conv.weight * s`` and the fused bias is
    ``(conv.bias - running_mean) * s + bn.bias``.

    >>> conv, bn = nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3).eval()
    >>> x = torch.randn(1, 2, 4, 4)
    >>> torch.allclose(fold_bn_into_conv(conv, bn)(x), bn(conv(x)), atol=1e-6)
    True
    """
    if not isinstance(conv, nn.Conv2d):
        raise TypeError(f"fold_bn_into_conv: conv must be an nn.Conv2d, got {type(conv).__name__}")
    if not isinstance(bn, nn.BatchNorm2d):
        raise TypeError(f"fold_bn_into_conv: bn must be an nn.BatchNorm2d, got {type(bn).__name__}")
    if bn.running_mean is None or bn.running_var is None:
        raise ValueError("fold_bn_into_conv: the batch norm tracks no running statistics "
                         "(track_running_stats=False); there is nothing fixed to fold")
    if bn.num_features != conv.out_channels:
        raise ValueError(f"fold_bn_into_conv: the batch norm has {bn.num_features} channels but the "
                         f"convolution produces {conv.out_channels}")
    fused = copy.deepcopy(conv)
    with torch.no_grad():
        scale = bn.running_var.add(bn.eps).rsqrt()
        if bn.weight is not None:
            scale = scale * bn.weight
        bias = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
        shift = bn.bias if bn.bias is not None else torch.zeros_like(bn.running_mean)
        fused.weight = nn.Parameter(conv.weight * scale.reshape(-1, 1, 1, 1))
        fused.bias = nn.Parameter((bias - bn.running_mean) * scale + shift)
    return fused


def _module(gm: fx.GraphModule, node: fx.Node) -> nn.Module | None:
    return gm.get_submodule(node.target) if node.op == "call_module" else None


def _foldable(gm: fx.GraphModule, bn_node: fx.Node, calls: dict[str, int]) -> nn.Conv2d | None:
    """The convolution ``bn_node`` can be folded into, or None when folding could change a result."""
    bn = _module(gm, bn_node)
    if type(bn) is not nn.BatchNorm2d or len(bn_node.args) != 1 or bn_node.kwargs:
        return None
    if bn.training or bn.running_mean is None or bn.running_var is None:
        return None  # batch statistics: nothing fixed to fold
    conv_node = bn_node.args[0]
    if not isinstance(conv_node, fx.Node) or len(conv_node.users) != 1:
        return None  # the unnormalized output is still needed elsewhere
    conv = _module(gm, conv_node)
    if type(conv) is not nn.Conv2d or calls[conv_node.target] != 1:
        return None  # a subclass may compute something else; a shared conv serves other callers
    if conv.out_channels != bn.num_features or conv.weight.dtype != bn.running_var.dtype:
        return None
    return conv


def fuse_conv_bn(model: nn.Module) -> fx.GraphModule:
    """Trace ``model`` and fold every ``Conv2d -> BatchNorm2d`` pair; the model itself is untouched.

    A pair is folded only when that cannot change a result: the batch norm
    is the convolution's sole user (otherwise the unnormalized output is
    still needed), the convolution module is called once in the graph (a
    shared one also serves other callers), both are exactly ``nn.Conv2d`` and
    ``nn.BatchNorm2d``, and the batch norm is in eval mode with running
    statistics. Other pairs are left as they are. The model must be in eval
    mode: in training mode a batch norm uses the batch's own statistics,
    which no fixed weight can reproduce.

    >>> model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU()).eval()
    >>> fused = fuse_conv_bn(model)
    >>> [node.target for node in fused.graph.nodes if node.op == "call_module"]
    ['0', '2']
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"fuse_conv_bn: model must be an nn.Module, got {type(model).__name__}")
    if isinstance(model, torch.jit.ScriptModule):
        raise TypeError("fuse_conv_bn: model is a TorchScript module, whose Python code symbolic tracing cannot "
                        "run; fuse the nn.Module first, then script the result")
    if model.training:
        raise ValueError("fuse_conv_bn: the model is in training mode, where batch norm uses each "
                         "batch's statistics; call model.eval() before fusing")
    gm = to_graph_module(model, "fuse_conv_bn")
    calls: dict[str, int] = {}
    for node in gm.graph.nodes:
        if node.op == "call_module":
            calls[node.target] = calls.get(node.target, 0) + 1
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or (conv := _foldable(gm, node, calls)) is None:
            continue
        conv_node = node.args[0]
        parent, _, name = conv_node.target.rpartition(".")
        setattr(gm.get_submodule(parent), name, fold_bn_into_conv(conv, _module(gm, node)))
        node.replace_all_uses_with(conv_node)
        gm.graph.erase_node(node)
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return carry_input_guard(model, gm)
