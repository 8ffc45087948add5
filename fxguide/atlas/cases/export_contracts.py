"""Export's contracts: what may go in and come out of a captured ``forward``, and what state does.

The rows are written for ``torch.export`` (strict, non-strict, dynamic), and run
through every tool like the other families. Containers are registered with
torch's pytree the ways a reader can: not at all, ``register_pytree_node`` with
and without ``flatten_with_keys_fn``, ``register_dataclass`` and ``register_constant``.
"""

from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.utils._pytree as pytree
from torch import nn

from fxguide.atlas import case


def _pair(make):
    """Two inputs holding one container each: ones and twos, then zeros and threes."""
    return ((make(torch.ones(4), torch.full((4,), 2.0)),), (make(torch.zeros(4), torch.full((4,), 3.0)),))


class Bare:
    """A container torch's pytree does not know."""

    def __init__(self, a, b):
        self.a, self.b = a, b


class Keyless:
    """Registered with register_pytree_node, without flatten_with_keys_fn."""

    def __init__(self, a, b):
        self.a, self.b = a, b


pytree.register_pytree_node(Keyless, lambda c: ([c.a, c.b], None), lambda values, _: Keyless(*values))


class Keyed:
    """Registered with register_pytree_node and flatten_with_keys_fn."""

    def __init__(self, a, b):
        self.a, self.b = a, b


pytree.register_pytree_node(
    Keyed, lambda c: ([c.a, c.b], None), lambda values, _: Keyed(*values),
    flatten_with_keys_fn=lambda c: ([(pytree.GetAttrKey("a"), c.a), (pytree.GetAttrKey("b"), c.b)], None))


@dataclass
class Plain:
    a: torch.Tensor
    b: torch.Tensor


@dataclass
class Registered:
    a: torch.Tensor
    b: torch.Tensor


torch.export.register_dataclass(Registered)


class Point(NamedTuple):
    a: torch.Tensor
    b: torch.Tensor


@dataclass(frozen=True)
class Settings:
    """A hashable constant passed as an input."""

    scale: float


pytree.register_constant(Settings)


@case("an unregistered class as input", fix="Register it: torch.export.register_dataclass for a "
      "dataclass, register_pytree_node with flatten_with_keys_fn otherwise.", inputs=lambda: _pair(Bare))
class BareInput(nn.Module):
    def forward(self, c):
        return c.a * c.b


@case("register_pytree_node without flatten_with_keys_fn", fix="Pass flatten_with_keys_fn (export "
      "names each leaf by its key).", inputs=lambda: _pair(Keyless))
class KeylessInput(nn.Module):
    def forward(self, c):
        return c.a * c.b


@case("register_pytree_node with flatten_with_keys_fn", fix="Nothing: this is the registration "
      "export wants.", inputs=lambda: _pair(Keyed))
class KeyedInput(nn.Module):
    def forward(self, c):
        return c.a * c.b


@case("an unregistered dataclass as input", fix="torch.export.register_dataclass(TheClass).",
      inputs=lambda: _pair(Plain))
class PlainDataclassInput(nn.Module):
    def forward(self, c):
        return c.a * c.b


@case("register_dataclass input", fix="Nothing.", inputs=lambda: _pair(Registered))
class RegisteredDataclassInput(nn.Module):
    def forward(self, c):
        return c.a * c.b


@case("a NamedTuple input", fix="Nothing: NamedTuples are pytree nodes.", inputs=lambda: _pair(Point))
class NamedTupleInput(nn.Module):
    def forward(self, p):
        return p.a * p.b


@case("a register_constant input", fix="Nothing, if the constant's value at capture is the one you run "
      "with: it is compared, not traced.",
      inputs=lambda: ((torch.ones(4), Settings(2.0)), (torch.ones(4), Settings(3.0))))
class ConstantInput(nn.Module):
    def forward(self, x, settings):
        return x * settings.scale


@case("a nested dict and list input", fix="Nothing while the structure stays the same.",
      inputs=lambda: (({"a": [torch.ones(4), torch.ones(4)], "b": {"c": torch.ones(4)}},),
                      ({"a": [torch.zeros(4), torch.ones(4)], "b": {"c": torch.full((4,), 2.0)}},)))
class NestedInput(nn.Module):
    def forward(self, tree):
        return tree["a"][0] + tree["a"][1] * tree["b"]["c"]


@case("a dict with different keys on the second call", fix="Pass the same keys, or capture once per "
      "key set.", inputs=lambda: (({"a": torch.ones(4)},), ({"b": torch.ones(4)},)))
class DictKeysChange(nn.Module):
    def forward(self, inputs):
        return sum(v * 2 for v in inputs.values())


@case("a float input", fix="Expected to specialize; pass a 0-d tensor for a value that changes.",
      inputs=lambda: ((torch.ones(4), 2.0), (torch.ones(4), 3.0)))
class FloatInput(nn.Module):
    def forward(self, x, scale):
        return x * scale


@case("an int input used in arithmetic", fix="As for a float input.",
      inputs=lambda: ((torch.ones(4), 2), (torch.ones(4), 3)))
class IntInput(nn.Module):
    def forward(self, x, shift):
        return x + shift


@case("a tensor and None in the output", fix="Nothing.")
class NoneInOutput(nn.Module):
    def forward(self, x):
        return x + 1, None


@case("a dict output", fix="Nothing.")
class DictOutput(nn.Module):
    def forward(self, x):
        return {"double": x * 2, "half": x / 2}


@case("a NamedTuple output", fix="Nothing.")
class NamedTupleOutput(nn.Module):
    def forward(self, x):
        return Point(x + 1, x - 1)


@case("a register_dataclass output", fix="Nothing.")
class RegisteredDataclassOutput(nn.Module):
    def forward(self, x):
        return Registered(x + 1, x - 1)


@case("an int from a shape in the output", fix="Nothing; with a dynamic dimension it is a SymInt "
      "computed at run time.", inputs=lambda: ((torch.ones(2, 4),), (torch.ones(3, 4),)))
class ShapeInOutput(nn.Module):
    def forward(self, x):
        return x.sum(0), x.shape[0]


@case("a str output", fix="Return tensors; keep strings outside.")
class StrOutput(nn.Module):
    def forward(self, x):
        return x + 1, "done"


@case("the input returned as is", fix="Nothing; the output aliases the input.")
class InputReturned(nn.Module):
    def forward(self, x):
        return x


@case("an input mutated in place", fix="Nothing for export (the mutation is replayed); return a new "
      "tensor if callers should keep theirs.",
      observe=lambda m: m.seen[-1] if m.seen else None)
class InputMutated(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        x.add_(1)
        return x * 2


@case("a plain tensor attribute (not a buffer)", fix="Register it as a buffer so that export lifts it "
      "and state_dict holds it.")
class TensorConstant(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.arange(4.0)

    def forward(self, x):
        return x + self.table


@case("a non-persistent buffer", fix="Nothing.")
class NonPersistentBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.arange(4.0), persistent=False)

    def forward(self, x):
        return x + self.table


@case("a tensor made from a Python list in forward", fix="Nothing; it is a constant of the graph.")
class TensorFromList(nn.Module):
    def forward(self, x):
        return x * torch.tensor([1.0, 2.0, 3.0, 4.0])


@case("a parameter used twice (tied weights)", fix="Nothing; export keeps one parameter.")
class TiedWeights(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4, bias=False)
        self.b = nn.Linear(4, 4, bias=False)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x))


@case("a buffer updated in place under no_grad", fix="Nothing for export (a mutated buffer).")
class BufferNoGrad(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(4))

    def forward(self, x):
        with torch.no_grad():
            self.total.add_(x.sum(0))
        return x - self.total


@case("a kwargs-only tensor input", fix="Nothing; pass it by name.",
      inputs=lambda: ((torch.ones(2, 4),), (torch.zeros(2, 4),)))
class KeywordOnly(nn.Module):
    def forward(self, x, *, bias=None):
        return x if bias is None else x + bias


@case("a Hugging Face DynamicCache input", fix="Register the cache class with pytree before exporting: "
      "transformers.integrations.executorch.register_dynamic_cache_export_support() does it for DynamicCache.",
      inputs=lambda: _cache_inputs())
class CacheInput(nn.Module):
    def forward(self, x, cache):
        keys, values = cache.update(x, x, 0)
        return keys.sum() + values.sum()


def _cache_inputs():
    from transformers import DynamicCache

    def make(value):
        return (torch.full((1, 1, 2, 4), value), DynamicCache())
    return make(1.0), make(2.0)


@case("None for an optional tensor input", fix="Export with the tensor you will pass (a mask of ones for "
      "'no mask'), or export once per case: the row shows what a program exported with None does with a "
      "tensor passed there later.",
      inputs=lambda: ((torch.ones(2, 4), None), (torch.ones(2, 4), torch.full((2, 4), 2.0))))
class OptionalTensorInput(nn.Module):
    def forward(self, x, mask=None):
        return x if mask is None else x * mask


@case("a bool input that flips", fix="Expected to specialize: pass a 0-d bool tensor and use torch.where, "
      "or export once per value.", inputs=lambda: ((torch.ones(2, 4), True), (torch.ones(2, 4), False)))
class FlippingBoolInput(nn.Module):
    def forward(self, x, negate):
        return -x if negate else x


@case("a str input", fix="Strings are constants of the program: export once per value.",
      inputs=lambda: ((torch.ones(2, 4), "sum"), (torch.ones(2, 4), "mean")))
class StrInput(nn.Module):
    def forward(self, x, reduce):
        return x.sum(0) if reduce == "sum" else x.mean(0)


@case("a tuple of tensors input", fix="Nothing.",
      inputs=lambda: (((torch.ones(4), torch.ones(4)),), ((torch.zeros(4), torch.ones(4)),)))
class TupleInput(nn.Module):
    def forward(self, pair):
        first, second = pair
        return first * 2 + second


@case("a list whose length changes between calls", fix="Stack the tensors into one tensor with a "
      "dynamic first dimension, or export once per length.",
      inputs=lambda: (([torch.ones(4)] * 2,), ([torch.ones(4)] * 3,)))
class ListLengthInput(nn.Module):
    def forward(self, items):
        return torch.stack(items).sum(0)
