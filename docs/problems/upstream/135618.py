# pytorch/pytorch#135618: export with real-tensor propagation (the mode behind draft_export) failed on a
# branch on the row count of torch.where(cond)[0]. Fixed by PR #135717 per the thread.
import torch
import torch._functorch.config  # not imported by "import torch" on 2.14.1
from torch.export import export


class Baz(torch.nn.Module):
    def forward(self, x):
        x = torch.where(x <= 0.5)[0]
        if x.shape[0] < 200:
            return x + 2


inputs = (torch.randn(64, 32, generator=torch.Generator().manual_seed(0)),)
try:
    with torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True):
        ep = export(Baz(), inputs, strict=False)
    print("exported with real-tensor prop; output matches eager:", ep.module()(*inputs) == Baz()(*inputs) or
          torch.equal(ep.module()(*inputs), Baz()(*inputs)))
except Exception as e:
    print("STILL FAILS:", type(e).__name__, str(e).splitlines()[0][:200])
# the public route to real-tensor propagation on 2.14.1 is torch.export.draft_export
try:
    ep = torch.export.draft_export(Baz(), inputs)
    print("draft_export: ok; output matches eager:", ep.module()(*inputs) is None and Baz()(*inputs) is None)
except Exception as e:
    print("draft_export fails too:", type(e).__name__, str(e).splitlines()[0][:200])
