"""The concrete tracer on real models built from small configs with random weights (no downloads).

Each model but the timm one is one that ``symbolic_trace`` cannot trace. The traced graph must
equal eager mode, tracing must leave the model exactly as it was (so eager
calls afterwards still give the same answer), and retracing must work for a
new input size.
"""

from __future__ import annotations

import copy
import os

import pytest
import torch
import torch.fx as fx

from fxguide.tracing.concrete import GuardedPaths, concrete_trace, decisions

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")
torchvision = pytest.importorskip("torchvision")
timm = pytest.importorskip("timm")


def gpt2():
    config = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=50, n_positions=32, use_cache=False)
    return transformers.GPT2Model(config), lambda n: {"input_ids": torch.arange(n).remainder(50)[None]}


def bert():
    config = transformers.BertConfig(num_hidden_layers=1, num_attention_heads=2, hidden_size=16,
                                     intermediate_size=32, vocab_size=50, max_position_embeddings=32)
    return transformers.BertModel(config), lambda n: {"input_ids": torch.arange(n).remainder(50)[None]}


def t5_encoder():
    config = transformers.T5Config(num_layers=1, num_heads=2, d_model=16, d_kv=8, d_ff=32, vocab_size=50)
    return transformers.T5EncoderModel(config), lambda n: {"input_ids": torch.arange(n).remainder(50)[None]}


def ssdlite():
    model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=3)
    return model, lambda n: {"images": [torch.rand(3, 8 * n, 8 * n, generator=torch.Generator().manual_seed(n))]}


def swin():
    model = timm.create_model("swin_tiny_patch4_window7_224", pretrained=False, num_classes=3, img_size=32,
                              embed_dim=24, depths=(1, 1), num_heads=(1, 2))
    return model, lambda n: {"x": torch.randn(n, 3, 32, 32, generator=torch.Generator().manual_seed(n))}


MODELS = {"gpt2": gpt2, "bert": bert, "t5-encoder": t5_encoder, "ssdlite-detection": ssdlite, "timm-swin": swin}


def tensors(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for item in out for t in tensors(item)]
    return []


def assert_same_outputs(a, b) -> None:
    left, right = tensors(a), tensors(b)
    assert len(left) == len(right) > 0
    for x, y in zip(left, right):
        torch.testing.assert_close(x, y)


def no_proxies(model: torch.nn.Module) -> bool:
    """No attribute of any submodule holds a Proxy, directly or inside lists, tuples and dicts."""
    def holds(value) -> bool:
        if isinstance(value, fx.Proxy):
            return True
        if isinstance(value, (list, tuple, set)):
            return any(holds(v) for v in value)
        if isinstance(value, dict):
            return any(holds(v) for v in value.values())
        return False
    return not any(holds(v) for m in model.modules() for v in vars(m).values())


@pytest.fixture(scope="module", params=list(MODELS))
def built(request):
    torch.manual_seed(0)
    model, inputs = MODELS[request.param]()
    return request.param, model.eval(), inputs


# timm writes its models to be symbolically traceable: swin is here for the concrete tracer only.
@pytest.mark.parametrize("built", [name for name in MODELS if name != "timm-swin"], indirect=True)
@torch.no_grad()
def test_symbolic_trace_fails_on_these_models(built):
    name, model, inputs = built
    with pytest.raises(Exception):  # noqa: B017 - each fails differently; the point is that it fails
        fx.symbolic_trace(model, concrete_args=None)(**inputs(4))


@torch.no_grad()
def test_traced_graph_equals_eager_and_leaves_the_model_unchanged(built):
    _, model, inputs = built
    before = copy.deepcopy(model.state_dict())
    expected = model(**inputs(4))
    gm = concrete_trace(model, kwargs=inputs(4))
    assert_same_outputs(gm(**inputs(4)), expected)
    after = model.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert no_proxies(model)
    assert_same_outputs(model(**inputs(4)), expected)  # eager mode still gives the same answer
    assert decisions(gm), "a real model asks questions about its input"


# Tracing a detection model takes seconds; the language models and swin cover retracing.
@pytest.mark.parametrize("built", [name for name in MODELS if name != "ssdlite-detection"], indirect=True)
@torch.no_grad()
def test_retrace_keeps_one_graph_per_input_size(built):
    name, model, inputs = built
    paths = concrete_trace(model, kwargs=inputs(4), on_mismatch="retrace")
    assert isinstance(paths, GuardedPaths)
    for n in (4, 5, 4):
        assert_same_outputs(paths(**inputs(n)), model(**inputs(n)))
    assert 1 <= len(paths.paths) <= 2


@pytest.mark.parametrize("built", ["gpt2", "bert", "t5-encoder"], indirect=True)
@torch.no_grad()
def test_a_traced_model_returns_the_same_output_class_as_eager(built):
    """A Hugging Face ModelOutput (a class registered with pytree) comes back as that class, not a dict."""
    _, model, inputs = built
    expected = model(**inputs(4))
    got = concrete_trace(model, kwargs=inputs(4))(**inputs(4))
    assert type(got) is type(expected) and list(got.keys()) == list(expected.keys())
    assert_same_outputs(got, expected)


def test_a_registered_dataclass_output_is_rebuilt_as_that_class():
    from dataclasses import dataclass
    from torch.utils import _pytree as pytree

    @dataclass
    class Pair:
        left: torch.Tensor
        right: torch.Tensor

    pytree.register_dataclass(Pair)
    try:
        class Split(torch.nn.Module):
            def forward(self, x):
                return Pair(x[:, :2] * 2, x[:, 2:] + 1)

        x = torch.randn(3, 4)
        got = concrete_trace(Split(), (x,))(x)
        assert type(got) is Pair and torch.equal(got.left, x[:, :2] * 2) and torch.equal(got.right, x[:, 2:] + 1)
    finally:
        pytree._deregister_pytree_node(Pair)
