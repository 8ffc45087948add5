# pytorch/pytorch#179870: torch.export.save raised "Unsupported constant type" for constants whose class is
# registered as an opaque type; PR #181676 added save/load support. The thread's pattern: an OpaqueBase
# subclass registered with typ="reference", passed to a custom op as a constant held by the module.
import io
import logging

import torch
from torch._library.opaque_object import register_opaque_type
from torch._opaque_base import OpaqueBase

logging.getLogger("torch._library.opaque_object").setLevel(logging.ERROR)  # "register_opaque_type is deprecated"


class Scale(OpaqueBase):
    def __init__(self, factor=2.0):
        self.factor = factor

    def __getstate__(self):
        return {"factor": self.factor}

    def __setstate__(self, state):
        self.factor = state["factor"]


register_opaque_type(Scale, typ="reference")


@torch.library.custom_op("fxguide_repro::scaled", mutates_args=())
def scaled(x: torch.Tensor, s: Scale) -> torch.Tensor:
    return x * s.factor


@scaled.register_fake
def _(x, s):
    return torch.empty_like(x)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.s = Scale(3.0)

    def forward(self, x):
        return torch.ops.fxguide_repro.scaled(x, self.s)


x = torch.randn(4)
ep = torch.export.export(M(), (x,))
print("constants:", {k: type(v).__name__ for k, v in ep.constants.items()})
buf = io.BytesIO()
try:
    torch.export.save(ep, buf)
    buf.seek(0)
    loaded = torch.export.load(buf)
    print("saved and loaded; matches eager:", torch.equal(loaded.module()(x), M()(x)))
except Exception as e:
    print("STILL FAILS:", type(e).__name__, str(e).splitlines()[0][:200])
