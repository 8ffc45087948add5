# pytorch/pytorch#126607: export with some named Dims fails (constraints violated) on softmax(x.view(x.size(1), -1))
# where dynamo_export(dynamic_shapes=True) worked. Checks a named Dim on one axis, named Dims on all axes,
# and Dim.AUTO on 2.14.1 (CPU instead of the thread's CUDA).
import torch
import torch.nn as nn
from torch.export import Dim


class Model(nn.Module):
    def forward(self, x):
        return nn.functional.softmax(x.view(x.size(1), -1), dim=0)


x = torch.rand(1024, 20, 16)
specs = {
    "batch only (named Dim)": {"x": {0: Dim("batch")}},
    "all axes (named Dims)": {"x": {0: Dim("batch"), 1: Dim("x1"), 2: Dim("x2")}},
    "all axes Dim.AUTO": {"x": {0: Dim.AUTO, 1: Dim.AUTO, 2: Dim.AUTO}},
}
for name, spec in specs.items():
    try:
        ep = torch.export.export(Model(), (x,), dynamic_shapes=spec)
        y = torch.rand(512, 20, 16)
        print(f"{name:24} ok; ranges {dict((str(k), str(v)) for k, v in ep.range_constraints.items())}; "
              f"other batch matches eager: {torch.allclose(ep.module()(y), Model()(y))}")
    except Exception as e:
        print(f"{name:24} {type(e).__name__}: {str(e).splitlines()[0][:120]}")
