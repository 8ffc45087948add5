"""Where a question comes from: the model's own code or torch's (and this package's), and whether a ``try`` covers it."""

from __future__ import annotations

import linecache
import os
import sys
from typing import Any

import torch
import torch.fx as fx

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STATE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(_PACKAGE_DIR))), "_state") + os.sep


def _is_user_frame(frame: Any) -> bool:
    filename = frame.f_code.co_filename
    user = _USER_FILES.get(filename)
    if user is None:
        user = _USER_FILES[filename] = not (filename.startswith(_TORCH_DIR)
                                            or os.path.abspath(filename).startswith((_PACKAGE_DIR, _STATE_DIR)))
    return user


_USER_FILES: dict[str, bool] = {}  # a file name -> whether its code is the model's (asked for every question)


def _user_location() -> tuple[str, int, str]:
    """File, line and source text of the innermost frame outside torch and this package."""
    frame = sys._getframe(1)
    while frame is not None:
        if _is_user_frame(frame):
            filename, lineno = frame.f_code.co_filename, frame.f_lineno
            return filename, lineno, linecache.getline(filename, lineno, frame.f_globals).strip()
        frame = frame.f_back
    return "<unknown>", 0, ""


def _catching_handler(code: Any, offset: int) -> bool:
    """Whether the instruction at ``offset`` of ``code`` runs under an ``except`` clause.

    A ``with`` block's handler re-raises unless its context manager
    suppresses the exception (``contextlib.suppress``): it is followed outward.
    """
    entries = _exception_entries(code)
    for _ in range(16):
        entry = next((e for e in entries if e[0] <= offset < e[1]), None)
        if entry is None:
            return False
        start, _end, target, first, second, catches = entry
        if catches:
            return True
        offset = target  # a cleanup or finally handler re-raises: look at what covers it
    return False


_ENTRIES: dict[Any, list[tuple[int, int, int, str, str, bool]]] = {}


def _exception_entries(code: Any) -> list[tuple[int, int, int, str, str, bool]]:
    if code not in _ENTRIES:
        import dis

        bytecode = dis.Bytecode(code)
        ops = {i.offset: i.opname for i in bytecode}
        offsets = sorted(ops)
        found = []
        for entry in getattr(bytecode, "exception_entries", []):
            after = [ops[o] for o in offsets if o >= entry.target][:8]
            first, second = (after + ["", ""])[:2]
            catches = first == "PUSH_EXC_INFO" and (
                "CHECK_EXC_MATCH" in after or second == "POP_TOP")
            found.append((entry.start, entry.end, entry.target, first, second, catches))
        _ENTRIES[code] = found
    return _ENTRIES[code]


def _inside_try() -> bool:
    """Whether the traced code is running inside a ``try``/``except`` of the traced model."""
    frame = sys._getframe(2)
    trace_code = fx.Tracer.trace.__code__
    while frame is not None and frame.f_code is not trace_code:
        if _is_user_frame(frame) and _catching_handler(frame.f_code, frame.f_lasti):
            return True
        frame = frame.f_back
    return False


