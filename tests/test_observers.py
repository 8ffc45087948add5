"""fxguide.transforms.observers: observers see each chosen activation; fake quantization rounds to the observed grid."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fxguide.models import SmallMLP
from fxguide.models import seeded
from fxguide.transforms.observers import (FakeQuantize, MinMaxObserver, calibrate, convert_to_fake_quant,
                               insert_observers, observers)


def relus(node) -> bool:
    return node.op == "call_function" and node.target is torch.relu


def inputs(n: int = 3):
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(16, 8, generator=gen) for _ in range(n)]


def test_observers_follow_the_chosen_nodes_and_change_nothing():
    model = seeded(SmallMLP)
    gm = insert_observers(model, relus)
    assert list(observers(gm)) == ["observe_relu", "observe_relu_1"]
    (relu,) = gm.graph.find_nodes(op="call_function", target=torch.relu)[:1]
    assert [u.target for u in relu.users] == ["observe_relu"]
    x = inputs(1)[0]
    torch.testing.assert_close(gm(x), model(x))


def test_calibration_records_the_true_range_of_the_activation():
    model = seeded(SmallMLP)
    gm = insert_observers(model, lambda n: n.op == "call_module" and n.target == "fc1")
    batches = inputs()
    calibrate(gm, batches)
    seen = torch.cat([model.fc1(b) for b in batches]).detach()
    obs = observers(gm)["observe_fc1"]
    assert obs.min_val.item() == seen.min().item() and obs.max_val.item() == seen.max().item()


def test_fake_quant_error_is_within_half_a_grid_step_inside_the_range():
    obs = MinMaxObserver()
    x = torch.linspace(-1.0, 3.0, 101)
    obs(x)
    scale, zero = obs.scale_zero_point(bits=8)
    error = (FakeQuantize(scale, zero, bits=8)(x) - x).abs().max().item()
    assert error <= scale / 2 + 1e-6
    assert 0 < error


def test_converted_model_replaces_every_observer_and_fewer_bits_cost_more():
    model = seeded(SmallMLP).eval()
    gm = insert_observers(model, relus)
    calibrate(gm, inputs())
    x = inputs(1)[0]
    errors = {}
    for bits in (8, 4):
        fake = convert_to_fake_quant(gm, bits=bits)
        assert not observers(fake)
        assert isinstance(fake.get_submodule("observe_relu"), FakeQuantize)
        errors[bits] = (fake(x) - model(x)).abs().max().item()
    assert 0 < errors[8] < errors[4]


def test_bad_inputs_are_refused():
    with pytest.raises(TypeError, match="expected an nn.Module"):
        insert_observers("model", relus)
    with pytest.raises(TypeError, match="where must be a function"):
        insert_observers(SmallMLP(), "relu")
    with pytest.raises(ValueError, match="accepted no node"):
        insert_observers(SmallMLP(), lambda n: False)
    gm = insert_observers(nn.Sequential(nn.ReLU()), lambda n: True)
    with pytest.raises(RuntimeError, match="seen no values; run calibrate"):
        convert_to_fake_quant(gm)
    with pytest.raises(ValueError, match="no batches"):
        calibrate(gm, [])
    plain = torch.fx.symbolic_trace(SmallMLP())
    with pytest.raises(ValueError, match="no observers"):
        calibrate(plain, inputs())
    with pytest.raises(ValueError, match="bits must be an int from 2 to 16"):
        FakeQuantize(0.1, 0, bits=1)
    with pytest.raises(ValueError, match="scale must be a positive number"):
        FakeQuantize(0.0, 0)
