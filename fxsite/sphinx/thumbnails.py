"""The gallery's thumbnails and its two parts: one picture per example, chosen for it and readable
at thumbnail size, and the index grouped as the guide is (FX, then FX in PyTorch 2).

sphinx-gallery makes a thumbnail from an example's first figure, or a placeholder when it has
none: a graph drawing shrunk to 400 x 280 pixels is a sliver, and seven examples print no
figure. Each example gets instead a card made here, with matplotlib: which part of the
guide it belongs to (FX or PT2, by colour and name) and what it does, in words large enough
to read. They are drawn after sphinx-gallery wrote its own, on every build (a few
milliseconds each), and written over it where they differ, so a card never goes stale.

sphinx-gallery groups examples only by sub-folder, and the scripts stay in ``gallery/`` so that
``python gallery/<name>.py`` runs each one. The gallery's own ``index.rst`` therefore lays out the
parts: each ``.. gallery-part:: FX`` expands to sphinx-gallery's ``minigallery`` of that part's
examples, in the order of :data:`CARDS`, and a hidden table of contents in the same order (the
previous/next links walk it).
"""

from __future__ import annotations

import io
import os
import textwrap
from pathlib import Path

#: Example (the script's name) -> (part of the guide, what it does, in at most three short lines).
CARDS: dict[str, tuple[str, str]] = {
    "fx_api_tour": ("FX", "A tour of\nthe torch.fx API"),
    "draw_graphs": ("FX", "Draw a graph,\nbefore and after"),
    "replace_add_with_mul": ("FX", "Replace one\noperation everywhere"),
    "replace_pattern": ("FX", "Rewrite a subgraph\nwhere it is valid"),
    "dead_code_and_constant_folding": ("FX", "Remove dead code,\nfold constants"),
    "inline_submodule": ("FX", "Inline a\nsubmodule call"),
    "invert_function": ("FX", "Invert a function,\nnode by node"),
    "decompose_with_proxies": ("FX", "Decompose\nactivations"),
    "shape_propagation": ("FX", "Shapes and dtypes\non every node"),
    "profile_nodes": ("FX", "Profile a model\nnode by node"),
    "fuse_conv_bn": ("FX", "Fuse conv and\nbatch norm"),
    "feature_extraction": ("FX", "Feature maps,\nstage by stage"),
    "observers_fake_quant": ("FX", "Observers and\nfake quantization"),
    "concrete_tracing": ("FX", "Trace with\nconcrete values"),
    "pt2_backward_graph": ("PT2", "The backward graph\nof a compiled model"),
    "pt2_fold_bn_aten": ("PT2", "Fold batch norm\nin an exported graph"),
    "pt2_int8_lowering": ("PT2", "Int8 kernels\nfrom Inductor"),
    "pt2_quantization_error_by_layer": ("PT2", "Quantization error,\nlayer by layer"),
}
COLOURS = {"FX": "#1f6feb", "PT2": "#ee4c2c"}
#: The parts of the gallery, in the order the index shows them.
PARTS = tuple(COLOURS)
SIZE = (400, 280)  # sphinx-gallery's default thumbnail size, in pixels


def draw_card(part: str, text: str, path: Path) -> None:
    """Write the card of one example to ``path`` (a PNG of :data:`SIZE`)."""
    if part not in COLOURS:
        raise ValueError(f"draw_card: part must be one of {sorted(COLOURS)}, got {part!r}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=(SIZE[0] / 100, SIZE[1] / 100), dpi=100)
    figure.patch.set_facecolor("white")
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, SIZE[0])
    axes.set_ylim(0, SIZE[1])
    axes.axis("off")
    axes.add_patch(plt.Rectangle((0, SIZE[1] - 56), SIZE[0], 56, color=COLOURS[part]))
    axes.text(20, SIZE[1] - 28, part, color="white", fontsize=24, weight="bold", va="center")
    label = axes.text(20, (SIZE[1] - 56) / 2, text, color="#1f2328", fontsize=27, va="center", linespacing=1.25)
    renderer = figure.canvas.get_renderer()
    while label.get_window_extent(renderer).x1 > SIZE[0] - 12 and label.get_fontsize() > 10:  # as large as fits
        label.set_fontsize(label.get_fontsize() - 1)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", facecolor="white")
    plt.close(figure)
    # Written only when it differs: a rewritten file would make Sphinx re-read the gallery's index
    # on every build (a no-op rebuild must read and write nothing).
    if not path.is_file() or path.read_bytes() != buffer.getvalue():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(buffer.getvalue())


def card_of(script: Path) -> tuple[str, str]:
    """The card of an example: from :data:`CARDS`, or for one not listed there (a new example,
    a test's throwaway site), its part by its name and the title of its docstring."""
    if script.stem in CARDS:
        return CARDS[script.stem]
    lines = [line.strip() for line in script.read_text(encoding="utf-8").splitlines()]
    title = next((line for line in lines if line and not line.startswith(('"""', "#"))), script.stem)
    return ("PT2" if script.stem.startswith("pt2_") else "FX"), "\n".join(textwrap.wrap(title, 22)[:3])


def write_cards(app) -> None:
    """After sphinx-gallery made its thumbnails: draw each example's card over its thumbnail."""
    gallery = Path(app.srcdir) / "gallery"
    for script in sorted((Path(app.confdir) / "gallery").glob("*.py")):
        draw_card(*card_of(script), gallery / "images" / "thumb" / f"sphx_glr_{script.stem}_thumb.png")


def part_scripts(part: str, gallery: Path) -> list[str]:
    """The names of the examples in ``gallery`` that belong to ``part``, in the order of :data:`CARDS`
    (examples not listed there last, by name)."""
    if part not in PARTS:
        raise ValueError(f"gallery-part: the part must be one of {', '.join(PARTS)}, not {part!r}")
    return [p.stem for p in sorted(gallery.glob("*.py"), key=card_order) if card_of(p)[0] == part]


def card_order(path: str | Path) -> tuple[int, str]:
    """An example's place in :data:`CARDS` (the sort key of sphinx-gallery's ``minigallery_sort_order``)."""
    stem = Path(path).stem
    return (list(CARDS).index(stem) if stem in CARDS else len(CARDS), stem)


def _gallery_part_directive():
    from docutils import statemachine
    from sphinx.util.docutils import SphinxDirective

    class GalleryPart(SphinxDirective):
        """``.. gallery-part:: FX``: the thumbnails of that part's examples and their hidden toctree."""

        required_arguments = 1

        def run(self) -> list:
            gallery = Path(self.env.app.confdir) / "gallery"
            try:
                names = part_scripts(self.arguments[0], gallery)
            except ValueError as error:
                raise self.error(str(error)) from None
            self.env.note_dependency(__file__)  # a new card (a new example) lists it here
            if not names:
                raise self.error(f"gallery-part: no example of {gallery} belongs to {self.arguments[0]}")
            # minigallery reads its paths relative to the source folder (docs/), not to this page
            examples = os.path.relpath(gallery, self.env.app.srcdir)
            lines = [".. minigallery::", ""] + [f"   {examples}/{name}.py" for name in names]
            lines += ["", ".. toctree::", "   :hidden:", ""] + [f"   {name}" for name in names]
            self.state_machine.insert_input(statemachine.string2lines("\n".join(lines)), self.get_source_info()[0])
            return []

    return GalleryPart


def setup(app) -> None:
    app.connect("builder-inited", write_cards, priority=900)  # sphinx-gallery generates at the default 500
    app.add_directive("gallery-part", _gallery_part_directive())
