"""``torch.func`` (functorch): ``vmap``'s rules on in_dims, batch sizes, ``.item()``, data-dependent branches and
randomness; ``grad`` of a function that does not return a scalar; autograd called inside a transform;
``functional_call`` with a dict of parameters that misses one.

The transforms raise when they are called, not under a capture tool: each
reproduction is a call, and its fix returns the transformed function's output
with the same computation written out in eager mode.
"""

import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from fxguide.atlas.repros import fix_of, repro

X = torch.arange(8.0).reshape(2, 4) - 3
WEIGHTS = torch.tensor([1.0, -1.0, 2.0, 0.5])


def scale_by_peak(row):
    return row / row.abs().max().item()


@repro("vmap: It looks like you're calling .item() on a Tensor", tool="torch.func.vmap", entry="",
       cause="vmap runs the function once on a whole batch of rows: .item() would need one number, and there is one "
             "per row.")
def vmap_item():
    vmap(scale_by_peak)(X)


@fix_of(vmap_item)
def vmap_tensor_ops():
    """Keep the value a tensor (a 0-d one per row): vmap batches it like the rest."""
    def scaled(row):
        return row / row.abs().max()
    return vmap(scaled)(X), X / X.abs().amax(dim=1, keepdim=True)


def flip_negative(row):
    if row.sum() < 0:
        return -row
    return row


@repro("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow",
       tool="torch.func.vmap", entry="",
       cause="An if on a tensor's value inside vmap: each row of the batch may take another branch, and Python runs "
             "only one.")
def vmap_branch():
    vmap(flip_negative)(X)


@fix_of(vmap_branch)
def vmap_where():
    """Compute both branches and pick per row with torch.where."""
    def flipped(row):
        return torch.where(row.sum() < 0, -row, row)
    return vmap(flipped)(X), torch.stack([flip_negative(row) for row in X])


def weighted(row, weights):
    return row * weights


@repro("vmap: in_dims is not compatible with the structure of `inputs`", tool="torch.func.vmap", entry="",
       cause="in_dims gives one entry where the function takes two arguments: it needs one per argument (None for "
             "one not batched).", says=r"in_dims is not compatible with the structure of `inputs`")
def vmap_in_dims_too_short():
    vmap(weighted, in_dims=(0,))(X, WEIGHTS)


@fix_of(vmap_in_dims_too_short)
def vmap_in_dims_per_argument():
    return vmap(weighted, in_dims=(0, None))(X, WEIGHTS), X * WEIGHTS


@repro("vmap: Expected all tensors to have the same size in the mapped dimension", tool="torch.func.vmap",
       entry="", cause="Every argument is batched along dim 0 by default; the weights (4 values, shared by all rows) "
                       "were taken as a batch of 4 against a batch of 2 rows.")
def vmap_batch_sizes():
    vmap(torch.dot)(X, WEIGHTS)


@fix_of(vmap_batch_sizes)
def vmap_shared_argument():
    """in_dims=None for an argument every call shares."""
    return vmap(torch.dot, in_dims=(0, None))(X, WEIGHTS), X @ WEIGHTS


def noisy(row):
    return row + torch.randn(4)


@repro("vmap: called random operation while in randomness error mode", tool="torch.func.vmap", entry="",
       cause="A random op inside vmap: vmap must be told whether every row gets the same draw or its own.")
def vmap_random():
    vmap(noisy)(X)


@fix_of(vmap_random)
def vmap_randomness_same():
    """randomness='same' (one draw shared by every row) or 'different' (one draw per row)."""
    torch.manual_seed(0)
    got = vmap(noisy, randomness="same")(X)
    torch.manual_seed(0)
    return got, X + torch.randn(4)


def squares(x):
    return x ** 2


@repro("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor", tool="torch.func.grad", entry="",
       cause="grad differentiates a function returning one number (a loss); this one returns a whole tensor.")
def grad_not_scalar():
    grad(squares)(X)


@fix_of(grad_not_scalar)
def grad_of_a_sum():
    """Reduce to a scalar (or use torch.func.jacrev / vjp for the full Jacobian)."""
    return grad(lambda x: squares(x).sum())(X), 2 * X


def sample_grad(row):
    row = row.clone().requires_grad_()
    (found,) = torch.autograd.grad(squares(row).sum(), row)
    return found


@repro("You are attempting to call Tensor.requires_grad_() ... inside of a function being transformed by a "
       "functorch transform", tool="torch.func.vmap", entry="",
       cause="Per-sample gradients with torch.autograd inside vmap: the transforms do not support requires_grad_() "
             "and autograd.grad in the function they transform.",
             says=r"inside of a function being transformed by a functorch transform")
def autograd_inside_vmap():
    vmap(sample_grad)(X)


@fix_of(autograd_inside_vmap)
def grad_inside_vmap():
    """Compose the transforms: vmap(grad(f)) gives one gradient per row."""
    return vmap(grad(lambda row: squares(row).sum()))(X), 2 * X


def linear() -> nn.Linear:
    torch.manual_seed(0)
    return nn.Linear(4, 3)


NEW_WEIGHT = torch.full((3, 4), 0.5)


@repro("Error(s) in reparametrizing for Linear: Missing key(s): 'bias'", tool="torch.func.functional_call",
       entry="", cause="With strict=True, the dict given to functional_call must hold every parameter and buffer of "
                       "the module; this one has the weight only.",
                       says=r"Error\(s\) in reparametrizing for \w+:\s+Missing key")
def functional_call_missing_key():
    functional_call(linear(), {"weight": NEW_WEIGHT}, (X,), strict=True)


@fix_of(functional_call_missing_key)
def functional_call_every_key():
    """Start from the module's own parameters and replace those that change (or leave strict=False)."""
    model = linear()
    params = {**dict(model.named_parameters()), "weight": NEW_WEIGHT}
    return functional_call(model, params, (X,), strict=True), nn.functional.linear(X, NEW_WEIGHT, model.bias)
