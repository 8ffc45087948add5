"""
Insert observers, calibrate, and fake-quantize
==============================================

Before a model can run in 8-bit integers, each activation that will be
quantized needs a range: the smallest and largest value it takes on realistic
inputs. The traced graph tells a pass where those activations are. This
example inserts an observer after chosen nodes, calibrates on a few batches,
then swaps every observer for a fake-quantization step that rounds values to
the 256-level grid, so the float model shows the error quantization would add.
(torch's FX graph-mode quantization API in ``torch.ao`` is deprecated; the
mechanism fits in :mod:`fxguide.transforms.observers`.)
"""

# %%
# Choose where to observe
# -----------------------
#
# :func:`fxguide.transforms.observers.insert_observers` takes a condition on nodes. Here:
# the output of every linear layer and every ReLU.

import matplotlib.pyplot as plt
import torch
from torch import nn

from fxguide.display import show_code
from fxguide.models import SmallMLP
from fxguide.models import seeded
from fxguide.transforms.observers import calibrate, convert_to_fake_quant, insert_observers, observers

model = seeded(SmallMLP).eval()


def linear_or_relu(node) -> bool:
    if node.op == "call_module":
        return isinstance(model.get_submodule(node.target), nn.Linear)
    return node.op == "call_function" and node.target is torch.relu


observed = insert_observers(model, linear_or_relu)
show_code(observed)

# %%
# Calibrate
# ---------
#
# Running sample batches through the observed model records each range; the
# observers pass values through unchanged, so the outputs are the model's.

gen = torch.Generator().manual_seed(0)
batches = [torch.randn(32, 8, generator=gen) for _ in range(10)]
print(calibrate(observed, batches), "batches")
for name, obs in observers(observed).items():
    scale, zero = obs.scale_zero_point(bits=8)
    print(f"{name:<18} min {obs.min_val:8.4f}  max {obs.max_val:8.4f}  scale {scale:.5f}  zero point {zero}")

# %%
# Fake-quantize and measure the error
# -----------------------------------
#
# After conversion, each observer is a ``FakeQuantize`` module that rounds to
# the grid and back. On fresh inputs the outputs now differ from the float
# model by roughly the grid steps accumulated along the way; with 4 bits the
# grid has 15 steps instead of 255, and the error grows with it.

test = torch.randn(256, 8, generator=gen)
with torch.no_grad():
    reference = model(test)
    errors = {}
    for bits in (8, 6, 4):
        fake = convert_to_fake_quant(observed, bits=bits)
        errors[bits] = (fake(test) - reference).abs().max().item()
        print(f"{bits} bits: max abs error {errors[bits]:.4f}")
print(convert_to_fake_quant(observed).get_submodule("observe_fc1"))

fig, ax = plt.subplots(figsize=(5, 3.2))
ax.bar([f"{b} bits" for b in errors], list(errors.values()), color="#5a8")
ax.set_yscale("log")
ax.set_ylabel("max abs output error")
ax.set_title("fake quantization of SmallMLP's activations")
fig.tight_layout()
plt.show()
