"""The one normalization layer every output check goes through.

Only differences that carry no meaning are removed: memory addresses, the
counter in ``<eval_with_key>.N``, temporary and installation paths (and line
numbers inside installed packages, e.g. where torch raised a warning), the time,
process id and torch line that start torch's own log lines, a kernel's cell file name, trailing
whitespace, blank lines, and timings (a timing line
keeps its shape, not its number). Everything else is compared exactly; random
values are made deterministic by seeding, never normalized away.
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
import tempfile
from pathlib import Path

from fxguide._checks import string
from fxsite import ROOT

_RULES: list[tuple[re.Pattern[str], str]] = [
    # <built-in method sum of type object at 0x7f3a...>, <function f at 0x...>
    (re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x<addr>"),
    # the code object name FX gives each generated forward: <eval_with_key>.12
    (re.compile(r"<eval_with_key>\.\d+"), "<eval_with_key>.N"),
    # timings: "3.21 ms", "0.5s", "12.0 µs" -> "<time>"; ratios "1.43x" -> "<ratio>x"
    (re.compile(r"(?<![\w.])\d+\.\d+(?:e[-+]?\d+)?\s?(?:ns|µs|us|ms|s)\b"), "<time>"),
    (re.compile(r"(?<![\w.])\d+\.\d+\s?[x×](?![\w])"), "<ratio>x"),
    # the prefix of torch's own log lines (older releases print them on stderr): level, date, time, process
    # id, and where in torch: "W1128 14:55:37.589000 17219 torch/_dynamo/x.py:183] ..."
    (re.compile(r"^([DIWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ (\S+\.py):\d+\]", re.MULTILINE),
     r"\1<when> <pid> \2:<line>]"),
    # the file a Jupyter kernel runs a cell from, where torch names it cut short: "mp/ipykernel_16581/1916451660.py"
    (re.compile(r"ipykernel_\d+/\d+\.py"), "ipykernel_<pid>/<cell>.py"),
]


_HOME = re.compile(re.escape(os.path.expanduser("~")) + r"(?=/)") if os.path.expanduser("~") != "/" else re.compile("$^")


def _path_rules(root: Path = ROOT) -> list[tuple[str, str]]:
    """Absolute paths that differ between machines (also as their links resolve), longest first."""
    paths = {
        sysconfig.get_paths()["purelib"]: "<site-packages>",
        sysconfig.get_paths()["platlib"]: "<site-packages>",
        str(root): "<repo>",
        tempfile.gettempdir(): "<tmp>",
        sys.prefix: "<prefix>",
        sys.base_prefix: "<python>",  # the interpreter's own install: the standard library's frames
    }
    paths.update({os.path.realpath(path): name for path, name in paths.items() if os.path.realpath(path) not in paths})
    return sorted(paths.items(), key=lambda item: -len(item[0]))


def hide_paths(text: str, root: Path = ROOT) -> str:
    """Replace the absolute paths of this machine with names a reader can read anywhere.

    What the site shows goes through this too (fxsite.sphinx.outputs): no output on a page
    names the folders of the machine that built it. Line numbers are kept. ``root`` is the
    checkout the text was printed in (shown as ``<repo>``): this one, or a copy built apart.

    >>> import sysconfig
    >>> hide_paths("File " + sysconfig.get_paths()["purelib"] + "/torch/fx/proxy.py:743, in f")
    'File <site-packages>/torch/fx/proxy.py:743, in f'
    """
    string("hide_paths", "text", text)
    for prefix, placeholder in _path_rules(Path(root)):
        text = text.replace(prefix, placeholder)
    text = re.sub(r"<tmp>/[^\s'\"]*", "<tmp>/…", text)
    return _HOME.sub("~", text)


def normalize(text: str, root: Path = ROOT) -> str:
    """Return ``text`` with meaningless differences removed (``root``: as for :func:`hide_paths`).

    >>> normalize("<function f at 0x7f3a2b1c9d30>")
    '<function f at 0x<addr>>'
    >>> normalize("File <eval_with_key>.37, line 5")
    'File <eval_with_key>.N, line 5'
    >>> normalize("fused: 1.73 ms (2.41x faster)")
    'fused: <time> (<ratio>x faster)'
    >>> normalize("E1128 14:54:09.860000 16685 torch/export/_trace.py:1322] always_classified is unsupported.")
    'E<when> <pid> torch/export/_trace.py:<line>] always_classified is unsupported.'
    >>> normalize("Caused by: (mp/ipykernel_16581/1916451660.py:6 in forward)")
    'Caused by: (mp/ipykernel_<pid>/<cell>.py:6 in forward)'
    >>> normalize("\\n\\ndef forward(self, x):   \\n\\n    return x\\n\\n")
    'def forward(self, x):\\n    return x'
    """
    string("normalize", "text", text)
    text = hide_paths(text, root)
    # where inside an installed package a warning or frame points: torch's own line
    # numbers move with every release and mean nothing to the reader
    text = re.sub(r"(<site-packages>/[^\s:'\"]+\.py):\d+", r"\1:<line>", text)
    text = re.sub(r"(<site-packages>/[^\s:'\"]+\.py\", line )\d+", r"\1<line>", text)
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    # Blank lines are layout: myst-nb strips them at the ends of the chunks a kernel
    # streams, and how a kernel chunks its output varies from run to run.
    lines = [line.rstrip() for line in text.splitlines()]
    return "\n".join(line for line in lines if line)
