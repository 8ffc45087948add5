"""Outputs a reader can read: no build-machine paths, short errors, long outputs folded.

A page's outputs are what its cells printed on the machine that built the site. This
post-transform changes how they are *shown*, never what the output check compares (that
reads the executed notebooks, :mod:`fxsite.drift.extract`):

- every path of the build machine becomes a name that means the same anywhere
  (``<site-packages>/torch/fx/proxy.py``, ``<repo>/fxguide/...``), through the one
  normalization layer, :func:`fxsite.drift.normalize.hide_paths`;
- an error is shown as the reader's own line that raised it and the message
  (:func:`short_traceback`); the full traceback into torch folds under it;
- an output longer than :data:`LONG` lines shows its first :data:`HEAD` lines, the whole
  of it folded under them;
- a picture a cell printed gets alternative text that says what it shows (a graph drawing
  names its nodes, :func:`describe_svg`), not the hashed file name myst-nb gives it.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

from fxsite.drift.normalize import hide_paths

LONG = 60  # lines: an output longer than this is folded ...
HEAD = 25  # ... under its first this many lines

_FRAME = re.compile(r"^(Cell In\[\d+\], line \d+|File [^\n]*?(:\d+|, line \d+)(, in .*)?$|Input In \[\d+\])")
_CONTEXT = re.compile(r"^(\s|-+>|\(\.\.\.\)|$)")
_LIBRARY = re.compile(r"^File (<site-packages>|<python>|<prefix>)")


def short_traceback(text: str) -> str:
    """The part of an IPython traceback a reader needs: their deepest own frame, and the message.

    A frame is the reader's own unless it is in an installed package or the standard library.

    >>> tb = '''---------------------------------------------------------------------------
    ... TraceError                                Traceback (most recent call last)
    ... Cell In[7], line 2
    ... ----> 2 fx.symbolic_trace(f)
    ...
    ... File <site-packages>/torch/fx/_symbolic_trace.py:1435, in symbolic_trace(root)
    ... -> 1435 graph = tracer.trace(root)
    ...
    ... File <repo>/model.py:80, in f(x)
    ...      79 def f(x):
    ... ---> 80     assert x.dim() == 2
    ...
    ... File <site-packages>/torch/fx/proxy.py:743, in Proxy.__bool__(self)
    ... --> 743 return self.tracer.to_bool(self)
    ...
    ... TraceError: symbolically traced variables cannot be used as inputs to control flow'''
    >>> print(short_traceback(tb))
    File <repo>/model.py:80, in f(x)
         79 def f(x):
    ---> 80     assert x.dim() == 2
    TraceError: symbolically traced variables cannot be used as inputs to control flow
    """
    lines = text.splitlines()
    frames: list[list[str]] = []
    message_start = None
    in_frame = False
    for index, line in enumerate(lines):
        if _FRAME.match(line):
            frames.append([line])
            in_frame, message_start = True, None
        elif in_frame and _CONTEXT.match(line):
            frames[-1].append(line)
        elif frames and message_start is None and line.strip():
            message_start, in_frame = index, False
    if not frames or message_start is None:
        return text
    own = [frame for frame in frames if not _LIBRARY.match(frame[0])]
    frame = own[-1] if own else frames[-1]
    body = [line for line in frame if line.strip()]
    return "\n".join(body + [line for line in lines[message_start:] if line.strip()])


_SVG_TITLE = re.compile(r'<g id="node\d+" class="node">\s*<title>([^<]*)</title>')


def describe_svg(svg: str) -> str | None:
    """Alternative text for a Graphviz drawing: how many nodes, and the first few by name.

    >>> describe_svg('<g id="node1" class="node"><title>x</title></g><g id="node2" class="node"><title>relu</title></g>')
    'Graph drawing, 2 nodes: x, relu'
    >>> describe_svg("<svg></svg>") is None
    True
    """
    names = [html.unescape(name) for name in _SVG_TITLE.findall(svg)]
    if not names:
        return None
    shown = ", ".join(names[:10]) + (f", and {len(names) - 10} more" if len(names) > 10 else "")
    return f"Graph drawing, {len(names)} nodes: {shown}"


def _alt_text(srcdir: str, uri: str) -> str:
    path = Path(srcdir, uri)
    if path.suffix == ".svg" and path.is_file():
        described = describe_svg(path.read_text(encoding="utf-8", errors="replace"))
        if described:
            return described
    return "Picture printed by the code cell above"


def _set_text(node: nodes.literal_block, text: str) -> None:
    node.rawsource = text
    node.children = [nodes.Text(text)]


def _copy_block(node: nodes.literal_block, text: str) -> nodes.literal_block:
    copy = node.deepcopy()
    _set_text(copy, text)
    return copy


def _folded(summary: str, block: nodes.Element, css: str) -> list[nodes.Node]:
    return [nodes.raw("", f'<details class="{css}"><summary>{html.escape(summary)}</summary>', format="html"),
            block,
            nodes.raw("", "</details>", format="html")]


def _is_output(node: nodes.literal_block) -> bool:
    classes = set(node.get("classes", []))
    return bool(classes & {"output", "sphx-glr-script-out"}) or isinstance(node.parent, nodes.container) and \
        "cell_output" in node.parent.get("classes", [])


class ReadableOutputs(SphinxPostTransform):
    """Hide the build machine's paths in every output; fold tracebacks and long outputs (HTML only)."""

    default_priority = 199  # before Sphinx highlights the code blocks (it reads rawsource)
    formats = ("html",)

    def run(self, **kwargs) -> None:
        for image in self.document.findall(nodes.image):
            uri = image.get("uri", "")
            if not image.get("alt") and "jupyter_execute/" in uri:  # a picture a page's cell printed
                image["alt"] = _alt_text(self.env.srcdir, uri)
        for node in list(self.document.findall(nodes.literal_block)):
            if not _is_output(node):
                continue
            text = hide_paths(node.astext())
            if text != node.astext():
                _set_text(node, text)
            lines = text.splitlines()
            if "traceback" in node.get("classes", []):
                short = short_traceback(text)
                if short != text:
                    node.replace_self([_copy_block(node, short),
                                       *_folded(f"Full traceback ({len(lines)} lines)", node, "fxguide-traceback")])
            elif len(lines) > LONG:
                head = _copy_block(node, "\n".join(lines[:HEAD] + ["…"]))
                node.replace_self([head, *_folded(f"Show all {len(lines)} lines", node, "fxguide-long")])


def setup(app) -> None:
    app.add_post_transform(ReadableOutputs)
