# pytorch/pytorch#122752: run_decompositions() on an exported program that calls a Python-registered
# mutating op (auto_functionalized in the graph) failed with "Current active mode FunctionalTensorMode ...
# not registered". The thread's own minimal script is not readable here; this rebuilds the case with
# (a) a torch.library.Library DEF + Python impl + fake, (b) torch.library.custom_op, both mutating an input.
import torch

lib = torch.library.Library("fxguide_repro122752", "DEF")
lib.define("add_one_(Tensor(a!) x) -> ()")


def add_one_impl(x):
    x.add_(1)


lib.impl("add_one_", add_one_impl, "CompositeExplicitAutograd")
torch.library.register_fake("fxguide_repro122752::add_one_", lambda x: None, lib=lib)


@torch.library.custom_op("fxguide_repro122752::scale_", mutates_args=["x"])
def scale_(x: torch.Tensor) -> None:
    x.mul_(2)


@scale_.register_fake
def _(x):
    return None


class UsesLibOp(torch.nn.Module):
    def forward(self, x):
        y = x.clone()
        torch.ops.fxguide_repro122752.add_one_(y)
        return y * 3


class UsesCustomOp(torch.nn.Module):
    def forward(self, x):
        y = x.clone()
        scale_(y)
        return y + 1


x = torch.randn(4)
for model in (UsesLibOp(), UsesCustomOp()):
    name = type(model).__name__
    try:
        ep = torch.export.export(model, (x,))
        targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
        core = ep.run_decompositions()
        print(f"{name}: export targets {targets}")
        print(f"{name}: run_decompositions ok; matches eager:", torch.allclose(core.module()(x), model(x)))
    except Exception as e:
        print(f"{name}: FAILS {type(e).__name__}: {str(e).splitlines()[0][:160]}")
