"""fxguide.transforms.fuse: conv/batch-norm folding keeps eval-mode outputs and removes every batch norm."""

from __future__ import annotations

import pytest
import torch
import torch.fx as fx
from torch import nn

from fxguide.transforms.fuse import fold_bn_into_conv, fuse_conv_bn
from fxguide.models import SmallResNet
from fxguide.models import seeded


def batch(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(1))


def module_types(gm: fx.GraphModule) -> list[str]:
    return [type(gm.get_submodule(n.target)).__name__ for n in gm.graph.nodes if n.op == "call_module"]


def test_fused_resnet_matches_the_original_in_eval_mode():
    model = seeded(SmallResNet, channels=8, blocks=2).eval()
    fused = fuse_conv_bn(model)
    x = batch(4, 3, 16, 16)
    with torch.no_grad():
        torch.testing.assert_close(fused(x), model(x))
    assert "BatchNorm2d" not in module_types(fused)
    assert module_types(fused).count("Conv2d") == 5


def test_fusion_leaves_the_original_model_untouched():
    model = seeded(SmallResNet, channels=4, blocks=1).eval()
    weight = model.stem.weight.clone()
    fuse_conv_bn(model)
    assert torch.equal(model.stem.weight, weight)
    assert isinstance(model.bn, nn.BatchNorm2d) and model.stem.bias is None


def test_fold_uses_every_batch_norm_statistic():
    conv, bn = seeded(nn.Conv2d, 3, 2, 3, bias=True), nn.BatchNorm2d(2).eval()
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([2.0, 0.5]))
        bn.bias.copy_(torch.tensor([1.0, -1.0]))
        bn.running_mean.copy_(torch.tensor([0.3, -0.2]))
        bn.running_var.copy_(torch.tensor([4.0, 0.25]))
    x = batch(2, 3, 5, 5)
    torch.testing.assert_close(fold_bn_into_conv(conv, bn)(x), bn(conv(x)))


def test_conv_whose_output_is_also_used_elsewhere_is_not_fused():
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = nn.Conv2d(2, 2, 1), nn.BatchNorm2d(2)

        def forward(self, x):
            y = self.conv(x)
            return self.bn(y) + y

    model = seeded(Branchy).eval()
    fused = fuse_conv_bn(model)
    assert module_types(fused) == ["Conv2d", "BatchNorm2d"]
    x = batch(1, 2, 3, 3)
    torch.testing.assert_close(fused(x), model(x))


def test_training_mode_is_refused():
    with pytest.raises(ValueError, match=r"training mode.*model\.eval\(\)"):
        fuse_conv_bn(SmallResNet(channels=4, blocks=1))


def test_non_module_is_refused():
    with pytest.raises(TypeError, match="expected an nn.Module, got function"):
        fuse_conv_bn(lambda x: x)


def test_fold_refuses_mismatched_or_statless_norms():
    with pytest.raises(ValueError, match="3 channels but the convolution produces 2"):
        fold_bn_into_conv(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(3))
    with pytest.raises(ValueError, match="track_running_stats=False"):
        fold_bn_into_conv(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2, track_running_stats=False))
    with pytest.raises(TypeError, match="bn must be an nn.BatchNorm2d, got Linear"):
        fold_bn_into_conv(nn.Conv2d(1, 2, 1), nn.Linear(2, 2))
