"""Error messages as a diagnosis shows them: first line, no addresses or local paths, and where they arose.

:func:`normalize` makes a message comparable across machines and runs;
:func:`pattern` strips it further, to the *cause*: the same failure in another
model gives the same pattern; :func:`origin` finds the line of model code the
error came from.
"""

from __future__ import annotations

import re

import sysconfig
import traceback
from pathlib import Path

import torch

from fxguide._checks import int_at_least, string

_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
_SITE = re.compile(r"(?:/[^\s'\"():,]+)*/(?:site|dist)-packages/")
_PATH = re.compile(r"(?<![\w.>])(?:/[\w.+-]+){2,}/([\w.+-]+)")
_PLACEHOLDERS = [
    (re.compile(r"(data-dependent expression) .*"), r"\1 (…)"),
    (re.compile(r"Model \w+ is not supported yet.*"), "Model … is not supported yet, supported models: …"),
    (re.compile(r"\b\w+\.forward\b"), "….forward"),
    (re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`"), "'…'"),
    (re.compile(r"\(.*\)|\([^)]*…$"), "(…)"),  # signatures, symbolic expressions
    (re.compile(r"\b\d+(?:\.\d+)?(?:e-?\d+)?\b"), "N"),
    (re.compile(r"\[[N, ]+\]|\((?:N, )+N?\)|torch\.Size\(\[[N, ]*\]\)"), "[shape]"),
]


def normalize(message: str, limit: int = 300) -> str:
    """The first line of an exception message without memory addresses or local paths.

    >>> normalize("bad <function f at 0x7f3a> in /usr/lib/python3.11/site-packages/torch/fx/x.py:12\\nmore")
    'bad <function f at 0x…> in <site-packages>/torch/fx/x.py:12'
    >>> normalize("see /tmp/tmpab12/model.py")
    'see …/model.py'
    """
    string("normalize", "message", message)
    int_at_least("normalize", "limit", limit, minimum=2)
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    first = _ADDRESS.sub("0x…", first)
    first = _SITE.sub("<site-packages>/", first)
    first = _PATH.sub(r"…/\1", first)
    return first if len(first) <= limit else first[: limit - 1] + "…"


def pattern(error_type: str, message: str) -> str:
    """A failure's cause: its type and message with quoted names, numbers and shapes left out.

    >>> pattern("TypeError", "'Proxy' object cannot be interpreted as an integer")
    "TypeError: '…' object cannot be interpreted as an integer"
    >>> pattern("RuntimeError", "shape '[2, 3]' is invalid for input of size 5")
    "RuntimeError: shape '…' is invalid for input of size N"
    >>> pattern("GuardOnDataDependentSymNode", "Could not guard on data-dependent expression Eq(2*u1, 2) (unhinted)")
    'GuardOnDataDependentSymNode: Could not guard on data-dependent expression (…)'
    >>> pattern("", "values differ")
    'values differ'
    """
    string("pattern", "error_type", error_type)
    text = string("pattern", "message", message)
    for regex, replacement in _PLACEHOLDERS:
        text = regex.sub(replacement, text)
    return f"{error_type}: {text}" if error_type and text else error_type or text


def split(text: str) -> tuple[str, str]:
    """``"Type: message"`` as ``(type, message)``; ``("", text)`` when it has no type.

    >>> split("TraceError: no")
    ('TraceError', 'no')
    >>> split("values differ")
    ('', 'values differ')
    """
    head, _, rest = string("split", "text", text).partition(": ")
    return (head, rest) if head.isidentifier() else ("", text)


# Frames in these folders are the tools' and Python's, not the model's (fxguide's demo models are model code).
_FXGUIDE = Path(__file__).resolve().parents[1]
_NOT_MODEL_CODE = tuple(str(Path(p).resolve()) for p in (
    Path(torch.__file__).parent, _FXGUIDE / "diagnose", _FXGUIDE / "tracing" / "concrete",
    sysconfig.get_paths()["stdlib"]))
_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def _is_model_code(filename: str) -> bool:
    # "<string>", "<eval_with_key>.3": code torch generates; a notebook cell has a real file name
    return not filename.startswith("<") and not str(Path(filename).resolve()).startswith(_NOT_MODEL_CODE)


def _short(filename: str, line: int, function: str) -> str:
    path = Path(filename)
    shown = path.name if len(path.parts) < 3 else "/".join(path.parts[-2:])
    return f"{shown}:{line} in {function}"


def origin(exc: BaseException) -> str:
    """Where in the model's code ``exc`` arose: ``"folder/file.py:LINE in function"``, or ``""``.

    The innermost frame of the traceback outside torch, fxguide and the standard
    library; failing that (``torch.export`` and ``torch.compile`` read the
    model's bytecode rather than run it), the last model-code ``File ..., line``
    that torch quotes in the message.
    """
    if not isinstance(exc, BaseException):
        raise TypeError(f"origin: exc must be an exception, got {type(exc).__name__}; pass the exception you caught")
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_model_code(f.filename)]
    if frames:
        return _short(frames[-1].filename, frames[-1].lineno or 0, frames[-1].name)
    quoted = [m for m in _FILE_LINE.finditer(str(exc)) if _is_model_code(m.group(1))]
    if quoted:
        filename, line, function = quoted[-1].groups()
        return _short(filename, int(line), function)
    return ""


def frames(exc: BaseException) -> str:
    """The files ``exc`` passed through, one ``File "..."`` line each: its traceback's and those quoted in its message.

    Some causes depend on where an error arose (the same message from torch's quantized modules means
    something else); torch.export and torch.compile quote the model's frames in the message instead.
    """
    if not isinstance(exc, BaseException):
        raise TypeError(f"frames: exc must be an exception, got {type(exc).__name__}")
    files = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
    files += [m.group(1) for m in _FILE_LINE.finditer(str(exc))]
    return "\n".join(f'File "{name}"' for name in dict.fromkeys(files))


def describe(exc: BaseException) -> tuple[str, str]:
    """``(type name, normalized first line)`` of an exception."""
    if not isinstance(exc, BaseException):
        raise TypeError(f"describe: exc must be an exception, got {type(exc).__name__}")
    return type(exc).__name__, normalize(str(exc))


__all__ = ["describe", "frames", "normalize", "origin", "pattern", "split"]
