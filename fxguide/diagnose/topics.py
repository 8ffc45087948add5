"""Which page of the guide covers the part of torch a message is raised in.

A message the catalogue of causes has no cause for can still be recognised in torch's
inventory (:mod:`fxguide.diagnose.recognise`), which says where torch raises it. The
module it is raised in says what the reader was doing: ``torch/fx/subgraph_rewriter.py``
is a pattern rewrite, ``torch/_export/serde/`` saving or loading an exported program,
``torch/_dynamo/`` a ``torch.compile`` capture. :func:`topic` gives the guide's page
for that, so an answer never ends at "torch raised this".

>>> topic("torch/fx/subgraph_rewriter.py").page
'transformations'
>>> topic("torchao/quantization/pt2e/prepare.py").page
'pt2/quantization'
>>> topic("numpy/core/fromnumeric.py") is None
True
"""

from __future__ import annotations

from fxguide._checks import string
from fxguide.diagnose.causes import Section

#: (path prefix in torch's source, the guide's section, what that part of torch does), most specific first.
TOPICS: tuple[tuple[str, Section, str], ...] = (
    ("torch/fx/experimental/symbolic_shapes.py", Section("pt2/dynamic-shapes", ""), "symbolic sizes and their guards"),
    ("torch/fx/experimental/proxy_tensor.py", Section("fx-and-pt2", ""), "make_fx"),
    ("torch/fx/experimental/", Section("pt2/dynamic-shapes", ""), "symbolic sizes and their guards"),
    ("torch/fx/passes/shape_prop.py", Section("interpreters", ""), "shape propagation"),
    ("torch/fx/passes/", Section("pt2/pass-infrastructure", ""), "torch's FX passes"),
    ("torch/fx/subgraph_rewriter.py", Section("transformations", ""), "pattern rewriting"),
    ("torch/fx/interpreter.py", Section("interpreters", ""), "running a graph node by node"),
    ("torch/fx/_symbolic_trace.py", Section("limitations", ""), "symbolic tracing"),
    ("torch/fx/proxy.py", Section("limitations", ""), "symbolic tracing"),
    ("torch/fx/_graph_pickler.py", Section("pt2/saving", ""), "saving graphs"),
    ("torch/fx/", Section("ir", ""), "the graph and its nodes"),
    ("torch/_dynamo/", Section("pt2/debugging", "pt2-debugging-graph-breaks"), "torch.compile's capture (Dynamo)"),
    ("torch/_export/serde/", Section("pt2/saving", ""), "saving and loading exported programs"),
    ("torch/export/pt2_archive/", Section("pt2/saving", ""), "saving and loading exported programs"),
    ("torch/export/dynamic_shapes.py", Section("pt2/dynamic-shapes", ""), "dynamic shapes in export"),
    ("torch/export/unflatten.py", Section("pt2/saving", "saving-unflatten"), "unflattening an exported program"),
    ("torch/_export/passes/", Section("pt2/export-passes", ""), "passes on exported programs"),
    ("torch/_export/", Section("pt2/export-real-models", ""), "torch.export"),
    ("torch/export/", Section("pt2/export-real-models", ""), "torch.export"),
    ("torch/onnx/", Section("pt2/onnx", ""), "the ONNX exporter"),
    ("torch/_functorch/", Section("pt2/compile-backends", "compile-aot-autograd"), "AOT Autograd"),
    ("torch/_library/", Section("pt2/opaque-regions", "opaque-custom-op"), "custom operators"),
    ("torch/library.py", Section("pt2/opaque-regions", "opaque-custom-op"), "custom operators"),
    ("torch/_higher_order_ops/", Section("pt2/higher-order-ops", ""), "higher-order operators"),
    ("torch/_inductor/", Section("pt2/compile-backends", ""), "Inductor"),
    ("torch/ao/quantization/", Section("pt2/quantization", ""), "quantization"),
    ("torchao/quantization/pt2e/", Section("pt2/quantization", ""), "PT2E quantization"),
)


def _part(file: str) -> tuple[str, Section, str] | None:
    """The row of :data:`TOPICS` whose prefix ``file`` starts with (the most specific: they come first)."""
    return next((row for row in TOPICS if file.startswith(row[0])), None)


def topic(file: str) -> Section | None:
    """The guide's section for the part of torch that ``file`` (``torch/fx/graph.py``, as the inventory names
    places) belongs to, or ``None`` outside the parts the guide covers."""
    row = _part(string("topic", "file", file))
    return row[1] if row else None


def described(file: str) -> str:
    """What the part of torch ``file`` belongs to does, in a few words (``""`` where :func:`topic` has none).

    >>> described("torch/_export/serde/serialize.py")
    'saving and loading exported programs'
    """
    row = _part(string("described", "file", file))
    return row[2] if row else ""


__all__ = ["TOPICS", "described", "topic"]
