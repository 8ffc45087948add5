"""Reading tensor data: ``.item()``, ``.tolist()``, ``bool(tensor)``, masks and value-dependent control flow.

The second input takes the other branch where the code branches on values.
"""

import torch
from torch import nn

from fxguide.atlas import case, fix_for


def signs() -> tuple[tuple, tuple]:
    """A positive input, then a negative one: value-dependent code takes another path."""
    return (torch.ones(2, 4),), (-torch.ones(2, 4),)


def mixed() -> tuple[tuple, tuple]:
    """Two inputs with a different number of positive elements."""
    return (torch.tensor([[1.0, -1.0, 2.0, -2.0]]),), (torch.tensor([[1.0, 1.0, 2.0, -2.0]]),)


@case(".item() in arithmetic", fix="Keep the value a tensor (x / x.max()); under torch.compile set "
      "torch._dynamo.config.capture_scalar_outputs = True.")
class ItemArithmetic(nn.Module):
    def forward(self, x):
        return x / x.max().item()


@case(".item() in an if", fix="Use torch.where, or torch.cond for two branches of different code.",
      inputs=signs)
class ItemBranch(nn.Module):
    def forward(self, x):
        if x.sum().item() > 0:
            return x + 1
        return x - 1


@case("if on a tensor (bool(tensor))", fix="Use torch.where, or torch.cond.", inputs=signs)
class BoolBranch(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


@case("while on a tensor", fix="Use a fixed number of steps, or torch._higher_order_ops.while_loop.",
      inputs=lambda: ((torch.full((2, 4), 3.0),), (torch.full((2, 4), 9.0),)))
class WhileOnTensor(nn.Module):
    def forward(self, x):
        while x.max() > 1:
            x = x / 2
        return x


@case(".tolist()", fix="Keep tensors; index with tensors.", inputs=mixed)
class ToList(nn.Module):
    def forward(self, x):
        return torch.tensor([v * 2 for v in x[0].tolist()])


@case("float(tensor)", fix="Keep the value a tensor.", inputs=signs)
class FloatOfTensor(nn.Module):
    def forward(self, x):
        return x * float(x.mean())


@case("int(tensor) as a size", fix="Use a size from x.shape; under export, torch._check the value's range.",
      inputs=lambda: ((torch.tensor([2.0]),), (torch.tensor([3.0]),)))
class IntOfTensorAsSize(nn.Module):
    def forward(self, x):
        return torch.zeros(int(x[0]))


@case("nonzero()", fix="Under export, add torch._check on the count; under torch.compile set "
      "capture_dynamic_output_shape_ops = True.", inputs=mixed)
class Nonzero(nn.Module):
    def forward(self, x):
        return x.nonzero()


@case("boolean mask indexing", fix="Use torch.where(mask, x, 0) to keep the shape.", inputs=mixed)
class BoolMask(nn.Module):
    def forward(self, x):
        return x[x > 0]


@case("torch.where (no data-dependent shape)", fix="Nothing: the graph holds it.", inputs=mixed)
class TorchWhere(nn.Module):
    def forward(self, x):
        return torch.where(x > 0, x, torch.zeros_like(x))


@case("torch.unique", fix="As for nonzero(): the output's size depends on values.", inputs=mixed)
class Unique(nn.Module):
    def forward(self, x):
        return torch.unique(x)


@case("x.shape[0] in arithmetic", fix="Nothing for most tools; symbolic_trace keeps it as a node.",
      inputs=lambda: ((torch.ones(2, 4),), (torch.ones(3, 4),)))
class ShapeArithmetic(nn.Module):
    def forward(self, x):
        return x.reshape(x.shape[0] * 2, -1)


@case("int(x.shape[0]) in range()", fix="Capture with the size you will run, or keep size a tensor "
      "operation.", inputs=lambda: ((torch.ones(2, 4),), (torch.ones(3, 4),)))
class RangeOfSize(nn.Module):
    def forward(self, x):
        return torch.stack([x[i] * i for i in range(int(x.shape[0]))])


@case("if on a shape", fix="Expected to specialize: capture each shape, or use dynamic shapes where "
      "the tool has them.", inputs=lambda: ((torch.ones(2, 4),), (torch.ones(5, 4),)))
class ShapeBranch(nn.Module):
    def forward(self, x):
        if x.shape[0] > 3:
            return x + 1
        return x - 1


@case("x.numel() == 0 check", fix="Nothing, if empty inputs never come; otherwise guard outside.",
      inputs=lambda: ((torch.ones(2, 4),), (torch.ones(0, 4),)))
class EmptyCheck(nn.Module):
    def forward(self, x):
        if x.numel() == 0:
            return x.sum(0)
        return x.mean(0)


@case("torch.any(...) as an early exit", fix="Use torch.where, or torch.cond.", inputs=signs)
class AnyEarlyExit(nn.Module):
    def forward(self, x):
        if torch.any(x < 0):
            return torch.zeros_like(x)
        return x.sqrt()


@case("a Python list indexed by .item()", fix="Stack the list into a tensor and index it with a tensor.",
      inputs=lambda: ((torch.tensor([0]),), (torch.tensor([1]),)))
class ListIndexByItem(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = [2.0, 3.0]

    def forward(self, i):
        return torch.ones(2) * self.scales[i.item()]


# --- The fixes, each run through every tool like the rows above --------------------------------


@fix_for(ItemArithmetic)
class MaxAsTensor(nn.Module):
    def forward(self, x):
        return x / x.max()


@fix_for(ItemBranch)
class ItemBranchAsWhere(nn.Module):
    def forward(self, x):
        return torch.where(x.sum() > 0, x + 1, x - 1)


@fix_for(BoolBranch)
class BoolBranchAsCond(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,))


@fix_for(ToList)
class TensorOps(nn.Module):
    def forward(self, x):
        return x[0] * 2


@fix_for(FloatOfTensor)
class MeanAsTensor(nn.Module):
    def forward(self, x):
        return x * x.mean()


@fix_for(AnyEarlyExit)
class AnyAsWhere(nn.Module):
    def forward(self, x):
        return torch.where(torch.any(x < 0), torch.zeros_like(x), x.clamp(min=0).sqrt())


@fix_for(ListIndexByItem)
class TensorIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scales", torch.tensor([2.0, 3.0]))

    def forward(self, i):
        return torch.ones(2) * self.scales[i]


@fix_for(RangeOfSize)
class ArangeOfSize(nn.Module):
    def forward(self, x):
        return x * torch.arange(x.shape[0], dtype=x.dtype).unsqueeze(1)
