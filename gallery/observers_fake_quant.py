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
mechanism fits in a few lines, written out below: the observer, the
arithmetic of the integer grid, the fake-quantize step and the pass.
:mod:`fxguide.transforms.observers` holds the same code with argument checks.)
"""

# %%
# The observer and the grid
# -------------------------
#
# An observer passes values through and remembers the smallest and largest it
# has seen. From that range, an affine grid of ``2**bits`` levels follows: the
# integer ``q`` in ``[0, 2**bits - 1]`` stands for ``(q - zero_point) * scale``.
# ``scale`` is the range divided by the number of steps; the range is widened
# to include 0, so that 0 has an exact integer, ``zero_point``. Fake
# quantization rounds a value to the nearest level (clamping what falls
# outside) and maps it back to a float.

import copy

import matplotlib.pyplot as plt
import torch
import torch.fx as fx
from torch import nn


class MinMaxObserver(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.min_val = torch.minimum(self.min_val, x.detach().min())
        self.max_val = torch.maximum(self.max_val, x.detach().max())
        return x

    def scale_zero_point(self, bits: int = 8) -> tuple[float, int]:
        low, high = min(float(self.min_val), 0.0), max(float(self.max_val), 0.0)
        scale = (high - low) / (2**bits - 1) if high > low else 1.0
        return scale, int(round(-low / scale))


class FakeQuantize(nn.Module):
    def __init__(self, scale: float, zero_point: int, bits: int = 8) -> None:
        super().__init__()
        self.scale, self.zero_point, self.bits = scale, zero_point, bits

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = torch.clamp(torch.round(x / self.scale) + self.zero_point, 0, 2**self.bits - 1)
        return (q - self.zero_point) * self.scale

    def extra_repr(self) -> str:
        return f"scale={self.scale:.6g}, zero_point={self.zero_point}, bits={self.bits}"


observer = MinMaxObserver()
observer(torch.tensor([-1.0, 0.5, 2.0]))
scale, zero_point = observer.scale_zero_point(bits=8)
print(f"range [-1, 2] on 8 bits: scale {scale:.5f}, zero point {zero_point}")
print("0.3 fake-quantized:", FakeQuantize(scale, zero_point)(torch.tensor([0.3])).item())

# %%
# Insert the observers
# --------------------
#
# The pass is a direct graph edit, the one the tutorial teaches in
# :ref:`Inserting a node <transformations-insert>`: for every chosen node,
# register a ``MinMaxObserver`` submodule
# (it passes values through and remembers the smallest and largest), add a
# ``call_module`` node right after the chosen one, and point the chosen
# node's users at it. ``delete_user_cb`` keeps the observer itself reading the
# original node.

from fxguide.display import show_code  # noqa: E402
from fxguide.models import SmallMLP  # noqa: E402
from fxguide.models import seeded  # noqa: E402


def insert_observers(model: nn.Module, where) -> fx.GraphModule:
    gm = fx.symbolic_trace(copy.deepcopy(model))  # the caller's model stays as it was
    chosen = [node for node in gm.graph.nodes if node.op not in ("placeholder", "output") and where(node)]
    for node in chosen:
        name = f"observe_{node.name}"
        gm.add_submodule(name, MinMaxObserver())
        with gm.graph.inserting_after(node):
            observer = gm.graph.call_module(name, (node,))
        node.replace_all_uses_with(observer, delete_user_cb=lambda user: user is not observer)
    gm.graph.lint()
    gm.recompile()
    return gm


# %%
# Choose where to observe: the output of every linear layer and every ReLU.

model = seeded(SmallMLP).eval()


def linear_or_relu(node: fx.Node) -> bool:
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
with torch.no_grad():
    for batch in batches:
        torch.testing.assert_close(observed(batch), model(batch))
print(len(batches), "batches: the observed model's outputs equal the model's")

found = {name: module for name, module in observed.named_children() if isinstance(module, MinMaxObserver)}
for name, obs in found.items():
    scale, zero = obs.scale_zero_point(bits=8)
    print(f"{name:<18} min {obs.min_val:8.4f}  max {obs.max_val:8.4f}  scale {scale:.5f}  zero point {zero}")

# %%
# Fake-quantize and measure the error
# -----------------------------------
#
# Converting needs no graph edit at all: each ``observe_*`` node calls a
# submodule by name, so replacing the submodule under that name changes what
# the node runs. A ``FakeQuantize`` rounds
# to the grid the observed range allows and maps back to floats. On fresh
# inputs the outputs then differ from the float model by roughly the grid
# steps accumulated along the way; with 4 bits the grid has 15 steps instead
# of 255, and the error grows with it.


def convert_to_fake_quant(observed: fx.GraphModule, bits: int) -> fx.GraphModule:
    converted = copy.deepcopy(observed)
    for name, obs in found.items():
        scale, zero_point = obs.scale_zero_point(bits)
        converted.add_submodule(name, FakeQuantize(scale, zero_point, bits))  # replaces the observer
    return converted


test = torch.randn(256, 8, generator=gen)
with torch.no_grad():
    reference = model(test)
    errors = {}
    for bits in (8, 6, 4):
        fake = convert_to_fake_quant(observed, bits)
        errors[bits] = (fake(test) - reference).abs().max().item()
        print(f"{bits} bits: max abs error {errors[bits]:.4f}")
print(convert_to_fake_quant(observed, 8).get_submodule("observe_fc1"))

fig, ax = plt.subplots(figsize=(5, 3.2))
ax.bar([f"{b} bits" for b in errors], list(errors.values()), color="#5a8")
ax.set_yscale("log")
ax.set_ylabel("max abs output error")
ax.set_title("fake quantization of SmallMLP's activations")
fig.tight_layout()
plt.show()
