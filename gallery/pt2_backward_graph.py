"""
Read and instrument the backward graph of a compiled model
==========================================================

Behind ``torch.compile``, AOT Autograd splits a training step into two ATen
graphs: a forward that also returns the tensors the backward will need, and
a backward that turns incoming gradients into parameter gradients. Both are
FX graphs handed to compilers a user can supply. This example captures them
for a small MLP, measures what the forward saves for the backward (from
``meta["val"]``, without running anything), and instruments the backward to
record the norm of every parameter gradient as it is computed.
"""

# %%
# Capture the two graphs
# ----------------------
#
# A compiler receives a ``GraphModule`` and example inputs and returns a
# callable taking one list (``make_boxed_func`` wraps ``forward`` so).

import torch
import torch.fx as fx
import torch._dynamo
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

from fxguide.models import SmallMLP, seeded

graphs: dict[str, fx.GraphModule] = {}
norms: dict[str, float] = {}


def record_norm(grad: torch.Tensor, name: str) -> torch.Tensor:
    norms[name] = grad.norm().item()
    return grad


def instrument_outputs(gm: fx.GraphModule, names: list[str]) -> None:
    """Send every tensor the graph returns through record_norm, under the name of its position."""
    output = gm.graph.output_node()
    results = list(output.args[0])
    for index, value in enumerate(results):
        if isinstance(value, fx.Node):
            with gm.graph.inserting_before(output):
                probe = gm.graph.call_function(record_norm, (value, names[index]))
            probe.meta.update(value.meta)
            results[index] = probe
    output.args = (tuple(results),)
    gm.graph.lint()
    gm.recompile()


def forward_compiler(gm: fx.GraphModule, example_inputs):
    graphs["forward"] = gm
    return make_boxed_func(gm.forward)


def backward_compiler(gm: fx.GraphModule, example_inputs):
    graphs["backward"] = gm
    # gradient i is the gradient of the forward's placeholder i (primals_1, primals_2, ...)
    instrument_outputs(gm, [n.name for n in graphs["forward"].graph.nodes if n.op == "placeholder"])
    return make_boxed_func(gm.forward)


model = seeded(SmallMLP)
x, target = torch.randn(32, 8), torch.randn(32, 4)


def loss_fn(x, target):
    return torch.nn.functional.mse_loss(model(x), target)


torch.compiler.reset()
step = torch.compile(loss_fn, backend=aot_autograd(fw_compiler=forward_compiler, bw_compiler=backward_compiler))
step(x, target).backward()
for name in ("forward", "backward"):
    gm = graphs[name]
    ops = [n for n in gm.graph.nodes if isinstance(n.target, torch._ops.OpOverload)]
    print(f"{name:8} {len(ops):2} ATen calls, inputs: {[n.name for n in gm.graph.nodes if n.op == 'placeholder']}")

# %%
# What the forward keeps for the backward
# ---------------------------------------
#
# The forward returns the loss first and then every tensor the backward
# reads; the backward's placeholders are those tensors, then the incoming
# gradient ``tangents_1``. Their fake tensors give the memory kept alive
# between the two passes, without running either graph, but summing their
# sizes is wrong: several of them are *aliases*, other names for memory
# another tensor already holds. Tensors that share memory share one storage;
# a fake tensor has no data pointer to compare, but aliases return the same
# storage object, so the count goes by storage.

def storage(node: fx.Node) -> torch.UntypedStorage:
    return node.meta["val"].untyped_storage()


forward_inputs = [n for n in graphs["forward"].graph.nodes if n.op == "placeholder"]
saved = graphs["forward"].graph.output_node().args[0][1:]
first_on: dict[int, fx.Node] = {id(storage(n)): n for n in forward_inputs}  # storage -> first tensor on it
summed = 0
for node in saved:
    val = node.meta["val"]
    size = val.numel() * val.element_size()
    summed += size
    first = first_on.setdefault(id(storage(node)), node)
    kind = "forward input" if first is node and node.op == "placeholder" else "new" if first is node else \
        f"view of input {first.name}" if first.op == "placeholder" else f"alias of {first.name}"
    print(f"{node.name:10} {str(tuple(val.shape)):9} {size:5d} bytes  {kind}")

distinct = {id(storage(n)): first_on[id(storage(n))] for n in saved}
new = [n for n in distinct.values() if n.op != "placeholder"]
print(f"summed over the saved tensors: {len(saved)} tensors, {summed} bytes")
print(f"distinct storages: {len(distinct)}, {sum(storage(n).nbytes() for n in distinct.values())} bytes")
print(f"allocated by the forward and kept: {len(new)} storages, {sum(storage(n).nbytes() for n in new)} bytes",
      [n.name for n in new])

# %%
# Two kinds of alias inflate the naive sum. ``threshold_backward``, the
# ReLU's derivative in the backward printed below, reads each ReLU's output
# through a ``detach`` of it, and ``aten.detach`` returns a new tensor on the
# same memory: ``relu`` and ``detach`` are one buffer under two names, and
# the sum counts it twice. ``t_1`` and ``t_2`` are transposes of the weights
# ``primals_4`` and ``primals_6``: views of memory the model owns anyway, as
# the batch ``primals_3`` and the target ``primals_8`` are the caller's. What
# the forward allocated for the backward is the two ReLU outputs and the last
# layer's output. On real tensors, the data pointers show the sharing:

activation, weight = torch.relu(torch.randn(32, 16)), torch.randn(16, 16)
for op, t in [(torch.ops.aten.detach.default, activation), (torch.ops.aten.t.default, weight)]:
    result = op(t)
    print(f"{op}: same storage as its input {result.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()},",
          f"same tensor {result is t}")

# %%
# The backward graph reads the saved tensors, ``detach`` and ``detach_1``
# through one more ``detach`` each:

print(graphs["backward"].code.strip())

# %%
# The instrumented gradients
# --------------------------
#
# The backward returns one gradient per forward input, in the order of the
# forward's placeholders (``None`` for inputs that need none, here the batch
# and the target). The norms recorded inside the graph match the gradients
# eager autograd computes.

eager_grads = torch.autograd.grad(loss_fn(x, target), list(model.parameters()))
eager = {name: g.norm().item() for name, g in zip(dict(model.named_parameters()), eager_grads)}
for (name, value), (primal, inside) in zip(eager.items(), norms.items()):
    print(f"{name:11} eager {value:.6f} | {primal:10} recorded in the backward graph {inside:.6f}")
print("all match:", all(abs(a - b) < 1e-5 for a, b in zip(eager.values(), norms.values())))
