# pytorch/pytorch#162019: a multi-output pattern's replacement was inserted before a node it uses
# (the example of the fixing PR #162029). Checks the rewritten graph lints and matches eager.
import torch
from torch._inductor.pattern_matcher import PatternMatcherPass, fwd_only, register_replacement
from torch.fx.experimental.proxy_tensor import make_fx


@torch.library.custom_op("fxguide_repro::fused_relu_add", mutates_args=())
def fused_relu_add(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r = torch.relu(a)
    return r, b + r


@fused_relu_add.register_fake
def _(a, b):
    return torch.empty_like(a), torch.empty_like(a)


def pattern(input_1, input_2):
    tmp1 = torch.relu(input_1)
    tmp2 = input_2 + tmp1
    return tmp1, tmp2


def replacement(input_1, input_2):
    out = torch.ops.fxguide_repro.fused_relu_add(input_1, input_2)
    return out[0], out[1]


passes = PatternMatcherPass()
ex = [torch.empty(4, 4), torch.empty(4, 4)]
register_replacement(pattern, replacement, ex, fwd_only, passes)


def f(input_1, input_2):
    output_1 = torch.relu(input_1)
    output_use_1 = torch.sqrt(output_1)
    mul = input_2 * 2
    output_2 = mul + output_1
    return torch.mm(output_use_1, output_2)


a, b = torch.randn(4, 4), torch.randn(4, 4)
gm = make_fx(f, tracing_mode="fake")(a, b)
# make_fx orders mul after sqrt, as in the issue
print([n.target.__name__ if hasattr(n.target, "__name__") else str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
count = passes.apply(gm.graph)
print("replaced:", count)
print([str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
try:
    gm.graph.lint()
    gm.recompile()
    print("graph lints; matches eager:", torch.allclose(gm(a, b), f(a, b)))
except Exception as e:
    print("BROKEN GRAPH:", type(e).__name__, str(e)[:200])
