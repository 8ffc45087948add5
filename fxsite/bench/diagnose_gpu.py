"""Diagnose the models people have, on a GPU: decoders at their default configs, bf16, up to 7 B parameters.

``python -m fxsite.bench.diagnose_gpu [--device cuda] [--tiny]`` builds each model from its
config with random weights directly on the device, in its dtype, runs the whole diagnosis
(:func:`fxguide.diagnose.examine`, every tool) and prints, per model, each row's verdict,
cause and largest difference, the time taken, and the device's peak memory beyond the
model's weights as a share of the weights. Two planted wrong captures (off by 3 % and by
100 %) are run on the first decoder: they must be caught in bf16 too.

``--tiny`` shrinks every config (2 layers, width 64) so that the script can be tried on the
CPU before it is sent to a GPU. This is a measurement, not a test: CI has no GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _configs(tiny: bool) -> list[tuple[str, str, dict, str]]:
    """(name, transformers config class, keyword arguments, dtype) for each model.

    A name starting with "decode step" is diagnosed on one new token given the ``DynamicCache``
    that a 32-token prefill filled: the object input the diagnosis must copy for every call."""
    small = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2)
    return [
        # A TinyLlama-sized Llama at its default use_cache=True: the output holds a DynamicCache.
        ("llama-1.1b default config", "LlamaConfig",
         small | {"vocab_size": 1000} if tiny else dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                                                         num_attention_heads=32, num_key_value_heads=4,
                                                         vocab_size=32000), "bfloat16"),
        ("decode step of llama-1.1b", "LlamaConfig",
         small | {"vocab_size": 1000} if tiny else dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                                                         num_attention_heads=32, num_key_value_heads=4,
                                                         vocab_size=32000), "bfloat16"),
        ("qwen2-0.5b default config", "Qwen2Config",
         small | {"vocab_size": 1000} if tiny else dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                                                         num_attention_heads=14, num_key_value_heads=2,
                                                         vocab_size=151936), "bfloat16"),
        ("gpt2 default config", "GPT2Config", dict(n_embd=64, n_layer=2, n_head=4, vocab_size=1000) if tiny else {},
         "float32"),
        ("gpt2 default config", "GPT2Config", dict(n_embd=64, n_layer=2, n_head=4, vocab_size=1000) if tiny else {},
         "bfloat16"),
        # LlamaConfig's defaults are the 7 B architecture; without the cache, as issue 42 measured it.
        ("llama-7b use_cache=False", "LlamaConfig", (small | {"vocab_size": 1000} if tiny else {}) | {"use_cache": False},
         "bfloat16"),
        ("llama-7b default config", "LlamaConfig", small | {"vocab_size": 1000} if tiny else {}, "bfloat16"),
    ]


def _build(config_class: str, kwargs: dict, dtype: str, device: str, decode: bool = False):
    import torch
    import transformers
    config = getattr(transformers, config_class)(**kwargs)
    model_class = transformers.AutoModelForCausalLM
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))
    try:
        with torch.device(device):
            model = model_class.from_config(config).eval()
    finally:
        torch.set_default_dtype(previous)
    ids = torch.randint(0, config.vocab_size, (1, 32), device=device)
    if not decode:
        return model, ((ids,), {})
    with torch.no_grad():
        cache = model(ids).past_key_values
    return model, ((torch.randint(0, config.vocab_size, (1, 1), device=device),), {"past_key_values": cache})


def _off_by(scale: float):
    """A planted wrong capture: the model itself, with its logits scaled by ``1 + scale``."""
    def capture(model, args, kwargs):
        def run(*a, **k):
            out = model(*a, **k)
            return type(out)(**{key: (v * (1 + scale) if key == "logits" else v) for key, v in out.items()})
        return run, 0
    return capture


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fxsite.bench.diagnose_gpu", description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="2-layer configs, to try the script on the CPU")
    parser.add_argument("--only", help="run only the models whose name contains this text")
    options = parser.parse_args(argv)
    import torch
    from fxguide import diagnose
    from fxguide.diagnose import TOOLS, examine
    from fxguide.diagnose.compare import like
    cuda = options.device.startswith("cuda")
    print(f"torch {torch.__version__}, device {torch.cuda.get_device_name() if cuda else options.device}", flush=True)
    summary = []
    for index, (name, config_class, kwargs, dtype) in enumerate(_configs(options.tiny)):
        if options.only and options.only not in name:
            continue
        model, example = _build(config_class, kwargs, dtype, options.device, name.startswith("decode step"))
        params = sum(p.numel() for p in model.parameters())
        weights = sum(p.numel() * p.element_size() for p in model.parameters())
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        start = time.perf_counter()
        result = examine(model, example, tools=list(TOOLS), timeout=600)
        seconds = time.perf_counter() - start
        beyond = (torch.cuda.max_memory_allocated() - base) / weights if cuda else float("nan")
        print(f"\n== {name}, {dtype}, {params / 1e9:.2f} B parameters: {seconds:.0f} s, "
              f"peak beyond the weights {beyond:.2f} x the weights", flush=True)
        print(result, flush=True)
        rows = {r.tool: {"verdict": r.verdict, "cause": r.cause.name if r.cause else None,
                         "largest_difference": r.largest_difference} for r in result.results}
        summary.append({"model": name, "dtype": dtype, "params": params, "seconds": round(seconds, 1),
                        "peak_beyond_weights": round(beyond, 3), "unchanged": result.unchanged, "rows": rows})
        if cuda and name == "llama-7b use_cache=False":  # each tool alone: what the diagnosis adds beyond its hungriest tool
            other = like(example, 1)
            with torch.no_grad():
                eager_other = model(*other[0], **other[1])
            alone = {}
            for tool in TOOLS:
                if tool == "library_route":
                    continue
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                before = torch.cuda.memory_allocated()
                diagnose.run_tool(tool, model, example, other, eager_other, timeout=600)
                alone[tool] = round((torch.cuda.max_memory_allocated() - before) / weights, 3)
                torch.cuda.empty_cache()
            del eager_other
            hungriest = max(alone.values())
            print(f"each tool alone, beyond the weights: {alone}; the diagnosis adds "
                  f"{beyond - hungriest:.2f} x the weights beyond its hungriest tool", flush=True)
            summary.append({"model": name, "tools_alone": alone, "diagnosis_beyond_hungriest": round(beyond - hungriest, 3)})
        if index == 0:
            other = like(example, 1)
            ref = diagnose.reference(model, other, lambda: None)
            for scale in (0.03, 1.0):
                diagnose.CAPTURES["planted"] = _off_by(scale)
                try:
                    row = diagnose.run_tool("planted", model, example, other, ref)
                finally:
                    del diagnose.CAPTURES["planted"]
                print(f"planted capture off by {scale:.0%}: {row.verdict} (largest difference "
                      f"{row.largest_difference})", flush=True)
                summary.append({"model": name, "planted": scale, "verdict": row.verdict,
                                "largest_difference": row.largest_difference})
        del model, result
        if cuda:
            torch.cuda.empty_cache()
    print("\nSUMMARY " + json.dumps(summary, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
