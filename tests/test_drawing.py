"""fxguide.display.drawing: graph pictures rendered by dot, with a deterministic text form."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.fx as fx  # noqa: E402
from torch.fx.passes.shape_prop import ShapeProp  # noqa: E402

from fxguide.display import drawing  # noqa: E402
from fxguide.display.drawing import GraphvizNotFound, draw, edges, plot_graphs, to_dot  # noqa: E402
from fxguide.models import ResidualBlock  # noqa: E402
from fxguide.models import seeded  # noqa: E402


@pytest.fixture
def block_gm() -> fx.GraphModule:
    return fx.symbolic_trace(seeded(ResidualBlock, 2).eval())


def test_text_form_lists_every_edge_in_graph_order(block_gm):
    text = repr(draw(block_gm, title="block"))
    lines = text.splitlines()
    assert lines[0] == "GraphPicture 'block': 9 nodes, 9 edges"
    assert lines[1:3] == ["  x -> conv1", "  conv1 -> bn1"]
    assert "  x -> add" in lines  # the residual connection
    assert repr(draw(fx.symbolic_trace(seeded(ResidualBlock, 2)), title="block")) == text


def test_picture_is_a_snapshot_of_the_graph_when_drawn():
    gm = fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    picture = draw(gm)
    (relu,) = gm.graph.find_nodes(op="call_function", target=torch.relu)
    relu.replace_all_uses_with(relu.args[0])
    gm.graph.erase_node(relu)
    assert ("x", "relu") in picture.edges and ("x", "relu") not in edges(gm.graph)


def test_svg_has_one_group_per_node(block_gm):
    svg = draw(block_gm)._repr_svg_()
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    assert svg.count('class="node"') == len(block_gm.graph.nodes)


def test_dot_labels_show_module_kind_and_propagated_shape(block_gm):
    ShapeProp(block_gm).propagate(torch.zeros(1, 2, 4, 4))
    source = to_dot(block_gm, title='say "hi"')
    assert '"bn1" [label="bn1\\nBatchNorm2d\\n1×2×4×4"' in source
    assert 'label="say \\"hi\\""' in source


def test_side_by_side_pictures_share_one_scale(block_gm):
    small = fx.symbolic_trace(lambda x: x + 1)
    fig = plot_graphs(draw(block_gm), draw(small))
    assert [len(ax.images) for ax in fig.axes] == [1, 1]
    canvases = {(ax.get_xlim()[1] - ax.get_xlim()[0], ax.get_ylim()[0] - ax.get_ylim()[1]) for ax in fig.axes}
    assert len(canvases) == 1  # same canvas size, so pixels map to the same size on both sides
    plt.close(fig)


def test_missing_dot_says_how_to_install_it(block_gm, monkeypatch):
    monkeypatch.setenv("PATH", "")
    with pytest.raises(GraphvizNotFound, match="apt-get install graphviz"):
        draw(block_gm).svg()


def test_dot_errors_are_reported():
    with pytest.raises(RuntimeError, match="dot failed"):
        drawing.render("digraph { a -> }")


def test_bad_inputs_are_refused(block_gm):
    with pytest.raises(TypeError, match="expected a torch.fx.GraphModule or torch.fx.Graph"):
        draw(ResidualBlock(2))
    with pytest.raises(TypeError, match="pass one or more GraphPicture"):
        plot_graphs(block_gm)
    with pytest.raises(ValueError, match="fmt must be 'svg' or 'png'"):
        drawing.render(to_dot(block_gm), "pdf")
    with pytest.raises(ValueError, match="DOT source"):
        drawing.render("not dot")


def test_notebooks_get_svg_plus_the_text_form(block_gm):
    from IPython.core.interactiveshell import InteractiveShell

    picture = draw(block_gm, title="block")
    data, _ = InteractiveShell.instance().display_formatter.format(picture)
    assert sorted(data) == ["image/svg+xml", "text/plain"]
    assert data["text/plain"] == repr(picture)


def test_showing_a_picture_without_matplotlib_names_the_draw_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what an install without the extra sees
    for submodule in ("pyplot", "image"):
        monkeypatch.setitem(sys.modules, f"matplotlib.{submodule}", None)
    picture = drawing.draw(torch.fx.symbolic_trace(torch.nn.ReLU()))
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'fxguide\[draw\]'"):
        drawing.plot_graphs(picture)
