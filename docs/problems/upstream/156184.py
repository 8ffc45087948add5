# pytorch/pytorch#156184: the ExportGraphSignature example of the docs shows a BUFFER_MUTATION output that
# torch.export no longer gives. Export returns the training IR (in-place add_ kept); run_decompositions()
# functionalizes and returns the buffer update as a BUFFER_MUTATION output.
import torch
import torch.nn as nn


class CustomModule(nn.Module):  # the docs example quoted in the thread
    def __init__(self):
        super().__init__()
        self.my_parameter = nn.Parameter(torch.tensor(2.0))
        self.register_buffer("my_buffer1", torch.tensor(3.0))
        self.register_buffer("my_buffer2", torch.tensor(4.0))

    def forward(self, x1, x2):
        output = (x1 + self.my_parameter) * self.my_buffer1 + x2 * self.my_buffer2
        self.my_buffer2.add_(1.0)
        return output


args = (torch.tensor(1.0), torch.tensor(2.0))
ep = torch.export.export(CustomModule(), args)
core = ep.run_decompositions()
for name, prog in [("export", ep), ("run_decompositions", core)]:
    print(f"{name:20}", [s.kind.name for s in prog.graph_signature.output_specs])
m, ref = CustomModule(), CustomModule()
out = core.module()(*args)
print("matches eager:", torch.equal(out, ref(*args)))
