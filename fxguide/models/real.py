"""Real models from torchvision, timm and Hugging Face, small and with seeded random weights.

The pages on real models trace what people actually deploy, not toys. Every
builder here constructs a model from its constructor or config, never from
downloaded weights (tracing needs none), seeds the random weights with
:func:`fxguide.models.seeded` so recorded outputs are stable, and returns it in
eval mode. A freshly built batch norm has mean 0, variance 1, scale 1 and shift
0, so in eval mode it is almost the identity, and a pass that drops or misplaces
one would go unnoticed; the builders give every batch norm random statistics. The libraries are imported inside each function: importing
torchvision, timm or transformers takes seconds, and ``fxguide.models`` stays
fast for pages that need none of them.

>>> model = resnet18()
>>> type(model).__name__, model.training
('ResNet', False)
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from fxguide._checks import seed_value
from fxguide.models.basics import seeded

__all__ = ["bert", "detection_model", "gpt2", "resnet18", "timm_model", "token_ids", "torchvision_model",
           "vary_batch_norms"]


def vary_batch_norms(model: nn.Module, *, seed: int = 0) -> nn.Module:
    """Give every batch norm of ``model`` random running statistics, scale and shift, in place.

    >>> bn = vary_batch_norms(nn.BatchNorm2d(3))
    >>> bool((bn.running_var != 1).all()), bool((bn.weight != 1).all())
    (True, True)
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"vary_batch_norms: expected an nn.Module, got {type(model).__name__}")
    seed_value("vary_batch_norms", seed)
    generator = torch.Generator().manual_seed(seed)

    def draw(like: torch.Tensor, low: float, high: float) -> torch.Tensor:
        return torch.rand(like.shape, generator=generator) * (high - low) + low

    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.modules.batchnorm._BatchNorm) and module.running_mean is not None:
                module.running_mean.copy_(draw(module.running_mean, -0.5, 0.5))
                module.running_var.copy_(draw(module.running_var, 0.5, 2.0))
                if module.affine:
                    module.weight.copy_(draw(module.weight, 0.5, 1.5))
                    module.bias.copy_(draw(module.bias, -0.5, 0.5))
    return model


def _positive(caller: str, **values: object) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{caller}: {name} must be a positive int, got {value!r}")


def _build(caller: str, factory: Any, name: str, seed: int, **kwargs: Any) -> nn.Module:
    """``seeded(factory, name, seed=seed, **kwargs)``; an argument the model does not take is named."""
    try:
        return seeded(factory, name, seed=seed, **kwargs)
    except TypeError as error:
        if "unexpected keyword argument" not in str(error):
            raise
        raise TypeError(f"{caller}: {name!r} does not take an argument you passed ({error}); "
                        f"pass only arguments of its constructor") from error


def _name(caller: str, name: object) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"{caller}: name must be a model name (a non-empty str), got {name!r}")
    return name


def torchvision_model(name: str, *, seed: int = 0, **kwargs: Any) -> nn.Module:
    """``torchvision.models.get_model(name, weights=None, **kwargs)``, seeded, in eval mode.

    >>> torchvision_model("squeezenet1_0", num_classes=5).classifier[1].out_channels
    5
    """
    import torchvision

    name = _name("torchvision_model", name)
    if name not in torchvision.models.list_models():
        raise ValueError(f"torchvision_model: torchvision {torchvision.__version__} has no model {name!r}; "
                         f"torchvision.models.list_models() lists them")
    if "weights" in kwargs:
        raise ValueError("torchvision_model: weights are never downloaded here; leave out weights=")
    model = _build("torchvision_model", torchvision.models.get_model, name, seed, weights=None, **kwargs)
    return vary_batch_norms(model, seed=seed).eval()


def resnet18(num_classes: int = 10, *, seed: int = 0) -> nn.Module:
    """torchvision's ResNet-18 with random weights (11M parameters, fast on CPU)."""
    _positive("resnet18", num_classes=num_classes)
    return torchvision_model("resnet18", num_classes=num_classes, seed=seed)


def detection_model(*, seed: int = 0) -> nn.Module:
    """torchvision's smallest Faster R-CNN (MobileNetV3 backbone, 320 px), random weights.

    Its ``forward`` takes a *list* of images of any sizes, which is what
    symbolic tracing cannot follow (see docs/real-model-code.md).
    """
    return torchvision_model("fasterrcnn_mobilenet_v3_large_320_fpn", weights_backbone=None, seed=seed)


def timm_model(name: str, *, seed: int = 0, **kwargs: Any) -> nn.Module:
    """``timm.create_model(name, pretrained=False, **kwargs)``, seeded, in eval mode.

    ``kwargs`` shrink the model where its constructor allows (``depths=...``,
    ``num_classes=...``).

    >>> timm_model("resnet10t", num_classes=3).fc.out_features
    3
    """
    import timm

    name = _name("timm_model", name)
    if not timm.is_model(name):
        raise ValueError(f"timm_model: timm {timm.__version__} has no model {name!r}; timm.list_models() lists them")
    if "pretrained" in kwargs:
        raise ValueError("timm_model: weights are never downloaded here; leave out pretrained=")
    if "num_classes" in kwargs:  # timm reads num_classes <= 0 as "no classifier": a model with other outputs
        _positive("timm_model", num_classes=kwargs["num_classes"])
    model = _build("timm_model", timm.create_model, name, seed, pretrained=False, **kwargs)
    return vary_batch_norms(model, seed=seed).eval()


def gpt2(layers: int = 2, width: int = 32, heads: int = 2, vocab: int = 100, positions: int = 64,
         *, seed: int = 0) -> nn.Module:
    """A tiny ``GPT2LMHeadModel`` built from a ``GPT2Config`` (random weights, no download)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    _positive("gpt2", layers=layers, width=width, heads=heads, vocab=vocab, positions=positions)
    if width % heads:
        raise ValueError(f"gpt2: width ({width}) must be a multiple of heads ({heads})")
    # GPT2Config's default start/end token (50256) lies outside a small vocabulary, which transformers 5 warns about.
    config = GPT2Config(n_layer=layers, n_embd=width, n_head=heads, vocab_size=vocab, n_positions=positions,
                        bos_token_id=vocab - 1, eos_token_id=vocab - 1)
    return seeded(GPT2LMHeadModel, config, seed=seed).eval()


def bert(layers: int = 2, width: int = 32, heads: int = 2, vocab: int = 100, positions: int = 64,
         *, seed: int = 0) -> nn.Module:
    """A tiny ``BertModel`` built from a ``BertConfig`` (random weights, no download)."""
    from transformers import BertConfig, BertModel

    _positive("bert", layers=layers, width=width, heads=heads, vocab=vocab, positions=positions)
    if width % heads:
        raise ValueError(f"bert: width ({width}) must be a multiple of heads ({heads})")
    config = BertConfig(num_hidden_layers=layers, hidden_size=width, num_attention_heads=heads,
                        intermediate_size=2 * width, vocab_size=vocab, max_position_embeddings=positions)
    return seeded(BertModel, config, seed=seed).eval()


def token_ids(batch: int, length: int, vocab: int = 100, *, seed: int = 0) -> torch.Tensor:
    """A ``(batch, length)`` tensor of random token ids below ``vocab``, from its own generator.

    >>> token_ids(2, 5).shape
    torch.Size([2, 5])
    """
    _positive("token_ids", batch=batch, length=length, vocab=vocab)
    return torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(seed))
