"""
Feature extraction from a small CNN
===================================

Perceptual losses, detection heads and layer visualizations all need the
activations of a few intermediate layers. With FX the model itself can be
rewritten so that those activations *are* its outputs, and everything after
them is cut away. This example uses :mod:`fxguide.tracing.features` on a two-stage
CNN: list the available names, extract two stages, check them against forward
hooks, look at the feature maps, and see how train and eval mode differ.
"""

# %%
# The model and the names it offers
# ---------------------------------
#
# ``SmallCNN`` has a ``stem`` and a ``stage`` (each conv, batch norm, ReLU),
# global pooling, functional dropout and a linear head. Names are module paths
# (the value a module call returned) followed by node names.

import matplotlib.pyplot as plt
import torch

from fxguide.display import show_code
from fxguide.tracing.features import extract_features, feature_names, mode_differences
from fxguide.models import seeded
from fxguide.models import SmallCNN

model = seeded(SmallCNN).eval()
print(feature_names(model))

# %%
# Extract two stages
# ------------------
#
# The extractor returns a dict. Its graph keeps only what the two values need:
# pooling, dropout and the head are gone.

extractor = extract_features(model, {"stem": "early", "stage": "late"})
show_code(extractor.eval_graph)

# %%
# An input with structure to look at: a bright diagonal bar on a noisy background.

generator = torch.Generator().manual_seed(0)
image = 0.1 * torch.randn(1, 1, 16, 16, generator=generator)
image[0, 0] += torch.eye(16)
features = extractor(image)
for name, value in features.items():
    print(f"{name:5} {tuple(value.shape)}")

# %%
# Check against the model
# -----------------------
#
# Forward hooks record what the unmodified model computes at the same places.

seen = {}
hooks = [
    model.stem.register_forward_hook(lambda module, args, out: seen.update(early=out)),
    model.stage.register_forward_hook(lambda module, args, out: seen.update(late=out)),
]
model(image)
for hook in hooks:
    hook.remove()
for name in ("early", "late"):
    torch.testing.assert_close(features[name], seen[name])
print("extracted values equal the model's intermediates")

# %%
# Look at the feature maps
# ------------------------
#
# The four most active channels of the stem (16 x 16) and of the stage (8 x 8,
# after the stride-2 convolution); after the ReLU some channels of a random
# network are zero everywhere. The weights are random, so this shows the
# mechanics, not learned detectors.

fig, axes = plt.subplots(2, 5, figsize=(9, 4))
axes[0, 0].imshow(image[0, 0], cmap="gray")
axes[0, 0].set_title("input")
axes[1, 0].axis("off")
for row, name in enumerate(("early", "late")):
    maps = features[name][0].detach()
    busiest = maps.mean(dim=(1, 2)).argsort(descending=True)[:4]
    for column, channel in enumerate(busiest.tolist(), 1):
        axes[row, column].imshow(maps[channel], cmap="viridis")
        axes[row, column].set_title(f"{name}, channel {channel}", fontsize=9)
for ax in axes.flat:
    ax.set_xticks([])
    ax.set_yticks([])
fig.tight_layout()
plt.show()

# %%
# Train and eval mode trace differently
# -------------------------------------
#
# ``F.dropout(x, p, training=self.training)`` reads the flag in Python, so the
# tracer bakes its value into the graph:

for line in mode_differences(model):
    print(line)

# %%
# Ask for the dropout's output and the extractor keeps one graph per mode,
# running the one that matches its own ``.train()`` / ``.eval()`` state. The
# extractor shares its layers with ``model``: switching it to train mode
# switches the model's batch norms too, as it would for the model itself.

torch.manual_seed(0)  # dropout draws from the global generator

dropped = extract_features(model, ["flatten", "dropout"])
print("one graph per mode:", dropped.differs_between_modes)
values = dropped.eval()(image)
print("eval:  dropout output equals its input:", torch.equal(values["dropout"], values["flatten"]))
values = dropped.train()(image)
print("train: dropout output equals its input:", torch.equal(values["dropout"], values["flatten"]))
