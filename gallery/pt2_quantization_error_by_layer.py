"""
Where PT2E quantization loses precision, layer by layer
=======================================================

The :doc:`quantization page </pt2/quantization>` measures the error of a
PT2E-quantized model at its output. To find *which* layer costs the most, run
the float and the quantized graphs side by side with an ``Interpreter`` that
keeps every intermediate value, and compare the values of nodes that exist in
both (export names nodes after their operator, and ``convert_pt2e`` keeps
those names), then does the same with torchao's numeric debugger. Last, it
lowers the quantized graph to int8 kernels and times it against the float
graph.
"""

# %%
# Quantize a small ResNet
# -----------------------
#
# The same flow as on the page: export, prepare with the x86 quantizer,
# calibrate, convert (``torchao``'s PT2E API). The quantizer works on the
# training IR that ``torch.export.export`` returns, so every graph here is at
# that level. ``prepare_pt2e`` edits the graph it is given, so the float graph
# to compare with is a copy taken before.

import copy
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

exported = torch.export.export(model, (x,)).module()
float_graph = copy.deepcopy(exported)
quantizer = X86InductorQuantizer().set_global(get_default_x86_inductor_quantization_config())
prepared = prepare_pt2e(exported, quantizer)
with torch.no_grad():
    for batch in batches:
        prepared(batch)
quantized = convert_pt2e(prepared)

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
# The same with torchao's numeric debugger
# ----------------------------------------
#
# torchao ships this comparison: ``prepare_for_propagation_comparison``
# inserts a logger after every node that comes from the exported graph (it
# follows the ``from_node`` provenance ``meta`` keeps through each pass), and
# ``compare_results`` pairs the loggers of two graphs that come from the same
# export, here the float copy and the quantized graph.

from torchao.quantization.pt2e import (  # noqa: E402
    compare_results,
    extract_results_from_loggers,
    prepare_for_propagation_comparison,
)

float_logged = prepare_for_propagation_comparison(float_graph)
quantized_logged = prepare_for_propagation_comparison(quantized)
with torch.no_grad():
    float_logged(x)
    quantized_logged(x)
summary = compare_results(extract_results_from_loggers(float_logged), extract_results_from_loggers(quantized_logged))
for result in summary.values():
    print(f"{result.ref_node_name:9} {result.actual_module_stack or '(root)':15} "
          f"SQNR {float(result.results[0].sqnr):5.1f} dB")
same = all(abs(float(r.results[0].sqnr) - sqnr(reference.values[r.ref_node_name], approximate.values[r.ref_node_name]))
           < 0.05 for r in summary.values() if r.ref_node_name in common)
print("equal to the Interpreter's figures on the nodes compared above:", same)

# %%
# It compares every node, the convolutions too, and their figures are low
# for a reason that is not rounding: ``prepare_pt2e`` folded each batch norm
# into the convolution before it, so a quantized ``conv2d`` node outputs what
# the float graph computes only after its ``batch_norm``.

for name, graph in [("float", float_graph), ("quantized", quantized)]:
    print(f"{name:9} batch_norm nodes:", len(graph.graph.find_nodes(op="call_function", target=torch.ops.aten.batch_norm.default)))

# %%
# That is why the by-hand comparison above kept to ReLUs, additions and the
# classifier, where both graphs compute the same quantity.
#
# Lowering to int8 kernels, and what it costs to run
# --------------------------------------------------
#
# The quantized graph still computes every convolution in float, between
# quantize/dequantize pairs. ``lower_pt2e_quantized_to_x86`` (see the
# :doc:`quantization page </pt2/quantization>`) replaces each group by one
# oneDNN int8 kernel call. The two convolutions that feed a residual
# addition become ``qconv2d_pointwise.binary``: the addition runs inside the
# kernel.

from collections import Counter  # noqa: E402

from torchao.quantization.pt2e.lowering import lower_pt2e_quantized_to_x86  # noqa: E402

with torch.no_grad():
    lowered = lower_pt2e_quantized_to_x86(quantized, (x,))
    # the oneDNN kernels do not repeat the quantized graph's float steps exactly: close, not equal
    print("within 0.05 of the quantized graph:", torch.allclose(lowered(x), quantized(x), atol=5e-2))
print({str(t): n for t, n in Counter(n.target for n in lowered.graph.nodes if n.op == "call_function").items()
       if "onednn" in str(t)})

# %%
# Each graph is timed in alternation with the float graph on the same input
# (:func:`fxguide.display.timing.compare`); a speedup below 1 means slower
# than float.

with torch.no_grad():
    float_time, quantized_time, reference_speedup = compare(float_graph, quantized, x, repeats=10)
    float_again, lowered_time, lowered_speedup = compare(float_graph, lowered, x, repeats=10)
print("float:            ", float_time)
print("reference graph:  ", quantized_time, "| speedup", reference_speedup)
print("float (again):    ", float_again)
print("lowered to int8:  ", lowered_time, "| speedup", lowered_speedup)

# %%
# Read each speedup with its spread. The reference graph adds a
# quantize/dequantize pair per activation and weight to float convolutions,
# so it is not expected to be faster than float. The lowered graph runs
# integer kernels, but on a model this small (16 images of 16 x 16, 16
# channels) the per-call costs weigh as much as the arithmetic: where the
# spread of a speedup straddles 1, this run could not tell the two apart,
# whatever the median says. The recorded output replaces the numbers by
# placeholders; the built page shows this build's.
