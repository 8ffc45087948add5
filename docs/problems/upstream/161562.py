# pytorch/pytorch#161562: set_fullgraph(False) inside a fullgraph=True function skipped the whole frame on a
# graph break. On 2.14.1 torch._dynamo.set_fullgraph is gone; its successor is torch._dynamo.error_on_graph_break.
# Expected: two graphs (y = x + 10, then f.x - y) around the class definition; bug: frame runs in eager (0 graphs).
import torch
from torch._dynamo.testing import CompileCounter

print("torch._dynamo.set_fullgraph exists:", hasattr(torch._dynamo, "set_fullgraph"))


def run(fullgraph):
    cnt = CompileCounter()

    @torch.compile(backend=cnt, fullgraph=fullgraph)
    def fn(x):
        y = x + 10
        with torch._dynamo.error_on_graph_break(False):
            class Foo:
                def __init__(self, x):
                    self.x = x
        f = Foo(x)
        return f.x - y

    x = torch.tensor([1.0])
    try:
        out = fn(x)
        print(f"fullgraph={fullgraph}: result {out.tolist()} (eager {(x - (x + 10)).tolist()}), graphs compiled: {cnt.frame_count}, ops: {cnt.op_count}")
    except Exception as e:
        print(f"fullgraph={fullgraph}: raised {type(e).__name__}: {str(e).splitlines()[0][:150]}")


run(True)
run(False)
