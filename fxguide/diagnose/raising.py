"""Where a pasted traceback says its error was raised: the last frame, the line of source it quotes, the exception.

:func:`raising_frame` reads a traceback as Python prints it (also with a
log's prefix on every line, or with its indentation dropped) from its end: the
raising frame is the last ``File "...", line N, in f`` line that the final
exception line follows (after the line of source it quotes and the ``^^^``
markers). A ``File`` line that no exception line follows is a frame quoted in a
message (Dynamo's ``from user code:``), not the one that raised. Only the last
frame says who raised the error: torch frames above a user's own raise say
nothing. Time is linear in the length of the paste.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fxguide._checks import string

_FRAME = re.compile(r'^(?P<prefix>.*?)(?P<indent>\s*)File "(?P<file>[^"\n]+)", line \d+, in (?P<function>\S+)\s*$')
_EXCEPTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*(?P<kind>[A-Za-z_]\w*)(?::(?: (?P<message>.*))?)?$")
_CHAIN = ("Traceback (most recent call last)", "During handling of the above exception",
          "The above exception was the direct cause")
_AFTER_FRAME = 12  # lines read after a frame for its source and the exception line (Python 3.13 quotes several)
_MESSAGE_CHARS = 20_000  # the characters of the message kept: torch's templates are shorter


@dataclass(frozen=True)
class Raised:
    """The raising frame of a pasted traceback and what it raised."""

    file: str
    """The frame's file as printed, separators made ``/`` (``/venv/.../site-packages/torch/fx/graph.py``)."""
    function: str
    """The frame's function as printed (``create_arg``; Python 3.13 may print ``Tracer.create_arg``)."""
    exception: str
    """The exception's class, without its module path (``Unsupported`` for ``torch._dynamo.exc.Unsupported``)."""
    message: str
    """The message, that is the exception line's text after the class, and the lines that follow it."""
    source: str
    """The line of source the frame quotes (``raise KeyError(...)``), or empty where the paste has none."""

    @property
    def line(self) -> str:
        """The exception line as the lookup shows it, the class without its path and the message's first line."""
        first = self.message.split("\n", 1)[0]
        return " ".join(f"{self.exception}: {first}".split()) if first.strip() else self.exception


def raising_frame(text: str) -> Raised | None:
    """The frame a pasted traceback's error was raised in, or ``None`` when ``text`` holds no frame that the
    exception line follows.

    >>> pasted = "\\n".join(["Traceback (most recent call last):", '  File "/me/run.py", line 3, in <module>',
    ...     '  File "C:\\\\venv\\\\site-packages\\\\torch\\\\fx\\\\graph.py", line 9, in create_node',
    ...     '    raise AssertionError(f"args must be a tuple, got {type(args)}")',
    ...     "AssertionError: args must be a tuple, got <class 'list'>"])
    >>> found = raising_frame(pasted)
    >>> found.file, found.function, found.exception, found.message
    ('C:/venv/site-packages/torch/fx/graph.py', 'create_node', 'AssertionError', "args must be a tuple, got <class 'list'>")

    The last frame is the reader's, whatever torch frames are above it:

    >>> raising_frame(pasted.replace("AssertionError:", '  File "/me/net.py", line 8, in forward\\n'
    ...                              "    return table[key]\\nKeyError:")).file
    '/me/net.py'
    >>> raising_frame("KeyError: 'x'") is None
    True
    """
    lines = string("raising_frame", "text", text).splitlines()
    for at in range(len(lines) - 1, -1, -1):
        frame = _FRAME.match(lines[at]) if 'File "' in lines[at] else None
        if frame is not None and (found := _raised_after(frame, lines, at)) is not None:
            return found
    return None


def _unprefixed(line: str, prefix: str) -> str:
    """``line`` without the log's ``prefix`` every line of the traceback carries (``[rank0]:``), if it has it."""
    return line[len(prefix):] if prefix and line.startswith(prefix) else line


def _raised_after(frame: re.Match[str], lines: list[str], at: int) -> Raised | None:
    """What the frame at ``lines[at]`` raised: the exception line after its quoted source (indented deeper than the
    frame, or the first line of a paste that dropped the indentation), else ``None``."""
    prefix, indent, source = frame["prefix"], len(frame["indent"]), ""
    for offset, raw in enumerate(lines[at + 1:at + 1 + _AFTER_FRAME]):
        line = _unprefixed(raw, prefix).rstrip()
        if not line.strip() or _FRAME.match(line):
            return None  # a blank line or another frame: this frame is not the one that raised
        if len(line) - len(line.lstrip()) > indent:  # the quoted source (and its ^^^ markers)
            source = source or line.strip()
            continue
        if (kind := _EXCEPTION.match(line.strip())) is not None:
            return Raised(frame["file"].replace("\\", "/"), frame["function"], kind["kind"],
                          _message(kind["message"] or "", lines[at + offset + 2:], prefix), source)
        if offset or source:
            return None
        source = line.strip()  # the quoted source of a paste that dropped the indentation
    return None


def _message(first: str, rest: list[str], prefix: str) -> str:
    """The message: its first line, then the lines after it up to the next traceback of a chain, if any."""
    kept, size = [first], len(first)
    for raw in rest:
        line = _unprefixed(raw, prefix).strip()
        if line.startswith(_CHAIN) or size > _MESSAGE_CHARS:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept).strip()[:_MESSAGE_CHARS]


__all__ = ["Raised", "raising_frame"]
