"""fxguide's tracers, features and transforms on real torchvision, timm and Hugging Face models.

Every model is small (tiny configs, few layers), has seeded random weights and
random batch-norm statistics (fxguide.models.real), and runs on small inputs.
Each test compares what fxguide builds with the eager model, on an input the
capture did not see; a model fxguide cannot capture must raise, never return
something else.
"""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx as fx
from torch import nn

from fxguide.models import real
from fxguide.tracing.concrete import GuardError, concrete_trace
from fxguide.tracing.features import extract_features, feature_names
from fxguide.tracing.tracers import LeafTracer, ModulePathTracer, trace
from fxguide.transforms.decompose import decompose
from fxguide.transforms.fuse import fuse_conv_bn
from fxguide.transforms.profiling import profile_nodes
from fxguide.transforms.replace import replace_op
from fxguide.transforms.shapes import record_shapes


def images(batch: int, size: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(seed))


def assert_matches_eager(captured, model, *inputs, atol: float = 1e-5) -> None:
    with torch.no_grad():
        torch.testing.assert_close(captured(*inputs), model(*inputs), atol=atol, rtol=1e-4)


def hooked(model: nn.Module, paths: list[str], *inputs) -> dict[str, torch.Tensor]:
    """What each module at ``paths`` returned in an eager run (copied: later in-place ops change it)."""
    seen: dict[str, torch.Tensor] = {}

    def keep(path: str):
        def hook(module, args, out) -> None:  # returning a value would replace the module's output
            seen.setdefault(path, out.clone())
        return hook

    handles = [model.get_submodule(path).register_forward_hook(keep(path)) for path in paths]
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for handle in handles:
            handle.remove()
    return seen


@pytest.fixture(scope="module")
def resnet() -> nn.Module:
    return real.resnet18()


@pytest.fixture(scope="module")
def mobilevit() -> nn.Module:
    return real.timm_model("mobilevit_xxs")


@pytest.fixture(scope="module")
def timm_convnext() -> nn.Module:
    return real.timm_model("convnext_atto")


@pytest.fixture(scope="module")
def tiny_bert() -> nn.Module:
    return real.bert()


class Logits(nn.Module):
    """GPT-2 with a forward that names its one input (the concrete tracer needs named inputs)."""

    def __init__(self, language_model: nn.Module) -> None:
        super().__init__()
        self.language_model = language_model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.language_model(input_ids=input_ids).logits


class Hidden(nn.Module):
    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.encoder(input_ids=input_ids).last_hidden_state


# -- builders ---------------------------------------------------------------------


def test_builders_are_seeded_and_vary_batch_norm_statistics():
    a, b = real.resnet18(), real.resnet18()
    assert torch.equal(a.conv1.weight, b.conv1.weight)
    assert not torch.equal(real.resnet18(seed=1).conv1.weight, a.conv1.weight)
    assert not a.training and (a.bn1.running_var != 1).all()


def test_builders_reject_bad_arguments():
    with pytest.raises(ValueError, match="no model 'resnet-18'"):
        real.torchvision_model("resnet-18")
    with pytest.raises(ValueError, match="never downloaded"):
        real.timm_model("resnet10t", pretrained=True)
    with pytest.raises(ValueError, match="multiple of heads"):
        real.gpt2(width=30, heads=4)
    with pytest.raises(ValueError, match="layers must be a positive int"):
        real.bert(layers=0)
    with pytest.raises(TypeError, match="non-empty str"):
        real.timm_model(None)


# -- tracers ----------------------------------------------------------------------


def test_leaf_tracer_captures_timm_mobilevit_that_symbolic_trace_rejects(mobilevit):
    from timm.models.mobilevit import MobileVitBlock

    with pytest.raises(fx.proxy.TraceError, match="control flow"):
        fx.symbolic_trace(mobilevit)
    gm = trace(mobilevit, LeafTracer(leaf_types=[MobileVitBlock]))
    assert_matches_eager(gm, mobilevit, images(2, 128))


def test_module_path_tracer_records_the_values_torchvision_blocks_return(resnet):
    tracer = ModulePathTracer()
    gm = trace(resnet, tracer)
    paths = ["layer1", "layer2.0.downsample", "layer4.1"]
    for path in paths:
        assert tracer.module_outputs[path].graph is gm.graph
    extracted = extract_features(resnet, paths)(images(2, 64))
    expected = hooked(resnet, paths, images(2, 64))
    for path in paths:
        torch.testing.assert_close(extracted[path], expected[path])


# -- features ---------------------------------------------------------------------


def test_features_accept_every_torchvision_name_and_return_torchvisions_tensors_where_no_inplace_op_follows(resnet):
    from torchvision.models.feature_extraction import create_feature_extractor, get_graph_node_names

    names = [name for name in get_graph_node_names(resnet)[1] if name != "x"]
    x = images(2, 64)
    with torch.no_grad():
        ours = extract_features(resnet, names)(x)
        theirs = create_feature_extractor(resnet, names)(x)
    assert list(ours) == names
    overwritten = {name for name in names if name.endswith(("bn1", "add"))}  # each followed by an in-place ReLU
    for name in names:
        if name not in overwritten:
            torch.testing.assert_close(ours[name], theirs[name])


def test_features_keep_a_value_that_a_later_inplace_relu_overwrites(resnet):
    x = images(2, 64)
    extracted = extract_features(resnet, ["layer1.0.bn1", "layer1.0.relu", "layer1.0.add", "layer1.0"])(x)
    expected = hooked(resnet, ["layer1.0.bn1"], x)
    torch.testing.assert_close(extracted["layer1.0.bn1"], expected["layer1.0.bn1"])
    assert extracted["layer1.0.bn1"].min() < 0 and extracted["layer1.0.add"].min() < 0
    torch.testing.assert_close(extracted["layer1.0"], hooked(resnet, ["layer1.0"], x)["layer1.0"])


def test_a_module_name_means_the_value_that_module_returned(resnet):
    asked = ["layer2.0.downsample.1", "layer2.0.downsample"]
    x = images(2, 64)
    extracted = extract_features(resnet, asked)(x)
    expected = hooked(resnet, asked, x)
    for name in asked:
        torch.testing.assert_close(extracted[name], expected[name])


def test_torchvision_style_names_number_repeated_module_calls(resnet):
    names = feature_names(resnet)
    assert "layer1.0.relu@1" in names and "layer1.0.add" in names and "add_3" not in names
    x = images(1, 64)
    out = extract_features(resnet, ["layer1.0.relu@1", "layer1.0.relu_1", "add"])(x)
    torch.testing.assert_close(out["layer1.0.relu@1"], out["layer1.0.relu_1"])


def test_features_on_a_timm_model_match_forward_hooks(timm_convnext):
    paths = ["stem", "stages.1", "stages.3.blocks.1"]
    x = images(2, 64)
    extracted = extract_features(timm_convnext, paths)(x)
    expected = hooked(timm_convnext, paths, x)
    for path in paths:
        torch.testing.assert_close(extracted[path], expected[path])


def test_features_of_an_untraceable_model_raise(mobilevit):
    with pytest.raises(fx.proxy.TraceError):
        extract_features(mobilevit, ["stem"])
    from timm.models.mobilevit import MobileVitBlock

    x = images(1, 128)
    out = extract_features(mobilevit, ["stages.2"], leaf_types=[MobileVitBlock])(x)
    torch.testing.assert_close(out["stages.2"], hooked(mobilevit, ["stages.2"], x)["stages.2"])


# -- transforms -------------------------------------------------------------------


def test_fuse_conv_bn_on_resnet18_matches_eager_and_removes_every_batch_norm(resnet):
    fused = fuse_conv_bn(resnet)
    assert not any(isinstance(m, nn.BatchNorm2d) for m in fused.modules())
    assert_matches_eager(fused, resnet, images(2, 64), atol=1e-4)


def test_fuse_conv_bn_leaves_timm_batch_norm_with_activation_unchanged_and_correct():
    model = real.timm_model("efficientnet_b0", num_classes=10)
    fused = fuse_conv_bn(model)
    assert_matches_eager(fused, model, images(2, 64), atol=1e-4)


def test_fuse_conv_bn_refuses_what_it_cannot_fuse_correctly():
    model = real.resnet18()
    with pytest.raises(ValueError, match="training mode"):
        fuse_conv_bn(model.train())
    with pytest.raises(fx.proxy.TraceError, match="cannot be iterated"):
        fuse_conv_bn(real.detection_model())


def test_replace_op_on_resnet18_retargets_its_residual_additions(resnet):
    gm = replace_op(resnet, operator.add, torch.add)
    assert sum(node.target is torch.add for node in gm.graph.nodes) == 8
    assert_matches_eager(gm, resnet, images(2, 64))


def test_decompose_rewrites_googlenets_functional_relus():
    model = real.torchvision_model("googlenet", aux_logits=False, init_weights=False, num_classes=10)
    gm = decompose(model)
    assert not any(node.target is torch.nn.functional.relu for node in gm.graph.nodes)
    assert_matches_eager(gm, model, images(2, 64), atol=1e-4)


def test_record_shapes_agrees_with_forward_hooks_on_every_resnet_module(resnet):
    gm = fx.symbolic_trace(resnet)
    x = images(2, 64)
    shapes = record_shapes(gm, x)
    modules = {node.name: node.target for node in gm.graph.nodes if node.op == "call_module"}
    seen = {}

    def keep(name: str):
        def hook(module, args, out) -> None:
            seen.setdefault(name, tuple(out.shape))
        return hook

    handles = [resnet.get_submodule(path).register_forward_hook(keep(name)) for name, path in modules.items()]
    with torch.no_grad():
        out = resnet(x)
    for handle in handles:
        handle.remove()
    assert {name: shapes[name].shape for name in modules} == seen
    assert shapes["fc"].shape == tuple(out.shape)


def test_profile_nodes_times_every_node_of_resnet18(resnet):
    gm = fx.symbolic_trace(resnet)
    times = profile_nodes(gm, images(1, 32), repeats=2)
    assert [t.name for t in times] == [node.name for node in gm.graph.nodes]
    assert all(t.seconds >= 0 for t in times)


# -- Hugging Face -----------------------------------------------------------------


def test_export_captures_tiny_bert_with_dynamic_batch_and_length_and_reports_its_position_limit(tiny_bert):
    from torch.export import Dim

    model = Hidden(tiny_bert)
    program = torch.export.export(model, (real.token_ids(2, 8),),
                                  dynamic_shapes={"input_ids": {0: Dim.AUTO, 1: Dim.AUTO}})
    ranges = sorted(str(r) for r in program.range_constraints.values())
    assert ranges == ["VR[2, 64]", "VR[2, int_oo]"]  # length bounded by max_position_embeddings
    ids = real.token_ids(3, 12, seed=1)
    with torch.no_grad():
        torch.testing.assert_close(program.module()(ids), model(ids))


def test_transformers_5_has_no_fx_tracer():
    """The guide's history note: ``transformers.utils.fx`` left in transformers 5."""
    with pytest.raises(ModuleNotFoundError, match="transformers.utils.fx"):
        import transformers.utils.fx  # noqa: F401


def test_concrete_tracer_captures_tiny_gpt2_for_the_example_sizes_and_refuses_others():
    model = Logits(real.gpt2())
    gm = concrete_trace(model, real.token_ids(2, 8))
    assert_matches_eager(gm, model, real.token_ids(2, 8, seed=1))
    with pytest.raises(GuardError, match=r"was 8 when traced and is 12"):
        gm(real.token_ids(3, 12, seed=1))


def test_concrete_trace_of_tiny_bert_asks_no_size_question_and_matches_eager_on_other_sizes(tiny_bert):
    """transformers 5 builds BERT's mask from tensor ops only: the trace holds no size guard."""
    model = Hidden(tiny_bert)
    gm = concrete_trace(model, real.token_ids(2, 8))
    assert_matches_eager(gm, model, real.token_ids(3, 12, seed=1))


def test_plain_symbolic_trace_of_hugging_face_models_raises_rather_than_guessing(tiny_bert):
    with pytest.raises(TypeError, match="'Proxy' object does not support item assignment"):
        fx.symbolic_trace(tiny_bert)
    with pytest.raises(TypeError, match="'Proxy' object does not support item assignment"):
        feature_names(tiny_bert)


def test_a_classifier_size_below_one_is_refused_not_turned_into_a_model_without_classifier():
    # Issue 23: timm reads num_classes <= 0 as "no classifier" and returned a model with 512 outputs.
    for bad in (-1, 0, True):
        with pytest.raises(ValueError, match="timm_model: num_classes must be a positive int"):
            real.timm_model("resnet10t", num_classes=bad)
    with pytest.raises(TypeError, match="timm_model: 'resnet10t' does not take an argument you passed"):
        real.timm_model("resnet10t", bogus=1)
    with pytest.raises(TypeError, match="torchvision_model: 'resnet18' does not take an argument you passed"):
        real.torchvision_model("resnet18", bogus=1)
