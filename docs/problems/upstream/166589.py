# pytorch/pytorch#166589: error_on_graph_break(True) did not raise when the break came after some traced ops
import torch
from torch._dynamo.exc import Unsupported
from torch._dynamo.testing import CompileCounter

cnts = CompileCounter()


@torch.compile(backend=cnts)
def fn(x):
    x = x + 1
    x = x + 1
    x = x + 1
    with torch._dynamo.error_on_graph_break(True):
        torch._dynamo.graph_break()
    return x + 1


try:
    fn(torch.ones(3))
    print("STILL: no error; frames compiled:", cnts.frame_count)
except Unsupported as e:
    print("raised Unsupported as expected; frames compiled:", cnts.frame_count)
