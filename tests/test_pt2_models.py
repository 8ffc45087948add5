"""The models of the "FX in PyTorch 2" pages: the state they are built to show, and strict arguments."""

from __future__ import annotations

import pytest
import torch
import torch.fx

from fxguide.models import seeded
from fxguide.models.pt2 import ConvNet, CountingLinear


def test_counting_linear_has_a_parameter_a_buffer_and_a_plain_tensor_attribute():
    model = seeded(CountingLinear)
    assert "linear.weight" in dict(model.named_parameters())
    assert list(dict(model.named_buffers())) == ["calls"]
    assert isinstance(model.scale, torch.Tensor) and "scale" not in dict(model.named_parameters())


def test_counting_linear_counts_every_call_in_place():
    model = seeded(CountingLinear)
    buffer = model.calls
    model(torch.ones(1, 4))
    model(torch.ones(1, 4))
    assert model.calls is buffer and int(buffer) == 2


def test_conv_net_batch_norm_makes_train_and_eval_differ():
    model = seeded(ConvNet)
    x = torch.randn(4, 3, 8, 8)
    assert not torch.allclose(model.train()(x), model.eval()(x))


@pytest.mark.parametrize("factory", [CountingLinear, ConvNet])
def test_traced_code_prints_the_annotations_as_written(factory):
    # string annotations (from `from __future__ import annotations`) print as `_torch_Tensor_`
    code = torch.fx.symbolic_trace(seeded(factory)).code
    assert "def forward(self, x : torch.Tensor)" in code and "_torch_Tensor_" not in code


@pytest.mark.parametrize("factory, kwargs, message", [
    (ConvNet, {"channels": 0}, "ConvNet: channels must be a positive int, got 0"),
    (ConvNet, {"classes": 2.5}, "ConvNet: classes must be a positive int, got 2.5"),
    (CountingLinear, {"features": True}, "CountingLinear: features must be a positive int, got True"),
])
def test_sizes_must_be_positive_ints(factory, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        factory(**kwargs)
