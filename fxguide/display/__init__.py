"""Display helpers: print the parts of a GraphModule the way the guide shows them."""

from __future__ import annotations

import difflib

import torch.fx as fx


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
