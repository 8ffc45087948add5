"""Which models the survey builds, how, and on which inputs.

Three zoos, each model built with random weights and nothing downloaded:

- ``torchvision``: every name of ``torchvision.models.list_models()``, built with
  ``weights=None`` (and ``weights_backbone=None`` where there is a backbone);
  quantized models with ``quantize=True``.
- ``timm``: one model per timm family (the module a model is registered from),
  the one with the fewest parameters (:data:`TIMM_MODELS`, chosen by
  :func:`smallest_timm_models`), ``pretrained=False``, at its default input size.
- ``transformers``: common Hugging Face architectures from tiny configs
  (:data:`HF_CONFIGS`) with ``AutoModel.from_config``.

An :class:`Entry` knows how to build its model and make its inputs for a
batch size and a seed; the libraries are imported only when a model is built,
so listing the catalogue is cheap.

>>> entries = catalogue()
>>> entries["torchvision/resnet18"].category, entries["transformers/bert"].category
('classification', 'encoder')
"""

from __future__ import annotations

import functools
import importlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

ZOOS = ("torchvision", "timm", "transformers")

Inputs = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True)
class Entry:
    """One model of the survey: its zoo, category and name, and how to build and feed it.

    ``make_inputs(batch, seed)`` returns ``(args, kwargs)`` for a forward call.
    ``skip`` is the reason the model is not surveyed (it still appears in the data).
    """

    zoo: str
    category: str
    name: str
    build: Callable[[], nn.Module]
    make_inputs: Callable[[int, int], Inputs]
    shape: str  # the example input, as the page shows it
    skip: str | None = None

    @property
    def key(self) -> str:
        return f"{self.zoo}/{self.name}"


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _images(*size: int) -> Callable[[int, int], Inputs]:
    """Inputs of a model taking one float tensor of shape ``(batch, *size)``."""
    def make(batch: int, seed: int) -> Inputs:
        return (torch.randn(batch, *size, generator=_generator(seed)),), {}
    return make


def _describe(batch_shape: tuple[int, ...]) -> str:
    return "x".join(str(s) for s in batch_shape)


# -- torchvision ------------------------------------------------------------------

# Classification models run at 64x64 unless their architecture fixes the size.
_TV_SIZE = {"inception_v3": 299, "maxvit_t": 224, "quantized_inception_v3": 299}
_TV_SIZE.update({f"vit_{v}": 224 for v in ("b_16", "b_32", "l_16", "l_32", "h_14")})
# (frames, size); S3D ends in a fixed 2x7x7 average pool, so it needs 16 frames of 224x224.
_VIDEO = {"mvit_v1_b": (16, 224), "mvit_v2_s": (16, 224), "s3d": (16, 224)}
# Detection models resize every image to min_size..max_size; 800 by default is slow on CPU.
_DETECTION_SIZE = {"ssd300_vgg16": 300, "ssdlite320_mobilenet_v3_large": 320}


def _detection_inputs(size: int) -> Callable[[int, int], Inputs]:
    def make(batch: int, seed: int) -> Inputs:
        g = _generator(seed)
        return ([torch.rand(3, size, size, generator=g) for _ in range(batch)],), {}
    return make


def _two_frames(size: int) -> Callable[[int, int], Inputs]:
    def make(batch: int, seed: int) -> Inputs:
        g = _generator(seed)
        return (torch.randn(batch, 3, size, size, generator=g), torch.randn(batch, 3, size, size, generator=g)), {}
    return make


def _torchvision_build(name: str, kwargs: dict[str, Any]) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import torchvision
        return torchvision.models.get_model(name, weights=None, **kwargs)
    return build


def torchvision_entries() -> list[Entry]:
    """Every torchvision model, in ``list_models()`` order, with its category."""
    import torchvision.models as tvm

    categories = {}
    for category, module in (("classification", tvm), ("detection", tvm.detection),
                             ("segmentation", tvm.segmentation), ("video", tvm.video),
                             ("optical flow", tvm.optical_flow), ("quantization", tvm.quantization)):
        categories.update({name: category for name in tvm.list_models(module=module)})
    entries = []
    for name in tvm.list_models():
        category = categories[name]
        kwargs: dict[str, Any] = {}
        if category == "detection":
            size = _DETECTION_SIZE.get(name, 128)
            kwargs = {"weights_backbone": None}
            if name not in _DETECTION_SIZE:
                kwargs.update(min_size=size, max_size=size)
            make, shape = _detection_inputs(size), f"[3x{size}x{size}] per image"
        elif category == "segmentation":
            kwargs = {"weights_backbone": None}
            make, shape = _images(3, 64, 64), "1x3x64x64"
        elif category == "video":
            frames, size = _VIDEO.get(name, (4, 32))
            make, shape = _images(3, frames, size, size), _describe((1, 3, frames, size, size))
        elif category == "optical flow":
            make, shape = _two_frames(128), "1x3x128x128, 1x3x128x128"
        else:
            if category == "quantization":
                kwargs = {"quantize": True}
            size = _TV_SIZE.get(name, 64)
            make, shape = _images(3, size, size), _describe((1, 3, size, size))
        entries.append(Entry("torchvision", category, name, _torchvision_build(name, kwargs), make, shape))
    return entries


# -- timm -------------------------------------------------------------------------

# family (timm module) -> (model, parameter count, input size), chosen by smallest_timm_models().
TIMM_MODELS: dict[str, tuple[str, int, tuple[int, int, int]]] = {
    "beit": ("beit_base_patch16_224", 86530984, (3, 224, 224)),
    "byoanet": ("halonet_h1", 8100056, (3, 256, 256)),
    "byobnet": ("mobileone_s1", 4825192, (3, 224, 224)),
    "cait": ("cait_xxs24_224", 11956264, (3, 224, 224)),
    "coat": ("coat_tiny", 5498540, (3, 224, 224)),
    "convit": ("convit_tiny", 5710512, (3, 224, 224)),
    "convmixer": ("convmixer_768_32", 21110248, (3, 224, 224)),
    "convnext": ("convnext_atto_rms", 3693040, (3, 224, 224)),
    "cpubone": ("cpubone_nano", 6519700, (3, 224, 224)),
    "crossvit": ("crossvit_tiny_240", 7014800, (3, 240, 240)),
    "csatv2": ("csatv2", 11103444, (3, 512, 512)),
    "cspnet": ("cs3darknet_focus_s", 3274728, (3, 256, 256)),
    "cspnext": ("cspnext_tiny", 2733700, (3, 224, 224)),
    "davit": ("davit_tiny", 28360168, (3, 224, 224)),
    "deepseek_vit": ("deepseek_vit_412m", 411842560, (3, 546, 546)),
    "deit": ("deit_tiny_patch16_224", 5717416, (3, 224, 224)),
    "densenet": ("densenet121", 7978856, (3, 224, 224)),
    "dla": ("dla46x_c", 1068440, (3, 224, 224)),
    "dpn": ("dpn48b", 9126226, (3, 224, 224)),
    "edgenext": ("edgenext_xx_small", 1327216, (3, 256, 256)),
    "efficientformer": ("efficientformer_l1", 12289928, (3, 224, 224)),
    "efficientformer_v2": ("efficientformerv2_s0", 3600256, (3, 224, 224)),
    "efficientnet": ("mobilenetv2_050", 1968680, (3, 224, 224)),
    "efficientvim": ("efficientvim_m1", 6679458, (3, 224, 224)),
    "efficientvit_mit": ("efficientvit_b0", 3410008, (3, 224, 224)),
    "efficientvit_msra": ("efficientvit_m0", 2349436, (3, 224, 224)),
    "eva": ("vit_tiny_patch16_dinov3_qkvb", 5489664, (3, 256, 256)),
    "fasternet": ("fasternet_t0", 3905500, (3, 224, 224)),
    "fastvit": ("fastvit_s12", 9473576, (3, 256, 256)),
    "focalnet": ("focalnet_tiny_srf", 28427116, (3, 224, 224)),
    "gcvit": ("gcvit_xxtiny", 11995428, (3, 224, 224)),
    "gemma4_vit": ("gemma4_vit_167m", 167364608, (3, 768, 768)),
    "ghostnet": ("ghostnet_050", 2587292, (3, 224, 224)),
    "hardcorenas": ("hardcorenas_b", 5176544, (3, 224, 224)),
    "hgnet": ("hgnetv2_b0", 5996550, (3, 224, 224)),
    "hiera": ("hiera_tiny_224", 27910216, (3, 224, 224)),
    "hieradet_sam2": ("sam2_hiera_tiny", 26851008, (3, 896, 896)),
    "hrnet": ("hrnet_w18_small", 13187464, (3, 224, 224)),
    "iformer": ("iformer_t", 2886456, (3, 224, 224)),
    "inception_next": ("inception_next_atto", 4156520, (3, 224, 224)),
    "inception_resnet_v2": ("inception_resnet_v2", 55843464, (3, 299, 299)),
    "inception_v3": ("inception_v3", 23834568, (3, 299, 299)),
    "inception_v4": ("inception_v4", 42679816, (3, 299, 299)),
    "lcnetv2": ("lcnetv2_small", 4128552, (3, 224, 224)),
    "levit": ("levit_384_s8", 39118960, (3, 224, 224)),
    "lowformer": ("lowformer_b0", 14100472, (3, 224, 224)),
    "mambaout": ("mambaout_femto", 7304536, (3, 224, 224)),
    "maxxvit": ("maxvit_pico_rw_256", 7457996, (3, 256, 256)),
    "metaformer": ("poolformerv2_s12", 11891712, (3, 224, 224)),
    "mlp_mixer": ("gmixer_12_224", 12701080, (3, 224, 224)),
    "mobilenetv3": ("mobilenetv4_conv_small_035", 1905384, (3, 224, 224)),
    "mobilenetv5": ("mobilenetv5_base", 82647976, (3, 256, 256)),
    "mobilevit": ("mobilevit_xxs", 1272024, (3, 256, 256)),
    "mvitv2": ("mvitv2_tiny", 24173320, (3, 224, 224)),
    "naflexvit": ("naflexvit_base_patch16_gap", 86633704, (3, 384, 384)),
    "nasnet": ("nasnetalarge", 88753150, (3, 331, 331)),
    "nest": ("nest_tiny", 17057608, (3, 224, 224)),
    "nextvit": ("nextvit_small", 31763368, (3, 224, 224)),
    "nfnet": ("test_nfnet", 383080, (3, 160, 160)),
    "pit": ("pit_ti_224", 4847272, (3, 224, 224)),
    "pnasnet": ("pnasnet5large", 86057668, (3, 331, 331)),
    "pvt_v2": ("pvt_v2_b0", 3666760, (3, 224, 224)),
    "qwen3_vit": ("qwen3_vit_88m", 87414528, (3, 768, 768)),
    "rdnet": ("rdnet_tiny", 23863008, (3, 224, 224)),
    "regnet": ("regnetx_002", 2684792, (3, 224, 224)),
    "repghost": ("repghostnet_050", 2313968, (3, 224, 224)),
    "repvit": ("repvit_m1", 5485248, (3, 224, 224)),
    "res2net": ("res2next50", 24671464, (3, 224, 224)),
    "resnest": ("resnest14d", 10611688, (3, 224, 224)),
    "resnet": ("resnet18", 11689512, (3, 224, 224)),
    "resnetv2": ("resnetv2_18", 11687720, (3, 224, 224)),
    "rexnet": ("rexnet_100", 4796873, (3, 224, 224)),
    "selecsls": ("selecsls42", 30354952, (3, 224, 224)),
    "senet": ("legacy_seresnet18", 11778592, (3, 224, 224)),
    "sequencer": ("sequencer2d_s", 27651688, (3, 224, 224)),
    "shvit": ("shvit_s1", 6330808, (3, 224, 224)),
    "sknet": ("skresnet18", 11958056, (3, 224, 224)),
    "starnet": ("starnet_s1", 2869168, (3, 224, 224)),
    "swiftformer": ("swiftformer_xs", 3475360, (3, 224, 224)),
    "swin_transformer": ("swin_tiny_patch4_window7_224", 28288354, (3, 224, 224)),
    "swin_transformer_v2": ("swinv2_tiny_window8_256", 28347154, (3, 256, 256)),
    "swin_transformer_v2_cr": ("swinv2_cr_tiny_224", 28332124, (3, 224, 224)),
    "tiny_vit": ("tiny_vit_5m_224", 12082725, (3, 224, 224)),
    "tnt": ("tnt_s_legacy_patch16_224", 23755336, (3, 224, 224)),
    "tresnet": ("tresnet_m", 31389032, (3, 224, 224)),
    "twins": ("twins_svt_small", 24060776, (3, 224, 224)),
    "vgg": ("vgg11", 132863336, (3, 224, 224)),
    "visformer": ("visformer_tiny", 10321368, (3, 224, 224)),
    "vision_transformer": ("vit_tiny_patch16_224", 5717416, (3, 224, 224)),
    "vision_transformer_hybrid": ("vit_tiny_r_s16_p8_224", 6337704, (3, 224, 224)),
    "vision_transformer_relpos": ("test_vit_relpos", 850147, (3, 160, 160)),
    "vision_transformer_sam": ("samvit_base_patch16_224", 86457064, (3, 224, 224)),
    "vitamin": ("vitamin_small_224", 22173376, (3, 224, 224)),
    "volo": ("volo_d1_224", 26632040, (3, 224, 224)),
    "vovnet": ("ese_vovnet19b_slim_dw", 1897752, (3, 224, 224)),
    "xception": ("legacy_xception", 22855952, (3, 299, 299)),
    "xception_aligned": ("xception41p", 26907752, (3, 299, 299)),
    "xcit": ("xcit_nano_12_p8_224", 3049016, (3, 224, 224)),
}

# Words timm uses for small variants, smallest first: a large family's candidates are its
# best-ranked names.
_SIZE_WORDS = [r"atto", r"femto", r"pico", r"nano", r"tiny|xxs|_t\b|_ti\b", r"mini|xs\b|micro|lite|light",
               r"small|_s\b|_s\d|b0\b|\b\w*18\b|_n\b"]


def _size_rank(name: str) -> tuple[int, int, int]:
    rank = next((i for i, word in enumerate(_SIZE_WORDS) if re.search(word, name)), len(_SIZE_WORDS))
    return rank, sum(int(n) for n in re.findall(r"\d+", name)), len(name)


def smallest_timm_models() -> dict[str, tuple[str, int, tuple[int, int, int]]]:
    """For each timm family, the candidate with the fewest parameters (ties: the smaller input).

    Candidates are all the family's models when it has at most 25, else the 4
    whose names rank smallest by size words (atto, nano, tiny, small...).
    Parameters are counted on the meta device, without allocating memory; it
    still takes minutes. Its result is :data:`TIMM_MODELS`, written into this
    file by hand when timm changes.
    """
    import timm

    chosen = {}
    for family in timm.list_modules():
        best = None
        names = timm.list_models(module=family)
        for name in names if len(names) <= 25 else sorted(names, key=_size_rank)[:4]:
            try:
                with torch.device("meta"):
                    model = timm.create_model(name, pretrained=False)
            except Exception:  # a model that cannot be built here is not a candidate
                continue
            params = sum(p.numel() for p in model.parameters())
            size = tuple(model.pretrained_cfg.get("input_size", (3, 224, 224)))
            if best is None or (params, size[1] * size[2]) < (best[1], best[2][1] * best[2][2]):
                best = (name, params, size)
        if best is not None:
            chosen[family] = best
    return chosen


def _timm_build(name: str) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import timm
        return timm.create_model(name, pretrained=False)
    return build


def timm_entries() -> list[Entry]:
    return [Entry("timm", family, name, _timm_build(name), _images(*size), _describe((1, *size)))
            for family, (name, _, size) in sorted(TIMM_MODELS.items())]


# -- Hugging Face transformers ----------------------------------------------------

_TEXT = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64}
_SEQ2SEQ = {"d_model": 32, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4,
            "decoder_attention_heads": 4, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64}
_DECODER = {**_TEXT, "num_key_value_heads": 2}

# name -> (category, model_type, config overrides, inputs)
HF_CONFIGS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    "bert": ("encoder", "bert", _TEXT, "ids"),
    "roberta": ("encoder", "roberta", _TEXT, "ids"),
    "distilbert": ("encoder", "distilbert", {"dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64}, "ids"),
    "albert": ("encoder", "albert", {**_TEXT, "embedding_size": 16}, "ids"),
    "electra": ("encoder", "electra", {**_TEXT, "embedding_size": 16}, "ids"),
    "deberta-v2": ("encoder", "deberta-v2", _TEXT, "ids"),
    "xlm-roberta": ("encoder", "xlm-roberta", _TEXT, "ids"),
    "gpt2": ("decoder", "gpt2", {"n_embd": 32, "n_layer": 2, "n_head": 4}, "ids"),
    "gpt-neo": ("decoder", "gpt_neo", {"hidden_size": 32, "num_layers": 2, "num_heads": 4,
                                       "attention_types": [[["global", "local"], 1]]}, "ids"),
    "opt": ("decoder", "opt", {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
                               "ffn_dim": 64, "word_embed_proj_dim": 32}, "ids"),
    "llama": ("decoder", "llama", _DECODER, "ids"),
    "mistral": ("decoder", "mistral", _DECODER, "ids"),
    "qwen2": ("decoder", "qwen2", _DECODER, "ids"),
    "phi": ("decoder", "phi", _DECODER, "ids"),
    "gemma": ("decoder", "gemma", {**_DECODER, "head_dim": 8}, "ids"),
    "bloom": ("decoder", "bloom", {"hidden_size": 32, "n_layer": 2, "n_head": 4}, "ids"),
    "t5": ("encoder-decoder", "t5", {"d_model": 32, "d_ff": 64, "d_kv": 8, "num_layers": 2,
                                     "num_decoder_layers": 2, "num_heads": 4}, "seq2seq"),
    "bart": ("encoder-decoder", "bart", _SEQ2SEQ, "seq2seq"),
    "marian": ("encoder-decoder", "marian", _SEQ2SEQ, "seq2seq"),
    "pegasus": ("encoder-decoder", "pegasus", _SEQ2SEQ, "seq2seq"),
    "vit": ("vision", "vit", {**_TEXT, "image_size": 32, "patch_size": 8}, "pixels32"),
    "deit": ("vision", "deit", {**_TEXT, "image_size": 32, "patch_size": 8}, "pixels32"),
    "beit": ("vision", "beit", {**_TEXT, "image_size": 32, "patch_size": 8}, "pixels32"),
    "swin": ("vision", "swin", {"image_size": 32, "patch_size": 4, "embed_dim": 16, "depths": [1, 1],
                                "num_heads": [2, 2], "window_size": 4}, "pixels32"),
    "convnext": ("vision", "convnext", {"hidden_sizes": [8, 16], "depths": [1, 1], "num_stages": 2}, "pixels32"),
    "resnet": ("vision", "resnet", {"embedding_size": 8, "hidden_sizes": [8, 16], "depths": [1, 1]}, "pixels32"),
    "mobilevit": ("vision", "mobilevit", {"image_size": 32, "hidden_sizes": [16, 24, 32],
                                          "neck_hidden_sizes": [8, 8, 16, 16, 24, 24, 32]}, "pixels32"),
    "wav2vec2": ("speech", "wav2vec2", {**_TEXT, "conv_dim": [16, 16], "conv_stride": [5, 2],
                                        "conv_kernel": [10, 3], "num_conv_pos_embeddings": 16,
                                        "num_conv_pos_embedding_groups": 4}, "audio"),
    "hubert": ("speech", "hubert", {**_TEXT, "conv_dim": [16, 16], "conv_stride": [5, 2],
                                    "conv_kernel": [10, 3], "num_conv_pos_embeddings": 16,
                                    "num_conv_pos_embedding_groups": 4}, "audio"),
    "whisper": ("speech", "whisper", {**_SEQ2SEQ, "num_mel_bins": 16, "max_source_positions": 32,
                                      "max_target_positions": 32}, "mel"),
}
_SEQ = 8


def _hf_inputs(kind: str) -> tuple[Callable[[int, int], Inputs], str]:
    def make(batch: int, seed: int) -> Inputs:
        g = _generator(seed)
        if kind == "ids":
            return (), {"input_ids": torch.randint(3, 100, (batch, _SEQ), generator=g)}
        if kind == "seq2seq":
            return (), {"input_ids": torch.randint(3, 100, (batch, _SEQ), generator=g),
                        "decoder_input_ids": torch.randint(3, 100, (batch, 4), generator=g)}
        if kind == "pixels32":
            return (), {"pixel_values": torch.randn(batch, 3, 32, 32, generator=g)}
        if kind == "audio":
            return (), {"input_values": torch.randn(batch, 400, generator=g)}
        if kind == "mel":
            return (), {"input_features": torch.randn(batch, 16, 64, generator=g),
                        "decoder_input_ids": torch.randint(3, 100, (batch, 4), generator=g)}
        raise ValueError(f"unknown input kind {kind!r}")
    shapes = {"ids": f"input_ids 1x{_SEQ}", "seq2seq": f"input_ids 1x{_SEQ}, decoder_input_ids 1x4",
              "pixels32": "pixel_values 1x3x32x32", "audio": "input_values 1x400",
              "mel": "input_features 1x16x64, decoder_input_ids 1x4"}
    return make, shapes[kind]


def _hf_build(model_type: str, overrides: dict[str, Any]) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoConfig, AutoModel
        config = AutoConfig.for_model(model_type, **overrides)
        config.use_cache = False  # outputs are tensors, not a cache object
        return AutoModel.from_config(config)
    return build


def transformers_entries() -> list[Entry]:
    entries = []
    for name, (category, model_type, overrides, kind) in HF_CONFIGS.items():
        make, shape = _hf_inputs(kind)
        entries.append(Entry("transformers", category, name, _hf_build(model_type, overrides), make, shape))
    return entries


@functools.cache
def unavailable_zoos() -> dict[str, str]:
    """The zoos whose library does not import with this torch, each with the error.

    A drift target may have no torchvision built for it (and timm needs
    torchvision): the survey then lists and surveys the other zoos only.
    """
    missing = {}
    for zoo in ZOOS:
        try:
            importlib.import_module("torchvision.models" if zoo == "torchvision" else zoo)
        except Exception as error:  # not installed, or built for another torch
            missing[zoo] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    return missing


@functools.cache
def catalogue() -> dict[str, Entry]:
    """Every model of the survey by key (``zoo/name``), zoo after zoo, of the zoos that import here."""
    listers = {"torchvision": torchvision_entries, "timm": timm_entries, "transformers": transformers_entries}
    entries = [entry for zoo in ZOOS if zoo not in unavailable_zoos() for entry in listers[zoo]()]
    return {entry.key: entry for entry in entries}
