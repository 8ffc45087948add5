"""Display helpers: print the parts of a GraphModule the way the guide shows them."""

from __future__ import annotations

import torch.fx as fx


def _require_graph_module(gm: object, caller: str) -> fx.GraphModule:
    if not isinstance(gm, fx.GraphModule):
        raise TypeError(
            f"{caller}: expected a torch.fx.GraphModule (e.g. from torch.fx.symbolic_trace(model)), "
            f"got {type(gm).__name__}"
        )
    return gm


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
    print(_require_graph_module(gm, "show_code").code.strip("\n"))
