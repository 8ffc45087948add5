"""``python -m fxguide.diagnose TARGET --input 1x3x224x224``: diagnose a model from the shell.

TARGET names what builds the model:

- ``package.module:factory`` or ``path/to/file.py:factory``: ``factory()``
  returns the model, or ``(model, args)``, or ``(model, args, kwargs)``;
- ``path/to/file.py``: the file defines ``model``, and ``example_inputs`` (a
  tuple) and ``example_kwargs`` (a dict) unless ``--input`` gives the inputs.

``--input SHAPE[:DTYPE[:HIGH]]`` (once per positional input) makes a random
tensor: ``1x3x224x224``, or ``1x128:int64:30522`` for token ids below 30522
(HIGH only for integer dtypes, from 1 to the dtype's largest value plus one).
``--device`` and ``--dtype`` move the model (and the inputs ``--input`` makes,
their floating ones cast to ``--dtype``) before the diagnosis. The model is put
in eval mode unless ``--train`` is given. ``--timeout`` limits each tool and
each group of eager reference calls.

Exit status: 0 when every tool captured the model and matched eager, 1 when one
did not, 2 when the model or its inputs could not be made (the message says
what to write instead), or eager could not run them.
"""

from __future__ import annotations

import argparse
import math
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn

from fxguide.diagnose import TIMEOUT, TOOLS, captures, examine
from fxguide.diagnose.causes import local_site
from fxguide.diagnose.messages import normalize, origin

_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}


class UsageError(Exception):
    """The target or an input could not be understood; the message says what to pass instead."""


def parse_input(text: str, seed: int = 0, device: str | torch.device = "cpu") -> torch.Tensor:
    """A random tensor from ``SHAPE[:DTYPE[:HIGH]]``, made on ``device``.

    HIGH (integer dtypes only) bounds the values: they are drawn from 0 to HIGH - 1.

    >>> parse_input("2x3").shape
    torch.Size([2, 3])
    >>> t = parse_input("1x8:int64:5"); (t.dtype, int(t.max()) < 5)
    (torch.int64, True)
    >>> parse_input("2xa")
    Traceback (most recent call last):
    ...
    fxguide.diagnose.__main__.UsageError: --input 2xa: a shape is sizes joined by x, such as 1x3x224x224
    >>> parse_input("2x4:bool:7")
    Traceback (most recent call last):
    ...
    fxguide.diagnose.__main__.UsageError: --input 2x4:bool:7: HIGH is for integer dtypes (token ids); a bool input is drawn from False and True: write 2x4:bool
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
    if high_text and (dtype.is_floating_point or dtype == torch.bool):
        kind = "bool" if dtype == torch.bool else "floating"
        drawn = "from False and True" if dtype == torch.bool else "from a normal distribution"
        raise UsageError(f"--input {text}: HIGH is for integer dtypes (token ids); a {kind} input is drawn {drawn}: "
                         f"write {shape_text}:{dtype_text}")
    high = 2
    if high_text:
        try:
            high = int(high_text)
        except ValueError:
            raise UsageError(f"--input {text}: HIGH must be an int (values are drawn below it), "
                             f"such as {shape_text}:{dtype_text}:30522") from None
        largest = torch.iinfo(dtype).max
        if high <= 0 or high - 1 > largest:
            raise UsageError(f"--input {text}: HIGH must be from 1 to {largest + 1} for {dtype_text} (values are "
                             f"drawn from 0 to HIGH - 1), such as {shape_text}:{dtype_text}:{min(30522, largest)}")
    size = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
    if size > _LARGEST_INPUT:
        raise UsageError(f"--input {text}: {size / 2**30:.0f} GiB is too large an input; give smaller sizes")
    generator = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        value = torch.randn(shape, generator=generator, dtype=dtype)
    elif dtype == torch.bool:
        value = torch.randint(0, 2, shape, generator=generator).bool()
    else:
        value = torch.randint(0, high, shape, generator=generator, dtype=dtype)
    return value.to(device)


_LARGEST_INPUT = 2**34


def _load_file(path: Path) -> Any:
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent.resolve()))  # the file may import its neighbours
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the reader's file: say what it raised, and where
        raise UsageError(f"{path}: running the file raised {_raised(exc)}; fix the file, then run again") from None
    return module


def _raised(exc: BaseException) -> str:
    """``Type: message (at file:line)`` for an error the reader's own code raised."""
    where = origin(exc) or (f"{Path(exc.filename).name}:{exc.lineno}" if isinstance(exc, SyntaxError) and exc.filename
                            else "")
    return f"{type(exc).__name__}: {normalize(str(exc))}" + (f" (at {where})" if where else "")


def load(target: str) -> tuple[nn.Module, tuple[Any, ...] | None, dict[str, Any]]:
    """The model and the inputs (``None`` when the target gives none) that ``target`` names."""
    where, _, name = target.partition(":")
    if where.endswith(".py"):
        module = _load_file(Path(where))
    elif not where or Path(where).is_dir() or where.startswith("."):
        raise UsageError(f"{target}: give package.module:factory, path/to/file.py:factory or path/to/file.py "
                         "(not a folder or a relative module name)")
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise UsageError(f"{target}: cannot import {where!r} ({exc}); give package.module:factory "
                             "or path/to/file.py:factory") from None
        except Exception as exc:  # noqa: BLE001 - the reader's module raised while it was imported
            raise UsageError(f"{target}: importing {where!r} raised {_raised(exc)}; fix the module") from None
    if not name:
        if not hasattr(module, "model"):
            raise UsageError(f"{target}: the file defines no `model`; define one, or name a factory: {where}:build")
        built: Any = (module.model, getattr(module, "example_inputs", None), getattr(module, "example_kwargs", {}))
    else:
        factory = getattr(module, name, None)
        if factory is None:
            raise UsageError(f"{target}: {where} has no {name!r}")
        if callable(factory) and not isinstance(factory, nn.Module):
            try:
                built = factory()
            except TypeError as exc:
                raise UsageError(f"{target}: calling {name}() raised {_raised(exc)}; the factory must take no "
                                 f"arguments: write a function in a file that builds the model, "
                                 f"and name it as path/to/file.py:build") from None
            except Exception as exc:  # noqa: BLE001 - the reader's factory failed
                raise UsageError(f"{target}: calling {name}() raised {_raised(exc)}; fix the factory") from None
        else:
            built = factory
    if isinstance(built, nn.Module):
        return built, None, {}
    if isinstance(built, tuple) and built and isinstance(built[0], nn.Module) and len(built) <= 3:
        args = built[1] if len(built) > 1 else None
        kwargs = built[2] if len(built) > 2 else {}
        if args is not None and not isinstance(args, tuple):
            args = (args,)
        if kwargs is not None and not isinstance(kwargs, dict):
            raise UsageError(f"{target}: the keyword inputs (the third item) must be a dict of name to value, "
                             f"got a {type(kwargs).__name__}")
        return built[0], args, dict(kwargs or {})
    raise UsageError(f"{target}: expected a torch.nn.Module, or (model, args[, kwargs]); got {type(built).__name__}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fxguide.diagnose",
                                     description="Run every capture tool on a model and compare each with eager.")
    parser.add_argument("target", help="package.module:factory, path/to/file.py:factory, or path/to/file.py")
    parser.add_argument("--input", action="append", default=[], metavar="SHAPE[:DTYPE[:HIGH]]",
                        help="a random positional input, such as 1x3x224x224 or 1x128:int64:30522 (repeatable)")
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, from {','.join(TOOLS)}")
    parser.add_argument("--timeout", type=float, default=TIMEOUT,
                        help="seconds per tool, and for the eager reference calls (default %(default)g)")
    parser.add_argument("--device", default="cpu", help="where the model and inputs run (default %(default)s)")
    parser.add_argument("--dtype", choices=[n for n, d in _DTYPES.items() if d.is_floating_point],
                        help="cast the model's floating parameters and buffers (and floating --input tensors)")
    parser.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    parser.add_argument("--train", action="store_true", help="keep the model in train mode")
    options = parser.parse_args(argv)
    try:
        try:
            device = torch.device(options.device)
            torch.empty(0, device=device)
        except (RuntimeError, ValueError) as exc:
            raise UsageError(f"--device {options.device}: {str(exc).splitlines()[0]}; use cpu, or a device "
                             "this machine has (cuda, cuda:1, mps)") from None
        tools = tuple(t.strip() for t in options.tools.split(",") if t.strip())
        if unknown := [t for t in tools if t not in TOOLS]:
            raise UsageError(f"--tools: unknown {unknown}; choose from {', '.join(TOOLS)}")
        dtype = _DTYPES[options.dtype] if options.dtype else None
        inputs = [parse_input(text, seed=i, device=device) for i, text in enumerate(options.input)]
        model, args, kwargs = load(options.target)
        if inputs:
            args = tuple(inputs)
        if args is None:
            raise UsageError(f"{options.target} gives no inputs: pass --input SHAPE for each positional input")
        if tools == ("library_route",) and captures.library_of(model) is None:
            raise UsageError(f"--tools library_route: {type(model).__name__} comes from neither timm nor torchvision, "
                             "so there is no library route; choose other tools")
        model.train(options.train)
        model.to(device=device, dtype=dtype) if dtype else model.to(device)
        if dtype is not None:
            cast = lambda v: v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v  # noqa: E731
            args, kwargs = tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}
        diagnosis = examine(model, (args, kwargs), tools=tools, timeout=options.timeout)
    except UsageError as exc:
        print(f"fxguide.diagnose: {exc}", file=sys.stderr)
        return 2
    except TimeoutError as exc:
        print(f"fxguide.diagnose: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - the model's own error in eager mode: say so, without a traceback
        notes = [n for n in getattr(exc, "__notes__", []) if n.startswith("fxguide.diagnose")]
        where = origin(exc)
        print(f"fxguide.diagnose: {type(exc).__name__}: {normalize(str(exc))}" + (f"\n    at {where}" if where else "")
              + "".join(f"\n{n}" for n in notes), file=sys.stderr)
        return 2
    print({"table": str, "markdown": lambda d: d.to_markdown(), "json": lambda d: d.to_json()}[options.format](diagnosis))
    if options.format == "table" and (local := local_site()) and not diagnosis.ok:
        print(f"and in the local build: {local.as_uri()}/")
    return 0 if diagnosis.ok else 1


if __name__ == "__main__":
    sys.exit(main())
