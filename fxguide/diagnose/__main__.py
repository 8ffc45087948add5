"""``python -m fxguide.diagnose TARGET --input 1x3x224x224``: diagnose a model from the shell.

TARGET names what builds the model:

- ``package.module:factory`` or ``path/to/file.py:factory``: ``factory()``
  returns the model, or ``(model, args)``, or ``(model, args, kwargs)``;
- ``path/to/file.py``: the file defines ``model``, and ``example_inputs`` (a
  tuple) and ``example_kwargs`` (a dict) unless ``--input`` gives the inputs.

``--input SHAPE[:DTYPE[:HIGH]]`` (once per positional input) makes a random
tensor: ``1x3x224x224``, or ``1x128:int64:30522`` for token ids below 30522.
The model is put in eval mode unless ``--train`` is given.

Exit status: 0 when every tool captured the model and matched eager, 1 when one
did not, 2 when the model or its inputs could not be made.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn

from fxguide.diagnose import TIMEOUT, TOOLS, examine
from fxguide.diagnose.causes import local_site

_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}


class UsageError(Exception):
    """The target or an input could not be understood; the message says what to pass instead."""


def parse_input(text: str, seed: int = 0) -> torch.Tensor:
    """A random tensor from ``SHAPE[:DTYPE[:HIGH]]``.

    >>> parse_input("2x3").shape
    torch.Size([2, 3])
    >>> t = parse_input("1x8:int64:5"); (t.dtype, int(t.max()) < 5)
    (torch.int64, True)
    >>> parse_input("2xa")
    Traceback (most recent call last):
    ...
    fxguide.diagnose.__main__.UsageError: --input 2xa: a shape is sizes joined by x, such as 1x3x224x224
    """
    shape_text, _, rest = text.partition(":")
    dtype_text, _, high_text = rest.partition(":")
    try:
        shape = [int(size) for size in shape_text.split("x")]
    except ValueError:
        raise UsageError(f"--input {text}: a shape is sizes joined by x, such as 1x3x224x224") from None
    if any(size < 0 for size in shape):
        raise UsageError(f"--input {text}: sizes cannot be negative")
    dtype = _DTYPES.get(dtype_text or "float32")
    if dtype is None:
        raise UsageError(f"--input {text}: unknown dtype {dtype_text!r}; use one of {', '.join(_DTYPES)}")
    generator = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator, dtype=dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    try:
        high = int(high_text or 2)
    except ValueError:
        raise UsageError(f"--input {text}: HIGH must be an int (values are drawn below it)") from None
    return torch.randint(0, max(high, 1), shape, generator=generator, dtype=dtype)


def _load_file(path: Path) -> Any:
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent.resolve()))  # the file may import its neighbours
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def load(target: str) -> tuple[nn.Module, tuple[Any, ...] | None, dict[str, Any]]:
    """The model and the inputs (``None`` when the target gives none) that ``target`` names."""
    where, _, name = target.partition(":")
    if where.endswith(".py"):
        module = _load_file(Path(where))
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise UsageError(f"{target}: cannot import {where!r} ({exc}); give package.module:factory "
                             "or path/to/file.py:factory") from None
    if not name:
        if not hasattr(module, "model"):
            raise UsageError(f"{target}: the file defines no `model`; define one, or name a factory: {where}:build")
        built: Any = (module.model, getattr(module, "example_inputs", None), getattr(module, "example_kwargs", {}))
    else:
        factory = getattr(module, name, None)
        if factory is None:
            raise UsageError(f"{target}: {where} has no {name!r}")
        built = factory() if callable(factory) and not isinstance(factory, nn.Module) else factory
    if isinstance(built, nn.Module):
        return built, None, {}
    if isinstance(built, tuple) and built and isinstance(built[0], nn.Module) and len(built) <= 3:
        args = built[1] if len(built) > 1 else None
        kwargs = built[2] if len(built) > 2 else {}
        if args is not None and not isinstance(args, tuple):
            args = (args,)
        return built[0], args, dict(kwargs or {})
    raise UsageError(f"{target}: expected a torch.nn.Module, or (model, args[, kwargs]); got {type(built).__name__}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fxguide.diagnose",
                                     description="Run every capture tool on a model and compare each with eager.")
    parser.add_argument("target", help="package.module:factory, path/to/file.py:factory, or path/to/file.py")
    parser.add_argument("--input", action="append", default=[], metavar="SHAPE[:DTYPE[:HIGH]]",
                        help="a random positional input, such as 1x3x224x224 or 1x128:int64:30522 (repeatable)")
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, from {','.join(TOOLS)}")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per tool (default %(default)g)")
    parser.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    parser.add_argument("--train", action="store_true", help="keep the model in train mode")
    options = parser.parse_args(argv)
    try:
        model, args, kwargs = load(options.target)
        if options.input:
            args = tuple(parse_input(text, seed=i) for i, text in enumerate(options.input))
        if args is None:
            raise UsageError(f"{options.target} gives no inputs: pass --input SHAPE for each positional input")
        tools = tuple(t.strip() for t in options.tools.split(",") if t.strip())
        if unknown := [t for t in tools if t not in TOOLS]:
            raise UsageError(f"--tools: unknown {unknown}; choose from {', '.join(TOOLS)}")
        model.train(options.train)
        diagnosis = examine(model, (args, kwargs), tools=tools, timeout=options.timeout)
    except UsageError as exc:
        print(f"fxguide.diagnose: {exc}", file=sys.stderr)
        return 2
    print({"table": str, "markdown": lambda d: d.to_markdown(), "json": lambda d: d.to_json()}[options.format](diagnosis))
    if options.format == "table" and (local := local_site()) and not diagnosis.ok:
        print(f"and in the local build: {local.as_uri()}/")
    return 0 if diagnosis.ok else 1


if __name__ == "__main__":
    sys.exit(main())
