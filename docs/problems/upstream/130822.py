# pytorch/pytorch#130822: export / AOT compile of an FX-graph-mode (prepare_fx/convert_fx) int8 model.
# The thread's model is private; this rebuilds its shape: Linear layers quantized with x86 qconfig on Linear only.
import warnings
warnings.filterwarnings("ignore")
import torch
from torch.ao.quantization import QConfig, QConfigMapping
from torch.ao.quantization.observer import default_observer, default_weight_observer
from torch.ao.quantization.quantize_fx import prepare_fx, convert_fx

torch.backends.quantized.engine = "x86"
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 16); self.b = torch.nn.Linear(16, 4)
    def forward(self, x):
        return self.b(torch.relu(self.a(x)))

x = torch.randn(2, 8)
qmap = QConfigMapping().set_object_type(torch.nn.Linear, QConfig(activation=default_observer, weight=default_weight_observer))
m = prepare_fx(M().eval(), qmap, (x,)); m(x)
q = convert_fx(m)
print("eager int8 ok:", tuple(q(x).shape))
for strict in (True, False):
    try:
        ep = torch.export.export(q, (x,), strict=strict)
        print(f"export strict={strict}: ok;", "diff vs eager", (ep.module()(x) - q(x)).abs().max().item())
    except Exception as e:
        print(f"export strict={strict}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
