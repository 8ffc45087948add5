"""Where the capture stack's messages are raised: the source files the inventory reads, each with its subsystem.

Paths are relative to a ``site-packages`` folder. A folder is read whole (its
``*.py`` files, tests and polyfills left out); Inductor only for its
user-facing errors: every message of its ``exc.py`` and, elsewhere, the raises
of the exception classes that ``exc.py`` of Inductor or of Dynamo defines
(``InvalidCxxCompiler``, ``BackendCompilerFailed`` ...). Libraries that are not
installed are skipped: the FX helpers of torchvision, timm and transformers
(gone from transformers 5), and PT2E, which left ``torch.ao`` for torchao in
torch 2.14.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Source:
    """A file or folder of a subsystem; ``user_facing_only``: only the raises of the user-facing classes."""

    subsystem: str
    path: str
    user_facing_only: bool = False


SOURCES: tuple[Source, ...] = (
    Source("fx", "torch/fx"),
    Source("export", "torch/export"),
    Source("export", "torch/_export"),
    Source("dynamo", "torch/_dynamo"),
    Source("custom-ops", "torch/_library"),
    Source("custom-ops", "torch/library.py"),
    Source("pt2e", "torch/ao/quantization/pt2e"),
    Source("pt2e", "torch/ao/quantization/quantizer"),
    Source("pt2e", "torch/ao/quantization/quantize_pt2e.py"),
    Source("pt2e", "torchao/quantization/pt2e"),
    Source("aot-autograd", "torch/_functorch/aot_autograd.py"),
    Source("aot-autograd", "torch/_functorch/_aot_autograd"),
    Source("inductor", "torch/_inductor/exc.py"),
    Source("inductor", "torch/_inductor", user_facing_only=True),
    Source("onnx", "torch/onnx"),
    Source("torchvision", "torchvision/models/feature_extraction.py"),
    Source("timm", "timm/layers/_fx.py"),
    Source("timm", "timm/models/_features_fx.py"),
    Source("transformers", "transformers/utils/fx.py"),
)
"""The files the inventory reads, in the order of its subsystems."""

EXCEPTION_MODULES = ("torch/_inductor/exc.py", "torch/_dynamo/exc.py")
"""The modules whose classes are user-facing errors: every message their classes make, and their raises
anywhere in a ``user_facing_only`` source."""

REGISTRY = "torch/_dynamo/graph_break_registry.json"
HINTS = "torch/_dynamo/graph_break_hints.py"

# Not messages a user meets: Dynamo's polyfills re-raise Python's own errors in Python's own words, and
# the test helpers shipped inside the package raise for torch's own test suite.
_LEFT_OUT = ("torch/_dynamo/polyfills/", "torch/_dynamo/test_", "torch/_dynamo/testing.py",
             "torch/_export/db/examples/", "/test/", "/tests/", "/testing/")


def files(site: Path) -> Iterator[tuple[Source, Path]]:
    """Each source file under ``site`` once, with its source (the first that names it), in a stable order."""
    seen: set[Path] = set()
    for source in SOURCES:
        root = site / source.path
        found = [root] if root.is_file() else sorted(root.rglob("*.py")) if root.is_dir() else []
        for path in found:
            relative = path.relative_to(site).as_posix()
            if path in seen or any(part in f"/{relative}" for part in _LEFT_OUT):
                continue
            seen.add(path)
            yield source, path


__all__ = ["EXCEPTION_MODULES", "HINTS", "REGISTRY", "SOURCES", "Source", "files"]
