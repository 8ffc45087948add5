"""``torch.cond``, the control-flow operator every tool captures: what its predicate, branches and operands may
be, under ``torch.compile(fullgraph=True)`` and ``torch.export``.

The inputs are a positive and a negative tensor, so each fix is compared with
eager mode on the branch the capture did not take first.
"""

import torch
from torch import nn

from fxguide.atlas.cases import calls_out
from fxguide.atlas.repros import fix_of, repro
from fxguide.atlas.repros.dynamo import signs

FULL = "compile fullgraph"


@repro("Expected pred to be bool or single-element tensor", tool="export", entry="", inputs=signs,
       cause="The predicate is a tensor of several values; torch.cond needs one boolean.")
class VectorPredicate(nn.Module):
    def forward(self, x):
        return torch.cond(x[0] > 0, lambda t: t + 1, lambda t: t - 1, (x,))


@fix_of(VectorPredicate)
class ReducedPredicate(nn.Module):
    def forward(self, x):
        return torch.cond((x[0] > 0).all(), lambda t: t + 1, lambda t: t - 1, (x,))


repro("This higher order operator doesn't work unless it is captured completely (print in a branch)", tool=FULL,
      entry="GB0059", inputs=signs,
      cause="A branch of torch.cond must be one graph; print() in it breaks the graph.")(calls_out.TorchCondPrint)
fix_of(calls_out.TorchCondPrint)(calls_out.TorchCondPrintAsNode)  # the atlas's: a print node in the branch


@repro("RuntimeError when making fake tensor call (branches of different dtypes)", tool=FULL, entry="GB4315",
       inputs=signs, cause="The two branches of torch.cond return tensors of different dtypes.")
class BranchDtypes(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: (t + 1).long(), lambda t: t - 1, (x,))


@fix_of(BranchDtypes)
class BranchSameDtype(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: (t + 1).long().float(), lambda t: t - 1, (x,))


@repro("torch.cond: branches that are not callable", tool=FULL, entry="GB0302", inputs=signs,
       cause="The branches were given as values (x + 1), computed eagerly; torch.cond takes functions.")
class BranchValues(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, x + 1, x - 1, (x,))


@fix_of(BranchValues)
class BranchFunctions(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,))


@repro("Expect operands to be a tuple of possibly nested dict/list/tuple that only consists of tensor leaves",
       tool="export", entry="", inputs=signs, cause="An operand of torch.cond is a Python number, not a tensor.")
class NumberOperand(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t, n: t + n, lambda t, n: t - n, (x, 2))


@fix_of(NumberOperand)
class NumberInTheBranches(nn.Module):
    """Close over the number in the branches (or pass it as a tensor)."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t + 2, lambda t: t - 2, (x,))


@repro("HOP body output unsupported (branches returning Python numbers)", tool=FULL, entry="GB0314", inputs=signs,
       cause="The branches of torch.cond return Python floats; a branch must return tensors (or ints).")
class NumberBranches(nn.Module):
    def forward(self, x):
        sign = torch.cond(x.sum() > 0, lambda t: 1.0, lambda t: -1.0, (x,))
        return x * sign


@fix_of(NumberBranches)
class TensorBranches(nn.Module):
    """Each branch returns a 0-d tensor made from its operand."""

    def forward(self, x):
        sign = torch.cond(x.sum() > 0, lambda t: t.new_ones(()), lambda t: -t.new_ones(()), (x,))
        return x * sign


@repro("torch.cond: improper operands", tool=FULL, entry="GB0311", inputs=signs,
       cause="The operands were given as one tensor; torch.cond takes a tuple (or list) of them: (x,).")
class BareOperand(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, x)


@fix_of(BareOperand)
class TupleOperand(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t + 1, lambda t: t - 1, (x,))
