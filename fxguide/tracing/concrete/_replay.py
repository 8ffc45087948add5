"""What a traced graph calls to do again what ``forward`` did outside torch: print, log, warn, write.

``print(x)`` in ``forward`` prints on every eager call. A tracer runs ``forward`` once, so a graph that
held only the tensor operations would print nothing afterwards: a call that differs from eager's without
raising. While tracing, the model's own ``print``, ``logging`` calls, ``warnings.warn`` and writes to
``sys.stdout``/``sys.stderr`` are recorded as nodes calling these functions with the same arguments
(traced values among them), so the graph prints, logs and warns on every call as eager mode does. Each
is declared side-effectful, so dead-code elimination keeps it.
"""

from __future__ import annotations

import builtins
import logging
import sys
import warnings
from typing import Any

from torch.fx.node import has_side_effect

_PRINT = builtins.print
_WARN = warnings.warn


@has_side_effect
def print_(*args: Any, **kwargs: Any) -> None:
    """``print`` as the traced ``forward`` called it."""
    _PRINT(*args, **kwargs)


@has_side_effect
def log(logger: str | None, method: str, *args: Any, **kwargs: Any) -> None:
    """``logging.getLogger(logger).<method>(*args, **kwargs)``; ``logger`` None is the root logger."""
    getattr(logging.getLogger(logger), method)(*args, **kwargs)


@has_side_effect
def warn(message: Any, category: Any = None, stacklevel: int = 1, **kwargs: Any) -> None:
    """``warnings.warn`` as the traced ``forward`` called it."""
    _WARN(message, category, stacklevel=stacklevel + 1, **kwargs)


@has_side_effect
def write(stream: str, text: Any) -> None:
    """``sys.stdout.write(text)`` (or ``sys.stderr``), on the stream that is current when the graph runs."""
    getattr(sys, stream).write(text)
