"""Feature extraction: return chosen intermediate values of any traceable model.

The FX recipe: trace the model, make the chosen nodes the graph's output (a
dict), let dead-code elimination drop everything the chosen values do not
need, and generate code. Names are module paths (``"stem"``, ``"stem.0"``: the
value that module call returned) or node names (``"flatten"``).

A model can trace to different graphs in train and eval mode (anything that
reads ``self.training`` in Python is baked in). :func:`extract_features`
traces both, and the extractor it returns runs the graph of its current mode.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch.fx as fx
from torch import nn

from fxguide.tracing.tracers import ModulePathTracer, trace

__all__ = ["FeatureExtractor", "extract_features", "feature_names", "mode_differences"]


def _require_module(model: object, caller: str) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(f"{caller}: expected an nn.Module, got {type(model).__name__}")
    return model


def _trace_in_mode(model: nn.Module, training: bool, leaf_types: Iterable[type]) -> tuple[fx.GraphModule, dict]:
    """Trace ``model`` in train or eval mode, restoring the modes of all its modules after."""
    modes = {m: m.training for m in model.modules()}
    tracer = ModulePathTracer(leaf_types=leaf_types)
    try:
        model.train(training)
        gm = trace(model, tracer)
    finally:
        for m, mode in modes.items():
            m.training = mode
    return gm, _names(gm, tracer)


def _names(gm: fx.GraphModule, tracer: ModulePathTracer) -> dict[str, str]:
    """name -> node name: module paths first, then node names not taken by a path."""
    names = {path: node.name for path, node in tracer.module_outputs.items()}
    for node in gm.graph.nodes:
        if node.op not in {"placeholder", "output"}:
            names.setdefault(node.name, node.name)
    return names


def feature_names(model: nn.Module, leaf_types: Iterable[type] = (), training: bool | None = None) -> list[str]:
    """The names :func:`extract_features` accepts for ``model``: module paths, then other node names.

    ``training`` picks the mode to trace in (default: the model's current mode).

    >>> from fxguide.models import seeded
    >>> from fxguide.models import TwoStageMLP
    >>> feature_names(seeded(TwoStageMLP))[:4]
    ['encoder.0.linear', 'encoder.0', 'encoder.1.linear', 'encoder.1']
    """
    model = _require_module(model, "feature_names")
    if training is not None and not isinstance(training, bool):
        raise TypeError(f"feature_names: training must be True, False or None (current mode), got {training!r}")
    mode = model.training if training is None else training
    names = _trace_in_mode(model, mode, leaf_types)[1]
    # A node some module call returned is listed once, by its module path
    # (its node name is still accepted).
    by_path = {node for name, node in names.items() if name != node}
    return [name for name, node in names.items() if name != node or node not in by_path]


def mode_differences(model: nn.Module, leaf_types: Iterable[type] = ()) -> list[str]:
    """The lines of generated code that differ between a train-mode and an eval-mode trace.

    Empty when both modes give the same graph.

    >>> from fxguide.models import seeded
    >>> from fxguide.models import TwoStageMLP
    >>> mode_differences(seeded(TwoStageMLP))
    []
    """
    model = _require_module(model, "mode_differences")
    train = _trace_in_mode(model, True, leaf_types)[0].code.strip("\n").splitlines()
    evaluate = _trace_in_mode(model, False, leaf_types)[0].code.strip("\n").splitlines()
    return [
        line for line in difflib.unified_diff(train, evaluate, "train", "eval", lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def _outputs_only(gm: fx.GraphModule, chosen: Mapping[str, str]) -> fx.GraphModule:
    """Make ``chosen`` (output key -> node name) the outputs; drop what they do not need."""
    graph = gm.graph
    nodes = {node.name: node for node in graph.nodes}
    old_output = next(n for n in graph.nodes if n.op == "output")
    with graph.inserting_after(old_output):
        graph.output({key: nodes[name] for key, name in chosen.items()})
    graph.erase_node(old_output)
    graph.eliminate_dead_code()
    graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm


def _resolve(names: Sequence[str] | Mapping[str, str], known: Mapping[str, str], mode: str) -> dict[str, str]:
    if isinstance(names, str) or not isinstance(names, (Sequence, Mapping)):
        raise TypeError(
            f"extract_features: names must be a list of feature names or a dict name -> output key, "
            f"got {type(names).__name__}"
        )
    pairs = names.items() if isinstance(names, Mapping) else ((n, n) for n in names)
    chosen: dict[str, str] = {}
    for name, key in pairs:
        if name not in known:
            close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.5)
            hint = f" Close matches: {', '.join(close)}." if close else ""
            raise ValueError(
                f"extract_features: no feature named {name!r} in the {mode}-mode trace.{hint} "
                f"feature_names(model) lists the names."
            )
        chosen[key] = known[name]
    if not chosen:
        raise ValueError("extract_features: choose at least one feature name (see feature_names(model))")
    return chosen


class FeatureExtractor(nn.Module):
    """Runs the traced graph of its current mode and returns ``{name: value}``.

    ``train_graph`` and ``eval_graph`` are ``GraphModule``s sharing the
    model's parameters; they are the same object when both modes compute the
    chosen values alike (:attr:`differs_between_modes` is then ``False``).
    """

    def __init__(self, train_graph: fx.GraphModule, eval_graph: fx.GraphModule) -> None:
        super().__init__()
        for which, gm in (("train_graph", train_graph), ("eval_graph", eval_graph)):
            if not isinstance(gm, fx.GraphModule):
                raise TypeError(f"FeatureExtractor: {which} must be a GraphModule, got {type(gm).__name__}")
        self.train_graph = train_graph
        self.eval_graph = eval_graph

    @property
    def differs_between_modes(self) -> bool:
        return self.train_graph is not self.eval_graph

    def forward(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return (self.train_graph if self.training else self.eval_graph)(*args, **kwargs)


def extract_features(
    model: nn.Module, names: Sequence[str] | Mapping[str, str], leaf_types: Iterable[type] = ()
) -> FeatureExtractor:
    """A module returning the values of ``names`` (a list, or a dict name -> output key).

    The extractor starts in the model's current mode and follows
    ``.train()`` / ``.eval()``. Everything the chosen values do not depend on
    is removed from its graphs; if what remains still differs between the
    modes, it keeps one graph per mode.

    >>> import torch
    >>> from fxguide.models import seeded
    >>> from fxguide.models import TwoStageMLP
    >>> extractor = extract_features(seeded(TwoStageMLP), ["encoder.0", "encoder"])
    >>> {k: tuple(v.shape) for k, v in extractor(torch.zeros(2, 4)).items()}
    {'encoder.0': (2, 4), 'encoder': (2, 4)}
    >>> extract_features(seeded(TwoStageMLP), ["encoder.2"])
    Traceback (most recent call last):
    ...
    ValueError: extract_features: no feature named 'encoder.2' in the train-mode trace. Close matches: encoder.1, encoder.0, encoder. feature_names(model) lists the names.
    """
    model = _require_module(model, "extract_features")
    leaf_types = tuple(leaf_types)
    train_gm, train_names = _trace_in_mode(model, True, leaf_types)
    eval_gm, eval_names = _trace_in_mode(model, False, leaf_types)
    train_gm = _outputs_only(train_gm, _resolve(names, train_names, "train"))
    eval_gm = _outputs_only(eval_gm, _resolve(names, eval_names, "eval"))
    if eval_gm.code == train_gm.code:  # the modes differ nowhere the chosen values depend on
        eval_gm = train_gm
    extractor = FeatureExtractor(train_gm, eval_gm)
    return extractor.train(model.training)
