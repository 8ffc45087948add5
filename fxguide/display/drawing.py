"""Pictures of FX graphs, drawn by Graphviz ``dot``.

A graph with more than a handful of nodes is easier to look at than to read.
:func:`draw` turns a ``GraphModule`` (or a ``Graph``) into a :class:`GraphPicture`:

- in a notebook page it displays as SVG (``_repr_svg_``), while its plain-text
  form lists the graph's edges, so the drift guard has a text to check;
- in a gallery script, :meth:`GraphPicture.show` or :func:`plot_graphs` show it
  as a matplotlib figure, which sphinx-gallery captures (and uses as thumbnail).

Nodes are coloured by opcode; after :class:`torch.fx.passes.shape_prop.ShapeProp`
has run, each node also shows its output shape. The DOT text is written here
rather than by ``torch.fx.passes.graph_drawer.FxGraphDrawer``, whose record-shaped
labels list every argument and grow too wide for a thumbnail.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import torch.fx as fx

from fxguide._checks import string

_FILL = {
    "placeholder": "#cfe8ff",
    "get_attr": "#e8e8e8",
    "call_function": "#ffe4b5",
    "call_method": "#fff6b3",
    "call_module": "#d4f0d4",
    "output": "#f4c7c3",
}


_DPI = 110


class GraphvizNotFound(RuntimeError):
    """Graphviz's ``dot`` program is not on PATH."""


def require_dot() -> str:
    """Return the path of Graphviz's ``dot``; raise :class:`GraphvizNotFound` saying how to install it."""
    path = shutil.which("dot")
    if path is None:
        raise GraphvizNotFound(
            "Graphviz's `dot` program was not found on PATH; it draws fxguide's graph pictures. "
            "Install it with `apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` "
            "(macOS) or `conda install graphviz`, then retry."
        )
    return path


def _graph_of(obj: object, caller: str) -> fx.Graph:
    if isinstance(obj, fx.GraphModule):
        return obj.graph
    if isinstance(obj, fx.Graph):
        return obj
    raise TypeError(f"{caller}: expected a torch.fx.GraphModule or torch.fx.Graph "
                    f"(e.g. torch.fx.symbolic_trace(model)), got {type(obj).__name__}")


def _what(node: fx.Node, owner: Any) -> str:
    if node.op == "call_module" and owner is not None:
        try:
            kind = type(owner.get_submodule(node.target)).__name__
        except AttributeError:
            return str(node.target)
        return kind if node.target.replace(".", "_") == node.name else f"{kind} ({node.target})"
    if node.op == "call_method":
        return f".{node.target}()"
    if node.op in {"placeholder", "output"}:
        return node.op
    if isinstance(node.target, str):
        return node.target
    return getattr(node.target, "__name__", str(node.target))


def _shape(node: fx.Node) -> str | None:
    meta = node.meta.get("tensor_meta")
    shape = getattr(meta, "shape", None)
    return None if shape is None else "×".join(str(d) for d in shape) or "scalar"


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def edges(graph: fx.Graph) -> list[tuple[str, str]]:
    """Every ``(producer, consumer)`` pair of node names, in graph order.

    >>> import torch
    >>> edges(fx.symbolic_trace(lambda x: torch.relu(x) + x).graph)
    [('x', 'relu'), ('relu', 'add'), ('x', 'add'), ('add', 'output')]
    """
    graph = _graph_of(graph, "edges")
    return [(src.name, node.name) for node in graph.nodes for src in node.all_input_nodes]


def to_dot(graph: fx.Graph | fx.GraphModule, title: str = "") -> str:
    """The DOT source of a picture of ``graph``: one box per node, one arrow per use."""
    owner = graph if isinstance(graph, fx.GraphModule) else getattr(graph, "owning_module", None)
    graph = _graph_of(graph, "to_dot")
    string("to_dot", "title", title)
    lines = ["digraph fx {", '  rankdir=TB; bgcolor="white";',
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
             '  edge [color="#555555", arrowsize=0.7];']
    if title:
        lines.append(f'  labelloc=t; fontname="Helvetica"; fontsize=13; label="{_quote(title)}";')
    for node in graph.nodes:
        label = [node.name]
        what = _what(node, owner)
        if what != node.name:
            label.append(what)
        if (shape := _shape(node)) is not None:
            label.append(shape)
        text = "\\n".join(_quote(part) for part in label)
        lines.append(f'  "{_quote(node.name)}" [label="{text}", fillcolor="{_FILL.get(node.op, "#ffffff")}"];')
    for src, dst in edges(graph):
        lines.append(f'  "{_quote(src)}" -> "{_quote(dst)}";')
    lines.append("}")
    return "\n".join(lines)


def render(dot_source: str, fmt: str = "svg") -> bytes:
    """Run ``dot -T<fmt>`` on ``dot_source`` and return what it wrote."""
    if not isinstance(dot_source, str) or not dot_source.lstrip().startswith(("digraph", "graph")):
        raise ValueError("render: expected DOT source text starting with 'digraph' (see to_dot)")
    if fmt not in {"svg", "png"}:
        raise ValueError(f"render: fmt must be 'svg' or 'png', got {fmt!r}")
    extra = [f"-Gdpi={_DPI}"] if fmt == "png" else []
    done = subprocess.run([require_dot(), f"-T{fmt}", *extra], input=dot_source.encode(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"render: dot failed (exit {done.returncode}): {done.stderr.decode().strip()}")
    return done.stdout


class GraphPicture:
    """A picture of an FX graph: SVG in notebooks, a matplotlib figure in scripts, its edges as text.

    >>> import torch
    >>> draw(fx.symbolic_trace(lambda x: torch.relu(x) + 1), title="relu plus one")
    GraphPicture 'relu plus one': 4 nodes, 3 edges
      x -> relu
      relu -> add
      add -> output
    """

    def __init__(self, graph: fx.Graph | fx.GraphModule, title: str = "") -> None:
        # A snapshot: editing the graph afterwards does not change the picture,
        # so one graph can be drawn before and after a transform.
        self.title = title
        self.dot = to_dot(graph, title)
        self.node_count = len(_graph_of(graph, "GraphPicture").nodes)
        self.edges = edges(graph)

    def svg(self) -> str:
        """The picture as SVG text (runs ``dot``)."""
        return render(self.dot, "svg").decode()

    def png(self) -> bytes:
        """The picture as PNG bytes (runs ``dot``)."""
        return render(self.dot, "png")

    def _repr_svg_(self) -> str:
        return self.svg()

    def __repr__(self) -> str:
        head = f"GraphPicture {self.title!r}: {self.node_count} nodes, {len(self.edges)} edges"
        return "\n".join([head] + [f"  {src} -> {dst}" for src, dst in self.edges])

    def image(self) -> Any:
        """The rendered picture as an RGB(A) array (height × width × channels) for ``imshow``."""
        import io

        return _matplotlib("image").imread(io.BytesIO(self.png()), format="png")

    def show(self, ax: Any = None) -> Any:
        """Draw the picture on a matplotlib axes (a new figure when ``ax`` is None); return the axes."""
        if ax is not None and not callable(getattr(ax, "imshow", None)):
            raise TypeError(f"GraphPicture.show: ax must be a matplotlib Axes (e.g. from plt.subplots()) or None, "
                            f"got {type(ax).__name__}")
        image = self.image()
        if ax is None:
            plt = _matplotlib("pyplot")
            height, width = image.shape[:2]
            _, ax = plt.subplots(figsize=(max(width / _DPI, 2.0), max(height / _DPI, 2.0)))
        ax.imshow(image)
        ax.set_axis_off()
        return ax


def _matplotlib(submodule: str) -> Any:
    """Import ``matplotlib.<submodule>``, or say which extra of fxguide brings it."""
    import importlib

    try:
        return importlib.import_module(f"matplotlib.{submodule}")
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] != "matplotlib":
            raise
        raise ModuleNotFoundError(
            "fxguide.display.drawing needs matplotlib to show pictures as figures (SVG and PNG "
            "output do not); install it with `pip install 'fxguide[draw]'` (or `pip install matplotlib`)",
            name="matplotlib") from error


def draw(graph: fx.Graph | fx.GraphModule, title: str = "") -> GraphPicture:
    """Make a :class:`GraphPicture` of ``graph`` (a GraphModule or a Graph)."""
    return GraphPicture(graph, title)


def plot_graphs(*pictures: GraphPicture) -> Any:
    """Show pictures side by side in one matplotlib figure (e.g. before and after a transform)."""
    if not pictures or not all(isinstance(p, GraphPicture) for p in pictures):
        raise TypeError("plot_graphs: pass one or more GraphPicture objects (made with draw())")
    plt = _matplotlib("pyplot")

    images = [p.image() for p in pictures]
    height = max(image.shape[0] for image in images)
    width = max(image.shape[1] for image in images)
    scale = min(1.0, 9.0 / (height / _DPI), 14.0 / (len(images) * width / _DPI))
    fig, axes = plt.subplots(1, len(images), squeeze=False,
                             figsize=(len(images) * width / _DPI * scale, height / _DPI * scale))
    for ax, image in zip(axes[0], images):
        # The same canvas for every picture, so all are drawn at the same scale, top-aligned.
        margin = (width - image.shape[1]) / 2
        ax.imshow(image)
        ax.set_xlim(-margin, image.shape[1] + margin)
        ax.set_ylim(height, 0)
        ax.set_axis_off()
    fig.tight_layout()
    return fig
