"""
Where PT2E quantization loses precision, layer by layer
=======================================================

The :doc:`quantization page </pt2/quantization>` measures the error of a
PT2E-quantized model at its output. To find *which* layer costs the most, run
the float and the quantized graphs side by side with an ``Interpreter`` that
keeps every intermediate value, and compare the values of nodes that exist in
both (export names nodes after their operator, and ``convert_pt2e`` keeps
those names). The example also times the quantized graph against the float
one, run eagerly, without a backend that lowers the quantize/dequantize pairs.
"""

# %%
# Quantize a small ResNet
# -----------------------
#
# The same flow as on the page: export, prepare with the x86 quantizer,
# calibrate, convert (``torchao``'s PT2E API).

import logging

import torch
import torch.fx as fx

logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)  # torchao's import-time notice
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402
from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (  # noqa: E402
    X86InductorQuantizer,
    get_default_x86_inductor_quantization_config,
)

from fxguide.display.timing import compare  # noqa: E402
from fxguide.models import SmallResNet, seeded  # noqa: E402

model = seeded(SmallResNet).eval()
gen = torch.Generator().manual_seed(0)
batches = [torch.randn(16, 3, 16, 16, generator=gen) for _ in range(6)]
x = torch.randn(16, 3, 16, 16, generator=gen)

quantizer = X86InductorQuantizer().set_global(get_default_x86_inductor_quantization_config())
prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer)
with torch.no_grad():
    for batch in batches:
        prepared(batch)
quantized = convert_pt2e(prepared)
float_graph = torch.export.export(model, (x,)).module()  # prepare_pt2e changed the first one's graph

# %%
# Record every value
# ------------------
#
# An ``Interpreter`` runs a graph node by node; overriding ``run_node`` is
# enough to keep each result under the node's name.


class Recorder(fx.Interpreter):
    def __init__(self, gm: fx.GraphModule) -> None:
        super().__init__(gm)
        self.values: dict[str, torch.Tensor] = {}

    def run_node(self, n: fx.Node):
        result = super().run_node(n)
        if n.op == "call_function" and isinstance(result, torch.Tensor) and result.is_floating_point():
            self.values[n.name] = result.detach()
        return result


with torch.no_grad():
    reference, approximate = Recorder(float_graph), Recorder(quantized)
    reference.run(x)
    approximate.run(x)

# %%
# Compare layer by layer
# ----------------------
#
# The signal-to-quantization-noise ratio (SQNR, in dB: higher is better) of
# each ReLU, residual addition and the classifier, in graph order.


def sqnr(ref: torch.Tensor, approx: torch.Tensor) -> float:
    return (10 * torch.log10(ref.pow(2).mean() / (ref - approx).pow(2).mean())).item()


common = [name for name in reference.values if name in approximate.values
          and name.startswith(("relu", "add", "linear"))]
for name in common:
    print(f"{name:8} SQNR {sqnr(reference.values[name], approximate.values[name]):5.1f} dB")
worst = min(common, key=lambda name: sqnr(reference.values[name], approximate.values[name]))
node = next(n for n in quantized.graph.nodes if n.name == worst)
print("lowest:", worst, "in module", repr(list(node.meta["nn_module_stack"].values())[-1][0]))

# %%
# The values printed above are the measurement: on this model every layer
# stays within a few dB of the others, so no single layer stands out as the
# one to keep in float. When one does, ``meta["nn_module_stack"]`` (kept
# through ``convert_pt2e``) names the module that produced the node, which is
# what a quantizer's per-module settings take.
#
# What the reference graph costs to run
# -------------------------------------
#
# Timed in alternation with the float graph on the same input; a ratio below
# 1 means the quantized graph is slower.

with torch.no_grad():
    float_time, quantized_time, speedup = compare(float_graph, quantized, x, repeats=10)
print("float:    ", float_time)
print("quantized:", quantized_time)
print("speedup:  ", speedup)

# %%
# Run eagerly, the quantized graph still computes every convolution in
# float and adds a quantize/dequantize pair per activation and weight, so
# no speedup is to be expected from it; the median and spread above are
# what this build measured (on a shared machine the spread can be wide).
# Integer kernels come from lowering: Inductor recognizes the pairs around
# each convolution under ``torch.compile(quantized)`` (not run here:
# compiling takes far longer than this example).
