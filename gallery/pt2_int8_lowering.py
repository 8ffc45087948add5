"""
Int8 kernels from Inductor: freezing, and what the speedup really is
=====================================================================

The :doc:`quantization page </pt2/quantization>` ends with a reference graph:
every convolution still computes in float between quantize/dequantize pairs.
This example compiles that graph with Inductor, once as is and once with
*freezing* on, reads the generated code to see which kernels each compile
calls, and times the int8 program against the compiled float model, in
alternation, with the spread of every measurement. The model is small on
purpose: each Inductor compile generates and builds C++ code, which takes
seconds on a small CPU.
"""

# %%
# Quantize
# --------
#
# The PT2E flow of the quantization page (export, prepare with the x86
# quantizer, calibrate, convert) on ``ConvNet`` with 32 channels, at a size
# where the convolutions dominate the work.

import logging
import re
import time
import warnings

import matplotlib.pyplot as plt
import torch
import torch._inductor.config as inductor_config
from torch._inductor.utils import run_and_get_code

logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)  # torchao's import-time notice
logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # "No CUDA runtime is found"
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402
from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (  # noqa: E402
    X86InductorQuantizer,
    get_default_x86_inductor_quantization_config,
)

from fxguide.display.timing import Speedup, Timing, format_time  # noqa: E402
from fxguide.models import seeded  # noqa: E402
from fxguide.models.pt2 import ConvNet  # noqa: E402

# Inductor's int8 lowering copies a tensor the way torch warns against, once per compile
warnings.filterwarnings("ignore", message="To copy construct from a tensor")
threads = torch.get_num_threads()
torch.set_num_threads(1)  # one thread: timings on a shared machine stay comparable
model = seeded(ConvNet, channels=32).eval()
gen = torch.Generator().manual_seed(0)
x = torch.randn(16, 3, 32, 32, generator=gen)

quantizer = X86InductorQuantizer().set_global(get_default_x86_inductor_quantization_config())
prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer)
with torch.no_grad():
    for _ in range(4):
        prepared(torch.randn(16, 3, 32, 32, generator=gen))
quantized = convert_pt2e(prepared)

# %%
# Compile, and read the kernels
# -----------------------------
#
# ``run_and_get_code`` compiles and runs a function and returns the Python
# source Inductor generated for it. The oneDNN int8 kernels appear there by
# name (``torch.ops.onednn.qconv_pointwise`` and the like); a compile that
# computes in float calls none of them. The quantization page shows that
# torchao's int8 rewrites are Inductor freezing passes, and
# ``torch._inductor.config.freezing`` is off unless patched.


def compiled(module, freezing: bool):
    """Compile ``module`` with Inductor; return the compiled callable, the oneDNN ops it calls, the seconds."""
    torch.compiler.reset()
    start = time.perf_counter()
    with torch.no_grad(), inductor_config.patch(freezing=freezing, compile_threads=1):
        fn = torch.compile(module)
        _, code = run_and_get_code(fn, x)
    seconds = time.perf_counter() - start
    return fn, sorted(set(re.findall(r"torch\.ops\.onednn\.\w+", "\n".join(code)))), seconds


print("freezing by default:", inductor_config.freezing)
int8_fns = {}
for freezing in (False, True):
    int8_fns[freezing], kernels, seconds = compiled(quantized, freezing)
    print(f"quantized graph, freezing={freezing!s:5}: oneDNN int8 ops {kernels}  (compiled in {format_time(seconds)})")

# %%
# Without freezing, Inductor compiled the reference graph as it is: its own
# generated code for the quantize/dequantize arithmetic and float
# convolutions, no int8 kernel. With freezing, the convolutions and the
# linear layer became oneDNN int8 calls.
#
# The two programs to time: the int8 one, and the float model compiled the
# same way (Inductor with freezing), so that the comparison is int8 against
# float, not compiled against eager.

int8_fn = int8_fns[True]
float_fn, float_kernels, _ = compiled(model, freezing=True)
with torch.no_grad():
    reference = model(x)
    error = (int8_fn(x) - reference).abs().max().item()
largest = reference.abs().max().item()
print("float compile calls", float_kernels or "no oneDNN int8 op",
      f"| int8 output within 1 % of the largest float output: {error <= 0.01 * largest}")

# %%
# Time them, interleaved
# ----------------------
#
# Call the two alternately, so both see the same load on a shared machine,
# and keep each pair's ratio (above 1: int8 was faster in that pair). The loop
# is all there is to it; ``Timing`` and ``Speedup`` from
# ``fxguide.display.timing`` only print a median with its fastest and slowest
# value. (torch's own ``torch.utils.benchmark.Timer`` times one statement at a
# time, with warm-up and thread control; it does not interleave two.) The
# recorded output replaces the numbers by placeholders; the built page shows
# this build's.

pairs = []
with torch.no_grad():
    for _ in range(3):  # warm-up, untimed
        float_fn(x), int8_fn(x)
    for _ in range(30):
        start = time.perf_counter()
        float_fn(x)
        middle = time.perf_counter()
        int8_fn(x)
        pairs.append((middle - start, time.perf_counter() - middle))
float_time = Timing(tuple(f for f, _ in pairs))
int8_time = Timing(tuple(i for _, i in pairs))
speedup = Speedup(tuple(f / i for f, i in pairs))
print("float, compiled: ", float_time)
print("int8, compiled:  ", int8_time)
print("speedup:         ", speedup)

# %%
# The verdict is computed from the spread, not from the medians: int8 is
# called faster only if it won every pair, slower only if it lost every pair,
# and otherwise this run makes no claim. It is the figure's title, so that it
# is always this build's measurement.

if speedup.min > 1:
    verdict = f"int8 faster in every pair: {speedup.min:.2f}x to {speedup.max:.2f}x"
elif speedup.max < 1:
    verdict = f"int8 slower in every pair: {speedup.min:.2f}x to {speedup.max:.2f}x"
else:
    verdict = f"no claim: pair ratios from {speedup.min:.2f}x to {speedup.max:.2f}x straddle 1"

timings = {"float (Inductor)": float_time, "int8 (Inductor, freezing)": int8_time}
medians = [t.median * 1e3 for t in timings.values()]
low = [m - t.min * 1e3 for m, t in zip(medians, timings.values())]
high = [t.max * 1e3 - m for m, t in zip(medians, timings.values())]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.bar(list(timings), medians, yerr=[low, high], capsize=6, color=["#9ab", "#da5"])
ax.set_ylabel("ms per batch of 16 (median, min to max)")
ax.set_title(verdict, fontsize=10)
fig.tight_layout()
plt.show()
torch.set_num_threads(threads)  # the examples that run after this one get every thread back

# %%
# Before you trust a compiled model: compare it, on this machine
# --------------------------------------------------------------
#
# The comparison with float above is the check to keep: run it on the
# machine that runs the model, with that machine's compiled code, and fail
# when it does not hold (a bound relative to the outputs, as above, not a
# printed number: the last digits of such an error change with the CPU's
# kernels and thread count).
#
# Run it after the code was loaded from a cache, too. Inductor keeps the code it
# compiles in an on-disk cache (``TORCHINDUCTOR_CACHE_DIR``, by default a
# folder of the system's temporary directory), keyed on the graph, the inputs,
# its configuration, the thread count, the default dtype... but not on the
# vector instructions it compiled for. Capture the key's details while a
# small function compiles:

from torch._inductor import codecache  # noqa: E402
from torch._inductor.cpu_vec_isa import pick_vec_isa  # noqa: E402

captured = []
original_init = codecache.FxGraphHashDetails.__init__


def keep_details(self, *args, **kwargs):
    original_init(self, *args, **kwargs)
    captured.append(self)


def round_trip(t):  # quantize to uint8 and back, as Inductor fuses between two int8 kernels
    q = torch.clamp(torch.round(t / 0.02) + 128, 0, 255).to(torch.uint8)
    return torch.relu((q.float() - 128) * 0.02)


codecache.FxGraphHashDetails.__init__ = keep_details
try:
    torch.compiler.reset()
    torch.compile(round_trip)(torch.randn(64, 64, generator=gen))
finally:
    codecache.FxGraphHashDetails.__init__ = original_init
key = vars(captured[-1])
print("in the cache key: thread count", "cpp_runtime_thread_count" in key, "| default dtype", "default_dtype" in key,
      "| the vector ISA compiled for", any(str(pick_vec_isa()) in repr(value) for value in key.values()))

# %%
# So nothing stops code compiled for one vector width from being loaded
# where another one runs. Inductor picks the width from the CPU, or from
# ``ATEN_CPU_CAPABILITY`` when it is set. While this example was written, on
# an AVX-512 machine, a run with ``ATEN_CPU_CAPABILITY=avx2`` after one
# without it, sharing one cache, loaded the 16-lane code, built it for 8
# lanes, left half of every output uncomputed and printed ``inf``, ``nan`` or
# numbers near 1e17 where the check above prints True; nothing raised. A
# cache copied between machines with different CPUs (a CI cache, a container
# image) is exposed the same way. With a cache of its own, each setting gave
# the right int8 results.
#
# What to do on such a machine: give each CPU setting its own cache folder
# (``TORCHINDUCTOR_CACHE_DIR``), or turn the on-disk graph cache off
# (``TORCHINDUCTOR_FX_GRAPH_CACHE=0``) to see whether the numbers change.
#
# What to take away
# -----------------
#
# - A quantized PT2E graph gets int8 kernels from Inductor only with
#   ``torch._inductor.config.freezing`` on (and gradients off); otherwise it is
#   compiled in float, which the generated code shows.
# - torchao's ``lower_pt2e_quantized_to_x86`` applies the same rewrites without
#   generating code (see the quantization page); Inductor adds its own fused
#   code for what lies between the int8 kernels.
# - Whether int8 is faster depends on the machine, the sizes and the load; the
#   title above is this build's answer, read from every pair.
# - Compare the compiled model with float on the machine that runs it, and fail
#   on a bound; keep one Inductor cache per CPU setting.
