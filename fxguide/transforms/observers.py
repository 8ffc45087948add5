"""Observers and fake quantization inserted into a traced graph, the idea behind graph-mode quantization.

Quantizing a model needs to know the range of values each chosen activation
takes. The graph says where those activations are: :func:`insert_observers`
puts a :class:`MinMaxObserver` after every node you choose, :func:`calibrate`
runs sample batches through them, and :func:`convert_to_fake_quant` swaps each
observer for a :class:`FakeQuantize` that rounds values to the integer grid
the observed range allows (and back to float), so the model shows the error
quantization would cause. (torch's own FX graph-mode quantization in
``torch.ao`` is deprecated; these few lines show the mechanism.)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable

import torch
import torch.fx as fx
from torch import nn

from fxguide._checks import finite_number
from fxguide.tracing.concrete import Guard
from fxguide.tracing.concrete._inputs import InputGuard
from fxguide.tracing.concrete._modes import StateGuard
from fxguide.transforms import _graph_inputs, carry_input_guard, to_graph_module

OBSERVER_PREFIX = "observe_"


class MinMaxObserver(nn.Module):
    """Pass values through unchanged, remembering the smallest and largest seen.

    >>> obs = MinMaxObserver()
    >>> _ = obs(torch.tensor([-1.0, 3.0])); _ = obs(torch.tensor([5.0]))
    >>> obs.min_val.item(), obs.max_val.item()
    (-1.0, 5.0)
    """

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"MinMaxObserver: expected a tensor, got {type(x).__name__}")
        if x.is_complex():
            raise TypeError(f"MinMaxObserver: complex values ({x.dtype}) have no smallest or largest; "
                            "observe a real tensor (x.real, x.abs())")
        if x.is_floating_point() and x.numel() and not bool(torch.isfinite(x.detach()).all()):
            # One NaN would make min/max NaN for every later batch; inf would stretch the range forever.
            raise ValueError("MinMaxObserver: the observed tensor holds NaN or inf, which would poison the "
                             "range for every later batch; find where it comes from, or clean the batch first")
        if x.numel():
            self.min_val = torch.minimum(self.min_val, x.detach().min())
            self.max_val = torch.maximum(self.max_val, x.detach().max())
        return x

    @property
    def calibrated(self) -> bool:
        return bool(self.min_val <= self.max_val)

    def scale_zero_point(self, bits: int = 8) -> tuple[float, int]:
        """The affine grid ``x ≈ (q - zero_point) * scale``, ``q`` in ``[0, 2**bits - 1]``, covering the range and 0.

        >>> obs = MinMaxObserver(); _ = obs(torch.tensor([0.0, 2.55]))
        >>> scale, zero = obs.scale_zero_point()
        >>> round(scale, 6), zero
        (0.01, 0)
        """
        if isinstance(bits, bool) or not isinstance(bits, int) or not 2 <= bits <= 16:
            raise ValueError(f"scale_zero_point: bits must be an int from 2 to 16, got {bits!r}")
        if not self.calibrated:
            raise RuntimeError("scale_zero_point: this observer has seen no values; run calibrate() first")
        low = min(float(self.min_val), 0.0)
        high = max(float(self.max_val), 0.0)
        levels = 2**bits - 1
        scale = (high - low) / levels if high > low else 1.0
        return scale, int(round(-low / scale))


class FakeQuantize(nn.Module):
    """Round values to an integer grid and map them back to floats (quantize, then dequantize).

    >>> fq = FakeQuantize(scale=0.5, zero_point=0, bits=8)
    >>> fq(torch.tensor([0.26, 1.0, 200.0]))
    tensor([  0.5000,   1.0000, 127.5000])
    """

    def __init__(self, scale: float, zero_point: int, bits: int = 8) -> None:
        super().__init__()
        finite_number("FakeQuantize", "scale", scale, positive=True)
        if isinstance(bits, bool) or not isinstance(bits, int) or not 2 <= bits <= 16:
            raise ValueError(f"FakeQuantize: bits must be an int from 2 to 16, got {bits!r}")
        if isinstance(zero_point, bool) or not isinstance(zero_point, int) or not 0 <= zero_point <= 2**bits - 1:
            raise ValueError(f"FakeQuantize: zero_point must be an int in [0, {2**bits - 1}], got {zero_point!r}")
        self.scale, self.zero_point, self.bits = float(scale), zero_point, bits

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = torch.clamp(torch.round(x / self.scale) + self.zero_point, 0, 2**self.bits - 1)
        return (q - self.zero_point) * self.scale

    def extra_repr(self) -> str:
        return f"scale={self.scale:.6g}, zero_point={self.zero_point}, bits={self.bits}"


def insert_observers(model: nn.Module, where: Callable[[fx.Node], bool]) -> fx.GraphModule:
    """Trace a copy of ``model`` and put a :class:`MinMaxObserver` after each node ``where`` accepts.

    Each observer is a submodule named ``observe_<node name>``; every user of the
    node now reads the observer's output instead.

    >>> gm = insert_observers(nn.Sequential(nn.Linear(2, 2), nn.ReLU()), lambda n: n.op == "call_module")
    >>> [n.target for n in gm.graph.nodes if n.op == "call_module"]
    ['0', 'observe__0', '1', 'observe__1']
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"insert_observers: expected an nn.Module, got {type(model).__name__}")
    if not callable(where):
        raise TypeError(f"insert_observers: where must be a function Node -> bool, got {type(where).__name__}")
    present = [name for name, m in model.named_modules() if isinstance(m, MinMaxObserver)]
    if present:
        raise ValueError(f"insert_observers: the model already holds observers ({', '.join(present[:3])}"
                         f"{', ...' if len(present) > 3 else ''}); insert them once, into the model without them")
    gm = to_graph_module(model, "insert_observers")
    chosen = [n for n in gm.graph.nodes if n.op not in {"placeholder", "output"} and not _is_guard(gm, n)
              and _accepts(where, n)]
    if not chosen:
        raise ValueError("insert_observers: `where` accepted no node (placeholders, the output and a "
                         "concrete trace's guards are never observed); check the condition against gm.graph")
    for node in chosen:
        name = OBSERVER_PREFIX + node.name
        gm.add_submodule(name, MinMaxObserver())
        with gm.graph.inserting_after(node):
            observed = gm.graph.call_module(name, (node,))
        # The observer itself uses `node`; keep that one use, redirect the rest.
        node.replace_all_uses_with(observed, delete_user_cb=lambda user: user is not observed)
    gm.graph.lint()
    gm.recompile()
    return carry_input_guard(model, gm)


def _is_guard(gm: fx.GraphModule, node: fx.Node) -> bool:
    """A concrete trace's ``guard_N`` node: a check that returns None, not a value to observe."""
    return node.op == "call_module" and isinstance(gm.get_submodule(node.target), (Guard, InputGuard, StateGuard))


def _accepts(where: Callable[[fx.Node], bool], node: fx.Node) -> bool:
    try:
        answer = where(node)
    except Exception as error:
        raise RuntimeError(f"insert_observers: where raised {type(error).__name__} for node {node.name!r} "
                           f"(op {node.op}): {error}; where is called with each torch.fx.Node and must return "
                           f"True or False") from error
    if not isinstance(answer, bool):
        raise TypeError(f"insert_observers: where must return True or False for a node, returned "
                        f"{answer!r} for {node.name!r}")
    return answer


def observers(gm: fx.GraphModule) -> dict[str, MinMaxObserver]:
    """The observers of ``gm`` by submodule name, in graph order."""
    if not isinstance(gm, fx.GraphModule):
        raise TypeError(f"observers: expected the GraphModule insert_observers returned, got {type(gm).__name__}")
    return {n.target: gm.get_submodule(n.target) for n in gm.graph.nodes
            if n.op == "call_module" and isinstance(gm.get_submodule(n.target), MinMaxObserver)}


def calibrate(gm: fx.GraphModule, batches: Iterable[torch.Tensor]) -> int:
    """Run every batch through ``gm`` in eval mode without gradients; return how many ran.

    >>> gm = insert_observers(nn.Sequential(nn.ReLU()), lambda n: True)
    >>> calibrate(gm, [torch.tensor([-2.0, 3.0])])
    1
    >>> observers(gm)["observe__0"].max_val.item()
    3.0
    """
    if not observers(gm):
        raise ValueError("calibrate: this GraphModule has no observers; make it with insert_observers()")
    if isinstance(batches, (torch.Tensor, str)) or not isinstance(batches, Iterable):
        raise TypeError(f"calibrate: batches must be a list of inputs (one tensor, or a tuple of tensors, per "
                        f"batch), got {type(batches).__name__}; a single tensor would be taken row by row: "
                        f"write calibrate(gm, [x])")
    gm.eval()
    count = 0
    with torch.no_grad():
        for batch in batches:
            inputs = batch if isinstance(batch, tuple) else (batch,)
            _graph_inputs(gm, inputs, f"calibrate (batch {count})",
                          "give each batch as one tensor, or as a tuple of one tensor per input")
            gm(*inputs)
            count += 1
    if count == 0:
        raise ValueError("calibrate: no batches were given; pass a list of sample inputs")
    return count


def convert_to_fake_quant(gm: fx.GraphModule, bits: int = 8) -> fx.GraphModule:
    """A copy of ``gm`` in which each calibrated observer became a :class:`FakeQuantize`."""
    found = observers(gm)
    if not found:
        raise ValueError("convert_to_fake_quant: this GraphModule has no observers; "
                         "make it with insert_observers() and calibrate() it")
    converted = copy.deepcopy(gm)
    for name, observer in found.items():
        scale, zero_point = observer.scale_zero_point(bits)
        converted.add_submodule(name, FakeQuantize(scale, zero_point, bits))
    converted.recompile()
    return converted
