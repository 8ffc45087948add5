"""Display helpers: print the parts of a GraphModule the way the guide shows them, and tables."""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Iterable, Sequence

import torch.fx as fx

from fxguide._checks import string


def _require_graph_module(gm: object, caller: str) -> fx.GraphModule:
    if not isinstance(gm, fx.GraphModule):
        raise TypeError(
            f"{caller}: expected a torch.fx.GraphModule (e.g. from torch.fx.symbolic_trace(model)), "
            f"got {type(gm).__name__}"
        )
    return gm


def _code_of(gm: object, caller: str) -> str:
    # gm.code starts with blank lines and ends with a line of indentation.
    return _require_graph_module(gm, caller).code.strip()


def show_code(gm: fx.GraphModule) -> None:
    """Print ``gm.code`` without the blank lines torch puts around it.

    >>> import torch
    >>> gm = fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    >>> show_code(gm)
    def forward(self, x):
        relu = torch.relu(x);  x = None
        add = relu + 1;  relu = None
        return add
    """
    print(_code_of(gm, "show_code"))


def _require_graph(obj: object, caller: str) -> fx.Graph:
    if isinstance(obj, fx.GraphModule):
        return obj.graph
    if isinstance(obj, fx.Graph):
        return obj
    raise TypeError(f"{caller}: expected a torch.fx.Graph or GraphModule, got {type(obj).__name__}")


def target_name(target: object) -> str:
    """A stable, readable name for a node's target: ``'torch.relu'``, ``'operator.add'``, ``'linear'``.

    ``print_tabular`` prints builtins with their memory address, which changes
    on every run; this name does not.

    >>> import operator, torch
    >>> target_name(torch.relu), target_name(operator.add), target_name("linear")
    ('torch.relu', 'operator.add', 'linear')
    """
    if isinstance(target, str):
        return target
    if not callable(target):
        raise TypeError(f"target_name: expected a node target (a str or a callable), got {type(target).__name__}")
    module = (getattr(target, "__module__", None) or "").replace("_operator", "operator")
    name = getattr(target, "__name__", repr(target))
    return f"{module}.{name}" if module else name


def show_nodes(graph: fx.Graph | fx.GraphModule) -> None:
    """Print one line per node: name, opcode, target, inputs and users.

    >>> import torch
    >>> show_nodes(fx.symbolic_trace(lambda x: torch.relu(x) + 1))
    name    op             target        inputs  users
    x       placeholder    x             -       relu
    relu    call_function  torch.relu    x       add
    add     call_function  operator.add  relu    output
    output  output         output        add     -
    """
    rows = [("name", "op", "target", "inputs", "users")]
    for node in _require_graph(graph, "show_nodes").nodes:
        rows.append((node.name, node.op, target_name(node.target),
                     ", ".join(n.name for n in node.all_input_nodes) or "-",
                     ", ".join(n.name for n in node.users) or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def show_diff(before: fx.GraphModule, after: fx.GraphModule) -> None:
    """Print the generated code of ``after`` as a diff against ``before`` (``-`` removed, ``+`` added).

    >>> import torch
    >>> before = fx.symbolic_trace(lambda x: torch.relu(x))
    >>> after = fx.symbolic_trace(lambda x: torch.sigmoid(x))
    >>> show_diff(before, after)
      def forward(self, x):
    -     relu = torch.relu(x);  x = None
    -     return relu
    +     sigmoid = torch.sigmoid(x);  x = None
    +     return sigmoid
    """
    old = _code_of(before, "show_diff").splitlines()
    new = _code_of(after, "show_diff").splitlines()
    for line in difflib.ndiff(old, new):
        if not line.startswith("?"):
            print(line.rstrip())


_PIPE = re.compile(r"(?<!\\)\|")  # a cell border: a pipe not escaped as \|
_RULE = re.compile(r"\|(?:\s*:?-{3,}:?\s*\|)+")
_INLINE_CODE = re.compile(r"`([^`]*)`")


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in _PIPE.split(inner)]


class MarkdownTable(str):
    r"""A Markdown table as ``str``: a notebook renders it as a table, its ``repr`` is the same text.

    The plain-text form is the Markdown source itself, so the drift guard records
    the table's content rather than an object's name. A pipe inside a cell is
    written ``\|`` (:func:`markdown_table` does it).

    >>> MarkdownTable("| a | b |\n|---|---|\n| 1 | `x \\| y` |")._repr_html_()
    '<table class="table"><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td><code>x | y</code></td></tr></tbody></table>'
    >>> MarkdownTable("")
    Traceback (most recent call last):
    ...
    ValueError: MarkdownTable: expected a Markdown table (a header row, a |---| rule, then one row per line), got ''
    """

    def __new__(cls, text: str) -> MarkdownTable:
        lines = string("MarkdownTable", "text", text).splitlines()
        if len(lines) < 2 or not _RULE.fullmatch(lines[1].replace(" ", "")):
            raise ValueError(f"MarkdownTable: expected a Markdown table (a header row, a |---| rule, then one row "
                             f"per line), got {text[:80]!r}")
        width = len(_cells(lines[0]))
        for number, line in enumerate(lines[2:], 3):
            if len(_cells(line)) != width:
                raise ValueError(f"MarkdownTable: line {number} has {len(_cells(line))} cells, the header {width}; "
                                 f"write a pipe inside a cell as \\| ({line[:80]!r})")
        return super().__new__(cls, text)

    def _repr_markdown_(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        # Pages render Markdown outputs as CommonMark, which has no tables: give HTML too.
        head, _rule, *body = (_cells(line) for line in self.splitlines())

        def cell(text: str, tag: str) -> str:
            return f"<{tag}>" + _INLINE_CODE.sub(r"<code>\1</code>", html.escape(text)) + f"</{tag}>"

        def row(cells: list[str], tag: str) -> str:
            return "<tr>" + "".join(cell(c, tag) for c in cells) + "</tr>"

        return (f'<table class="table"><thead>{row(head, "th")}</thead>'
                f"<tbody>{''.join(row(cells, 'td') for cells in body)}</tbody></table>")

    def __repr__(self) -> str:
        return str(self)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> MarkdownTable:
    """A :class:`MarkdownTable` of ``rows`` under ``header``, every pipe inside a cell escaped.

    A line break inside a cell becomes ``<br>`` (a newline would end the table's row).

    >>> print(markdown_table(["model", "verdict"], [["a|b", "general"]]))
    | model | verdict |
    |---|---|
    | a\\|b | general |
    """
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(string("markdown_table", "a cell", c).replace("|", "\\|").replace("\r\n", "<br>")
                                 .replace("\n", "<br>") for c in cells) + " |"

    for name, value in (("header", header), ("rows", rows)):
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise TypeError(f"markdown_table: {name} must be a list of {'cells' if name == 'header' else 'rows'}, "
                            f"got {type(value).__name__}; e.g. markdown_table(['a', 'b'], [['1', '2']])")
    header = list(header)
    lines = [line(header), "|---" * len(header) + "|"] + [line(list(r)) for r in rows]
    return MarkdownTable("\n".join(lines))


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def show_error(trigger, error_type: type[BaseException], starts_with: str, *, lines: int = 1) -> None:
    """Call ``trigger()``, check that it raises ``error_type`` with a message starting ``starts_with``, print it.

    PT2 errors run to many lines (hints, links, file paths of the machine); the
    first ``lines`` are printed, after ``Type:``. Anything the call prints on
    stdout or stderr meanwhile (export prints the partial graph of a failed
    capture) is swallowed. Another exception type, another message, or no
    exception at all raises ``AssertionError``, so a page stops when torch
    changes what it raises.

    >>> show_error(lambda: int("x"), ValueError, "invalid literal")
    ValueError: invalid literal for int() with base 10: 'x'
    """
    import contextlib
    import io

    if not callable(trigger):
        raise TypeError(f"show_error: trigger must be a function of no arguments, got {type(trigger).__name__}")
    if not (isinstance(error_type, type) and issubclass(error_type, BaseException)):
        raise TypeError(f"show_error: error_type must be an exception class, got {error_type!r}")
    string("show_error", "starts_with", starts_with)
    if not isinstance(lines, int) or isinstance(lines, bool) or lines < 1:
        raise ValueError(f"show_error: lines must be a positive int, got {lines!r}")
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            trigger()
    except BaseException as error:  # noqa: BLE001 - the point is to look at any error (SystemExit included)
        if not isinstance(error, Exception) and not isinstance(error, error_type):
            raise  # Ctrl-C, or a SystemExit the page did not expect
        message = _ANSI.sub("", str(error))
        if type(error) is not error_type or not message.startswith(starts_with):
            raise AssertionError(f"show_error: expected {error_type.__name__}: {starts_with}..., "
                                 f"got {type(error).__name__}: {message[:300]}") from error
        shown = [line for line in message.splitlines() if line.strip()][:lines]
        print(f"{type(error).__name__}: " + "\n".join(shown))
        return
    raise AssertionError(f"show_error: expected {error_type.__name__}: {starts_with}..., but nothing was raised")
