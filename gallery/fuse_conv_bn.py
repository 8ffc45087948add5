"""
Fuse convolutions and batch norms for inference
===============================================

In eval mode a batch norm only scales and shifts each channel by fixed amounts,
so the convolution in front of it can absorb that scale and shift into its own
weights and bias. The fused model computes the same numbers with one pass over
the activations fewer per convolution. This example runs our fuser
(:func:`fxguide.transforms.fuse.fuse_conv_bn`, about forty lines) on a small ResNet-style
model, checks the outputs, compares it with torch's
``torch.fx.experimental.optimization.fuse``, and measures the speedup.
"""

# %%
# The model and its graph
# -----------------------
#
# :class:`fxguide.models.SmallResNet` has five convolutions, each
# followed by a batch norm. Fusion only makes sense in eval mode, where the
# batch norm uses its stored running statistics.

import matplotlib.pyplot as plt
import torch
import torch.fx as fx
from torch.fx.experimental.optimization import fuse as torch_fuse

from fxguide.transforms.fuse import fuse_conv_bn
from fxguide.models import SmallResNet
from fxguide.models import seeded
from fxguide.display.timing import compare

torch.set_num_threads(1)  # one thread: timings on a shared 2-core machine stay comparable
model = seeded(SmallResNet, channels=16, blocks=2).eval()


def count_ops(gm: fx.GraphModule) -> dict[str, int]:
    kinds = [type(gm.get_submodule(n.target)).__name__ for n in gm.graph.nodes if n.op == "call_module"]
    return {kind: kinds.count(kind) for kind in sorted(set(kinds))}


print("traced:", count_ops(fx.symbolic_trace(model)))

# %%
# Fuse, and check the numbers
# ---------------------------
#
# Both fusers return a new ``GraphModule`` and leave ``model`` alone. The
# batch norms are gone; the outputs agree with the original to float
# rounding, which :func:`torch.testing.assert_close` checks (never ``==``).

ours = fuse_conv_bn(model)
theirs = torch_fuse(model)
print("ours:  ", count_ops(ours))
print("torch: ", count_ops(theirs))

x = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    expected = model(x)
    torch.testing.assert_close(ours(x), expected)
    torch.testing.assert_close(theirs(x), expected)
print("both fused models match the original")

# %%
# The fused weights
# -----------------
#
# The first convolution had no bias; its fused replacement has one per
# output channel: the batch norm's shift, with the running mean folded in.

print("original stem bias:", model.stem.bias)
print("fused stem bias shape:", tuple(ours.stem.bias.shape))

# %%
# Measure the speedup
# -------------------
#
# :func:`fxguide.display.timing.compare` runs the original and the fused model
# alternately, so both see the same load, and reports the median of the
# per-pair ratios with its spread (a ratio above 1 means the fused model was
# faster). The numbers vary from run to run, and the recorded output replaces
# them by placeholders; the spread says how far to trust the median. On a busy
# machine other processes interrupt single runs, which widens the spread far
# more than it moves the median.

with torch.inference_mode():
    base, fused, speedup = compare(model, ours, x, repeats=80)
    base2, fused2, speedup2 = compare(model, theirs, x, repeats=80)
print(f"original:        {base}")
print(f"our fuser:       {fused}")
print(f"torch's fuse:    {fused2}")
print(f"speedup (ours):  {speedup}")
print(f"speedup (torch): {speedup2}")

# %%
# The same measurement as a picture: median time per model, with bars from
# the fastest to the slowest run.

timings = {"original": base, "our fuser": fused, "torch fuse": fused2}
medians = [t.median * 1e3 for t in timings.values()]
low = [m - t.min * 1e3 for m, t in zip(medians, timings.values())]
high = [t.max * 1e3 - m for m, t in zip(medians, timings.values())]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.bar(list(timings), medians, yerr=[low, high], capsize=6, color=["#9ab", "#5a8", "#da5"])
ax.set_ylabel("time per batch of 4 (ms)")
ax.set_title(f"conv/bn fusion: speedup {speedup.median:.2f}x (median of 80 pairs)")
fig.tight_layout()
plt.show()

# %%
# What the speedup depends on
# ---------------------------
#
# The saving is one elementwise pass per convolution; how much that weighs
# depends on how cheap the convolutions are next to it (few channels, large
# images: more) and on the load of the machine, which is why the spread is
# printed with the median. Fusion never changes what the model computes in
# eval mode, which the ``assert_close`` above checks on every build.
