# pytorch/pytorch#158083: capture_scalar_outputs + x + x.sum().item() under aot_eager failed in tensorify_python_scalars
import torch

torch._dynamo.config.capture_scalar_outputs = True


@torch.compile(backend="aot_eager")
def f(x):
    y = x.sum()
    return x + y.item()


x = torch.ones(3, 3)
try:
    out = f(x)
    print("compiled OK; matches eager:", torch.equal(out, x + x.sum().item()))
except Exception as e:
    print("STILL FAILS:", type(e).__name__, str(e).splitlines()[0][:200])
