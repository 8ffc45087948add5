"""
Fold batch norm into convolutions in an exported graph
======================================================

:doc:`fuse_conv_bn` folds each eval-mode batch norm into the convolution in
front of it, on a ``symbolic_trace`` graph whose nodes call modules. An
exported graph has no ``nn.Conv2d`` to edit: the convolution is an
``aten.conv2d`` call whose weight is a ``get_attr`` node, and every node
carries a fake tensor in ``meta["val"]``. This example writes the fold for
that graph, at both levels an exported graph comes in (the training IR and
core ATen), keeps the metadata right, checks it with ``FakeTensorProp``, and
compares the result with eager mode.
"""

# %%
# The exported graph
# ------------------
#
# :class:`fxguide.models.SmallResNet` has five convolutions, each followed
# by a batch norm. ``ep.module()`` gives the runnable graph, weights as
# ``get_attr`` nodes.

from collections import Counter

import torch
import torch.fx as fx

from fxguide.models import SmallResNet, seeded

model = seeded(SmallResNet).eval()
x = torch.randn(4, 3, 16, 16)
expected = model(x)
gm = torch.export.export(model, (x,)).module()


def targets(graph_module: fx.GraphModule) -> Counter:
    return Counter(str(n.target) for n in graph_module.graph.nodes if n.op == "call_function")


print(targets(gm))
bn = gm.graph.find_nodes(op="call_function", target=torch.ops.aten.batch_norm.default)[0]
print(bn.format_node())

# %%
# The pass, at both levels
# ------------------------
#
# ``torch.export.export`` returns the *training IR*; ``run_decompositions()``
# lowers it to *core ATen*, where the same layers are other operators (see
# :ref:`exported-graphs-match-level`). A pass that looks for
# ``aten.batch_norm`` alone would fold nothing in a core graph, without a
# word, so this one reads both forms:
#
# - training IR: ``aten.batch_norm(input, weight, bias, running_mean,
#   running_var, training, momentum, eps, cudnn_enabled)`` after an
#   ``aten.conv2d``;
# - core ATen: ``aten._native_batch_norm_legit_no_training(input, weight,
#   bias, running_mean, running_var, momentum, eps)``, which returns three
#   tensors, the first read through ``getitem``, after an
#   ``aten.convolution``.
#
# The fold reads the batch norm's tensors through their ``get_attr`` nodes,
# computes the new convolution weight and bias, stores them as buffers of the
# graph module, and points the convolution at them (its bias is argument 2 at
# both levels). The new ``get_attr`` nodes copy the ``meta`` of the weight
# node they replace: same shape, same dtype, so the fake tensor is still
# right. A bias the convolution did not have gets a fake tensor made from the
# real one, in the graph's own fake mode.

aten = torch.ops.aten
CONVOLUTIONS = (aten.conv2d.default, aten.convolution.default)  # training IR, core ATen


def eval_batch_norms(gm: fx.GraphModule):
    """(node, node whose value it outputs, input, weight, bias, running mean, running var, eps) per batch norm."""
    for bn in gm.graph.find_nodes(op="call_function", target=aten.batch_norm.default):  # training IR
        x, gamma, beta, mean, var, training, _momentum, eps = bn.args[:8]
        if not training:
            yield bn, bn, x, gamma, beta, mean, var, eps
    for bn in gm.graph.find_nodes(op="call_function", target=aten._native_batch_norm_legit_no_training.default):
        x, gamma, beta, mean, var, _momentum, eps = bn.args  # core ATen
        outputs = {user.args[1]: user for user in bn.users}  # getitem nodes, by output index
        if set(outputs) == {0}:  # only the normalized tensor is read
            yield bn, outputs[0], x, gamma, beta, mean, var, eps


def fold_batch_norms(gm: fx.GraphModule) -> int:
    fetch = fx.Interpreter(gm).fetch_attr
    folded = 0
    for bn, output, conv, gamma, beta, mean, var, eps in list(eval_batch_norms(gm)):
        if conv.target not in CONVOLUTIONS or len(conv.users) != 1:
            continue
        weight_node, bias_node = conv.args[1], conv.args[2] if len(conv.args) > 2 else None
        scale = fetch(gamma.target) / torch.sqrt(fetch(var.target) + eps)
        weight = fetch(weight_node.target) * scale.reshape(-1, 1, 1, 1)
        old_bias = fetch(bias_node.target) if bias_node is not None else torch.zeros_like(scale)
        bias = (old_bias - fetch(mean.target)) * scale + fetch(beta.target)

        prefix = conv.name
        gm.register_buffer(f"{prefix}_folded_weight", weight.detach())
        gm.register_buffer(f"{prefix}_folded_bias", bias.detach())
        with gm.graph.inserting_before(conv):
            new_weight = gm.graph.get_attr(f"{prefix}_folded_weight")
            new_bias = gm.graph.get_attr(f"{prefix}_folded_bias")
        new_weight.meta = dict(weight_node.meta)
        fake_mode = weight_node.meta["val"].fake_mode
        new_bias.meta = {**weight_node.meta, "val": fake_mode.from_tensor(bias)}
        args = list(conv.args) + [None] * (3 - len(conv.args))
        args[1], args[2] = new_weight, new_bias
        conv.args = tuple(args)
        output.replace_all_uses_with(conv)
        for node in dict.fromkeys([output, bn]):  # the getitem first, then the batch norm
            gm.graph.erase_node(node)
        folded += 1
    gm.graph.eliminate_dead_code()  # the old weights' and statistics' get_attr nodes
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    return folded


print(fold_batch_norms(gm), "batch norms folded")
print(targets(gm))
print(gm.graph.find_nodes(op="call_function", target=aten.conv2d.default)[0].format_node())

# %%
# Check the metadata, then the numbers
# ------------------------------------
#
# ``FakeTensorProp`` recomputes every node's fake tensor from the inputs. If
# the pass kept ``meta`` right, the recomputed shapes and dtypes equal the
# kept ones, node for node.

from torch.fx.passes.fake_tensor_prop import FakeTensorProp


def check(gm: fx.GraphModule) -> None:
    kept = {n.name: (tuple(n.meta["val"].shape), n.meta["val"].dtype) for n in gm.graph.nodes
            if n.op in ("get_attr", "call_function") and isinstance(n.meta.get("val"), torch.Tensor)}
    fake_mode = next(iter(gm.graph.find_nodes(op="get_attr"))).meta["val"].fake_mode
    FakeTensorProp(gm, fake_mode).propagate_dont_convert_inputs(fake_mode.from_tensor(x))
    recomputed = {n.name: (tuple(n.meta["val"].shape), n.meta["val"].dtype) for n in gm.graph.nodes if n.name in kept}
    print(len(kept), "nodes checked; metadata right:", kept == recomputed)
    difference = (gm(x) - expected).abs().max().item()
    print(f"max difference from eager below 1e-6: {difference < 1e-6}; "
          f"allclose: {torch.allclose(gm(x), expected, atol=1e-5)}")


check(gm)

# %%
# The arithmetic is torch's own too: ``torch.nn.utils.fusion.fuse_conv_bn_weights``
# takes a convolution's weight and bias and a batch norm's statistics and
# parameters, and returns the folded pair. On the model's first convolution
# and batch norm it gives the tensors the pass stored for the first
# convolution node:

from torch.nn.utils.fusion import fuse_conv_bn_weights  # noqa: E402

conv, bn = (next(m for m in model.modules() if isinstance(m, kind))
            for kind in (torch.nn.Conv2d, torch.nn.BatchNorm2d))
torch_weight, torch_bias = fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean, bn.running_var,
                                                bn.eps, bn.weight, bn.bias)
first = gm.graph.find_nodes(op="call_function", target=aten.conv2d.default)[0]
ours = [gm.get_buffer(node.target) for node in first.args[1:3]]
print(f"first convolution node: {first.name}; same as fuse_conv_bn_weights:",
      torch.allclose(ours[0], torch_weight), torch.allclose(ours[1], torch_bias))

# %%
# The core ATen graph
# -------------------
#
# The same pass on the decomposed program: five
# ``_native_batch_norm_legit_no_training`` calls and their ``getitem`` nodes
# go, and the ``aten.convolution`` calls take the folded weights.

core = torch.export.export(model, (x,)).run_decompositions().module()
print(targets(core))
print(fold_batch_norms(core), "batch norms folded")
print(targets(core))
check(core)

# %%
# What differed from the ``symbolic_trace`` version: the convolution's
# weight is an argument to rewire, not a module attribute to overwrite; the
# batch norm's parameters come from ``get_attr`` nodes found through the
# node's arguments instead of ``bn.weight``; each new node needs a
# ``meta["val"]``, which the ``symbolic_trace`` graph never had; and the
# operators to match depend on the level of the exported graph. The folded
# graph is five fewer operators at the training IR (ten at core ATen, with
# the ``getitem`` nodes) and computes the same outputs to within rounding.
