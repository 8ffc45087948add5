"""The survey's Hugging Face zoo: model types as users have them, made small by one rule."""

from __future__ import annotations

import pytest

from fxsite.survey.catalogue import (HF_CONFIGS, HF_NOT_BUILT, HF_SAMPLE, HF_TYPES, catalogue, hf_component, hf_sample,
                                     shrink_config)

transformers = pytest.importorskip("transformers")


def test_a_default_config_is_shrunk_and_keeps_its_other_defaults() -> None:
    default = transformers.AutoConfig.for_model("llama")
    small = shrink_config(transformers.AutoConfig.for_model("llama"))
    assert (small.hidden_size, small.num_hidden_layers, small.num_attention_heads, small.num_key_value_heads,
            small.intermediate_size, small.head_dim) == (32, 2, 4, 2, 64, 8)
    assert small.use_cache is True and small.use_cache == default.use_cache
    assert small.rms_norm_eps == default.rms_norm_eps and small.vocab_size < default.vocab_size


def test_the_vocabulary_keeps_every_special_token() -> None:
    small = shrink_config(transformers.AutoConfig.for_model("gpt2"))  # eos 50256
    assert small.vocab_size == 50257 and small.n_embd == 32 and small.n_layer == 2


def test_sub_configs_and_per_layer_lists_are_shrunk() -> None:
    small = shrink_config(transformers.AutoConfig.for_model("clip"))
    assert small.text_config.hidden_size == 32 and small.vision_config.num_hidden_layers == 2
    assert small.vision_config.image_size == 64
    gemma3 = shrink_config(transformers.AutoConfig.for_model("gemma3_text"))
    assert len(gemma3.layer_types) == gemma3.num_hidden_layers == 2


def test_the_zoo_holds_at_least_100_built_architectures_and_names_the_rest() -> None:
    entries = [e for e in catalogue().values() if e.zoo == "transformers"]
    surveyed = [e for e in entries if not e.skip]
    assert len(surveyed) == len(HF_CONFIGS) + HF_SAMPLE >= 100
    assert {e.name for e in surveyed} == {*HF_CONFIGS, *hf_sample()}
    not_built = {e.name: e.skip for e in entries if e.skip and e.skip.startswith("not built: ")}
    assert set(not_built) == set(HF_NOT_BUILT) and all(len(r) > len("not built: ") for r in not_built.values())
    # every listed type is surveyed, not built, or built but out of the sample: none silently dropped
    assert len(entries) == len(HF_CONFIGS) + len(HF_TYPES) + len(HF_NOT_BUILT)


def test_component_types_are_left_out() -> None:
    assert hf_component("clip_vision_model") and not hf_component("clip")
    assert "clip_vision_model" not in HF_TYPES and "clip_vision_model" not in HF_NOT_BUILT


@pytest.mark.parametrize("key", ["transformers/gpt2", "transformers/llama"])
def test_the_first_thirty_keep_their_default_cache(key: str) -> None:
    model = catalogue()[key].build()
    assert model.config.use_cache is True
