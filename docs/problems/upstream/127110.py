# pytorch/pytorch#127110: strict export failed with "Failed to produce a graph during tracing as no tensor
# operations were found" when forward returns an input untouched (the thread's test_return_empty).
import torch


class M(torch.nn.Module):
    def forward(self, x, y):
        return y


for strict in (True, False):
    try:
        ep = torch.export.export(M(), (torch.randn(3), {}), strict=strict)
        print(f"strict={strict}: ok; module returns {ep.module()(torch.randn(3), {})!r}")
    except Exception as e:
        print(f"strict={strict}: FAILS {type(e).__name__}: {str(e).splitlines()[0][:150]}")
