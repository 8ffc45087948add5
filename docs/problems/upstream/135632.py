# pytorch/pytorch#135632: export with real-tensor propagation failed on max() of two data-dependent sizes.
import torch
import torch._functorch.config  # not imported by "import torch" on 2.14.1
from torch.export import export


class Foo(torch.nn.Module):
    def forward(self, x, y):
        x = x[x > 0]
        y = y[y > 0]
        return max(x.shape[0], y.shape[0])


g = torch.Generator().manual_seed(0)
inputs = (torch.randn(64, generator=g), torch.randn(64, generator=g))
try:
    with torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True):
        ep = export(Foo(), inputs, strict=False)
    print("exported with real-tensor prop; output", ep.module()(*inputs), "eager", Foo()(*inputs))
except Exception as e:
    print("STILL FAILS:", type(e).__name__, str(e).splitlines()[0][:200])
try:
    ep = export(Foo(), inputs, strict=False)
    print("plain export also works; output", ep.module()(*inputs))
except Exception as e:
    print("plain export (no real-tensor prop):", type(e).__name__, str(e).splitlines()[0][:150])
