"""fxguide.transforms.fuse: conv/batch-norm folding keeps eval-mode outputs and removes every batch norm."""

from __future__ import annotations

import copy

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
    with pytest.raises(TypeError, match="model must be an nn.Module, got function"):
        fuse_conv_bn(lambda x: x)


def test_fold_refuses_mismatched_or_statless_norms():
    with pytest.raises(ValueError, match="3 channels but the convolution produces 2"):
        fold_bn_into_conv(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(3))
    with pytest.raises(ValueError, match="track_running_stats=False"):
        fold_bn_into_conv(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2, track_running_stats=False))
    with pytest.raises(TypeError, match="bn must be an nn.BatchNorm2d, got Linear"):
        fold_bn_into_conv(nn.Conv2d(1, 2, 1), nn.Linear(2, 2))


class TwoNorms(nn.Module):
    """One convolution whose output feeds two batch norms."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.bn1, self.bn2 = nn.BatchNorm2d(3), nn.BatchNorm2d(3)

    def forward(self, x):
        y = self.conv(x)
        return self.bn1(y) + self.bn2(y)


class SharedConv(nn.Module):
    """The same convolution module called twice, each call followed by its own batch norm."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.bn1, self.bn2 = nn.BatchNorm2d(3), nn.BatchNorm2d(3)

    def forward(self, x):
        return self.bn2(self.conv(self.bn1(self.conv(x))))


class SharedNorm(nn.Module):
    """One batch norm module after two different convolutions."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(2, 3, 1), nn.Conv2d(2, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x):
        return self.bn(self.conv1(x)) * self.bn(self.conv2(x))


class OddConv(nn.Module):
    """Non-default convolution options: groups, dilation, stride, no bias, reflect padding."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, stride=2, padding=2, dilation=2, groups=2, bias=False, padding_mode="reflect")
        self.bn = nn.BatchNorm2d(4, affine=False)

    def forward(self, x):
        return self.bn(self.conv(x))


class HalfTrained(nn.Module):
    """The model is in eval mode but one batch norm was put back in training mode."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(2, 2, 1), nn.BatchNorm2d(2)

    def forward(self, x):
        return self.bn(self.conv(x))


class NoStats(HalfTrained):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(2, track_running_stats=False)


def _with_statistics(model: nn.Module) -> nn.Module:
    """Give every batch norm non-trivial running statistics, so that a wrong fold shows."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d) and m.running_mean is not None:
                m.running_mean.uniform_(-1, 1, generator=torch.Generator().manual_seed(1))
                m.running_var.uniform_(0.5, 2, generator=torch.Generator().manual_seed(2))
    return model.eval()


@pytest.mark.parametrize(("make", "folded"), [
    (TwoNorms, 0), (SharedConv, 0), (SharedNorm, 2), (OddConv, 1), (NoStats, 0),
], ids=["conv-feeds-two-norms", "shared-conv", "shared-norm", "non-default-conv-options", "no-running-stats"])
def test_fusing_never_changes_results(make, folded):
    model = _with_statistics(seeded(make))
    fused = fuse_conv_bn(model)
    x = batch(2, model.conv.in_channels if hasattr(model, "conv") else 2, 8, 8)
    torch.testing.assert_close(fused(x), model(x))
    norms_before = sum(isinstance(n_, nn.BatchNorm2d) for n_ in _called(fx.symbolic_trace(model)))
    norms_after = sum(isinstance(n_, nn.BatchNorm2d) for n_ in _called(fused))
    assert norms_before - norms_after == folded


def _called(gm: fx.GraphModule) -> list[nn.Module]:
    return [gm.get_submodule(n.target) for n in gm.graph.nodes if n.op == "call_module"]


def test_a_norm_left_in_training_mode_is_not_folded():
    model = _with_statistics(seeded(HalfTrained))
    model.bn.train()
    fused = fuse_conv_bn(model)
    assert module_types(fused) == ["Conv2d", "BatchNorm2d"]
    x = batch(4, 2, 3, 3)
    expected = copy.deepcopy(model)(x)
    torch.testing.assert_close(fused(x), expected)
