"""
Feature maps of a torchvision ResNet-18, stage by stage
=======================================================

Perceptual losses, detection necks and layer visualizations all want the
output of each stage of a backbone. This example extracts the four stages of
torchvision's ResNet-18 in one pass with :mod:`fxguide.tracing.features` and
draws what each stage makes of a simple image. How names are chosen, how the
extractor is checked against forward hooks, how it differs from torchvision's
``create_feature_extractor``, and what train and eval mode change, is the
subject of the :doc:`/feature-extraction` page; this example only uses it.
"""

# %%
# Extract the four stages
# -----------------------
#
# Names are module paths: ``"layer1"`` is the value the call to
# ``resnet.layer1`` returned. The dict form renames the outputs.

import matplotlib.pyplot as plt
import torch

from fxguide.models.real import resnet18
from fxguide.tracing.features import extract_features

resnet = resnet18()
stages = {"layer1": "stride 4", "layer2": "stride 8", "layer3": "stride 16", "layer4": "stride 32"}
extractor = extract_features(resnet, stages)
print("modules left in the extractor:", [name for name, _ in extractor.eval_graph.named_children()])

# %%
# The average pooling and the classifier are gone: nothing asked for needs them.
#
# An image with structure to look at: a bright diagonal bar on a noisy
# background, 128 x 128 pixels.

generator = torch.Generator().manual_seed(0)
image = 0.1 * torch.randn(1, 3, 128, 128, generator=generator)
image[0, :] += torch.eye(128)
with torch.no_grad():
    features = extractor(image)
for name, value in features.items():
    print(f"{name:9} {tuple(value.shape)}")

# %%
# Each stage halves the resolution and (after the first) doubles the channels.
#
# Look at the feature maps
# ------------------------
#
# The most active channel of each stage, next to the input. The weights are
# random, so this shows the mechanics (resolution, where activity sits), not
# learned detectors.

fig, axes = plt.subplots(1, 5, figsize=(11, 2.6))
axes[0].imshow(image[0, 0], cmap="gray")
axes[0].set_title("input")
for ax, (name, value) in zip(axes[1:], features.items()):
    maps = value[0]
    busiest = int(maps.mean(dim=(1, 2)).argmax())
    ax.imshow(maps[busiest], cmap="viridis")
    ax.set_title(f"{name}, channel {busiest}\n{tuple(maps.shape[1:])}", fontsize=9)
for ax in axes:
    ax.set_xticks([])
    ax.set_yticks([])
fig.tight_layout()
plt.show()
