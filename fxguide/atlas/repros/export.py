"""``torch.export``'s messages: calling and training an ExportedProgram, input specs, dynamic shapes and Dim
ranges, data-dependent code, saving and loading.

Module reproductions run under an export column of the atlas; the others are
calls on an exported program (``ep.module().train()``, ``ep(x)``...), whose fix
returns the exported program's output and eager mode's.
"""

import dataclasses
import io

import torch
from torch import nn
from torch.export import Dim

from fxguide.atlas.repros import fix_of, repro
from fxguide.atlas.repros.dynamo import BoolBranch, DataPtr, ItemBranch, ParameterInForward, TensorNumpy, signs


class Small(nn.Module):
    """The model the call reproductions export: one linear layer."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        return self.linear(x).relu()


class TwoInputs(nn.Module):
    def forward(self, x, y):
        return x + y


def exported(model: nn.Module | None = None, *args, **kwargs) -> torch.export.ExportedProgram:
    """``model`` (default ``Small``) exported on a ``(2, 4)`` input."""
    return torch.export.export(model or Small(), args or (torch.ones(2, 4),), **kwargs)


X = torch.arange(8.0).reshape(2, 4)


@repro("Calling train() is not supported yet", tool="ep.module().train()", entry="5a785f11ab",
       cause="The module an ExportedProgram returns has its train/eval behaviour baked in; it cannot switch.")
def train_exported():
    exported().module().train()


@fix_of(train_exported)
def train_exported_fixed():
    """Switch modes with the helper for exported modules (or export again in the mode you want)."""
    from torchao.quantization.pt2e import move_exported_model_to_train

    module = exported().module()
    move_exported_model_to_train(module)
    return module(X), Small()(X)


@repro("Calling eval() is not supported yet", tool="ep.module().eval()", entry="8d801c2e22",
       cause="The same as for train(): an exported module keeps the mode it was exported in.")
def eval_exported():
    exported().module().eval()


@fix_of(eval_exported)
def eval_exported_fixed():
    """Export the model in eval mode; or switch with torchao's helper."""
    from torchao.quantization.pt2e import move_exported_model_to_eval

    module = move_exported_model_to_eval(exported(Small().eval()).module())
    return module(X), Small().eval()(X)


@repro("Unable to call ExportedProgram directly", tool="ep(x)", entry="536e43b69e",
       cause="An ExportedProgram is not callable; its module() is.")
def call_program():
    exported()(X)


@fix_of(call_program)
def call_program_module():
    return exported().module()(X), Small()(X)


@repro("Trying to flatten user inputs with exported input tree spec", tool="ep.module()(...)", entry="50f906c4b6",
       cause="The call passes its inputs in another structure than export saw (a list for two arguments).")
def flatten_mismatch():
    module = exported(TwoInputs(), X, X).module()
    module([X, X])


@fix_of(flatten_mismatch)
def flatten_same_structure():
    return exported(TwoInputs(), X, X).module()(X, X), TwoInputs()(X, X)


@repro("Ran into a kwarg keyword mismatch", tool="ep.module()(...)", entry="678c91dbae",
       cause="The call names a keyword argument export did not see (or misses one it saw).")
def kwarg_mismatch():
    module = torch.export.export(TwoInputs(), (X,), {"y": X}).module()
    module(X, z=X)


@fix_of(kwarg_mismatch)
def kwarg_same_names():
    module = torch.export.export(TwoInputs(), (X,), {"y": X}).module()
    return module(X, y=X), TwoInputs()(X, y=X)


@repro("Expecting `args` to be a tuple of example positional inputs", tool="torch.export.export",
       entry="3969da93d2", cause="export takes its example inputs as a tuple, even for one tensor.")
def args_not_tuple():
    torch.export.export(Small(), X)


@fix_of(args_not_tuple)
def args_as_tuple():
    return torch.export.export(Small(), (X,)).module()(X), Small()(X)


@repro("Guard failed: x.size()[0] == 2", tool="ep.module()(...)", entry="",
       cause="export made every size static; a batch of another size fails the exported module's input check.",
       says=r"Guard failed: \w+\.size\(\)\[\d+\] == \d+")
def static_batch():
    exported().module()(torch.ones(3, 4))


@fix_of(static_batch)
def dynamic_batch():
    module = exported(None, X, dynamic_shapes=({0: Dim("batch")},)).module()
    three = torch.ones(3, 4)
    return module(three), Small()(three)


@repro("Guard failed: x.size()[0] <= 4", tool="ep.module()(...)", entry="",
       cause="The input is outside the range the Dim was declared with.",
       says=r"Guard failed: \w+\.size\(\)\[\d+\] [<>]=? \d+")
def outside_dim_range():
    module = exported(None, X, dynamic_shapes=({0: Dim("batch", max=4)},)).module()
    module(torch.ones(8, 4))


@fix_of(outside_dim_range)
def wider_dim_range():
    module = exported(None, X, dynamic_shapes=({0: Dim("batch", max=16)},)).module()
    eight = torch.ones(8, 4)
    return module(eight), Small()(eight)


class ViewsAsTwoRows(nn.Module):
    def forward(self, x):
        return x.reshape(2, -1) * 2


@repro("Constraints violated (batch)", tool="torch.export.export", entry="603fdfb955",
       cause="The Dim is declared dynamic but the code fixes it (reshape(2, -1) needs a batch of 2).")
def specialized_dim():
    torch.export.export(ViewsAsTwoRows(), (X,), dynamic_shapes=({0: Dim("batch")},))


@fix_of(specialized_dim)
def dim_auto():
    """Dim.AUTO lets export keep the dimension static where the code requires it."""
    program = torch.export.export(ViewsAsTwoRows(), (X,), dynamic_shapes=({0: Dim.AUTO},))
    return program.module()(X), ViewsAsTwoRows()(X)


@repro("dynamic_shapes top-level keys must be the arg names", tool="torch.export.export", entry="75138094f8",
       cause="dynamic_shapes given as a dict must use forward's argument names.")
def wrong_dynamic_shapes_key():
    torch.export.export(Small(), (X,), dynamic_shapes={"input": {0: Dim("batch")}})


@fix_of(wrong_dynamic_shapes_key)
def right_dynamic_shapes_key():
    program = torch.export.export(Small(), (X,), dynamic_shapes={"x": {0: Dim("batch")}})
    return program.module()(X), Small()(X)


repro("GuardOnDataDependentSymNode: Could not guard on data-dependent expression", tool="export", entry="",
      cause="An if on a value computed from a tensor: export must know which way it goes for every input.",
      inputs=signs,
      says=r"Could not guard on data-dependent expression")(ItemBranch)
repro("Data-dependent branching (export strict)", tool="export strict", entry="GB0170", inputs=signs,
      cause="Strict export traces with Dynamo: an if on a tensor is a graph break, and export allows none.")(BoolBranch)


repro("Attempted to use `torch.nn.Parameter()` with export", tool="export strict", entry="GB0244",
      cause="A parameter made inside forward is state export cannot lift into the program.")(ParameterInForward)


@repro("GuardOnDataDependentSymNode: Could not guard on data-dependent expression (a size)", tool="export",
       entry="",
       cause="A size made from a tensor's value (torch.zeros(int(...))) has no value at export time.",
       inputs=lambda: ((torch.tensor([2.0]),), (torch.tensor([3.0]),)))
class SizeFromValue(nn.Module):
    def forward(self, x):
        return torch.zeros(int(x[0]))


@fix_of(SizeFromValue)
class SizeFromValueChecked(nn.Module):
    """An int from .item(), with torch._check saying it is a valid size."""

    def forward(self, x):
        n = x[0].to(torch.int64).item()
        torch._check(n >= 0)
        return torch.zeros(n)


def lengths() -> tuple[tuple, tuple]:
    """Two vectors whose second value is a valid length (2, then 3)."""
    return (torch.tensor([1.0, 2.0, 3.0, 4.0]),), (torch.tensor([4.0, 3.0, 2.0, 2.0]),)


@repro("GuardOnDataDependentSymNode: Could not extract specialized integer from data-dependent expression",
       tool="export", entry="", inputs=lengths,
       cause="int() of a float read from the tensor: export must turn a value it only knows at run time into a "
             "Python int while tracing.")
class SliceByValue(nn.Module):
    def forward(self, x):
        return x[: int(x[1].item())]


@fix_of(SliceByValue)
class SliceByCheckedValue(nn.Module):
    """Read an integer (.long().item()) and tell export its range with torch._check: the slice stays symbolic."""

    def forward(self, x):
        n = x[1].long().item()
        torch._check(n >= 0)
        torch._check(n <= x.shape[0])
        return x[:n]


@repro("We ran into an error when deserializing the saved file", tool="torch.export.load", entry="2c27df661f",
       cause="The file was written by torch.save, not torch.export.save.")
def load_torch_save():
    buffer = io.BytesIO()
    torch.save(Small().state_dict(), buffer)
    buffer.seek(0)
    torch.export.load(buffer)


@fix_of(load_torch_save)
def load_export_save():
    buffer = io.BytesIO()
    torch.export.save(exported(), buffer)
    buffer.seek(0)
    return torch.export.load(buffer).module()(X), Small()(X)


@repro("The 'ep' parameter must be an instance of 'ExportedProgram'", tool="torch.export.save", entry="83235ce426",
       cause="torch.export.save writes ExportedPrograms only, not the module they were made from.")
def save_module():
    torch.export.save(Small(), io.BytesIO())


@fix_of(save_module)
def save_program():
    buffer = io.BytesIO()
    torch.export.save(exported(), buffer)
    buffer.seek(0)
    return torch.export.load(buffer).module()(X), Small()(X)


repro("Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor)", tool="export", entry="",
      cause="export traces with fake tensors, which have no memory: data_ptr() has nothing to return.")(DataPtr)


repro(".numpy() is not supported for tensor subclasses", tool="export", entry="",
      cause="export traces with fake tensors; NumPy needs real memory.")(TensorNumpy)


@fix_of(TensorNumpy, tool="export")
class TimesTwoInTorch(nn.Module):
    def forward(self, x):
        return x * 2


@repro("ConstraintViolationError: 2 not in range [3, int_oo]", tool="torch.export.export", entry="8679bbc29d",
       cause="The example input's size is outside the range its Dim declares.")
def example_outside_dim():
    torch.export.export(Small(), (X,), dynamic_shapes=({0: Dim("batch", min=3)},))


@fix_of(example_outside_dim)
def example_inside_dim():
    program = torch.export.export(Small(), (X,), dynamic_shapes=({0: Dim("batch", min=2)},))
    return program.module()(X), Small()(X)


@repro("Detected mismatch between the structure of `inputs` and `dynamic_shapes`", tool="torch.export.export",
       entry="85f52ae35c", cause="dynamic_shapes must have one entry per input, in the inputs' structure.")
def dynamic_shapes_too_many():
    torch.export.export(Small(), (X,), dynamic_shapes=({0: Dim("batch")}, {0: Dim("other")}))


@fix_of(dynamic_shapes_too_many)
def dynamic_shapes_one_per_input():
    program = torch.export.export(Small(), (X,), dynamic_shapes=({0: Dim("batch")},))
    return program.module()(X), Small()(X)


@repro("Unexpected dimension mapped to index 0 in input tensor shape", tool="torch.export.export", entry="03f4e79e84",
       cause="A dimension is given as a string; dynamic_shapes takes Dim objects (or Dim.AUTO, Dim.STATIC, None).")
def dim_as_string():
    torch.export.export(Small(), (X,), dynamic_shapes=({0: "batch"},))


@fix_of(dim_as_string)
def dim_as_object():
    program = torch.export.export(Small(), (X,), dynamic_shapes=({0: Dim("batch")},))
    return program.module()(X), Small()(X)


@repro("Cannot create Dim with inconsistent min, max", tool="torch.export.Dim", entry="b972079abb",
       cause="A Dim whose min is above its max.")
def dim_min_above_max():
    Dim("batch", min=5, max=3)


@fix_of(dim_min_above_max)
def dim_min_below_max():
    program = torch.export.export(Small(), (X,), dynamic_shapes=({0: Dim("batch", min=2, max=5)},))
    return program.module()(X), Small()(X)


@repro("Expected `mod` to be an instance of `torch.nn.Module`", tool="torch.export.export", entry="6f85f20ba7",
       cause="export takes a module; a plain function must be wrapped in one.")
def export_function():
    torch.export.export(torch.relu, (X,))


class Relu(nn.Module):
    def forward(self, x):
        return torch.relu(x)


@fix_of(export_function)
def export_wrapped_function():
    return torch.export.export(Relu(), (X,)).module()(X), torch.relu(X)


@dataclasses.dataclass
class Batch:
    """A dataclass input, not registered with pytree."""

    x: torch.Tensor
    scale: float


@dataclasses.dataclass
class RegisteredBatch:
    """The same dataclass, registered with pytree so export can flatten it."""

    x: torch.Tensor
    scale: float


torch.export.register_dataclass(RegisteredBatch)


class TakesBatch(nn.Module):
    def forward(self, batch):
        return batch.x * batch.scale


@repro("Unsupported input type (a dataclass). Export only supports pytree containers", tool="torch.export.export",
       entry="c7cb2d7dce", cause="export flattens inputs with pytree; a dataclass it does not know cannot be flattened.")
def dataclass_input():
    torch.export.export(TakesBatch(), (Batch(X, 2.0),))


@repro("one of the inputs is not supported or pytree-flattenable (strict)", tool="torch.export.export(strict=True)",
       entry="f1a106f802", cause="The same under strict export: the dataclass input is not registered with pytree.")
def dataclass_input_strict():
    torch.export.export(TakesBatch(), (Batch(X, 2.0),), strict=True)


def registered_dataclass():
    """Register the dataclass (torch.export.register_dataclass) before exporting."""
    batch = RegisteredBatch(X, 2.0)
    return torch.export.export(TakesBatch(), (batch,)).module()(batch), TakesBatch()(batch)


fix_of(dataclass_input)(registered_dataclass)
fix_of(dataclass_input_strict)(registered_dataclass)


class Output:
    def __init__(self, value):
        self.value = value


class ReturnsObject(nn.Module):
    def forward(self, x):
        return Output(x + 1)


@repro("Found <class> in output, which is not a known type", tool="torch.export.export", entry="a13fdbea2b",
       cause="An output of a class pytree does not know: export cannot flatten it.")
def object_output():
    torch.export.export(ReturnsObject(), (X,))


class ReturnsDict(nn.Module):
    def forward(self, x):
        return {"value": x + 1}


@fix_of(object_output)
def dict_output():
    """Return a dict (or register the class with pytree)."""
    return torch.export.export(ReturnsDict(), (X,)).module()(X), ReturnsDict()(X)


@repro("There is no flat args adapter specified", tool="torch.export.unflatten(ep)(...)", entry="8b5c8fd28e",
       cause="The unflattened module is called with other arguments than export saw.")
def unflatten_wrong_arguments():
    torch.export.unflatten(exported())(X, X)


@fix_of(unflatten_wrong_arguments)
def unflatten_same_arguments():
    return torch.export.unflatten(exported())(X), Small()(X)


@repro("Unexpected input tensor shape specified at `dynamic_shapes[0]`", tool="torch.export.export",
       entry="ef278a81d0", cause="A tensor's dynamic shape must be a dict or tuple over its dimensions, not a Dim.")
def dim_instead_of_shape():
    torch.export.export(Small(), (X,), dynamic_shapes=[Dim("batch")])


@fix_of(dim_instead_of_shape)
def shape_as_dict():
    program = torch.export.export(Small(), (X,), dynamic_shapes=[{0: Dim("batch")}])
    return program.module()(X), Small()(X)


@repro("Exporting a ScriptModule is not supported", tool="torch.export.export", entry="25e6c9a3c8",
       cause="torch.jit.script made a ScriptModule; export takes the Python module.")
def export_script_module():
    torch.export.export(torch.jit.script(Small()), (X,))


@fix_of(export_script_module)
def export_python_module():
    return exported().module()(X), Small()(X)


class Square(nn.Module):
    def forward(self, x):
        return x.sum(0)


@repro("one Dim for two sizes: L['x'].size()[1] = 4 is not equal to L['x'].size()[0] = 2",
       tool="torch.export.export", entry="", missed="bf131321ad",
       cause="The same Dim object names two dimensions, which export then requires to be equal.",
       says=r"L\['\w+'\]\.size\(\)\[\d+\] = \d+ is not equal to L\['\w+'\]\.size\(\)\[\d+\] = \d+")
def one_dim_for_two_sizes():
    batch = Dim("batch")
    torch.export.export(Square(), (X,), dynamic_shapes=({0: batch, 1: batch},))


@fix_of(one_dim_for_two_sizes)
def one_dim_per_size():
    program = torch.export.export(Square(), (X,), dynamic_shapes=({0: Dim("rows"), 1: Dim("cols")},))
    return program.module()(X), Square()(X)
