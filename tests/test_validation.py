"""Bad input to fxguide's public functions: each call fails with an error naming the argument and the fix.

One row per mistake a user can make: the call, the exception type, and a
fragment of the message that says what was wrong (and, where there is one,
what to write instead). Nothing here may fail with a raw Python error
(``object is not iterable``, ``AttributeError: __name__``) or pass silently.
"""

from __future__ import annotations

import functools
import math

import pytest
import torch
import torch.fx as fx
from torch import nn

from fxguide.display import MarkdownTable, show_code, show_diff, show_nodes
from fxguide.display.drawing import draw, plot_graphs, render, to_dot
from fxguide.display.timing import compare, format_ratio, format_time, measure
from fxguide.models import (AllOpcodes, GatedBlock, ResidualBlock, ScaledResidual, SmallCNN, SmallMLP,
                            SmallResNet, TinyMLP, TwoStageMLP, cases, seeded)
from fxguide.models.real import vary_batch_norms
from fxguide.tracing import wrapping
from fxguide.tracing.concrete import (ConcreteAttribute, ConcreteTracer, Guard, GuardedPaths, GuardError, RaisesGuard,
                                      concrete_trace, decisions, show_decisions)
from fxguide.tracing.features import extract_features
from fxguide.tracing.limitations import Limitation, get, show_source
from fxguide.tracing.tool_survey import Survey, survey_all
from fxguide.tracing.tracers import LeafTracer, ModulePathTracer, TaggingTracer, trace
from fxguide.transforms import to_graph_module
from fxguide.transforms.decompose import decompose, relu_rule
from fxguide.transforms.fuse import fold_bn_into_conv, fuse_conv_bn
from fxguide.transforms.observers import (FakeQuantize, MinMaxObserver, calibrate, convert_to_fake_quant,
                                          insert_observers, observers)
from fxguide.transforms.profiling import NodeProfiler, format_profile, profile_nodes
from fxguide.transforms.replace import Retarget, SwapOps, replace_op
from fxguide.transforms.shapes import ShapeRecorder, record_shapes, record_shapes_by_hand


def _gm() -> fx.GraphModule:
    return fx.symbolic_trace(lambda x: torch.relu(x) + 1)


def _observed() -> fx.GraphModule:
    return insert_observers(nn.Sequential(nn.ReLU()), lambda n: True)


class _Callable:
    def __call__(self, x):
        return x + 1


_FROM_EXEC: dict = {}
exec("class E:\n    pass\n\n\ndef g():\n    pass\n", _FROM_EXEC)


def _capture(model, example, graphs):
    graphs.append(fx.symbolic_trace(model))
    return graphs[-1]


class _Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(2, 2))

    def forward(self, x):
        return self.encoder(x)


TABLE = [
    # tracing/tracers.py
    ("LeafTracer-leaf_types-None", lambda: LeafTracer(leaf_types=None), TypeError,
     "leaf_types must be a list"),
    ("LeafTracer-leaf_types-not-module", lambda: LeafTracer(leaf_types=[int]), TypeError,
     "every leaf type must be an nn.Module subclass"),
    ("LeafTracer-leaf_paths-str", lambda: LeafTracer(leaf_paths="encoder"), TypeError,
     "leaf_paths must be a list (or tuple, set) of items, got the str 'encoder'; write e.g. leaf_paths=[\"encoder\"]"),
    ("LeafTracer-unknown-leaf-path", lambda: trace(_Encoder(), LeafTracer(leaf_paths=["encodr"])), ValueError,
     "'encodr' (did you mean 'encoder'?)"),
    ("LeafTracer-autowrap_functions-str", lambda: LeafTracer(autowrap_functions="len"), TypeError,
     "autowrap_functions must be a list"),
    ("LeafTracer-autowrap_modules-None", lambda: LeafTracer(autowrap_modules=None), TypeError,
     "autowrap_modules must be a list"),
    ("LeafTracer-param_shapes_constant-str", lambda: LeafTracer(param_shapes_constant="yes"), TypeError,
     "param_shapes_constant must be True or False"),
    ("trace-class", lambda: trace(TinyMLP), TypeError, "root is the class TinyMLP, not a model; pass an instance"),
    ("trace-int", lambda: trace(3), TypeError, "root must be an nn.Module or a function, got int"),
    ("trace-tracer-class", lambda: trace(TinyMLP(), LeafTracer), TypeError, "tracer must be a torch.fx.Tracer instance"),
    ("trace-unknown-concrete-arg", lambda: trace(TinyMLP(), concrete_args={"y": 1}), ValueError,
     "concrete_args names ['y'], which TinyMLP.forward does not take; its parameters are ['x']"),
    ("trace-concrete-args-list", lambda: trace(TinyMLP(), concrete_args=[1]), TypeError,
     "concrete_args must be a dict"),
    ("TaggingTracer-tags-list", lambda: TaggingTracer(["a"]), TypeError, "tags must map module path prefixes"),
    ("TaggingTracer-default-int", lambda: TaggingTracer({}, default=1), TypeError, "default must be a str tag"),
    ("ModulePathTracer-leaf_paths-str", lambda: ModulePathTracer(leaf_paths="0"), TypeError,
     "leaf_paths must be a list"),
    # tracing/concrete.py
    ("concrete_trace-class", lambda: concrete_trace(TinyMLP, (torch.ones(1, 4),)), TypeError,
     "root is the class TinyMLP, not a model"),
    ("concrete_trace-no-inputs", lambda: concrete_trace(TinyMLP()), TypeError, "needs example inputs"),
    ("concrete_trace-unknown-kwarg", lambda: concrete_trace(TinyMLP(), kwargs={"y": torch.ones(1)}), TypeError,
     "do not fit TinyMLP.forward"),
    ("concrete_trace-string-input", lambda: concrete_trace(TinyMLP(), ("x",)), TypeError,
     "the example input 'x' is (or holds) a str"),
    ("concrete_trace-max_paths-bool", lambda: concrete_trace(TinyMLP(), (torch.ones(1, 4),), max_paths=True),
     ValueError, "max_paths must be a positive int"),
    ("concrete_trace-on_mismatch", lambda: concrete_trace(TinyMLP(), (torch.ones(1, 4),), on_mismatch="warn"),
     ValueError, 'on_mismatch must be "raise" or "retrace"'),
    ("decisions-module", lambda: decisions(nn.Linear(1, 1)), TypeError, "expected a GraphModule from concrete_trace"),
    ("show_decisions-str", lambda: show_decisions("gm"), TypeError, "expected a GraphModule from concrete_trace"),
    ("Guard-str", lambda: Guard("branch"), TypeError, "decision must be a Decision, got str"),
    ("RaisesGuard-str", lambda: RaisesGuard("d", "call_function", torch.relu), TypeError,
     "decision must be a 'raises' Decision"),
    ("GuardedPaths-max_paths-bool", lambda: GuardedPaths(TinyMLP(), _gm(), max_paths=True), ValueError,
     "max_paths must be a positive int, got True"),
    ("ConcreteTracer-inputs-None", lambda: ConcreteTracer(None), TypeError, "inputs must map parameter names"),
    ("ConcreteTracer-inputs-str", lambda: ConcreteTracer({"x": "str"}), TypeError,
     "ConcreteTracer: the example input 'x' is (or holds) a str"),
    ("ConcreteAttribute-None", lambda: ConcreteAttribute(None, "x"), TypeError,
     "root must be a ConcreteProxy and attr a str, got NoneType and str"),
    ("GuardError-None", lambda: GuardError(None, 1), TypeError, "decision must be the Decision that differs"),
    ("GuardedPaths-module", lambda: GuardedPaths(TinyMLP(), TinyMLP()), TypeError,
     "first must be a GraphModule from concrete_trace"),
    # tracing/wrapping.py
    ("fresh_noise-bool", lambda: wrapping.fresh_noise(True), ValueError, "size must be a positive int (not a bool)"),
    ("fresh_noise-seed", lambda: wrapping.fresh_noise(2, seed=-1), ValueError, "seed must be a non-negative int"),
    ("as_int-str", lambda: wrapping.as_int("x"), TypeError, "cannot convert 'x' to int"),
    ("all_of-empty", lambda: wrapping.all_of(), ValueError, "give at least one condition"),
    ("divide_by_rows-list", lambda: wrapping.divide_by_rows([1, 2]), TypeError, "expected a tensor, got list"),
    ("sizes_tensor-int", lambda: wrapping.sizes_tensor(3), TypeError, "expected a tensor, got int"),
    # tracing/limitations.py
    ("limitations-get-typo", lambda: get("lenn"), KeyError, "did you mean: len?"),
    ("limitations-get-int", lambda: get(1), TypeError, "name must be a str"),
    ("show_source-nothing", lambda: show_source(), ValueError, "give at least one function or class"),
    ("show_source-int", lambda: show_source(1), TypeError, "expected a function or class, got int"),
    # transforms
    ("to_graph_module-function", lambda: to_graph_module(lambda x: x), TypeError,
     "wrap a plain function with torch.fx.symbolic_trace"),
    ("replace_op-module-instance", lambda: replace_op(TinyMLP(), torch.relu, nn.ReLU()), TypeError,
     "new is the module instance ReLU(); call_function nodes call functions"),
    ("replace_op-class", lambda: replace_op(TinyMLP(), torch.relu, nn.ReLU), TypeError,
     "new must be a function such as torch.relu"),
    ("replace_op-wrong-arity", lambda: replace_op(TinyMLP(), torch.relu, lambda a, b: a), TypeError,
     "cannot take the arguments node 'relu' passes to relu"),
    ("replace_op-not-called", lambda: replace_op(TinyMLP(), torch.tanh, torch.relu), ValueError,
     "no call_function node calls 'tanh'"),
    ("Retarget-not-called", lambda: Retarget(_gm(), {torch.tanh: torch.relu}), ValueError,
     "Retarget: no call_function node calls 'tanh'"),
    ("SwapOps-not-called", lambda: SwapOps(_gm(), {torch.tanh: torch.relu}), ValueError,
     "SwapOps: no call_function node calls 'tanh'"),
    ("SwapOps-module", lambda: SwapOps(TinyMLP(), {torch.relu: torch.tanh}), TypeError,
     "expected a GraphModule (trace the model first)"),
    ("decompose-rule-arity", lambda: decompose(TinyMLP(), {torch.relu: lambda: 0}), TypeError,
     "cannot take the arguments of node 'relu'"),
    ("decompose-empty-rules", lambda: decompose(TinyMLP(), {}), TypeError, "rules must map functions"),
    ("fuse_conv_bn-function", lambda: fuse_conv_bn(lambda x: x), TypeError, "model must be an nn.Module"),
    ("fuse_conv_bn-training", lambda: fuse_conv_bn(SmallResNet()), ValueError, "call model.eval() before fusing"),
    ("fold_bn_into_conv-linear", lambda: fold_bn_into_conv(nn.Linear(2, 2), nn.BatchNorm2d(2)), TypeError,
     "conv must be an nn.Conv2d"),
    ("record_shapes-arity", lambda: record_shapes(_gm()), TypeError, "the graph takes 1 input(s), got 0"),
    ("record_shapes_by_hand-module", lambda: record_shapes_by_hand(TinyMLP(), torch.ones(1, 4)), TypeError,
     "expected a torch.fx.GraphModule"),
    ("ShapeRecorder-module", lambda: ShapeRecorder(TinyMLP()), TypeError, "expected a torch.fx.GraphModule"),
    ("MinMaxObserver-nan", lambda: MinMaxObserver()(torch.tensor([1.0, math.nan])), ValueError,
     "holds NaN or inf, which would poison the range"),
    ("MinMaxObserver-list", lambda: MinMaxObserver()([1.0]), TypeError, "expected a tensor, got list"),
    ("MinMaxObserver-bits-bool", lambda: MinMaxObserver().scale_zero_point(True), ValueError,
     "bits must be an int from 2 to 16"),
    ("FakeQuantize-scale-nan", lambda: FakeQuantize(math.nan, 0), ValueError, "scale must be a positive number"),
    ("FakeQuantize-scale-bool", lambda: FakeQuantize(True, 0), ValueError, "scale must be a positive number"),
    ("FakeQuantize-zero_point-bool", lambda: FakeQuantize(0.1, True), ValueError, "zero_point must be an int in"),
    ("insert_observers-where-not-bool", lambda: insert_observers(SmallMLP(), lambda n: n.name), TypeError,
     "where must return True or False for a node"),
    ("insert_observers-where-str", lambda: insert_observers(SmallMLP(), "relu"), TypeError,
     "where must be a function Node -> bool"),
    ("calibrate-tensor", lambda: calibrate(_observed(), torch.ones(3, 2)), TypeError,
     "a single tensor would be taken row by row"),
    ("calibrate-nan-batch", lambda: calibrate(_observed(), [torch.tensor([math.nan])]), ValueError,
     "holds NaN or inf"),
    ("convert_to_fake_quant-plain", lambda: convert_to_fake_quant(_gm()), ValueError, "has no observers"),
    ("observers-module", lambda: observers(TinyMLP()), TypeError, "expected the GraphModule insert_observers returned"),
    ("profile_nodes-repeats-bool", lambda: profile_nodes(_gm(), torch.ones(1), repeats=True), ValueError,
     "repeats must be a positive int of at most 10000, got True (a bool)"),
    ("profile_nodes-arity", lambda: profile_nodes(_gm()), TypeError, "the graph takes 1 input(s), got 0"),
    ("NodeProfiler-timer", lambda: NodeProfiler(_gm(), timer=3), TypeError, "timer must be a clock function"),
    ("format_profile-str", lambda: format_profile("x"), TypeError, "expected the list of NodeTime"),
    # display
    ("show_code-module", lambda: show_code(TinyMLP()), TypeError, "GraphModule"),
    ("show_nodes-str", lambda: show_nodes("graph"), TypeError, "Graph"),
    ("show_diff-module", lambda: show_diff(TinyMLP(), _gm()), TypeError, "GraphModule"),
    ("to_dot-module", lambda: to_dot(TinyMLP()), TypeError, "Graph"),
    ("draw-str", lambda: draw("graph"), TypeError, "Graph"),
    ("plot_graphs-nothing", lambda: plot_graphs(), TypeError, "pass one or more GraphPicture"),
    ("render-not-dot", lambda: render("hello"), ValueError, "expected DOT source text"),
    ("measure-repeats-bool", lambda: measure(sum, [1], repeats=True), ValueError,
     "repeats must be a positive int of at most 10000, got True (a bool)"),
    ("measure-timer-int", lambda: measure(sum, [1], timer=3), TypeError, "timer must be a clock function"),
    ("to_dot-title-int", lambda: to_dot(_gm().graph, title=3), TypeError, "title must be a str, got int"),
    ("compare-not-callable", lambda: compare(sum, 3, [1]), TypeError, "expected a callable to time"),
    # models
    ("TinyMLP-bool", lambda: TinyMLP(features=True), ValueError, "features must be a positive int, got True (a bool)"),
    ("AllOpcodes-zero", lambda: AllOpcodes(features=0), ValueError, "features must be a positive int, got 0"),
    ("GatedBlock-float", lambda: GatedBlock(features=2.0), ValueError, "features must be a positive int, got 2.0"),
    ("SmallResNet-bool", lambda: SmallResNet(blocks=False), ValueError, "blocks must be a positive int, got False"),
    ("ResidualBlock-str", lambda: ResidualBlock("4"), ValueError, "channels must be a positive int"),
    ("SmallMLP-bool", lambda: SmallMLP(hidden=True), ValueError, "hidden must be a positive int"),
    ("SmallCNN-p-str", lambda: SmallCNN(p="0.1"), ValueError, "p must be a finite number"),
    ("SmallCNN-classes-bool", lambda: SmallCNN(classes=True), ValueError, "classes must be a positive int"),
    ("ScaledResidual-scale-nan", lambda: ScaledResidual(scale=math.nan), ValueError, "scale must be a finite number"),
    ("TwoStageMLP-bool", lambda: TwoStageMLP(classes=True), ValueError, "classes must be a positive int"),
    ("seeded-instance", lambda: seeded(TinyMLP()), TypeError, "pass the class and its arguments"),
    ("seeded-seed-bool", lambda: seeded(TinyMLP, seed=True), TypeError, "seed must be an int"),
    ("format_time-str", lambda: format_time("1s"), ValueError, "expected a non-negative number of seconds"),
    # Raw errors of the bad-input audit (issue 23), each now an error naming the call and the fix.
    ("GraphPicture.show-ax-str", lambda: draw(_gm()).show(ax="x"), TypeError,
     "GraphPicture.show: ax must be a matplotlib Axes"),
    ("replace_op-builtin-arity", lambda: replace_op(TinyMLP(), torch.relu, torch.add), TypeError,
     "replace_op: add(input: torch.Tensor, other: torch.Tensor"),
    ("relu_rule-str", lambda: relu_rule("x"), TypeError, "relu_rule: expected a tensor"),
    ("MinMaxObserver-complex", lambda: MinMaxObserver()(torch.ones(2, dtype=torch.complex64)), TypeError,
     "MinMaxObserver: complex values (torch.complex64) have no smallest or largest"),
    ("insert_observers-where-raises", lambda: insert_observers(SmallMLP(), lambda n: n.nonexistent), RuntimeError,
     "insert_observers: where raised AttributeError for node 'fc1' (op call_module)"),
    ("insert_observers-twice", lambda: insert_observers(_observed(), lambda n: True), ValueError,
     "insert_observers: the model already holds observers (observe__0)"),
    ("calibrate-tuple-for-one-input", lambda: calibrate(_observed(), [(torch.ones(2), torch.ones(2))]), TypeError,
     "calibrate (batch 0): the graph takes 1 input(s), got 2"),
    ("trace-partial", lambda: trace(functools.partial(torch.add, other=1)), TypeError,
     "trace: root must be an nn.Module or a Python function (def or lambda); got partial"),
    ("trace-builtin", lambda: trace(len), TypeError, "got builtin_function_or_method"),
    ("trace-callable-object", lambda: trace(_Callable()), TypeError, "got _Callable"),
    ("ModulePathTracer-unknown-kwarg", lambda: ModulePathTracer(bogus=1), TypeError,
     "ModulePathTracer: got an unexpected keyword argument 'bogus'; it takes the arguments of LeafTracer"),
    ("extract_features-list-name", lambda: extract_features(_Encoder(), [["encoder"]]), TypeError,
     "extract_features: each feature name must be a str, got ['encoder'] (list)"),
    ("extract_features-leaf_types-class", lambda: extract_features(_Encoder(), ["encoder"], leaf_types=nn.Linear),
     TypeError, "extract_features: leaf_types must be a list (or tuple, set) of items"),
    ("divide_by_rows-0-dim", lambda: wrapping.divide_by_rows(torch.tensor(1.0)), ValueError,
     "divide_by_rows: expected a tensor of at least 1 dimension(s), got a 0-d one"),
    ("as_int-inf", lambda: wrapping.as_int(math.inf), TypeError, "as_int: cannot convert inf to int"),
    ("all_of-tensor", lambda: wrapping.all_of(torch.tensor([1, 0])), ValueError,
     "all_of: condition 1 is a tensor of 2 values"),
    ("show_source-exec-class", lambda: show_source(_FROM_EXEC["E"]), ValueError,
     "show_source: the source of E cannot be found"),
    ("show_source-exec-function", lambda: show_source(_FROM_EXEC["g"]), ValueError,
     "show_source: the source of g cannot be found"),
    ("MarkdownTable-empty", lambda: MarkdownTable(""), ValueError, "MarkdownTable: expected a Markdown table"),
    ("MarkdownTable-unescaped-pipe", lambda: MarkdownTable("| a |\n|---|\n| x | y |"), ValueError,
     "MarkdownTable: line 3 has 2 cells, the header 1"),
    ("survey_all-None", lambda: survey_all("make_fx", _capture, None), TypeError,
     "survey_all: models must be a list"),
    ("survey_all-not-a-case", lambda: survey_all("t", _capture, [cases()[0], "not a case"]), TypeError,
     "survey: expected a fxguide.models.Case, got str"),
    ("Survey-int", lambda: repr(Survey({"a": 1})), TypeError, "Survey: every value must be an Outcome"),
    ("fuse_conv_bn-scripted", lambda: fuse_conv_bn(torch.jit.script(nn.Sequential(nn.Conv2d(1, 2, 3)).eval())),
     TypeError, "fuse_conv_bn: model is a TorchScript module"),
    ("vary_batch_norms-seed-None", lambda: vary_batch_norms(nn.BatchNorm2d(2), seed=None), TypeError,
     "vary_batch_norms: seed must be an int, got None"),
    ("vary_batch_norms-seed-bool", lambda: vary_batch_norms(nn.BatchNorm2d(2), seed=True), TypeError,
     "vary_batch_norms: seed must be an int, got True"),
    # Silent results of the same audit, now refused.
    ("profile_nodes-repeats-huge", lambda: profile_nodes(_gm(), torch.ones(1), repeats=10**12), ValueError,
     "profile_nodes: repeats must be a positive int of at most 10000, got 1000000000000"),
    ("measure-repeats-huge", lambda: measure(sum, [1], repeats=10**12), ValueError,
     "measure: repeats must be a positive int of at most 10000"),
    ("compare-warmup-huge", lambda: compare(sum, sum, [1], warmup=10**12), ValueError,
     "compare: warmup must be a non-negative int of at most 10000"),
    ("format_time-nan", lambda: format_time(math.nan), ValueError, "format_time: expected a non-negative number of "
     "seconds (finite, not a bool), got nan"),
    ("format_time-inf", lambda: format_time(math.inf), ValueError, "got inf"),
    ("format_time-bool", lambda: format_time(True), ValueError, "got True"),
    ("format_ratio-nan", lambda: format_ratio(math.nan), ValueError, "format_ratio: expected a positive ratio "
     "(finite, not a bool), got nan"),
    ("format_ratio-inf", lambda: format_ratio(math.inf), ValueError, "got inf"),
    ("format_ratio-bool", lambda: format_ratio(True), ValueError, "got True"),
    ("extract_features-duplicate-key", lambda: extract_features(_Encoder(), {"encoder": "a", "encoder.0": "a"}),
     ValueError, "extract_features: 'encoder' and 'encoder.0' would both be returned as 'a'"),
    ("Limitation-broken-None", lambda: Limitation("bad", "s", None, None, RuntimeError, "m", lambda: ()), TypeError,
     "Limitation 'bad': broken must be a function or an nn.Module class, got None"),
    ("Limitation-error-instance", lambda: Limitation("bad", "s", len, len, RuntimeError("x"), "m", lambda: ()),
     TypeError, "Limitation 'bad': error must be an exception class"),
]


@pytest.mark.parametrize(("call", "error", "fragment"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_bad_input_gets_an_error_naming_the_argument(call, error, fragment):
    with pytest.raises(error) as caught:
        call()
    assert fragment in str(caught.value)


def test_the_table_has_one_row_per_mistake():
    names = [row[0] for row in TABLE]
    assert len(names) == len(set(names))
