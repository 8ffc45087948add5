"""The demo models: deterministic when seeded, shaped as documented, strict about arguments."""

from __future__ import annotations

import pytest
import torch
import torch.fx as fx

from fxguide.models import AllOpcodes, GatedBlock, TinyMLP, seeded


@pytest.mark.parametrize("model_class", [TinyMLP, AllOpcodes, GatedBlock])
def test_seeded_models_have_identical_parameters(model_class):
    a, b = seeded(model_class), seeded(model_class)
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(p, q), name


def test_different_seeds_give_different_parameters():
    assert not torch.equal(seeded(GatedBlock, seed=0).value.weight, seeded(GatedBlock, seed=1).value.weight)


def test_all_opcodes_model_traces_to_all_six_opcodes():
    ops = {n.op for n in fx.symbolic_trace(seeded(AllOpcodes)).graph.nodes}
    assert ops == {"placeholder", "get_attr", "call_function", "call_module", "call_method", "output"}


def test_gated_block_keeps_the_feature_shape():
    assert seeded(GatedBlock, features=5)(torch.ones(3, 5)).shape == (3, 5)


@pytest.mark.parametrize("model_class", [TinyMLP, AllOpcodes, GatedBlock])
@pytest.mark.parametrize("bad", [0, -1, 2.0])
def test_models_reject_non_positive_or_non_int_sizes(model_class, bad):
    with pytest.raises(ValueError, match="must be a positive int"):
        model_class(features=bad)


def test_seeded_rejects_non_callable_and_bad_seed():
    with pytest.raises(TypeError, match="factory must be callable"):
        seeded("TinyMLP")
    with pytest.raises(TypeError, match="seed must be an int"):
        seeded(TinyMLP, seed="0")
