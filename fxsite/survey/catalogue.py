"""Which models the survey builds, how, and on which inputs.

Three zoos, each model built with random weights and nothing downloaded:

- ``torchvision``: every name of ``torchvision.models.list_models()``, built with
  ``weights=None`` (and ``weights_backbone=None`` where there is a backbone);
  quantized models with ``quantize=True``.
- ``timm``: one model per timm family (the module a model is registered from),
  the one with the fewest parameters (:data:`TIMM_MODELS`, chosen by
  :func:`smallest_timm_models`), ``pretrained=False``, at its default input size.
- ``transformers``: the model types of transformers' ``MODEL_MAPPING_NAMES``,
  each with ``AutoModel.from_config`` on its default config made small: thirty
  common architectures by hand-written sizes (:data:`HF_CONFIGS`, the survey's
  first set), the others by :func:`shrink_config` (:data:`HF_TYPES`, chosen by
  :func:`hf_types`). Every other setting, the cache included, stays the
  type's default. A type that cannot be built small or run on the survey's
  inputs is listed as not built, with the reason (:data:`HF_NOT_BUILT`).

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


# -- the other model types: default configs shrunk generically ---------------------

# Config fields by what they size; each is shrunk where the default is larger.
_WIDTHS = {"hidden_size", "d_model", "n_embd", "dim", "embed_dim", "word_embed_proj_dim", "embedding_size",
           "projection_dim", "text_embed_dim", "vision_embed_dim", "output_hidden_size", "proj_dim", "d_embed",
           "hidden_dim_size", "kv_lora_rank", "q_lora_rank", "encoder_hidden_size", "decoder_hidden_size"}
_DEPTHS = {"num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers", "decoder_layers",
           "num_decoder_layers", "num_encoder_layers", "num_text_layers", "num_vision_layers"}
_HEADS = {"num_attention_heads", "n_head", "n_heads", "num_heads", "encoder_attention_heads",
          "decoder_attention_heads"}
_FFN = {"intermediate_size", "ffn_dim", "d_ff", "encoder_ffn_dim", "decoder_ffn_dim", "n_inner", "hidden_dim",
        "moe_intermediate_size", "shared_expert_intermediate_size", "decoder_intermediate_size",
        "encoder_intermediate_size", "expert_intermediate_size", "dense_intermediate_size"}
_EXPERTS = {"num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"}
_SMALL = {**dict.fromkeys(_WIDTHS, 32), **dict.fromkeys(_DEPTHS, 2), **dict.fromkeys(_HEADS, 4),
          **dict.fromkeys(_FFN, 64), **dict.fromkeys(_EXPERTS, 4), "num_experts_per_tok": 2,
          "num_key_value_heads": 2, "head_dim": 8, "d_kv": 8, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8,
          "v_head_dim": 8, "n_group": 1, "topk_group": 1, "image_size": 64, "num_mel_bins": 16}
_MIN_VOCAB = 256


def shrink_config(config: Any) -> Any:
    """``config`` (a transformers config at its defaults) made small in place, and returned.

    Widths become 32, depths 2, heads 4 (2 for key-value heads), feed-forward
    sizes 64, experts 4, images 64x64; a size already smaller stays. Lists
    sized by the depth (``layer_types``...) are cut to it, stage lists
    (``depths``, ``hidden_sizes``) become one block per stage, the vocabulary
    shrinks to the largest special token id it must hold. Sub-configs
    (``text_config``, ``vision_config``...) are shrunk the same way. Nothing
    else changes: the cache setting, the attention and the rest stay the defaults.
    """
    from transformers import PretrainedConfig

    fields = vars(config)
    layers = {name: fields[name] for name in _DEPTHS if isinstance(fields.get(name), int)}
    for name, value in list(fields.items()):
        if isinstance(value, PretrainedConfig):
            shrink_config(value)
        elif isinstance(value, bool) or name.startswith("_"):
            continue
        elif isinstance(value, int) and name in _SMALL and value > _SMALL[name]:
            setattr(config, name, _SMALL[name])
        elif isinstance(value, list) and value and layers and len(value) in layers.values() \
                and name not in ("depths", "hidden_sizes", "out_indices", "out_features", "stage_names"):
            setattr(config, name, value[:2])
    if isinstance(fields.get("depths"), list) and all(isinstance(d, int) for d in fields["depths"]):
        config.depths = [1] * len(fields["depths"])
    if isinstance(fields.get("hidden_sizes"), list) and all(isinstance(d, int) for d in fields["hidden_sizes"]):
        config.hidden_sizes = [16 * (i + 1) for i in range(len(fields["hidden_sizes"]))]
    if isinstance(fields.get("conv_dim"), list):
        config.conv_dim = [min(d, 32) for d in fields["conv_dim"]]
    vocab = fields.get("vocab_size")
    if isinstance(vocab, int) and vocab > _MIN_VOCAB:
        ids = [v for k, v in fields.items() if k.endswith("token_id") and isinstance(v, int)]
        ids += [i for k, v in fields.items() if k.endswith("token_id") and isinstance(v, list)
                for i in v if isinstance(i, int)]
        config.vocab_size = min(vocab, max([_MIN_VOCAB - 1, *ids]) + 1)
    return config


def _hf_inputs(kind: str, size: int = 32, channels: int = 3, mel: int = 16) -> tuple[Callable[[int, int], Inputs], str]:
    """Inputs of one kind: token ids (``ids``), ids with decoder ids (``seq2seq``), images (``pixels``),
    a waveform (``audio``), or log-mel features with decoder ids (``mel``)."""
    def make(batch: int, seed: int) -> Inputs:
        g = _generator(seed)
        if kind == "ids":
            return (), {"input_ids": torch.randint(3, 100, (batch, _SEQ), generator=g)}
        if kind == "seq2seq":
            return (), {"input_ids": torch.randint(3, 100, (batch, _SEQ), generator=g),
                        "decoder_input_ids": torch.randint(3, 100, (batch, 4), generator=g)}
        if kind in ("pixels32", "pixels"):
            return (), {"pixel_values": torch.randn(batch, channels, size, size, generator=g)}
        if kind == "ids+pixels":
            return (), {"input_ids": torch.randint(3, 100, (batch, _SEQ), generator=g),
                        "pixel_values": torch.randn(batch, channels, size, size, generator=g)}
        if kind == "audio":
            return (), {"input_values": torch.randn(batch, 400 if size == 32 else 1600, generator=g)}
        if kind == "mel":
            return (), {"input_features": torch.randn(batch, mel, 64, generator=g),
                        "decoder_input_ids": torch.randint(3, 100, (batch, 4), generator=g)}
        raise ValueError(f"unknown input kind {kind!r}")
    shapes = {"ids": f"input_ids 1x{_SEQ}", "seq2seq": f"input_ids 1x{_SEQ}, decoder_input_ids 1x4",
              "pixels32": "pixel_values 1x3x32x32", "pixels": f"pixel_values 1x{channels}x{size}x{size}",
              "ids+pixels": f"input_ids 1x{_SEQ}, pixel_values 1x{channels}x{size}x{size}",
              "audio": f"input_values 1x{400 if size == 32 else 1600}",
              "mel": f"input_features 1x{mel}x64, decoder_input_ids 1x4"}
    return make, shapes[kind]


def _hf_build(model_type: str, overrides: dict[str, Any] | None) -> Callable[[], nn.Module]:
    """The model of ``model_type`` from its default config with ``overrides`` (a hand-written small
    config), or, with ``None``, its default config shrunk by :func:`shrink_config`. The cache and every
    other setting stay at the type's default."""
    def build() -> nn.Module:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoConfig, AutoModel
        config = AutoConfig.for_model(model_type, **(overrides or {}))
        return AutoModel.from_config(shrink_config(config) if overrides is None else config)
    return build


def hf_input_kind(model_type: str) -> tuple[str, int, int, int]:
    """``(kind, image size, channels, mel bins)`` of a model type's inputs, from its model class's
    ``main_input_name`` and its shrunk config (the image size and channels of its vision config where it has one).
    Raises ``ValueError`` for an input the survey does not make."""
    from transformers import AutoConfig, AutoModel
    config = shrink_config(AutoConfig.for_model(model_type))
    with torch.device("meta"):
        name = AutoModel.from_config(config).main_input_name
    vision = getattr(config, "vision_config", None) or config
    size, channels = getattr(vision, "image_size", 64), getattr(vision, "num_channels", 3)
    size = size[0] if isinstance(size, (list, tuple)) else size
    if name == "input_ids":
        return ("seq2seq" if config.is_encoder_decoder else "ids"), size, channels, 16
    if name == "pixel_values" and isinstance(size, int) and isinstance(channels, int):
        return "pixels", size, channels, 16
    if name == "input_values":
        return "audio", 64, 1, 16
    if name == "input_features" and config.is_encoder_decoder:
        return "mel", size, channels, getattr(config, "num_mel_bins", 16)
    raise ValueError(f"main input {name!r} is not one the survey makes")


HF_SAMPLE = 80  # model types of HF_TYPES the survey runs, besides the thirty of HF_CONFIGS


def hf_sample(size: int = HF_SAMPLE) -> set[str]:
    """The ``size`` model types of :data:`HF_TYPES` the survey runs: those first in the order of the
    SHA-256 of their names, a fixed choice that neither the alphabet nor a category biases.

    >>> len(hf_sample(10)), hf_sample(10) <= set(HF_TYPES)
    (10, True)
    """
    import hashlib
    return set(sorted(HF_TYPES, key=lambda name: hashlib.sha256(name.encode()).hexdigest())[:size])


def transformers_entries() -> list[Entry]:
    entries = []
    for name, (category, model_type, overrides, kind) in HF_CONFIGS.items():
        make, shape = _hf_inputs(kind)
        entries.append(Entry("transformers", category, name, _hf_build(model_type, overrides), make, shape))
    chosen = hf_sample()
    for model_type, (category, kind, size, channels, mel) in HF_TYPES.items():
        make, shape = _hf_inputs(kind, size, channels, mel)
        skip = None if model_type in chosen else (
            f"built small, not in the survey's fixed sample of {HF_SAMPLE} of the {len(HF_TYPES)} types that build "
            "(chosen by a hash of the name): a survey of them all takes hours on a CPU")
        entries.append(Entry("transformers", category, model_type, _hf_build(model_type, None), make, shape, skip))
    for model_type, reason in HF_NOT_BUILT.items():
        entries.append(Entry("transformers", "not built", model_type, _hf_build(model_type, None),
                             _hf_inputs("ids")[0], "", skip=f"not built: {reason}"))
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


def _hf_category(model_type: str, kind: str) -> str:
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    config = AutoConfig.for_model(model_type)
    if kind in ("pixels", "pixels32"):
        return "vision"
    if kind == "ids+pixels":
        return "multimodal"
    if kind in ("audio", "mel"):
        return "speech"
    if kind == "seq2seq":
        return "encoder-decoder"
    if any(isinstance(v, type(config).__mro__[-2]) for v in vars(config).values()):
        return "multimodal"
    return "decoder" if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES else "encoder"


def probe_transformers_type(model_type: str, timeout: float = 120) -> tuple[str, str, int, int, int] | str:
    """``(category, kind, size, channels, mel)`` of a model type the survey can build small and run on its
    inputs, or the reason it cannot (a string): what :func:`hf_types` writes into :data:`HF_TYPES` and
    :data:`HF_NOT_BUILT`."""
    import warnings
    from fxguide.diagnose.messages import describe
    from fxguide.diagnose.safety import ToolTimeout, time_limit
    os.environ["HF_HUB_OFFLINE"] = "1"
    stage = "shrunk default config"
    try:
        with time_limit(timeout), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kind, size, channels, mel = hf_input_kind(model_type)
            stage = "small model"
            torch.manual_seed(0)
            model = _hf_build(model_type, None)().eval()
            stage = f"eager call on {_hf_inputs(kind, size, channels, mel)[1]}"
            args, kwargs = _hf_inputs(kind, size, channels, mel)[0](1, 0)
            with torch.no_grad():
                try:
                    model(*args, **kwargs)
                except Exception:  # a text-image model (CLIP-like) that needs both inputs
                    if kind != "ids" or not hasattr(getattr(model, "config", None), "vision_config"):
                        raise
                    kind = "ids+pixels"
                    args, kwargs = _hf_inputs(kind, size, channels, mel)[0](1, 0)
                    model(*args, **kwargs)
            return _hf_category(model_type, kind), kind, size, channels, mel
    except (Exception, ToolTimeout) as exc:
        kind, text = describe(exc)
        return f"{stage}: {kind}: {text.splitlines()[0][:200] if text else ''}"


def hf_component(model_type: str) -> bool:
    """Whether ``model_type``'s config is a sub-config of another type (``clip_vision_model`` of ``clip``):
    a part of an architecture the zoo lists, left out of the zoo."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    parts = set()
    for name in CONFIG_MAPPING.keys():
        try:
            config = CONFIG_MAPPING[name]
        except Exception:  # a config class whose module does not import here
            continue
        parts.update(v for v in (getattr(config, "sub_configs", None) or {}).values() if isinstance(v, type))
    return model_type in CONFIG_MAPPING and CONFIG_MAPPING[model_type] in parts


def hf_types(model_types: list[str] | None = None, processes: int = 2) -> dict[str, Any]:
    """Every model type of transformers' ``MODEL_MAPPING_NAMES`` (not the 30 of :data:`HF_CONFIGS`, nor
    the components of another type, :func:`hf_component`) probed by :func:`probe_transformers_type` in separate processes; slow (minutes)."""
    import multiprocessing
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES
    hand = {model_type for _, model_type, _, _ in HF_CONFIGS.values()}
    types = [t for t in (model_types or MODEL_MAPPING_NAMES) if t not in hand and not hf_component(t)]
    with multiprocessing.get_context("spawn").Pool(processes, maxtasksperchild=8) as pool:
        return dict(zip(types, pool.map(probe_transformers_type, types, chunksize=1)))


# Written by `python -m fxsite.survey --hf-types` (transformers 5.23.0): the model types built small
# and run once, as (category, input kind, image size, channels, mel bins); and the others, with the reason.
HF_TYPES: dict[str, tuple[str, str, int, int, int]] = {
    'afmoe': ('decoder', 'ids', 64, 3, 16),
    'aimv2': ('multimodal', 'ids+pixels', 64, 3, 16),
    'altclip': ('multimodal', 'ids+pixels', 64, 3, 16),
    'apertus': ('decoder', 'ids', 64, 3, 16),
    'arcee': ('decoder', 'ids', 64, 3, 16),
    'aria': ('multimodal', 'ids', 64, 3, 16),
    'audioflamingo3': ('multimodal', 'ids', 64, 3, 16),
    'aya_vision': ('multimodal', 'ids', 64, 3, 16),
    'beam': ('decoder', 'ids', 64, 3, 16),
    'bert-generation': ('decoder', 'ids', 64, 3, 16),
    'big_bird': ('decoder', 'ids', 64, 3, 16),
    'bigbird_pegasus': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'biogpt': ('decoder', 'ids', 64, 3, 16),
    'bitnet': ('decoder', 'ids', 64, 3, 16),
    'blenderbot': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'blenderbot-small': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'blip': ('multimodal', 'ids+pixels', 64, 3, 16),
    'camembert': ('decoder', 'ids', 64, 3, 16),
    'canine': ('encoder', 'ids', 64, 3, 16),
    'chinese_clip': ('multimodal', 'ids+pixels', 64, 3, 16),
    'clip': ('multimodal', 'ids+pixels', 64, 3, 16),
    'clipseg': ('multimodal', 'ids+pixels', 64, 3, 16),
    'cohere': ('decoder', 'ids', 64, 3, 16),
    'cohere2': ('decoder', 'ids', 64, 3, 16),
    'cohere2_moe': ('decoder', 'ids', 64, 3, 16),
    'cohere2_vision': ('multimodal', 'ids', 64, 3, 16),
    'conditional_detr': ('vision', 'pixels', 64, 3, 16),
    'convbert': ('encoder', 'ids', 64, 3, 16),
    'convnextv2': ('vision', 'pixels', 64, 3, 16),
    'cosmos3_edge': ('multimodal', 'ids', 64, 3, 16),
    'cosmos3_omni': ('multimodal', 'ids', 64, 3, 16),
    'cpmant': ('decoder', 'ids', 64, 3, 16),
    'ctrl': ('decoder', 'ids', 64, 3, 16),
    'cvt': ('vision', 'pixels', 64, 3, 16),
    'cwm': ('decoder', 'ids', 64, 3, 16),
    'dab-detr': ('vision', 'pixels', 64, 3, 16),
    'data2vec-audio': ('speech', 'audio', 64, 1, 16),
    'data2vec-text': ('decoder', 'ids', 64, 3, 16),
    'data2vec-vision': ('vision', 'pixels', 64, 3, 16),
    'deberta': ('encoder', 'ids', 64, 3, 16),
    'deepseek_v4': ('decoder', 'ids', 64, 3, 16),
    'deepseek_vl': ('multimodal', 'ids', 64, 3, 16),
    'deepseek_vl_hybrid': ('multimodal', 'ids', 64, 3, 16),
    'detr': ('vision', 'pixels', 64, 3, 16),
    'diffllama': ('decoder', 'ids', 64, 3, 16),
    'dinov2': ('vision', 'pixels', 64, 3, 16),
    'dinov2_with_registers': ('vision', 'pixels', 64, 3, 16),
    'dinov3_convnext': ('vision', 'pixels', 64, 3, 16),
    'dinov3_vit': ('vision', 'pixels', 64, 3, 16),
    'doge': ('decoder', 'ids', 64, 3, 16),
    'dpr': ('encoder', 'ids', 64, 3, 16),
    'dpt': ('vision', 'pixels', 64, 3, 16),
    'embedding_gemma2': ('multimodal', 'ids', 64, 3, 16),
    'ernie': ('decoder', 'ids', 64, 3, 16),
    'ernie4_5': ('decoder', 'ids', 64, 3, 16),
    'eurobert': ('encoder', 'ids', 64, 3, 16),
    'exaone4': ('decoder', 'ids', 64, 3, 16),
    'exaone4_5': ('multimodal', 'ids', 64, 3, 16),
    'exaone_moe': ('decoder', 'ids', 64, 3, 16),
    'falcon': ('decoder', 'ids', 64, 3, 16),
    'falcon_h1': ('decoder', 'ids', 64, 3, 16),
    'falcon_mamba': ('decoder', 'ids', 64, 3, 16),
    'fast_vlm': ('multimodal', 'ids', 64, 3, 16),
    'flaubert': ('encoder', 'ids', 64, 3, 16),
    'flava': ('multimodal', 'ids', 64, 3, 16),
    'flex_olmo': ('decoder', 'ids', 64, 3, 16),
    'flint': ('decoder', 'ids', 64, 3, 16),
    'florence2': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'fnet': ('encoder', 'ids', 64, 3, 16),
    'focalnet': ('vision', 'pixels', 64, 3, 16),
    'fsmt': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'fun_asr_nano': ('multimodal', 'ids', 64, 3, 16),
    'fuyu': ('multimodal', 'ids', 64, 3, 16),
    'gemma2': ('decoder', 'ids', 64, 3, 16),
    'gemma3': ('multimodal', 'ids', 64, 3, 16),
    'gemma4': ('multimodal', 'ids', 64, 3, 16),
    'gemma4_unified': ('multimodal', 'ids', 64, 3, 16),
    'git': ('multimodal', 'ids', 64, 3, 16),
    'glm': ('decoder', 'ids', 64, 3, 16),
    'glm4': ('decoder', 'ids', 64, 3, 16),
    'glm4_moe': ('decoder', 'ids', 64, 3, 16),
    'glmasr': ('multimodal', 'ids', 64, 3, 16),
    'glpn': ('vision', 'pixels', 64, 3, 16),
    'got_ocr2': ('multimodal', 'ids', 64, 3, 16),
    'gpt-sw3': ('decoder', 'ids', 64, 3, 16),
    'gpt_bigcode': ('decoder', 'ids', 64, 3, 16),
    'gpt_neox': ('decoder', 'ids', 64, 3, 16),
    'gpt_neox_japanese': ('decoder', 'ids', 64, 3, 16),
    'gpt_oss': ('decoder', 'ids', 64, 3, 16),
    'gradium_phonon_tts': ('multimodal', 'ids', 64, 3, 16),
    'granite': ('decoder', 'ids', 64, 3, 16),
    'granite_docling': ('multimodal', 'ids', 64, 3, 16),
    'granite_speech': ('multimodal', 'ids', 64, 3, 16),
    'granite_speech_plus': ('multimodal', 'ids', 64, 3, 16),
    'granite_swa': ('decoder', 'ids', 64, 3, 16),
    'granitemoe': ('decoder', 'ids', 64, 3, 16),
    'granitemoe_swa': ('decoder', 'ids', 64, 3, 16),
    'granitemoeshared': ('decoder', 'ids', 64, 3, 16),
    'groupvit': ('multimodal', 'ids+pixels', 64, 3, 16),
    'gte': ('encoder', 'ids', 64, 3, 16),
    'helium': ('decoder', 'ids', 64, 3, 16),
    'hgnet_v2': ('vision', 'pixels', 64, 3, 16),
    'hiera': ('vision', 'pixels', 224, 3, 16),
    'higgs_audio_v2': ('encoder', 'ids', 64, 3, 16),
    'hy_v3': ('decoder', 'ids', 64, 3, 16),
    'hyperclovax': ('decoder', 'ids', 64, 3, 16),
    'hyperclovax_vision_v2': ('multimodal', 'ids', 64, 3, 16),
    'ibert': ('encoder', 'ids', 64, 3, 16),
    'idefics2': ('multimodal', 'ids', 64, 3, 16),
    'idefics3': ('multimodal', 'ids', 64, 3, 16),
    'ijepa': ('vision', 'pixels', 64, 3, 16),
    'imagegpt': ('encoder', 'ids', 64, 3, 16),
    'inkling2': ('multimodal', 'ids', 64, 3, 16),
    'internlm3': ('decoder', 'ids', 64, 3, 16),
    'internvl': ('multimodal', 'ids', 448, 3, 16),
    'iquestcoder': ('decoder', 'ids', 64, 3, 16),
    'jais2': ('decoder', 'ids', 64, 3, 16),
    'janus': ('multimodal', 'ids', 64, 3, 16),
    'jetmoe': ('decoder', 'ids', 64, 3, 16),
    'jina_embeddings_v3': ('encoder', 'ids', 64, 3, 16),
    'kolibri1': ('decoder', 'ids', 64, 3, 16),
    'kosmos-2.5': ('multimodal', 'ids', 64, 3, 16),
    'laguna': ('decoder', 'ids', 64, 3, 16),
    'layoutlm': ('encoder', 'ids', 64, 3, 16),
    'led': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'levit': ('vision', 'pixels', 64, 3, 16),
    'lfm2': ('decoder', 'ids', 64, 3, 16),
    'lfm2_vl': ('multimodal', 'ids', 64, 3, 16),
    'lighton_ocr': ('multimodal', 'ids', 64, 3, 16),
    'llama4': ('multimodal', 'ids', 64, 3, 16),
    'llava': ('multimodal', 'ids', 64, 3, 16),
    'llava_next': ('multimodal', 'ids', 64, 3, 16),
    'llava_next_video': ('multimodal', 'ids', 64, 3, 16),
    'llava_onevision': ('multimodal', 'ids', 64, 3, 16),
    'longformer': ('encoder', 'ids', 64, 3, 16),
    'longt5': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'luke': ('encoder', 'ids', 64, 3, 16),
    'm2m_100': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'mamba': ('decoder', 'ids', 64, 3, 16),
    'markuplm': ('encoder', 'ids', 64, 3, 16),
    'mbart': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'megatron-bert': ('decoder', 'ids', 64, 3, 16),
    'mellum': ('decoder', 'ids', 64, 3, 16),
    'metaclip_2': ('multimodal', 'ids+pixels', 64, 3, 16),
    'mimo_v2_flash': ('decoder', 'ids', 64, 3, 16),
    'minimax': ('decoder', 'ids', 64, 3, 16),
    'minimax_m2': ('decoder', 'ids', 64, 3, 16),
    'minimax_m3_vl': ('multimodal', 'ids', 64, 3, 16),
    'ministral3': ('decoder', 'ids', 64, 3, 16),
    'mistral3': ('multimodal', 'ids', 64, 3, 16),
    'mixtral': ('decoder', 'ids', 64, 3, 16),
    'mlcd': ('vision', 'pixels', 64, 3, 16),
    'mlcd_vision_model': ('vision', 'pixels', 64, 3, 16),
    'mllama': ('multimodal', 'ids', 64, 3, 16),
    'mobilebert': ('encoder', 'ids', 64, 3, 16),
    'mobilenet_v1': ('vision', 'pixels', 64, 3, 16),
    'mobilenet_v2': ('vision', 'pixels', 64, 3, 16),
    'mobilevitv2': ('vision', 'pixels', 64, 3, 16),
    'modernbert': ('encoder', 'ids', 64, 3, 16),
    'modernbert-decoder': ('decoder', 'ids', 64, 3, 16),
    'modernvbert': ('multimodal', 'ids', 64, 3, 16),
    'molmo2': ('multimodal', 'ids', 378, 3, 16),
    'moshi': ('multimodal', 'ids', 64, 3, 16),
    'moss_transcribe_diarize': ('multimodal', 'ids', 64, 3, 16),
    'mpnet': ('encoder', 'ids', 64, 3, 16),
    'mpt': ('multimodal', 'ids', 64, 3, 16),
    'mra': ('encoder', 'ids', 64, 3, 16),
    'mt5': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'muse_glimmer': ('multimodal', 'ids', 64, 3, 16),
    'muse_spark': ('multimodal', 'ids', 64, 3, 16),
    'musicflamingo': ('multimodal', 'ids', 64, 3, 16),
    'mvp': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'nanochat': ('decoder', 'ids', 64, 3, 16),
    'nemo_speechlm': ('multimodal', 'ids', 64, 3, 16),
    'nemotron_h': ('decoder', 'ids', 64, 3, 16),
    'nllb-moe': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'nomic_bert': ('encoder', 'ids', 64, 3, 16),
    'nystromformer': ('encoder', 'ids', 64, 3, 16),
    'olmo': ('decoder', 'ids', 64, 3, 16),
    'olmo2': ('decoder', 'ids', 64, 3, 16),
    'olmo3': ('decoder', 'ids', 64, 3, 16),
    'olmoe': ('decoder', 'ids', 64, 3, 16),
    'openai-gpt': ('decoder', 'ids', 64, 3, 16),
    'openai_privacy_filter': ('encoder', 'ids', 64, 3, 16),
    'ovis2': ('multimodal', 'ids', 64, 3, 16),
    'owlv2': ('multimodal', 'ids+pixels', 64, 3, 16),
    'owlvit': ('multimodal', 'ids+pixels', 64, 3, 16),
    'paligemma': ('multimodal', 'ids', 64, 3, 16),
    'pegasus_x': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'persimmon': ('decoder', 'ids', 64, 3, 16),
    'phi3': ('decoder', 'ids', 64, 3, 16),
    'phi4_multimodal': ('multimodal', 'ids', 64, 3, 16),
    'phimoe': ('decoder', 'ids', 64, 3, 16),
    'pixio': ('vision', 'pixels', 64, 3, 16),
    'pixtral': ('vision', 'pixels', 64, 3, 16),
    'plbart': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'pocket_tts': ('multimodal', 'ids', 64, 3, 16),
    'poolformer': ('vision', 'pixels', 64, 3, 16),
    'pp_ocrv5_server_rec': ('vision', 'pixels', 64, 3, 16),
    'pp_ocrv6_small_rec': ('vision', 'pixels', 64, 3, 16),
    'pp_ocrv6_tiny_rec': ('vision', 'pixels', 64, 3, 16),
    'prophetnet': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'pvt': ('vision', 'pixels', 64, 3, 16),
    'pvt_v2': ('vision', 'pixels', 224, 3, 16),
    'qianfan_ocr': ('multimodal', 'ids', 448, 3, 16),
    'qwen2_audio': ('multimodal', 'ids', 64, 3, 16),
    'qwen2_moe': ('decoder', 'ids', 64, 3, 16),
    'qwen3': ('decoder', 'ids', 64, 3, 16),
    'qwen3_asr': ('multimodal', 'ids', 64, 3, 16),
    'qwen3_moe': ('decoder', 'ids', 64, 3, 16),
    'qwen3_vl': ('multimodal', 'ids', 64, 3, 16),
    'qwen3_vl_moe': ('multimodal', 'ids', 64, 3, 16),
    'radio': ('vision', 'pixels', 64, 3, 16),
    'regnet': ('vision', 'pixels', 64, 3, 16),
    'rembert': ('decoder', 'ids', 64, 3, 16),
    'roberta-prelayernorm': ('decoder', 'ids', 64, 3, 16),
    'roc_bert': ('decoder', 'ids', 64, 3, 16),
    'roformer': ('decoder', 'ids', 64, 3, 16),
    'sam3_vit_model': ('vision', 'pixels', 64, 3, 16),
    'seamless_m4t': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'seamless_m4t_v2': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'seed_oss': ('decoder', 'ids', 64, 3, 16),
    'segformer': ('vision', 'pixels', 64, 3, 16),
    'sew': ('speech', 'audio', 64, 1, 16),
    'sew-d': ('speech', 'audio', 64, 1, 16),
    'smollm3': ('decoder', 'ids', 64, 3, 16),
    'smolvlm': ('multimodal', 'ids', 64, 3, 16),
    'solar_open': ('decoder', 'ids', 64, 3, 16),
    'splinter': ('encoder', 'ids', 64, 3, 16),
    'squeezebert': ('encoder', 'ids', 64, 3, 16),
    'stablelm': ('decoder', 'ids', 64, 3, 16),
    'starcoder2': ('decoder', 'ids', 64, 3, 16),
    'swiftformer': ('vision', 'pixels', 64, 3, 16),
    'switch_transformers': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    't5gemma2': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'table-transformer': ('vision', 'pixels', 64, 3, 16),
    'tapas': ('encoder', 'ids', 64, 3, 16),
    'textnet': ('vision', 'pixels', 640, 3, 16),
    'tipsv2': ('multimodal', 'ids', 64, 3, 16),
    'ultrabert': ('encoder', 'ids', 64, 3, 16),
    'ultravbert': ('multimodal', 'ids', 64, 3, 16),
    'umt5': ('encoder-decoder', 'seq2seq', 64, 3, 16),
    'unispeech': ('speech', 'audio', 64, 1, 16),
    'unispeech-sat': ('speech', 'audio', 64, 1, 16),
    'unlimited_ocr': ('multimodal', 'ids', 64, 3, 16),
    'vaultgemma': ('decoder', 'ids', 64, 3, 16),
    'vibevoice': ('multimodal', 'ids', 64, 3, 16),
    'vibevoice_asr': ('multimodal', 'ids', 64, 3, 16),
    'video_llama_3': ('multimodal', 'ids', 64, 3, 16),
    'video_llava': ('multimodal', 'ids', 64, 3, 16),
    'vipllava': ('multimodal', 'ids', 64, 3, 16),
    'visual_bert': ('encoder', 'ids', 64, 3, 16),
    'vit_mae': ('vision', 'pixels', 64, 3, 16),
    'vit_msn': ('vision', 'pixels', 64, 3, 16),
    'vitdet': ('vision', 'pixels', 64, 3, 16),
    'voxtral': ('multimodal', 'ids', 64, 3, 16),
    'wav2vec2-conformer': ('speech', 'audio', 64, 1, 16),
    'wavlm': ('speech', 'audio', 64, 1, 16),
    'xglm': ('decoder', 'ids', 64, 3, 16),
    'xlm': ('decoder', 'ids', 64, 3, 16),
    'xlm-roberta-xl': ('decoder', 'ids', 64, 3, 16),
    'xlnet': ('decoder', 'ids', 64, 3, 16),
    'yolos': ('vision', 'pixels', 512, 3, 16),
    'yoso': ('encoder', 'ids', 64, 3, 16),
    'zaya': ('decoder', 'ids', 64, 3, 16),
}
HF_NOT_BUILT: dict[str, str] = {
    'align': 'eager call on input_ids 1x8: RuntimeError: mat1 and mat2 shapes cannot be multiplied (1x32 and 640x1)',
    'audio-spectrogram-transformer': 'eager call on input_values 1x1600: IndexError: Dimension out of range (expected to be in range of [-3, 2], but got 3)',
    'audioflamingo3_encoder': "shrunk default config: ValueError: main input 'input_features' is not one the survey makes",
    'autoformer': 'shrunk default config: ValueError: The `prediction_length` config needs to be specified.',
    'axk1': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'axk2': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'bailing_hybrid': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
    'bamba': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
    'bark': "eager call on input_ids 1x8: TypeError: _forward_unimplemented() got an unexpected keyword argument 'input_ids'",
    'bit': 'shrunk default config: ValueError: num_channels (8) must be divisible by num_groups (32)',
    'blip-2': "eager call on pixel_values 1x3x64x64: TypeError: Blip2Model.forward() missing 1 required positional argument: 'input_ids'",
    'blt': "eager call on input_ids 1x8: AttributeError: 'BltConfig' object has no attribute 'num_hidden_layers'",
    'bridgetower': 'shrunk default config: ValueError: embed_dim and num_heads must be greater than 0, got embed_dim=32 and num_heads=0 instead',
    'bros': 'eager call on input_ids 1x8: ValueError: You have to specify bbox',
    'canary': 'eager call on input_features 1x16x64, decoder_input_ids 1x4: RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x2048 and 512x32)',
    'chameleon': "shrunk default config: AttributeError: 'NoneType' object has no attribute 'get'",
    'clap': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'transpose'",
    'clvp': 'eager call on input_ids 1x8: TypeError: conv1d() received an invalid combination of arguments - got (NoneType, Parameter, Parameter, tuple, tuple, tuple, int), but expected one of:',
    'codegen': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (8) must match the size of tensor b (64) at non-singleton dimension 3',
    'cohere_asr': 'eager call on input_features 1x16x64, decoder_input_ids 1x4: RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x2048 and 512x32)',
    'cohere_compass': "shrunk default config: KeyError: 'full_attention'",
    'csm': 'shrunk default config: ValueError: in_channels must be divisible by groups',
    'd_fine': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given groups=1, weight of size [256, 32, 1, 1], expected input[1, 512, 8, 8] to have 32 channels, but got 512 channels instead',
    'dac': 'eager call on input_values 1x1600: RuntimeError: The size of tensor a (32) must match the size of tensor b (1600) at non-singleton dimension 1',
    'dbrx': "shrunk default config: AttributeError: 'DbrxAttentionConfig' object has no attribute 'rope_theta'",
    'decision_transformer': "shrunk default config: ValueError: main input 'states' is not one the survey makes",
    'deepseek_ocr2': "shrunk default config: TypeError: 'NoneType' object is not subscriptable",
    'deepseek_v2': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'deepseek_v3': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'deepseek_v32': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'deformable_detr': 'eager call on pixel_values 1x3x64x64: ValueError: Expected more than 1 value per channel when training, got input size [1, 32, 1, 1]',
    'deimv2': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given groups=1, weight of size [256, 32, 1, 1], expected input[1, 512, 8, 8] to have 32 channels, but got 512 channels instead',
    'depth_pro': 'eager call on pixel_values 1x3x64x64: ValueError: Image size 64x64 is too small to be scaled with scaled_images_ratios=(0.25, 0.5, 1) when patch_size=384.',
    'dia': "eager call on input_ids 1x8, decoder_input_ids 1x4: RuntimeError: shape '[1, 9, -1]' is invalid for input of size 4",
    'diffusion_gemma': "shrunk default config: TypeError: empty(): argument 'size' (position 1) must be tuple of ints, but found element of type NoneType at pos 0",
    'dinat': 'shrunk default config: ImportError: DinatModel requires the natten library but it was not found in your environment. You can install it by referring to:',
    'donut-swin': 'shrunk default config: ValueError: The hidden size (32) is not a multiple of the number of attention heads (3)',
    'dots1': 'shrunk default config: TypeError: empty() takes 1 positional argument but 3 were given',
    'dots3_note': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'edgetam': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given groups=1, weight of size [256, 384, 1, 1], expected input[1, 1024, 4, 4] to have 384 channels, but got 1024 channels instead',
    'edgetam_video': "eager call on pixel_values 1x3x64x64: TypeError: EdgeTamVideoModel.forward() missing 1 required positional argument: 'inference_session'",
    'edgetam_vision_model': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given groups=1, weight of size [256, 384, 1, 1], expected input[1, 1024, 4, 4] to have 384 channels, but got 1024 channels instead',
    'efficientloftr': 'eager call on pixel_values 1x3x64x64: ValueError: Input must be a 5D tensor of shape (batch_size, 2, num_channels, height, width)',
    'efficientnet': 'eager call on pixel_values 1x3x64x64: RuntimeError: running_mean should contain 2560 elements not 64',
    'emu3': "shrunk default config: AttributeError: 'NoneType' object has no attribute 'get'",
    'encodec': 'eager call on input_values 1x1600: ValueError: not enough values to unpack (expected 3, got 2)',
    'ernie4_5_moe': 'eager call on input_ids 1x8: RuntimeError: selected index k out of range',
    'ernie4_5_vl_moe': 'shrunk default config: RuntimeError: The expanded size of the tensor (4) must match the existing size (0) at non-singleton dimension 0.  Target sizes: [4].  Tensor sizes: [0]',
    'esm': "shrunk default config: TypeError: empty(): argument 'size' (position 1) must be tuple of ints, but found element of type NoneType at pos 0",
    'esmc': 'eager call on input_ids 1x8: IndexError: index out of range in self',
    'evolla': "shrunk default config: ValueError: Unrecognized configuration class <class 'transformers.models.evolla.configuration_evolla.EvollaConfig'> for this kind of AutoModel: AutoModel.",
    'fastspeech2_conformer_with_hifigan': 'eager call on input_ids 1x8: IndexError: index out of range in self',
    'fun_asr_nano_encoder': "shrunk default config: ValueError: main input 'input_features' is not one the survey makes",
    'funnel': "shrunk default config: TypeError: 'NoneType' object is not iterable",
    'gemma3n': 'shrunk default config: ValueError: The set of layer types producing a cache is different than the set of layer types using them',
    'glm46v': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'glm4_moe_lite': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'glm4v': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'glm4v_moe': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'glm5_next': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'glm_image': "eager call on input_ids 1x8: TypeError: 'NoneType' object is not subscriptable",
    'glm_moe_dsa': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'glm_ocr': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'glmasr_encoder': "shrunk default config: ValueError: main input 'input_features' is not one the survey makes",
    'glmga': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'gptj': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (8) must match the size of tensor b (64) at non-singleton dimension 3',
    'granite4_vision': "shrunk default config: TypeError: object of type 'NoneType' has no len()",
    'granite_speech5_ctc': "shrunk default config: ValueError: main input 'input_features' is not one the survey makes",
    'granitemoehybrid': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
    'grounding-dino': "eager call on pixel_values 1x3x64x64: TypeError: GroundingDinoModel.forward() missing 1 required positional argument: 'input_ids'",
    'higgs_audio_v2_tokenizer': 'shrunk default config: ImportError: HiggsAudioV2TokenizerModel requires the torchaudio library but it was not found in your environment. Please install it and restart your',
    'hrm_text': 'eager call on input_ids 1x8: IndexError: list index out of range',
    'hunyuan_v1_dense': "shrunk default config: TypeError: unsupported operand type(s) for ** or pow(): 'NoneType' and 'float'",
    'hunyuan_v1_moe': "shrunk default config: TypeError: unsupported operand type(s) for ** or pow(): 'NoneType' and 'float'",
    'hunyuan_vl': "shrunk default config: TypeError: unsupported operand type(s) for ** or pow(): 'NoneType' and 'float'",
    'hy_v4': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'idefics': 'eager call on input_ids 1x8: ValueError: not enough values to unpack (expected 4, got 3)',
    'informer': 'shrunk default config: ValueError: The `prediction_length` config needs to be specified.',
    'inkling_mm_model': "shrunk default config: ModuleNotFoundError: No module named 'scipy'",
    'instructblip': "eager call on pixel_values 1x3x64x64: TypeError: InstructBlipModel.forward() missing 1 required positional argument: 'qformer_input_ids'",
    'instructblipvideo': "eager call on pixel_values 1x3x64x64: TypeError: InstructBlipVideoModel.forward() missing 1 required positional argument: 'qformer_input_ids'",
    'jamba': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
    'kimi_k25': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'kimi_linear': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
    'kosmos-2': 'eager call on pixel_values 1x3x64x64: ValueError: You have to specify either input_ids or inputs_embeds',
    'kyutai_speech_to_text': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (8) must match the size of tensor b (33) at non-singleton dimension 1',
    'lasr_ctc': "shrunk default config: ValueError: main input 'input_features' is not one the survey makes",
    'layoutlmv2': 'shrunk default config: ImportError: LayoutLMv2Model requires the detectron2 library but it was not found in your environment. Check out the instructions on the',
    'layoutlmv3': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (32) must match the size of tensor b (768) at non-singleton dimension 2',
    'lfm2_moe': "shrunk default config: TypeError: 'NoneType' object is not subscriptable",
    'lfm3': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
    'lfm3_vl': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'lightglue': 'eager call on pixel_values 1x3x64x64: ValueError: Input must be a 5D tensor of shape (batch_size, 2, num_channels, height, width)',
    'lilt': 'eager call on input_ids 1x8: RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x30 and 32x8)',
    'longcat_flash': "eager call on input_ids 1x8: RuntimeError: split_with_sizes expects split_sizes to sum exactly to 192 (input tensor's size at dimension -1), but got split_sizes=[8, 8]",
    'lw_detr': 'eager call on pixel_values 1x3x64x64: ValueError: torch.cat(): expected a non-empty list of Tensors',
    'lxmert': 'eager call on input_ids 1x8: ValueError: `visual_feats` cannot be `None`',
    'mamba2': "eager call on input_ids 1x8: RuntimeError: shape '[1, 8, 4, 8]' is invalid for input of size 512",
    'mask2former': "eager call on pixel_values 1x3x64x64: RuntimeError: shape '[9, 49, -1, 10]' is invalid for input of size 14112",
    'maskformer': 'shrunk default config: IndexError: list index out of range',
    'maskformer-swin': 'shrunk default config: ValueError: The hidden size (32) is not a multiple of the number of attention heads (3)',
    'mgp-str': "eager call on pixel_values 1x3x32x32: ValueError: Input image size (32*32) doesn't match model (32*128).",
    'mimi': 'shrunk default config: ValueError: in_channels must be divisible by groups',
    'mimi_decoder': 'shrunk default config: ValueError: in_channels must be divisible by groups',
    'mimi_encoder': 'eager call on input_values 1x1600: ValueError: not enough values to unpack (expected 3, got 2)',
    'minicpm3': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'minicpm_ocr': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
    'minicpmv4_6': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
    'minicpmv4_7': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
    'ministral': "shrunk default config: TypeError: unsupported operand type(s) for ** or pow(): 'NoneType' and 'float'",
    'mistral4': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 3',
    'mistral_large4': "eager call on input_ids 1x8: TypeError: 'NoneType' object is not iterable",
    'mm-grounding-dino': "eager call on pixel_values 1x3x64x64: TypeError: MMGroundingDinoModel.forward() missing 1 required positional argument: 'input_ids'",
    'moonshine': 'eager call on input_values 1x1600: ValueError: You must specify exactly one of input_ids or inputs_embeds',
    'moonshine_streaming': "shrunk default config: AttributeError: 'MoonshineStreamingConfig' object has no attribute 'num_key_value_heads'",
    'muse_glimmer_assistant': "shrunk default config: ValueError: main input 'noise_embeds' is not one the survey makes",
    'musicgen': "shrunk default config: AttributeError: 'MusicgenConfig' object has no attribute 'dropout'",
    'musicgen_melody': "shrunk default config: AttributeError: 'MusicgenMelodyConfig' object has no attribute 'dropout'",
    'nemotron': "shrunk default config: TypeError: unsupported operand type(s) for //: 'int' and 'NoneType'",
    'nemotron3_5_asr': 'eager call on input_features 1x16x64, decoder_input_ids 1x4: RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x2304 and 768x32)',
    'nemotron3_diarization': "shrunk default config: ValueError: main input 'input_features' is not one the survey makes",
    'nemotron_asr_streaming': 'eager call on input_features 1x16x64, decoder_input_ids 1x4: RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x2304 and 768x32)',
    'neomme': 'shrunk default config: IndexError: list index out of range',
    'neucodec': "eager call on input_values 1x1600: TypeError: NeuCodecModel.forward() missing 1 required positional argument: 'input_features'",
    'olmo_hybrid': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
    'omdet-turbo': "eager call on pixel_values 1x3x64x64: TypeError: OmDetTurboForObjectDetection.forward() missing 5 required positional arguments: 'classes_input_ids', 'classes_attention_mask', 'tasks_input_ids', 'tasks_attention_mask', and 'classes_structure'",
    'oneformer': "shrunk default config: ValueError: main input ['pixel_values', 'task_inputs'] is not one the survey makes",
    'paddleocr_vl': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'parakeet_ctc': "shrunk default config: ValueError: main input 'input_features' is not one the survey makes",
    'parakeet_rnnt': 'eager call on input_features 1x16x64, decoder_input_ids 1x4: RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x2048 and 512x32)',
    'parakeet_tdt': 'eager call on input_features 1x16x64, decoder_input_ids 1x4: RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x2048 and 512x32)',
    'patchtsmixer': "shrunk default config: ValueError: main input 'past_values' is not one the survey makes",
    'patchtst': "shrunk default config: ValueError: main input 'past_values' is not one the survey makes",
    'pe_audio': "eager call on input_ids 1x8: TypeError: PeAudioModel.forward() missing 1 required positional argument: 'input_values'",
    'pe_audio_video': 'small model: ToolTimeout: took longer than 120 s',
    'pe_video': "eager call on input_ids 1x8: TypeError: PeVideoModel.forward() missing 1 required positional argument: 'pixel_values_videos'",
    'perceiver': "shrunk default config: ValueError: main input 'inputs' is not one the survey makes",
    'perception_lm': "shrunk default config: TypeError: 'NoneType' object is not subscriptable",
    'pi0': "shrunk default config: ValueError: main input 'state' is not one the survey makes",
    'pocket_tts_audio_tokenizer': 'shrunk default config: ValueError: in_channels must be divisible by groups',
    'pocket_tts_audio_tokenizer_decoder': 'shrunk default config: ValueError: in_channels must be divisible by groups',
    'pocket_tts_audio_tokenizer_encoder': 'eager call on input_values 1x1600: ValueError: not enough values to unpack (expected 3, got 2)',
    'pp_doclayout_v3': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given groups=1, weight of size [256, 32, 1, 1], expected input[1, 512, 8, 8] to have 32 channels, but got 512 channels instead',
    'pp_doclayout_v4': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given groups=1, weight of size [256, 32, 1, 1], expected input[1, 512, 8, 8] to have 32 channels, but got 512 channels instead',
    'pp_ocrv5_mobile_rec': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given input size: (384x2x2). Calculated output size: (384x0x1). Output size is too small',
    'pp_ocrv6_medium_det': "shrunk default config: TypeError: 'NoneType' object is not subscriptable",
    'pp_ocrv6_small_det': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given groups=1, weight of size [96, 12, 1, 1], expected input[1, 384, 4, 16] to have 12 channels, but got 384 channels instead',
    'qwen2_5_vl': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'qwen2_audio_encoder': "shrunk default config: ValueError: main input 'input_features' is not one the survey makes",
    'qwen2_vl': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'qwen3_5': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'qwen3_5_moe': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'qwen3_asr_encoder': "shrunk default config: ValueError: main input 'input_features' is not one the survey makes",
    'qwen3_next': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
    'qwen4_exp': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'device'",
    'recurrent_gemma': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
    'reformer': 'shrunk default config: ValueError: Make sure that config.axial_pos_embds factors: (64, 192) sum to config.hidden_size: 32',
    'rf_detr': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given groups=1, weight of size [32, 128, 1, 1], expected input[1, 32, 4, 4] to have 128 channels, but got 32 channels instead',
    'rt_detr': 'eager call on pixel_values 1x3x64x64: RuntimeError: selected index k out of range',
    'rt_detr_v2': 'eager call on pixel_values 1x3x64x64: RuntimeError: selected index k out of range',
    'rwkv': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (32) must match the size of tensor b (4096) at non-singleton dimension 1',
    'sam': 'eager call on pixel_values 1x3x64x64: RuntimeError: The size of tensor a (4) must match the size of tensor b (64) at non-singleton dimension 3',
    'sam2': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given normalized_shape=[96], expected input with shape [*, 96], but got input of size[1, 16, 16, 32]',
    'sam2_hiera_det_model': 'eager call on pixel_values 1x3x1024x1024: RuntimeError: Given normalized_shape=[96], expected input with shape [*, 96], but got input of size[1, 256, 256, 32]',
    'sam2_video': "eager call on pixel_values 1x3x64x64: TypeError: Sam2VideoModel.forward() missing 1 required positional argument: 'inference_session'",
    'sam2_vision_model': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given normalized_shape=[96], expected input with shape [*, 96], but got input of size[1, 16, 16, 32]',
    'sam3': 'eager call on pixel_values 1x3x64x64: ValueError: You must specify exactly one of input_ids or text_embeds',
    'sam3_lite_text': 'eager call on pixel_values 1x3x64x64: ValueError: You must specify exactly one of input_ids or text_embeds',
    'sam3_tracker': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given groups=1, weight of size [4, 32, 1, 1], expected input[1, 256, 16, 16] to have 32 channels, but got 256 channels instead',
    'sam3_tracker_video': "eager call on pixel_values 1x3x64x64: TypeError: Sam3TrackerVideoModel.forward() missing 1 required positional argument: 'inference_session'",
    'sam3_video': "eager call on pixel_values 1x3x64x64: TypeError: Sam3VideoModel.forward() missing 1 required positional argument: 'inference_session'",
    'sam_hq': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given transposed=1, weight of size [32, 8, 2, 2], expected input[1, 256, 4, 4] to have 32 channels, but got 256 channels instead',
    'sapiens2': 'eager call on pixel_values 1x3x64x64: RuntimeError: The size of tensor a (4) must match the size of tensor b (16) at non-singleton dimension 1',
    'seggpt': "eager call on pixel_values 1x3x896x896: TypeError: SegGptModel.forward() missing 2 required positional arguments: 'prompt_pixel_values' and 'prompt_masks'",
    'siglip': 'eager call on input_ids 1x8: RuntimeError: mat1 and mat2 shapes cannot be multiplied (1x768 and 32x1)',
    'siglip2': 'eager call on input_ids 1x8: RuntimeError: mat1 and mat2 shapes cannot be multiplied (192x64 and 768x32)',
    'speech_to_text': 'eager call on input_features 1x16x64, decoder_input_ids 1x4: RuntimeError: Given groups=1, weight of size [1024, 80, 5], expected input[1, 64, 16] to have 80 channels, but got 64 channels instead',
    'speecht5': 'eager call on input_values 1x1600: RuntimeError: Given normalized_shape=[32], expected input with shape [*, 32], but got input of size[1, 1600]',
    'step3p7': 'eager call on input_ids 1x8: ValueError: Image features and image tokens do not match, tokens: 0, features: 1',
    'swin2sr': 'shrunk default config: ValueError: The hidden size (32) is not a multiple of the number of attention heads (6)',
    'swinv2': 'shrunk default config: ValueError: The hidden size (32) is not a multiple of the number of attention heads (3)',
    't5gemma': 'eager call on input_ids 1x8, decoder_input_ids 1x4: RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x32 and 2304x16)',
    'time_series_transformer': 'shrunk default config: ValueError: The `prediction_length` config needs to be specified.',
    'timesfm': "shrunk default config: ValueError: main input 'past_values' is not one the survey makes",
    'timesfm2_5': "shrunk default config: ValueError: main input 'past_values' is not one the survey makes",
    'timesformer': 'eager call on pixel_values 1x3x64x64: ValueError: not enough values to unpack (expected 5, got 4)',
    'timm_backbone': 'shrunk default config: ValueError: backbone is not set in the config. Please set it to a timm model name.',
    'tvp': "eager call on input_ids 1x8: AttributeError: 'NoneType' object has no attribute 'dtype'",
    'udop': 'eager call on input_ids 1x8, decoder_input_ids 1x4: ValueError: Bbox is required for horizontal relative position bias',
    'univnet': "shrunk default config: ValueError: main input 'input_features' is not one the survey makes",
    'uvdoc': 'eager call on pixel_values 1x3x64x64: RuntimeError: Given groups=1, weight of size [128, 768, 1, 1], expected input[1, 128, 4, 4] to have 768 channels, but got 128 channels instead',
    'vibevoice_acoustic_tokenizer': 'eager call on input_values 1x1600: IndexError: Dimension out of range (expected to be in range of [-2, 1], but got 2)',
    'vibevoice_acoustic_tokenizer_decoder': "eager call on input_values 1x1600: TypeError: VibeVoiceAcousticTokenizerDecoderModel.forward() missing 1 required positional argument: 'hidden_states'",
    'vibevoice_acoustic_tokenizer_encoder': "eager call on input_values 1x1600: TypeError: VibeVoiceAcousticTokenizerEncoderModel.forward() missing 1 required positional argument: 'hidden_states'",
    'videomae': 'eager call on pixel_values 1x3x64x64: ValueError: not enough values to unpack (expected 5, got 4)',
    'videoprism': "shrunk default config: ValueError: main input 'pixel_values_videos' is not one the survey makes",
    'vilt': 'eager call on input_ids 1x8: ValueError: You have to specify either pixel_values or image_embeds',
    'vision-text-dual-encoder': 'eager call on input_ids 1x8: RuntimeError: mat1 and mat2 shapes cannot be multiplied (1x768 and 32x32)',
    'vits': 'eager call on input_ids 1x8: IndexError: index out of range in self',
    'vivit': 'eager call on pixel_values 1x3x64x64: ValueError: not enough values to unpack (expected 5, got 4)',
    'vjepa2': "shrunk default config: ValueError: main input 'pixel_values_videos' is not one the survey makes",
    'voxtral_encoder': "shrunk default config: ValueError: main input 'input_features' is not one the survey makes",
    'voxtral_realtime': 'eager call on input_ids 1x8: ValueError: You must specify exactly one of input_features or encoder_inputs_embeds',
    'voxtral_realtime_encoder': "shrunk default config: ValueError: main input 'input_features' is not one the survey makes",
    'voxtral_realtime_text': "shrunk default config: ValueError: Could not find VoxtralRealtimeTextModel neither in <module 'transformers.models.voxtral_realtime' from '<site-packages>/transformers/models/voxtral_realtime/__init__.py'> nor in <module 'transformers'",
    'wav2vec2-bert': "shrunk default config: ValueError: main input 'input_features' is not one the survey makes",
    'xclip': 'eager call on input_ids 1x8: ValueError: not enough values to unpack (expected 5, got 4)',
    'xcodec': 'eager call on input_values 1x1600: ValueError: Audio must be mono, but got 1600',
    'xcodec2': "eager call on input_values 1x1600: TypeError: Xcodec2Model.forward() missing 1 required positional argument: 'input_features'",
    'xlstm': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (4096) must match the size of tensor b (32) at non-singleton dimension 2',
    'xmod': 'eager call on input_ids 1x8: ValueError: Input language unknown. Please call `XmodPreTrainedModel.set_default_language()`',
    'youtu': 'eager call on input_ids 1x8: RuntimeError: The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1',
    'zamba': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
    'zamba2': 'eager call on input_ids 1x8: ValueError: `get_seq_length` can only be called on Attention layers, and the current Cache seem to only contain LinearAttention layers.',
}
