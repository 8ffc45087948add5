# pytorch/pytorch#143363: a joint_custom_pre_pass ran before remove_noop_ops, so it still saw the no-op clone()
# (e.g. from dropout) that Inductor's own pattern matcher never sees. PR #143458 moved the pass after
# remove_noop_ops/constant folding. This checks where the custom pre pass runs on this torch.
import torch
import torch._inductor.config as inductor_config
from torch._inductor.custom_graph_pass import CustomGraphPass

seen = []


class Record(CustomGraphPass):
    def __call__(self, graph):
        seen.append([str(n.target) for n in graph.nodes if n.op == "call_function"])

    def uuid(self):
        return b"record-joint-pre-v1"


def f(x):
    return torch.nn.functional.dropout(x, p=0.0, training=True).clone() * 2  # a no-op clone


x = torch.randn(8)
torch.compiler.reset()
with inductor_config.patch(joint_custom_pre_pass=Record(), fx_graph_cache=False, compile_threads=1):
    out = torch.compile(f)(x)
print("matches eager:", torch.equal(out, f(x)))
print("custom pre pass calls:", len(seen))
for ops in seen:
    print("ops seen by the pre pass:", ops)
has_clone = any("clone" in op for ops in seen for op in ops)
print("the pre pass still sees a no-op clone (runs before remove_noop_ops):", has_clone)
