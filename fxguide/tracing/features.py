"""Feature extraction: return chosen intermediate values of any traceable model.

The FX recipe: trace the model, make the chosen nodes the graph's output (a
dict), let dead-code elimination drop everything the chosen values do not
need, and generate code. A value can be named three ways:

- by module path (``"stem"``, ``"stem.0"``: the value that module call
  returned; a second call of the same module is ``"path@1"``);
- by torchvision's qualified name, as ``get_graph_node_names`` lists it: the
  enclosing module's path plus the operation (``"layer1.0.add"``), numbered
  per module (``"layer1.0.relu_1"`` for a second call);
- by FX node name (``"add_3"``), unique in the graph but meaningless outside it.

A model can trace to different graphs in train and eval mode (anything that
reads ``self.training`` in Python is baked in). :func:`extract_features`
traces both, and the extractor it returns runs the graph of its current mode.
"""

from __future__ import annotations

import difflib
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch.fx as fx
from torch import nn

from fxguide._checks import collection
from fxguide.tracing.tracers import ModulePathTracer, trace

__all__ = ["FeatureExtractor", "extract_features", "feature_names", "mode_differences"]


def _require_module(model: object, caller: str) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(f"{caller}: expected an nn.Module, got {type(model).__name__}")
    return model


def _trace_in_mode(model: nn.Module, training: bool, leaf_types: Iterable[type],
                   caller: str) -> tuple[fx.GraphModule, dict[str, str], list[str]]:
    """Trace ``model`` in train or eval mode, restoring the modes of all its modules after."""
    modes = {m: m.training for m in model.modules()}
    tracer = ModulePathTracer(leaf_types=collection(caller, "leaf_types", leaf_types, "[MyBlock]"))
    try:
        model.train(training)
        gm = trace(model, tracer)
    except Exception as error:  # torch's own error stays; the note says what to do about it
        error.add_note(f"{caller}: symbolic tracing of {type(model).__name__} failed in "
                       f"{'train' if training else 'eval'} mode; make the part that cannot be traced a leaf "
                       f"(leaf_types=[TheBlock]), or extract from a submodule that traces")
        raise
    finally:
        for m, mode in modes.items():
            m.training = mode
    return gm, _names(gm, tracer), list(tracer.module_outputs)


_FX_COUNTER = re.compile(r"_\d+$")


def _qualified_names(gm: fx.GraphModule) -> dict[str, str]:
    """torchvision-style name -> node name, for every node but inputs and the output.

    A module call is named by its module path; any other operation by the path
    of the module whose code ran it, a dot, and its node name without FX's
    graph-wide counter. Repeats of a name get ``_1``, ``_2``, ... in graph order.
    """
    names: dict[str, str] = {}
    repeats: dict[str, int] = {}
    for node in gm.graph.nodes:
        if node.op in {"placeholder", "output"}:
            continue
        path = node.meta.get("module_path", "")
        name = path if node.op == "call_module" else ".".join(filter(None, (path, node.name)))
        name = _FX_COUNTER.sub("", name)
        count = repeats.get(name, 0)
        repeats[name] = count + 1
        names[name if count == 0 else f"{name}_{count}"] = node.name
    return names


def _names(gm: fx.GraphModule, tracer: ModulePathTracer) -> dict[str, str]:
    """name -> node name: module paths first, then torchvision-style names, then node names."""
    names = {path: node.name for path, node in tracer.module_outputs.items()}
    for name, node_name in _qualified_names(gm).items():
        names.setdefault(name, node_name)
    for node in gm.graph.nodes:
        if node.op not in {"placeholder", "output"}:
            names.setdefault(node.name, node.name)
    return names


def feature_names(model: nn.Module, leaf_types: Iterable[type] = (), training: bool | None = None) -> list[str]:
    """The names :func:`extract_features` lists for ``model``: module paths, then other values.

    Each value is listed once: by module path if a module call returned it,
    else by its torchvision-style name (``"layer1.0.add"``). Its node name
    (and, for a module's value, its torchvision-style name) is accepted too.
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
    gm, names, listed = _trace_in_mode(model, mode, leaf_types, "feature_names")
    taken = {names[path] for path in listed}
    for name, node_name in _qualified_names(gm).items():
        if node_name not in taken and names.get(name) == node_name:
            listed.append(name)
            taken.add(node_name)
    return listed


def mode_differences(model: nn.Module, leaf_types: Iterable[type] = ()) -> list[str]:
    """The lines of generated code that differ between a train-mode and an eval-mode trace.

    Empty when both modes give the same graph.

    >>> from fxguide.models import seeded
    >>> from fxguide.models import TwoStageMLP
    >>> mode_differences(seeded(TwoStageMLP))
    []
    """
    model = _require_module(model, "mode_differences")
    leaf_types = collection("mode_differences", "leaf_types", leaf_types, "[MyBlock]")
    train = _trace_in_mode(model, True, leaf_types, "mode_differences")[0].code.strip("\n").splitlines()
    evaluate = _trace_in_mode(model, False, leaf_types, "mode_differences")[0].code.strip("\n").splitlines()
    return [
        line for line in difflib.unified_diff(train, evaluate, "train", "eval", lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


_INPLACE_OPERATORS = {
    operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor,
    operator.ilshift, operator.irshift,
}


def _is_inplace(gm: fx.GraphModule, node: fx.Node) -> bool:
    """Whether ``node`` may overwrite one of its inputs.

    ``inplace=True`` (a module's attribute or a keyword), a method or function
    whose name ends in ``_`` (``x.add_(y)``, ``torch.relu_``), or an in-place
    operator node (``operator.setitem``, ``operator.iadd``) as a graph built by
    hand or by another tracer may hold: ``symbolic_trace`` records ``x += y`` out
    of place and cannot trace ``x[i] = v`` at all.
    """
    if node.op == "call_function" and node.target in _INPLACE_OPERATORS:
        return True
    if node.op == "call_module":
        return getattr(gm.get_submodule(str(node.target)), "inplace", False) is True
    if node.kwargs.get("inplace") is True:
        return True
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    return node.op in {"call_method", "call_function"} and str(name).endswith("_") and not str(name).startswith("_")


def _protect_from_later_inplace(gm: fx.GraphModule) -> None:
    """Output a copy of each chosen value that an in-place operation after it could overwrite.

    An extracted value must be what the model computed at that point; an
    in-place ReLU further on would otherwise change it after the fact.
    """
    graph = gm.graph
    output = next(n for n in graph.nodes if n.op == "output")
    order = {node: i for i, node in enumerate(graph.nodes)}
    last_inplace = max((order[n] for n in graph.nodes if _is_inplace(gm, n)), default=-1)
    copies: dict[fx.Node, fx.Node] = {}
    for node in output.all_input_nodes:
        if order[node] < last_inplace:
            with graph.inserting_after(node):
                copies[node] = graph.call_method("clone", (node,))
    if copies:
        output.args = fx.node.map_arg(output.args, lambda n: copies.get(n, n))


def _outputs_only(gm: fx.GraphModule, chosen: Mapping[str, str]) -> fx.GraphModule:
    """Make ``chosen`` (output key -> node name) the outputs; drop what they do not need."""
    graph = gm.graph
    nodes = {node.name: node for node in graph.nodes}
    old_output = next(n for n in graph.nodes if n.op == "output")
    with graph.inserting_after(old_output):
        graph.output({key: nodes[name] for key, name in chosen.items()})
    graph.erase_node(old_output)
    # Plain dead-code elimination deletes an in-place call whose result nobody reads, and the
    # values read after it would change: keep one when the tensor it writes into is read later.
    position = {node: i for i, node in enumerate(graph.nodes)}

    def writes_into_a_value_read_later(node: fx.Node) -> bool:
        target = node.args[0] if node.args else None
        return (_is_inplace(gm, node) and isinstance(target, fx.Node)
                and any(position[user] > position[node] for user in target.users if user is not node))

    graph.eliminate_dead_code(is_impure_node=lambda node: node.is_impure() or writes_into_a_value_read_later(node))
    _protect_from_later_inplace(gm)
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
    asked: dict[str, str] = {}
    for name, key in pairs:
        for what, value in (("feature name", name), ("output key", key)):
            if not isinstance(value, str):
                raise TypeError(f"extract_features: each {what} must be a str, got {value!r} "
                                f"({type(value).__name__}); feature_names(model) lists the names")
        if key in asked:
            raise ValueError(f"extract_features: {asked[key]!r} and {name!r} would both be returned as {key!r}; "
                             f"give each feature its own output key")
        asked[key] = name
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
    leaf_types = collection("extract_features", "leaf_types", leaf_types, "[MyBlock]")  # read once: may be a generator
    train_gm, train_names, _ = _trace_in_mode(model, True, leaf_types, "extract_features")
    eval_gm, eval_names, _ = _trace_in_mode(model, False, leaf_types, "extract_features")
    train_gm = _outputs_only(train_gm, _resolve(names, train_names, "train"))
    eval_gm = _outputs_only(eval_gm, _resolve(names, eval_names, "eval"))
    if eval_gm.code == train_gm.code:  # the modes differ nowhere the chosen values depend on
        eval_gm = train_gm
    extractor = FeatureExtractor(train_gm, eval_gm)
    return extractor.train(model.training)
