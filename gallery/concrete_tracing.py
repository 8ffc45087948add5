"""
Tracing a shape-dependent model with concrete values
====================================================

Real models look at their input: they convert grayscale images to three
channels, or pool until the feature map is small enough. ``symbolic_trace``
cannot follow such code, because its stand-in values have no shape to look
at. ``fxguide.tracing.concrete.concrete_trace`` runs an example image through the
model alongside the stand-ins, so every question gets an answer; the graph it
returns holds the example's path and a guard for every answer, so an image
that would take another path is refused instead of miscomputed. This example
traces a small image model, lists its decisions, watches a guard fire, and
keeps one graph per image size.
"""

# %%
# A model that adapts to its input
# --------------------------------
#
# Two questions about the input's shape: does it have one channel, and is the
# feature map still wider than 8 pixels? The ``while`` loop pools as many
# times as the image size requires.


import matplotlib.pyplot as plt
import torch
import torch.fx as fx
import torch.nn.functional as F
from torch import nn

from fxguide.tracing.concrete import GuardError, concrete_trace, decisions, show_decisions
from fxguide.display import show_code
from fxguide.models import seeded


class AdaptivePool(nn.Module):
    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.head = nn.Linear(8, classes)

    def forward(self, x):
        if x.shape[1] == 1:
            x = x.expand(-1, 3, -1, -1)
        x = torch.relu(self.conv(x))
        while x.shape[-1] > 8:
            x = F.max_pool2d(x, 2)
        return self.head(x.mean(dim=(2, 3)))


model = seeded(AdaptivePool).eval()
generator = torch.Generator().manual_seed(0)
rgb32 = torch.randn(2, 3, 32, 32, generator=generator)
rgb16 = torch.randn(2, 3, 16, 16, generator=generator)
gray32 = torch.randn(2, 1, 32, 32, generator=generator)

# %%
# Symbolic tracing stops at the first question
# --------------------------------------------

try:
    fx.symbolic_trace(model)
except fx.proxy.TraceError as error:
    print(f"TraceError: {error}")

# %%
# Trace with an example image
# ---------------------------
#
# A 32x32 colour image takes the colour path and is pooled twice (32 -> 16 ->
# 8). The graph holds exactly that: no ``expand``, two ``max_pool2d`` calls,
# and a ``guard_N`` call after each question the code asked.

gm = concrete_trace(model, (rgb32,))
show_code(gm)

# %%
# The decisions behind the graph
# ------------------------------
#
# Each guard checks one recorded decision: where it was made, what the line
# says, and the answer for the example. The ``while`` condition was asked
# three times: true, true, false.

show_decisions(gm)
torch.testing.assert_close(gm(rgb32), model(rgb32))

# %%
# Another image size is refused, not miscomputed
# ----------------------------------------------
#
# A 16x16 image needs one pooling step, not two. The graph would pool it down
# to 4x4 and return a plausible but wrong answer; instead the guard of the
# first ``while`` test that answers differently stops it.

try:
    gm(rgb16)
except GuardError as error:
    print(error)
    print(f"traced: {error.traced}, new: {error.new}")

# %%
# One graph per path
# ------------------
#
# With ``on_mismatch="retrace"``, an input that no graph accepts is traced
# again and its graph is kept. Three inputs, three paths, each checked against
# eager mode.

paths = concrete_trace(model, (rgb32,), on_mismatch="retrace")
for image in (rgb32, rgb16, gray32, rgb16):
    torch.testing.assert_close(paths(image), model(image))
print(f"{len(paths.paths)} graphs for 4 calls")
show_decisions(paths)

# %%
# Guarded, refused, or out of reach
# ---------------------------------
#
# Python can turn a traced value into a plain answer in many ways besides
# ``if``: a dict lookup keyed by a size hashes it, an f-string formats it.
# Each such answer is a decision with its own guard, so a batch of another
# size is refused rather than given the traced size's factor.

from fxguide.tracing.concrete import UnguardableError


class SizeLookup(nn.Module):
    def forward(self, x):
        return x * {2: 10.0}.get(x.shape[0], 1.0)


lookup = concrete_trace(SizeLookup(), (rgb32,))
show_decisions(lookup)
try:
    lookup(torch.cat([rgb32, rgb32]))
except GuardError as error:
    print(f"GuardError: {error.decision.code} -> traced {error.traced}, new {error.new}")

# %%
# The structure of the call is guarded too: a graph traced on a list of two
# images refuses a list of three, rather than computing with the first two.
# Every question the tracer can be asked, and what it does with each, is listed
# in :mod:`fxguide.tracing.concrete.questions`.


def total(images):
    return sum(images)


pair = concrete_trace(total, ([rgb32, rgb32],))
try:
    pair([rgb32, rgb32, rgb32])
except GuardError as error:
    print(f"GuardError: {error.decision.code} was {error.traced} when traced, is {error.new} now")

# %%
# What no graph can replay is refused while tracing. Storing a traced value
# on the module (a running total kept in a plain attribute) would leave a
# stand-in inside the model and skip the update on later calls:


class RunningTotal(nn.Module):
    def __init__(self):
        super().__init__()
        self.total = torch.zeros(())

    def forward(self, x):
        self.total = self.total + x.sum()
        return x - self.total


try:
    concrete_trace(RunningTotal(), (rgb32,))
except UnguardableError as error:
    print(f"UnguardableError: {error}")

# %%
# Some questions Python answers without asking the value, so the tracer never
# sees them: ``is`` compares the stand-ins themselves, which gives the graph
# another answer than eager mode, even on the traced input; keep ``is`` for
# ``None`` checks. A global variable is read once, at trace time: the graph
# holds the value it read, and checks on every call that the global still has
# it, so a change after tracing raises ``GuardError``; pass changing values as
# inputs.


def same_object(x):
    y = x.add_(0)  # in place: eager mode returns x itself
    return x * 2 if y is x else x


SCALE = 2.0


def scaled(x):
    return x * SCALE


same = concrete_trace(same_object, (torch.ones(2),))
print("`is`:   eager", same_object(torch.ones(2)).tolist(), " graph", same(torch.ones(2)).tolist())
scaled_gm = concrete_trace(scaled, (torch.ones(2),))
SCALE = 3.0
print("global: eager", scaled(torch.ones(2)).tolist())
try:
    scaled_gm(torch.ones(2))
except GuardError as error:
    print(f"global: graph GuardError: {str(error).split(', so')[0]}")

# %%
# What the guards cost
# --------------------
#
# The guards run on every call. How much of a call are they? ``compare``
# (from ``fxguide.display.timing``) calls the eager model and the guarded graph
# alternately, so both see the same load on a shared machine, and reports the
# median with the fastest and slowest run; ``measure`` times the guards alone
# the same way. One thread, so that thread scheduling on a busy machine
# disturbs the numbers less. (``torch.utils.benchmark.Timer`` is torch's own
# timer for one statement at a time; alternating two is what ``compare`` adds.)

from fxguide.display.timing import compare, measure

guards = [gm.get_submodule(decision.guard_name) for decision in decisions(gm)]
answers = [decision.value for decision in decisions(gm)]


def check_guards():
    for guard, answer in zip(guards, answers):
        guard(answer)


threads = torch.get_num_threads()
torch.set_num_threads(1)  # time the work, not thread scheduling on a busy machine
try:
    with torch.inference_mode():
        eager, graph, ratio = compare(model, gm, rgb32, repeats=30)
        guards_alone = measure(check_guards, repeats=30)
finally:
    torch.set_num_threads(threads)
timings = {"eager model": eager, "guarded graph": graph, f"{len(guards)} guards alone": guards_alone}
for name, timing in timings.items():
    print(f"{name:15} {timing}")
print(f"eager / graph:  {ratio}")
# The claim this section makes, checked every time the example runs:
assert guards_alone.median < 0.25 * graph.median, timings

# %%
# The eager model and the guarded graph run the same convolutions; the graph
# adds the guards and the generated ``forward``, and the guards' median is a
# small part of the graph's (the assertion above checks it on every run). The
# bars are medians, the lines the fastest and slowest runs.

fig, ax = plt.subplots(figsize=(6, 2.4))
medians = [timing.median * 1e3 for timing in timings.values()]
spreads = [[(timing.median - timing.min) * 1e3 for timing in timings.values()],
           [(timing.max - timing.median) * 1e3 for timing in timings.values()]]
ax.barh(list(timings), medians, xerr=spreads, color=["#888888", "#4c72b0", "#dd8452"])
ax.invert_yaxis()
ax.set_xlabel("milliseconds per call (median of 30, fastest to slowest)")
ax.set_title("Guards are a small part of a call")
fig.tight_layout()
plt.show()
