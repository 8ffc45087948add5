# pytorch/executorch#3540: to_edge (which calls run_decompositions with the core ATen table) failed on a
# transformers LlamaForCausalLM with one layer. ExecuTorch is not installed here: this runs the torch part,
# export then run_decompositions() with the default (core ATen) table, on a small 1-layer config.
import torch
from transformers import LlamaConfig, LlamaForCausalLM

config = LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=4,
                     num_hidden_layers=1, vocab_size=128, use_cache=False)  # with the cache on,
# export first stops on DynamicCache in the output (not a registered pytree type on transformers 5.23)
m = LlamaForCausalLM(config).eval()
ids = torch.randint(0, 128, (1, 8), generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    ep = torch.export.export(m, (ids,))
    core = ep.run_decompositions()
    got = core.module()(ids)
    want = m(ids)
logits = lambda out: out[0] if isinstance(out, (tuple, list)) else out.logits if hasattr(out, "logits") else out["logits"]
print("export + run_decompositions ok; logits match eager:", torch.allclose(logits(got), want.logits, atol=1e-5))
