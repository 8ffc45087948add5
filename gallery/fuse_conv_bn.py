"""
Fuse convolutions and batch norms in a torchvision ResNet-18
============================================================

In eval mode a batch norm only scales and shifts each channel by fixed amounts,
so the convolution in front of it can absorb that scale and shift into its own
weights and bias. This example writes the fusion pass (a fold of the weights,
and a loop over the traced graph), runs it on torchvision's ResNet-18 with
random weights, checks the outputs against the eager model, compares it with
torch's own ``torch.fx.experimental.optimization.fuse`` (also on a model that
calls one convolution twice, where the two differ), and measures whether the
fused model is faster.
"""

# %%
# The model
# ---------
#
# :func:`fxguide.models.real.resnet18` builds torchvision's ResNet-18 with
# seeded random weights, in eval mode (fusion is only valid there: in training
# mode a batch norm normalizes with each batch's own statistics).

import copy
from collections import Counter

import matplotlib.pyplot as plt
import torch
import torch.fx as fx
from torch import nn
from torch.fx.experimental.optimization import fuse as torch_fuse

from fxguide.display.timing import compare
from fxguide.models import seeded
from fxguide.models.real import resnet18, vary_batch_norms
from fxguide.transforms.fuse import fuse_conv_bn

torch.set_num_threads(1)  # one thread: timings on a shared 2-core machine stay comparable
model = resnet18()


def count_modules(gm: fx.GraphModule) -> dict[str, int]:
    kinds = [type(gm.get_submodule(n.target)).__name__ for n in gm.graph.nodes if n.op == "call_module"]
    return {kind: kinds.count(kind) for kind in sorted(set(kinds))}


print("traced:", count_modules(fx.symbolic_trace(model)))

# %%
# Fold one batch norm into its convolution
# ----------------------------------------
#
# With ``s = gamma / sqrt(running_var + eps)`` per output channel, the batch
# norm computes ``s * (conv(x) - running_mean) + beta``. Scaling each output
# channel's filter by ``s`` and setting the bias to
# ``s * (bias - running_mean) + beta`` gives one convolution computing the same.


def fold(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> nn.Conv2d:
    fused = copy.deepcopy(conv)
    with torch.no_grad():
        s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        bias = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
        fused.weight = nn.Parameter(conv.weight * s[:, None, None, None])
        fused.bias = nn.Parameter(s * (bias - bn.running_mean) + bn.bias)
    return fused


# %%
# The pass
# --------
#
# Walk the graph; wherever a ``BatchNorm2d`` call reads a ``Conv2d`` call that
# nothing else reads, put the folded convolution in the conv's place, point the
# batch norm's users at the conv node, and erase the batch norm node. The
# unused batch norm modules are dropped at the end.
#
# Folding replaces the convolution *module*, so it changes every call of that
# module. A convolution called more than once is therefore left alone: its other
# calls are not followed by this batch norm. A batch norm called more than once
# needs no such care, as folding reads it and never changes it.


def fuse(model: nn.Module) -> fx.GraphModule:
    gm = fx.symbolic_trace(copy.deepcopy(model))
    calls = Counter(node.target for node in gm.graph.nodes if node.op == "call_module")
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or not isinstance(gm.get_submodule(node.target), nn.BatchNorm2d):
            continue
        conv_node = node.args[0]
        if conv_node.op != "call_module" or len(conv_node.users) != 1 or calls[conv_node.target] != 1:
            continue
        conv = gm.get_submodule(conv_node.target)
        if not isinstance(conv, nn.Conv2d):
            continue
        parent, _, name = conv_node.target.rpartition(".")
        setattr(gm.get_submodule(parent), name, fold(conv, gm.get_submodule(node.target)))
        node.replace_all_uses_with(conv_node)
        gm.graph.erase_node(node)
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm


# %%
# (:func:`fxguide.transforms.fuse.fuse_conv_bn` is the same pass with more
# checks: it refuses a model in training mode, for instance.)
#
# Fuse, and check the numbers
# ---------------------------
#
# Both fusers leave ``model`` alone and return a ``GraphModule`` without batch
# norms. ``matches_eager`` runs a fused model and the eager one on the same
# input; folding changes the order of the floating-point operations, so the
# outputs may differ in their last digits, and "matches" means within 1e-4.


def matches_eager(fused: nn.Module, eager: nn.Module, x: torch.Tensor) -> bool:
    with torch.no_grad():
        return torch.allclose(fused(x), eager(x), rtol=1e-4, atol=1e-4)


ours = fuse(model)
theirs = torch_fuse(model)
print("our pass:    ", count_modules(ours))
print("torch's fuse:", count_modules(theirs))

x = torch.randn(4, 3, 64, 64, generator=torch.Generator().manual_seed(0))
for name, fused in (("our pass", ours), ("torch's fuse", theirs)):
    print(f"{name:12}  output {tuple(fused(x).shape)}, matches eager: {matches_eager(fused, model, x)}")

# %%
# The first convolution had no bias; its fused replacement has one per output
# channel, the batch norm's shift with the running mean folded in:

print("conv1 bias before:", model.conv1.bias)
print("conv1 bias after: ", tuple(ours.conv1.bias.shape))

# %%
# A convolution or a batch norm used twice
# ----------------------------------------
#
# ResNet-18 calls each of its modules once. This small model calls one
# convolution on an image and on its mirror image, each call followed by a batch
# norm of its own, and one batch norm after two different convolutions:


class SharedModules(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.shared_conv = nn.Conv2d(3, 8, 3, bias=False)
        self.bn_a, self.bn_b = nn.BatchNorm2d(8), nn.BatchNorm2d(8)
        self.conv_c, self.conv_d = nn.Conv2d(3, 8, 3), nn.Conv2d(3, 8, 3)
        self.shared_bn = nn.BatchNorm2d(8)

    def forward(self, x):
        a = self.bn_a(self.shared_conv(x))
        b = self.bn_b(self.shared_conv(x.flip(-1)))
        c = self.shared_bn(self.conv_c(x))
        d = self.shared_bn(self.conv_d(x))
        return a + b + c + d


shared = vary_batch_norms(seeded(SharedModules)).eval()
small = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))
for name, fused in (("our pass", fuse(shared)), ("torch's fuse", torch_fuse(shared)),
                    ("fuse_conv_bn", fuse_conv_bn(shared))):
    print(f"{name:12}  {count_modules(fused)}, matches eager: {matches_eager(fused, shared, small)}")

# %%
# Our pass (and fxguide's ``fuse_conv_bn``) folds the two convolutions that feed
# the shared batch norm, and leaves the shared convolution and its two batch
# norms as they were. torch's ``fuse`` folds both of those batch norms into the
# one shared convolution, which no batch norm follows any more: each of its two
# calls now applies both batch norms' scale and shift, and the fused model no
# longer computes what the eager one does.

# %%
# Measure
# -------
#
# :func:`fxguide.display.timing.compare` runs the eager and the fused model
# alternately, so both see the same load, and reports each model's median time
# with the fastest and slowest run, and the median of the per-pair ratios with
# their spread (above 1 means the fused model was faster in that pair). The
# recorded output replaces the numbers by placeholders; the built page shows
# this run's numbers.

with torch.inference_mode():
    eager, fused_ours, speedup_ours = compare(model, ours, x, repeats=40)
    eager2, fused_torch, speedup_torch = compare(model, theirs, x, repeats=40)
print(f"eager:           {eager}")
print(f"our pass:        {fused_ours}")
print(f"eager (again):   {eager2}")
print(f"torch's fuse:    {fused_torch}")
print(f"speedup, ours:   {speedup_ours}")
print(f"speedup, torch:  {speedup_torch}")

# %%
# The same numbers as a picture: median time per model, bars from the fastest
# to the slowest run.

timings = {"eager": eager, "our pass": fused_ours, "torch's fuse": fused_torch}
medians = [t.median * 1e3 for t in timings.values()]
low = [m - t.min * 1e3 for m, t in zip(medians, timings.values())]
high = [t.max * 1e3 - m for m, t in zip(medians, timings.values())]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.bar(list(timings), medians, yerr=[low, high], capsize=6, color=["#9ab", "#5a8", "#da5"])
ax.set_ylabel("time per batch of 4 (ms)")
ax.set_title("ResNet-18, 64 x 64 images, one thread")
fig.tight_layout()
plt.show()

# %%
# Reading the measurement
# -----------------------
#
# Fusion removes one elementwise pass over the activations per batch norm (20
# of them here); next to ResNet-18's convolutions that is a small share of the
# work. Read the speedup line before believing a bar: when the spread of the
# ratios reaches below 1.00x, and the two models' ranges from fastest to
# slowest run overlap, this measurement shows no clear speedup, whatever the
# medians say. On ResNet-18, whose modules are each called once, the two fusers
# fold the same pairs and both match eager, so any difference between their
# timings is noise; they are not interchangeable in general, as the shared
# convolution above shows. What fusion must guarantee is checked on every build:
# the same outputs, with 20 fewer modules.
