"""Python structure: globals, closures, generators, exceptions, ``isinstance``, caches and argument kinds."""

import functools
import math
from dataclasses import dataclass

import torch
from torch import nn

from fxguide.atlas import case, fix_for

SCALE = 2.0
CALLS = {"count": 0}


def _set_scale(run):
    import contextlib

    @contextlib.contextmanager
    def changed():
        global SCALE
        SCALE = 3.0
        try:
            yield
        finally:
            SCALE = 2.0
    return changed()


@case("a module-level global read", fix="Pass the value as an argument or a buffer; capture again after "
      "it changes.", context=_set_scale, note="the global changes between the capture and the second call")
class GlobalRead(nn.Module):
    def forward(self, x):
        return x * SCALE


@case("a module-level global written", fix="Keep counters outside the captured code.",
      observe=lambda m: CALLS["count"])
class GlobalWrite(nn.Module):
    def forward(self, x):
        CALLS["count"] += 1
        return x + 1


@case("a closure over a tensor", fix="Nothing: the tensor becomes a constant of the graph.")
class ClosureTensor(nn.Module):
    def __init__(self):
        super().__init__()
        offset = torch.arange(4.0)
        self.shift = lambda x: x + offset

    def forward(self, x):
        return self.shift(x)


@case("a generator expression", fix="Nothing for most tools; a list comprehension is the same.")
class GeneratorExpression(nn.Module):
    def forward(self, x):
        return sum(x * i for i in range(3))


@case("a list comprehension over rows", fix="Expected to unroll to the traced length; use dynamic "
      "shapes or a batched operation.", inputs=lambda: ((torch.ones(2, 4),), (torch.ones(3, 4),)))
class ComprehensionOverRows(nn.Module):
    def forward(self, x):
        return torch.stack([row * 2 for row in x])


@case("try/except around an operation", fix="Check the condition explicitly instead of catching.",
      inputs=lambda: ((torch.ones(2, 4),), (torch.ones(2, 3),)))
class TryExcept(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.ones(4, 4)

    def forward(self, x):
        try:
            return x @ self.weight
        except RuntimeError:
            return x


@case("raise on a bad input", fix="Use torch._check(cond, message) so the check is a node.",
      inputs=lambda: ((torch.ones(2, 4),), (-torch.ones(2, 4),)))
class RaiseOnValue(nn.Module):
    def forward(self, x):
        if (x < 0).any():
            raise ValueError("negative input")
        return x.sqrt()


@case("isinstance on an argument", fix="Nothing for a fixed type; capture once per type.")
class IsinstanceArgument(nn.Module):
    def forward(self, x):
        if isinstance(x, torch.Tensor):
            return x + 1
        return torch.tensor(x)


@case("hasattr on the module", fix="Nothing: read at capture time, which is right when it never changes.")
class HasattrModule(nn.Module):
    def forward(self, x):
        if hasattr(self, "bias"):
            return x + self.bias
        return x


@case("functools.lru_cache helper", fix="Compute the cached values in __init__ (a buffer).",
      inputs=lambda: ((torch.ones(2, 4),), (torch.ones(3, 4),)))
class LruCacheHelper(nn.Module):
    @staticmethod
    @functools.lru_cache
    def _scale(n):
        return 1.0 / math.sqrt(n)

    def forward(self, x):
        return x * self._scale(x.shape[0])


@case("*args", fix="Nothing for a fixed number of arguments.",
      inputs=lambda: ((torch.ones(2, 4), torch.ones(2, 4)), (torch.ones(2, 4), -torch.ones(2, 4))))
class StarArgs(nn.Module):
    def forward(self, *xs):
        return sum(xs)


@case("**kwargs with a default", fix="Pass keyword arguments at capture as you will at run time.")
class KwargsDefault(nn.Module):
    def forward(self, x, scale=2.0, **options):
        return x * scale + options.get("shift", 0.0)


@case("a str argument choosing a branch", fix="Capture once per value; str arguments are constants.",
      inputs=lambda: ((torch.ones(2, 4), "relu"), (-torch.ones(2, 4), "tanh")))
class StrArgument(nn.Module):
    def forward(self, x, activation):
        return torch.relu(x) if activation == "relu" else torch.tanh(x)


@case("a bool argument", fix="Capture once per value.",
      inputs=lambda: ((torch.ones(2, 4), True), (torch.ones(2, 4), False)))
class BoolArgument(nn.Module):
    def forward(self, x, double):
        return x * 2 if double else x


@case("a None argument", fix="Capture once per case (tensor or None).",
      inputs=lambda: ((torch.ones(2, 4), None), (torch.ones(2, 4), torch.ones(2, 4))))
class NoneArgument(nn.Module):
    def forward(self, x, mask=None):
        return x if mask is None else x * mask


@case("an int argument used as a size", fix="Capture once per value, or pass a tensor whose shape "
      "carries it.", inputs=lambda: ((torch.ones(2, 4), 2), (torch.ones(2, 4), 3)))
class IntArgument(nn.Module):
    def forward(self, x, repeats):
        return x.repeat(repeats, 1)


@case("a list of tensors of varying length", fix="Stack the tensors into one, or capture per length.",
      inputs=lambda: (([torch.ones(4), torch.ones(4)],), ([torch.ones(4)] * 3,)))
class VaryingList(nn.Module):
    def forward(self, xs):
        return torch.stack(xs).sum(0)


@case("a dict of tensors", fix="Nothing when the keys stay the same.",
      inputs=lambda: (({"a": torch.ones(4), "b": torch.ones(4)},), ({"a": torch.zeros(4), "b": torch.ones(4)},)))
class DictInput(nn.Module):
    def forward(self, inputs):
        return inputs["a"] * 2 + inputs["b"]


@dataclass
class Pair:
    left: torch.Tensor
    right: torch.Tensor


@case("a dataclass input", fix="export needs the class registered as a pytree node "
      "(torch.export.register_dataclass).",
      inputs=lambda: ((Pair(torch.ones(4), torch.ones(4)),), (Pair(torch.zeros(4), torch.ones(4)),)))
class DataclassInput(nn.Module):
    def forward(self, pair):
        return pair.left - pair.right


@case("a dataclass output", fix="As for a dataclass input.")
class DataclassOutput(nn.Module):
    def forward(self, x):
        return Pair(x + 1, x - 1)


@case("a tuple output with a Python number", fix="Return tensors only, or numbers that do not depend "
      "on values.")
class NumberOutput(nn.Module):
    def forward(self, x):
        return x + 1, x.shape[0]


@case("math functions on a size", fix="Nothing for most tools.",
      inputs=lambda: ((torch.ones(4, 4),), (torch.ones(9, 4),)))
class MathOnSize(nn.Module):
    def forward(self, x):
        return x / math.sqrt(x.shape[0])


@case("recursion on a Python int", fix="Nothing when the depth is fixed.")
class Recursion(nn.Module):
    def apply(self, x, depth):
        return x if depth == 0 else self.apply(x * 2, depth - 1)

    def forward(self, x):
        return self.apply(x, 3)


# --- The fixes, each run through every tool like the rows above --------------------------------


@fix_for(GlobalRead)
class GlobalAsBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor(SCALE))  # read once, when the model is built

    def forward(self, x):
        return x * self.scale


@fix_for(ComprehensionOverRows)
class BatchedOperation(nn.Module):
    def forward(self, x):
        return x * 2


@fix_for(MathOnSize)
class SizeAsTensor(nn.Module):
    def forward(self, x):
        return x * torch.rsqrt(torch.tensor(x.shape[0], dtype=x.dtype))
