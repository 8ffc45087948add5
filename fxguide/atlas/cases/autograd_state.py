"""Autograd state: grad modes, autocast, ``requires_grad_``, gradients and custom functions inside ``forward``.

Outputs are compared by value; where a row is about gradients, the case returns
the gradient so that the comparison sees it.
"""

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from fxguide.atlas import case


class _Linear(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)


@case("torch.no_grad() block", fix="Nothing: the graph records the mode switch.")
class NoGradBlock(_Linear):
    def forward(self, x):
        with torch.no_grad():
            y = self.linear(x)
        return y.requires_grad, y


@case("torch.enable_grad() block", fix="Nothing for most tools; check requires_grad of the outputs.")
class EnableGradBlock(_Linear):
    def forward(self, x):
        with torch.enable_grad():
            y = self.linear(x)
        return y.requires_grad, y


@case("torch.inference_mode() block", fix="Run the whole captured program under inference_mode instead.")
class InferenceModeBlock(_Linear):
    def forward(self, x):
        with torch.inference_mode():
            y = self.linear(x)
        return y * 2


@case("torch.is_grad_enabled() branch", fix="Capture in the mode you will run, or capture one per mode.",
      context=lambda run: torch.no_grad())
class GradEnabledBranch(_Linear):
    def forward(self, x):
        if torch.is_grad_enabled():
            return self.linear(x)
        return x


@case("torch.autocast(bfloat16) block", fix="Nothing for most tools; compare the output dtype.")
class AutocastBlock(_Linear):
    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = self.linear(x)
        return y.float()


@case("requires_grad_() on an input", fix="Set requires_grad on the input before the call.")
class RequiresGradInput(nn.Module):
    def forward(self, x):
        x.requires_grad_()
        return (x * 2).sum()


@case("requires_grad_() on an intermediate", fix="Create the tensor as a leaf outside, or use "
      "torch.enable_grad around the computation.")
class RequiresGradIntermediate(nn.Module):
    def forward(self, x):
        y = (x * 2).detach()
        y.requires_grad_()
        return y.sum()


@case("torch.autograd.grad inside forward", fix="Compute gradients outside the captured forward, or "
      "capture the whole training step with torch.compile (graph break) — export does not capture it.")
class AutogradGradInside(nn.Module):
    def forward(self, x):
        x = x.detach().requires_grad_()
        y = (x ** 2).sum()
        (grad,) = torch.autograd.grad(y, x)
        return grad


@case(".backward() inside forward", fix="Call backward outside the captured forward.",
      observe=lambda m: m.weight.grad)
class BackwardInside(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))

    def forward(self, x):
        loss = (x * self.weight).sum()
        loss.backward()
        return loss.detach()


@case("a custom autograd.Function", fix="Nothing for torch's tools; symbolic_trace needs it wrapped.")
class CustomFunctionUse(nn.Module):
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    def forward(self, x):
        return self.Double.apply(x)


@case("activation checkpointing", fix="Nothing for torch's tools; pass use_reentrant=False.")
class Checkpointed(_Linear):
    def forward(self, x):
        return checkpoint(self.linear, x, use_reentrant=False)


@case(".detach() on the output", fix="Nothing: the graph records detach.")
class DetachOutput(_Linear):
    def forward(self, x):
        return self.linear(x).detach()


@case("x.grad read inside forward", fix="Read gradients outside the captured code.",
      inputs=lambda: ((torch.ones(4, requires_grad=True),), (torch.ones(4, requires_grad=True),)))
class GradRead(nn.Module):
    def forward(self, x):
        if x.grad is None:
            return x + 1
        return x + x.grad


@case("torch.set_grad_enabled(False) call", fix="Use a with block, so the mode is restored.",
      observe=lambda m: torch.is_grad_enabled())
class SetGradEnabledCall(_Linear):
    def forward(self, x):
        torch.set_grad_enabled(False)
        y = self.linear(x)
        torch.set_grad_enabled(True)
        return y
