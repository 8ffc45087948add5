"""Module state: buffers, attributes, parameters and hooks a ``forward`` touches, and modes set after capture."""

import torch
from torch import nn

from fxguide.atlas import case, fix_for, in_mode


@case("a buffer updated in place", fix="Nothing for export and make_fx (the update is a node); "
      "symbolic_trace keeps the in-place call.")
class BufferInPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x):
        self.count += 1
        return x + self.count


@case("a buffer reassigned (self.buf = ...)", fix="Update in place (self.buf.copy_(...)) so the graph "
      "records it.")
class BufferReassigned(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(4))

    def forward(self, x):
        self.running = self.running * 0.9 + x.mean(0) * 0.1
        return x - self.running


@case("a None buffer assigned in forward", fix="Register the buffer with a tensor of the right shape "
      "in __init__.")
class NoneBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", None)

    def forward(self, x):
        if self.cache is None:
            self.cache = torch.zeros_like(x)
        self.cache = self.cache + x
        return self.cache * 1


@case("BatchNorm in train mode", fix="Capture in eval mode for inference; the running statistics are "
      "buffers updated in place.")
class BatchNormTrain(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(x)


@case("a counter attribute (self.calls += 1)", fix="Keep counters outside the module, or in a buffer "
      "updated in place.")
class CounterAttribute(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x + 1


@case("an attribute set from a tensor in forward", fix="Return the value instead of keeping it on self.")
class TensorAttribute(nn.Module):
    def __init__(self):
        super().__init__()
        self.last = None

    def forward(self, x):
        self.last = x.detach()
        return x + 1


@case("a list attribute appended to", fix="Return what you collect.")
class ListAttribute(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        self.seen.append(x.shape[0])
        return x + 1


@case("a dict cache on the module", fix="Compute the cached value in __init__, or cache outside.",
      inputs=lambda: ((torch.ones(2, 4),), (torch.ones(3, 4),)))
class DictCache(nn.Module):
    def __init__(self):
        super().__init__()
        self.masks = {}

    def forward(self, x):
        n = x.shape[0]
        if n not in self.masks:
            self.masks[n] = torch.ones(n, 1)
        return x * self.masks[n]


@case("a parameter replaced in forward", fix="Change parameters outside the captured code.")
class ParameterReplaced(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        out = x * self.scale
        self.scale = nn.Parameter(self.scale.detach() + 1)
        return out


@case("a parameter updated under no_grad", fix="Update parameters in the optimizer step, outside.")
class ParameterNoGradUpdate(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        with torch.no_grad():
            self.scale.add_(1)
        return x * self.scale


@case("a forward hook on the model", fix="Hooks on the root run for symbolic_trace only if the "
      "GraphModule keeps them; register them on the captured module, or fold them into forward.")
class ForwardHook(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_forward_hook(lambda module, args, out: out * 10)

    def forward(self, x):
        return x + 1


@case("a forward hook on a submodule", fix="Nothing for torch's tools; symbolic_trace runs it at trace "
      "time only if the submodule is traced through.")
class SubmoduleHook(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(4, 4)
        self.inner.register_forward_hook(lambda module, args, out: out * 10)

    def forward(self, x):
        return self.inner(x)


@case("a forward pre-hook on a submodule", fix="As for a forward hook on a submodule.")
class SubmodulePreHook(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(4, 4)
        self.inner.register_forward_pre_hook(lambda module, args: (args[0] * 0,))

    def forward(self, x):
        return self.inner(x)


@case("a hook that records into a list", fix="Return what the hook records, or read it with "
      "create_feature_extractor.", observe=lambda m: len(m.records))
class RecordingHook(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(4, 4)
        self.records = []
        self.inner.register_forward_hook(lambda module, args, out: self.records.append(out.shape))

    def forward(self, x):
        return self.inner(x)


@case("model.eval() after capture", fix="Capture again after changing the mode, or capture in the "
      "mode you run (export: call .eval() on the model before export).",
      context=lambda run: in_mode(run, "eval"))
class EvalAfterCapture(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.drop(self.bn(x))


@case("self.training branch", fix="Capture once per mode.", context=lambda run: in_mode(run, "eval"))
class TrainingBranch(nn.Module):
    def forward(self, x):
        if self.training:
            return x * 2
        return x


@case("a submodule swapped in forward", fix="Choose submodules in __init__, not in forward.",
      observe=lambda m: m.step)
class SwappedSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Identity(), nn.ReLU()
        self.step = 0

    def forward(self, x):
        self.step += 1
        layer = self.a if self.step % 2 else self.b
        return layer(x)


# --- The fixes, each run through every tool like the rows above --------------------------------


@fix_for(BufferReassigned)
class BufferUpdatedInPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(4))

    def forward(self, x):
        self.running.mul_(0.9).add_(x.mean(0) * 0.1)
        return x - self.running


@fix_for(NoneBuffer)
class BufferMadeInInit(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(2, 4))

    def forward(self, x):
        self.cache.add_(x)
        return self.cache * 1


@fix_for(CounterAttribute)
class CounterBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.calls.add_(1)
        return x + 1


@fix_for(TensorAttribute)
class TensorBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("last", torch.zeros(2, 4))

    def forward(self, x):
        self.last.copy_(x.detach())
        return x + 1


@fix_for(ForwardHook)
class HookFolded(nn.Module):
    def forward(self, x):
        return (x + 1) * 10
