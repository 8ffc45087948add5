"""Randomness: torch, NumPy and Python generators, dropout, seeds and forked RNG inside ``forward``."""

import random

import numpy as np
import torch
from torch import nn

from fxguide.atlas import case, fix_for


@case("torch.randn_like", fix="Nothing for the graph tools (the draw is a node); pass a generator or "
      "seed outside to reproduce a run.")
class TorchRandn(nn.Module):
    def forward(self, x):
        return x + torch.randn_like(x)


@case("torch.rand with a size from the input", fix="As for torch.randn_like.")
class TorchRandSize(nn.Module):
    def forward(self, x):
        return x * torch.rand(x.shape[0], 1)


@case("NumPy random", fix="Draw with torch (torch.rand) so the draw is a node of the graph.")
class NumpyRandom(nn.Module):
    def forward(self, x):
        return x + float(np.random.rand())


@case("Python random.random()", fix="Draw with torch so the draw is a node of the graph.")
class PythonRandom(nn.Module):
    def forward(self, x):
        return x + random.random()


@case("random.choice of a branch", fix="Choose outside the captured code and capture each branch, or "
      "draw with torch and use torch.where.")
class PythonRandomBranch(nn.Module):
    def forward(self, x):
        if random.random() < 0.5:
            return x + 1
        return x - 1


@case("dropout in train mode", fix="Capture in the mode you will run (model.eval() before capturing "
      "for inference).")
class DropoutTrain(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(x)


@case("F.dropout(training=self.training)", fix="As for dropout in train mode.")
class FunctionalDropout(nn.Module):
    def forward(self, x):
        return torch.nn.functional.dropout(x, 0.5, training=self.training)


@case("a torch.Generator held by the module", fix="Pass the generator as an input, or draw with the "
      "global generator.", observe=lambda m: m.generator.get_state())
class OwnGenerator(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = torch.Generator().manual_seed(7)

    def forward(self, x):
        return x + torch.randn(x.shape, generator=self.generator)


@case("torch.manual_seed inside forward", fix="Seed outside the captured code.")
class ManualSeed(nn.Module):
    def forward(self, x):
        torch.manual_seed(0)
        return x + torch.randn_like(x)


@case("torch.random.fork_rng", fix="Fork the generator outside the captured code.")
class ForkRng(nn.Module):
    def forward(self, x):
        with torch.random.fork_rng():
            noise = torch.randn_like(x)
        return x + noise


@case("torch.get_rng_state / set_rng_state", fix="Save and restore the state outside the captured code.")
class RngStateRoundTrip(nn.Module):
    def forward(self, x):
        state = torch.get_rng_state()
        noise = torch.randn_like(x)
        torch.set_rng_state(state)
        return x + noise + torch.randn_like(x)


@case("torch.bernoulli mask", fix="As for torch.randn_like.")
class BernoulliMask(nn.Module):
    def forward(self, x):
        return x * torch.bernoulli(torch.full_like(x, 0.5))


@case("torch.randperm of the batch", fix="As for torch.randn_like.")
class Randperm(nn.Module):
    def forward(self, x):
        return x[torch.randperm(x.shape[0])]


# --- The fixes, each run through every tool like the rows above --------------------------------


@fix_for(NumpyRandom)
class NumpyRandomAsTorch(nn.Module):
    def forward(self, x):
        return x + torch.rand(())


@fix_for(PythonRandom)
class PythonRandomAsTorch(nn.Module):
    def forward(self, x):
        return x + torch.rand(())


@fix_for(PythonRandomBranch)
class RandomBranchAsWhere(nn.Module):
    def forward(self, x):
        return torch.where(torch.rand(()) < 0.5, x + 1, x - 1)


@fix_for(OwnGenerator)
class GlobalGenerator(nn.Module):
    def forward(self, x):
        return x + torch.randn(x.shape)


@fix_for(ManualSeed)
class SeedOutside(nn.Module):
    def forward(self, x):
        return x + torch.randn_like(x)  # the caller seeds before the call


@fix_for(RngStateRoundTrip)
class DrawOnce(nn.Module):
    def forward(self, x):
        noise = torch.randn_like(x)
        return x + noise + noise
