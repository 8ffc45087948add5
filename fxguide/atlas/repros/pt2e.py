"""PT2E quantization (``torchao.quantization.pt2e``): what prepare and convert take, train()/eval() on their
result, and the APIs that moved out of torch.

The fixes run the pipeline as torch expects it (``export`` → ``.module()`` →
``prepare_pt2e`` → calibrate → ``convert_pt2e``) with a quantizer that annotates
nothing, so the converted model computes what eager mode does and can be
compared with it exactly.
"""

import torch
from torch import nn

from fxguide.atlas.repros import fix_of, repro
from fxguide.atlas.repros.export import Small, X

def quantizer():
    """A quantizer that annotates nothing: the pipeline runs and the numbers do not change."""
    from torchao.quantization.pt2e.quantizer import Quantizer

    class NoAnnotations(Quantizer):
        def annotate(self, model):
            return model

        def validate(self, model):
            pass
    return NoAnnotations()


def quantized(model: nn.Module):
    """The PT2E pipeline as torch expects it: export, .module(), prepare, calibrate, convert."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    prepared = prepare_pt2e(torch.export.export(model, (X,)).module(), quantizer())
    prepared(X)  # calibrate
    return convert_pt2e(prepared)


@repro("Calling train() or eval() is not supported for exported models (PT2E)", tool="converted.eval()", entry="",
       cause="A PT2E model is an exported module: train() and eval() are replaced; use the pt2e helpers.")
def train_converted():
    quantized(Small()).eval()


@fix_of(train_converted)
def move_converted_to_eval():
    from torchao.quantization.pt2e import move_exported_model_to_eval
    converted = move_exported_model_to_eval(quantized(Small()))
    return converted(X), Small().eval()(X)


@repro("quant_min must be <= quant_max", tool="QuantizationSpec", entry="3e05f45653",
       cause="A quantization spec whose range is empty (the bounds swapped).")
def swapped_bounds():
    from torchao.quantization.pt2e.observer import MinMaxObserver
    from torchao.quantization.pt2e.quantizer import QuantizationSpec
    QuantizationSpec(dtype=torch.int8, observer_or_fake_quant_ctr=MinMaxObserver, quant_min=127, quant_max=-128)


@fix_of(swapped_bounds)
def ordered_bounds():
    from torchao.quantization.pt2e.observer import MinMaxObserver
    from torchao.quantization.pt2e.quantizer import QuantizationSpec
    spec = QuantizationSpec(dtype=torch.int8, observer_or_fake_quant_ctr=MinMaxObserver, quant_min=-128,
                            quant_max=127)
    return torch.tensor([spec.quant_min, spec.quant_max]), torch.tensor([-128, 127])


@repro("No module named 'torch.ao.quantization.quantize_pt2e'", tool="import", entry="",
       cause="PT2E quantization moved from torch.ao to torchao (torchao.quantization.pt2e).")
def old_quantize_pt2e_import():
    from torch.ao.quantization.quantize_pt2e import prepare_pt2e  # noqa: F401


@fix_of(old_quantize_pt2e_import)
def torchao_quantize_pt2e_import():
    return quantized(Small())(X), Small()(X)


@repro("No module named 'torch.ao.quantization.quantizer'", tool="import", entry="",
       cause="The quantizers moved with PT2E to torchao (torchao.quantization.pt2e.quantizer).")
def old_quantizer_import():
    from torch.ao.quantization.quantizer.xnnpack_quantizer import XNNPACKQuantizer  # noqa: F401


@fix_of(old_quantizer_import)
def torchao_quantizer_import():
    from torchao.quantization.pt2e.quantizer import Quantizer
    return torch.tensor(issubclass(type(quantizer()), Quantizer)), torch.tensor(True)


@repro("cannot import name 'capture_pre_autograd_graph'", tool="import", entry="",
       cause="capture_pre_autograd_graph was removed; torch.export.export(...).module() gives the same graph.")
def capture_pre_autograd_graph():
    from torch._export import capture_pre_autograd_graph  # noqa: F401


@fix_of(capture_pre_autograd_graph)
def export_then_module():
    return torch.export.export(Small(), (X,)).module()(X), Small()(X)


@repro("'ExportedProgram' object has no attribute 'meta' (prepare_pt2e)", tool="prepare_pt2e", entry="",
       cause="prepare_pt2e takes the GraphModule of ep.module(), not the ExportedProgram.")
def prepare_exported_program():
    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e
    prepare_pt2e(torch.export.export(Small(), (X,)), quantizer())


@fix_of(prepare_exported_program)
def prepare_exported_module():
    return quantized(Small())(X), Small()(X)
