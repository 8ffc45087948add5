"""AOT Autograd and backends, under ``torch.compile``: double backward through a compiled function, a backend that
fails (``BackendCompilerFailed``).

Each fix runs under the same tool and returns what eager mode returns.
"""

import torch

from fxguide.atlas.repros import fix_of, repro

X = torch.arange(1.0, 9.0).reshape(2, 4)


def cube_sum(x):
    return (x ** 3).sum()


@repro("torch.compile with aot_autograd does not currently support double backward", tool="torch.compile + grad",
       entry="96b211e528", cause="The compiled backward is not itself differentiable: a gradient of a gradient fails.")
def double_backward():
    x = X.clone().requires_grad_()
    compiled = torch.compile(cube_sum, backend="aot_eager")
    (grad,) = torch.autograd.grad(compiled(x), x, create_graph=True)
    grad.sum().backward()


@fix_of(double_backward)
def second_derivative_in_graph():
    """Compute the second derivative inside the compiled function, with torch.func."""
    second = torch.func.grad(lambda x: torch.func.grad(cube_sum)(x).sum())
    torch._dynamo.reset()
    return torch.compile(second, backend="aot_eager")(X), 6 * X


def failing_backend(gm, example_inputs):
    raise RuntimeError("this backend cannot compile the graph")


@repro("BackendCompilerFailed", tool="torch.compile(backend=...)", entry="470578330a",
       cause="The backend (Inductor, or any compiler given as backend=) raised while compiling Dynamo's graph.")
def backend_fails():
    torch._dynamo.reset()
    torch.compile(torch.relu, backend=failing_backend)(X)


@fix_of(backend_fails)
def backend_that_runs():
    """Find the failing layer with a backend that does less (aot_eager, then eager), then report or avoid it."""
    torch._dynamo.reset()
    return torch.compile(torch.relu, backend="aot_eager")(X), torch.relu(X)
