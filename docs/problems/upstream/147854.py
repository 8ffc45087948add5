# pytorch/pytorch#147854: exporting to ONNX with dynamic shapes failed with
# "unsupported operator: aten._fft_r2c.default" (a model that calls rfft; related #135087).
# Checks torch.export with dynamic sizes and torch.onnx.export(dynamo=True) on 2.14.1, on CPU.
import contextlib
import io
import warnings

import torch
from torch.export import Dim

warnings.filterwarnings("ignore")


class FFTModel(torch.nn.Module):
    def forward(self, image, mask):
        spec = torch.fft.rfft2(image * mask)
        return torch.fft.irfft2(spec.abs() * spec, s=image.shape[-2:])


image, mask = torch.randn(2, 3, 64, 64), torch.randint(0, 2, (2, 1, 64, 64)).float()  # batch 2: a batch of 1 would be specialized
dims = {"image": {0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO}, "mask": {0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO}}
try:
    ep = torch.export.export(FFTModel(), (image, mask), dynamic_shapes=dims)
    other = (torch.randn(3, 3, 48, 80), torch.ones(3, 1, 48, 80))
    print("torch.export dynamic: ok; ranges", sorted(str(v) for v in ep.range_constraints.values()),
          "| other size matches eager:", torch.allclose(ep.module()(*other), FFTModel()(*other), atol=1e-4))
except Exception as e:
    print("torch.export dynamic FAILS:", type(e).__name__, str(e).splitlines()[0][:160])
try:
    with contextlib.redirect_stdout(io.StringIO()):
        onnx_program = torch.onnx.export(FFTModel(), (image, mask), dynamo=True, dynamic_shapes=dims)
    print("torch.onnx.export(dynamo=True) dynamic: ok;", sorted({n.op_type for n in onnx_program.model_proto.graph.node}))
except Exception as e:
    print("torch.onnx.export dynamic FAILS:", type(e).__name__, str(e).splitlines()[0][:200])
