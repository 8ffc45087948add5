"""Feature extraction: names, outputs equal to eager intermediates, dead code gone, modes kept apart."""

from __future__ import annotations

import pytest
import torch

from fxguide.tracing.features import extract_features, feature_names, mode_differences
from fxguide.models import seeded
from fxguide.models import SmallCNN, TwoStageMLP

X = torch.randn(2, 1, 8, 8, generator=torch.Generator().manual_seed(0))


def test_feature_names_include_module_paths_and_node_names():
    names = feature_names(seeded(SmallCNN))
    assert {"stem", "stem.0", "stage", "head", "flatten", "dropout"} <= set(names)
    assert names.index("stem.0") < names.index("flatten")


def test_extracted_values_equal_the_eager_intermediates():
    model = seeded(SmallCNN).eval()
    seen = {}
    model.stem.register_forward_hook(lambda m, i, o: seen.__setitem__("stem", o))
    model.stage[1].register_forward_hook(lambda m, i, o: seen.__setitem__("stage.1", o))
    expected_logits = model(X)
    eager = dict(seen)  # tracing runs the hooks again, on Proxies
    out = extract_features(model, ["stem", "stage.1", "head"])(X)
    assert list(out) == ["stem", "stage.1", "head"]
    torch.testing.assert_close(out["stem"], eager["stem"])
    torch.testing.assert_close(out["stage.1"], eager["stage.1"])
    torch.testing.assert_close(out["head"], expected_logits)


def test_dict_names_rename_the_outputs():
    out = extract_features(seeded(SmallCNN).eval(), {"stem": "early"})(X)
    assert list(out) == ["early"]


def test_dead_code_and_unused_submodules_are_removed():
    extractor = extract_features(seeded(SmallCNN), ["stem"])
    gm = extractor.train_graph
    assert [n.op for n in gm.graph.nodes].count("call_module") == 3
    assert not hasattr(gm, "head") and not hasattr(gm, "stage")


def test_unknown_name_lists_close_matches():
    with pytest.raises(ValueError, match=r"no feature named 'stage\.3'.*Close matches: stage\.[0-2]"):
        extract_features(seeded(SmallCNN), ["stage.3"])
    with pytest.raises(TypeError, match="list of feature names"):
        extract_features(seeded(SmallCNN), "stem")
    with pytest.raises(ValueError, match="at least one"):
        extract_features(seeded(SmallCNN), [])
    with pytest.raises(TypeError, match="nn.Module"):
        feature_names(lambda x: x)
    with pytest.raises(TypeError, match="training must be"):
        feature_names(seeded(SmallCNN), training="eval")


def test_mode_differences_name_the_baked_in_flag():
    diff = mode_differences(seeded(SmallCNN))
    assert len(diff) == 2 and "training = True" in diff[0] and "training = False" in diff[1]
    assert mode_differences(seeded(TwoStageMLP)) == []


def test_extractor_keeps_a_graph_per_mode_only_where_the_choice_depends_on_it():
    model = seeded(SmallCNN)
    assert not extract_features(model, ["stem"]).differs_between_modes
    both = extract_features(model, ["dropout"])
    assert both.differs_between_modes
    both.eval()
    torch.testing.assert_close(both(X)["dropout"], both(X)["dropout"])  # eval: dropout is the identity
    both.train()
    assert not torch.equal(both(X)["dropout"], both.eval()(X)["dropout"])


def test_extraction_restores_the_model_modes():
    model = seeded(SmallCNN).eval()
    extractor = extract_features(model, ["stem"])
    assert not any(m.training for m in model.modules())
    assert not extractor.training


def test_a_node_returned_by_a_module_is_listed_once_but_found_by_both_names():
    model = seeded(SmallCNN).eval()
    names = feature_names(model)
    assert "stem" in names and "stem_2" not in names
    out = extract_features(model, ["stem", "stem_2"])(X)
    torch.testing.assert_close(out["stem"], out["stem_2"])


class _AddsInPlace(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        z = y.add_(1)  # overwrites y's tensor
        return z.sum()


def test_a_value_overwritten_later_by_an_inplace_op_is_copied_when_extracted():
    model = _AddsInPlace()
    x = torch.ones(3)
    out = extract_features(model, ["mul", "add_"])(x)
    torch.testing.assert_close(out["mul"], torch.full((3,), 2.0))
    torch.testing.assert_close(out["add_"], torch.full((3,), 3.0))


def test_torchvision_style_names_prefix_the_enclosing_module_path():
    names = feature_names(seeded(TwoStageMLP))
    assert "encoder.0.relu" in names and "relu" not in names
    out = extract_features(seeded(TwoStageMLP), ["encoder.0.relu", "relu"])(torch.ones(2, 4))
    torch.testing.assert_close(out["encoder.0.relu"], out["relu"])


class _ScaleInPlace(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.act = torch.nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.lin(x)
        y.mul_(3)                      # nobody reads mul_'s result, but y is read below
        torch.relu_(y)
        z = torch.nn.functional.relu(y, inplace=True)
        return self.act(z) + 1


@pytest.mark.parametrize("name", ["add", "lin"])
def test_an_in_place_call_that_changes_a_value_read_later_is_kept(name):
    """Dead-code elimination alone deletes y.mul_(3) and the extracted value differs from eager's."""
    model = seeded(_ScaleInPlace).eval()
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(1))
    seen = {}
    model.lin.register_forward_hook(lambda m, i, o: seen.__setitem__("lin", o.clone()))
    expected = {"add": model(x), "lin": seen["lin"]}[name]
    out = extract_features(model, [name])(x)[name]
    torch.testing.assert_close(out, expected)
