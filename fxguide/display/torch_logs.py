"""Collect torch's own logs (what ``TORCH_LOGS`` turns on) in a list, for a page to print."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import torch


class _Collect(logging.Handler):
    def __init__(self, messages: list[str]) -> None:
        super().__init__()
        self.messages = messages

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message:  # structured-trace records (TORCH_TRACE) carry their data elsewhere, with an empty message
            self.messages.append(message)


@contextlib.contextmanager
def torch_logs(**settings: object) -> Iterator[list[str]]:
    """Turn torch logs on for a block, as ``TORCH_LOGS`` would; yield the list their messages go to.

    ``settings`` are those of ``torch._logging.set_logs`` (``recompiles=True``,
    ``graph_breaks=True``, ``guards=True``, ``dynamo=logging.INFO``...). While
    the block runs, the handlers torch attaches to its loggers (which write to
    stderr with a timestamp and a process id) are replaced by one that keeps
    the bare messages; on exit they are put back and logging is reset to the
    default with ``set_logs()``.

    >>> with torch_logs(recompiles=True) as messages:
    ...     torch._dynamo.reset()
    ...     double = torch.compile(lambda t: t * 2, backend="eager", dynamic=False)
    ...     _ = double(torch.ones(2)), double(torch.ones(3))
    >>> messages[0].splitlines()[-1].strip()
    "- 0/0: tensor 't' size mismatch at index 0. expected 2, actual 3"
    """
    if not settings:
        raise ValueError("torch_logs: say which logs to turn on, e.g. torch_logs(recompiles=True) "
                         "(the names are those of TORCH_LOGS and torch._logging.set_logs)")
    messages: list[str] = []
    collect = _Collect(messages)
    torch._logging.set_logs(**settings)  # raises on an unknown name
    swapped: list[tuple[logging.Logger, list[logging.Handler]]] = []
    try:
        names = sorted(n for n in logging.root.manager.loggerDict if n.startswith("torch."))
        for name in ["torch", *(n for n in names if not n.startswith("torch.__trace"))]:  # TORCH_TRACE's own
            logger = logging.getLogger(name)
            if logger.handlers:
                swapped.append((logger, logger.handlers))
                logger.handlers = [collect]
        yield messages
    finally:
        for logger, handlers in swapped:
            logger.handlers = handlers
        torch._logging.set_logs()
