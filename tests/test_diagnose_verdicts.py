"""fxguide.diagnose verdicts that cannot be fooled: frozen draws and state, structure, precision, caches, the CLI."""

from __future__ import annotations

import random
import signal
import time
import types
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import fxguide.diagnose as diagnose
from fxguide.diagnose import examine
from fxguide.diagnose.__main__ import main, parse_input, UsageError
from fxguide.diagnose.compare import clone, compare, compare_outputs, like
from fxguide.diagnose.safety import Snapshot

TRACERS = ["symbolic_trace", "concrete_trace"]
EXPORTS = ["symbolic_trace", "concrete_trace", "export", "export_dynamic_batch"]
X = ((torch.randn(2, 4),), {})


class AddsRand(nn.Module):
    def forward(self, x):
        return x + torch.rand(x.shape)


class AddsRandn(nn.Module):
    def forward(self, x):
        return x + torch.randn(2, 4)


class Counter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.calls


class History(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hist: list[int] = []

    def forward(self, x):
        self.hist.append(1)
        return x * len(self.hist)


class PythonRandom(nn.Module):
    def forward(self, x):
        return x * 2 if random.random() < 0.5 else x * 3


class NumpyRandom(nn.Module):
    def forward(self, x):
        return x * 2 if np.random.rand() < 0.5 else x * 3


class BatchOfOne(nn.Module):
    def forward(self, x):
        return x * 0 if x.shape[0] == 1 else x * 2


def verdicts(model: nn.Module, tools: list[str]) -> dict[str, str]:
    return {r.tool: r.verdict for r in examine(model, X, tools=tools).results}


# -- A: verdicts that hold beyond one call -----------------------------------------------


def test_the_concrete_tracer_refuses_a_torch_rand_draw_it_would_freeze() -> None:
    result = examine(AddsRand(), X, tools=TRACERS)
    # Its state diff sees torch's generator move outside the graph's operations (it froze the draw before).
    assert result["concrete_trace"].verdict == "fails: UnguardableError"
    assert "torch's global random generator" in result["concrete_trace"].error
    assert result.eager == ["eager depends on the random seed"]


def test_randn_of_a_fixed_shape_is_frozen_by_symbolic_trace_and_refused_by_the_concrete_tracer() -> None:
    assert verdicts(AddsRandn(), TRACERS) == {"symbolic_trace": "froze a random draw",
                                              "concrete_trace": "fails: UnguardableError"}


def test_a_capture_that_froze_a_counter_or_a_growing_list_is_reported_as_frozen_state() -> None:
    assert verdicts(Counter(), ["symbolic_trace"]) == {"symbolic_trace": "froze state from the first call"}
    assert verdicts(History(), ["symbolic_trace"]) == {"symbolic_trace": "froze state from the first call"}


def test_the_concrete_tracer_refuses_a_growing_list_rather_than_freezing_it() -> None:
    assert verdicts(History(), ["concrete_trace"]) == {"concrete_trace": "fails: UnguardableError"}


def test_a_capture_that_keeps_the_state_change_matches_eager() -> None:
    assert verdicts(History(), ["compile_fullgraph"]) == {"compile_fullgraph": "matches eager"}


@pytest.mark.parametrize("model", [PythonRandom(), NumpyRandom()], ids=["random", "numpy"])
def test_a_verdict_on_python_or_numpy_randomness_is_the_same_under_every_caller_seed(model) -> None:
    seen = set()
    for seed in range(8):
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        result = examine(model, X, tools=EXPORTS)
        seen.add(tuple((r.tool, r.verdict) for r in result.results))
        assert result.eager == ["eager depends on the random seed"]
    assert len(seen) == 1
    # The concrete tracer refuses a draw of Python's or NumPy's generator (its state diff sees it move).
    assert dict(seen.pop()) == {t: "fails: UnguardableError" if t == "concrete_trace" else "froze a random draw"
                                for t in EXPORTS}


def test_the_dynamic_batch_row_checks_a_batch_of_1_its_range_admits() -> None:
    row = examine(BatchOfOne(), X, tools=["export_dynamic_batch"])["export_dynamic_batch"]
    assert row.verdict == "differs: values differ on a batch of 1"
    assert row.cause.section.anchor == "export-real-zero-one"


@pytest.mark.parametrize(("actual", "expected", "mismatch"), [
    (torch.tensor([1e6, 50.0]), torch.tensor([1e6, 1.0]), "values differ"),
    (torch.tensor([1e6, -0.5]), torch.tensor([1e6, 0.5]), "values differ"),
    ({"a": torch.ones(1)}, {"b": torch.ones(1)}, "keys differ at output: missing 'b'; extra 'a'"),
    ([torch.ones(1)], torch.ones(1), "a list instead of a tensor"),
    (torch.ones(1), [torch.ones(1)], "a tensor instead of a list at output"),
    ((torch.ones(1),), [torch.ones(1)], "a tuple instead of a list at output"),
    (1, True, "a int instead of a bool at output"),
    ({"a": torch.ones(1), "b": torch.zeros(1)}, {"b": torch.zeros(1), "a": torch.ones(1)}, ""),
    (torch.tensor([float("nan"), 1.0]), torch.tensor([float("nan"), 1.0]), ""),
    (torch.tensor([0.0, 1.0]), torch.tensor([float("nan"), 1.0]), "values differ"),
    (float("nan"), float("nan"), ""),
])
def test_compare_goes_element_by_element_and_by_structure(actual, expected, mismatch) -> None:
    assert compare(actual, expected) == mismatch


def test_a_model_returning_nan_matches_where_eager_has_nan() -> None:
    class Nan(nn.Module):
        def forward(self, x):
            return x * float("nan")

    assert verdicts(Nan(), TRACERS) == {t: "matches eager" for t in TRACERS}


# -- D: outputs compared by what they hold -----------------------------------------------


class Holder:
    """A class of no library, holding tensors (no ==, no pytree registration)."""

    def __init__(self, t: torch.Tensor) -> None:
        self.tensors = [t, t * 2]


def test_an_object_holding_tensors_is_compared_by_its_tensors() -> None:
    assert compare(Holder(torch.ones(2)), Holder(torch.ones(2))) == ""
    assert compare(Holder(torch.zeros(2)), Holder(torch.ones(2))) == "values differ"


def test_an_object_that_cannot_be_compared_is_reported_as_such_not_as_a_difference() -> None:
    comparison = compare_outputs(object(), object())
    assert not comparison.compared and comparison.mismatch.startswith("cannot compare a object")


@pytest.fixture(scope="module")
def llama():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, vocab_size=100)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(config).eval()


def test_a_decoder_returning_its_cache_is_compared_tensor_by_tensor_and_each_refusal_classified(llama) -> None:
    ids = torch.randint(0, 100, (2, 8))
    result = examine(llama, ((ids,), {}), tools=["concrete_trace", "export_strict", "export", "compile_fullgraph"])
    assert result["compile_fullgraph"].verdict == "matches eager"  # DynamicCache compared by its tensors
    row = result["concrete_trace"]  # the graph rebuilds the cache on every call, holding that call's tensors
    assert row.verdict == "matches eager", row
    assert row.note.startswith("guarded: holds only for inputs that give the same answers")
    for tool in ("export_strict", "export"):
        assert result[tool].cause.name == "an output or input of a type export cannot flatten", result[tool].error
    assert "unclassified" not in str(result)


# -- E: verdicts in any precision --------------------------------------------------------


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))

    def forward(self, x):
        return self.net(x)


def off_by(scale: float):
    def capture(model, args, kwargs):
        gm = torch.fx.symbolic_trace(model)
        return (lambda x: gm(x) * (1 + scale)), len(gm.graph.nodes)
    return capture


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_below_float32_a_capture_wrong_by_a_little_or_a_lot_is_caught_and_a_right_one_matches(dtype) -> None:
    torch.manual_seed(0)
    model = Mlp().to(dtype)
    example = ((torch.randn(8, 16, dtype=dtype),), {})
    assert examine(model, example, tools=["symbolic_trace", "export"]).ok
    for scale in (0.03, 1.0):
        diagnose.CAPTURES["wrong"] = off_by(scale)
        try:
            other = like(example, 1)
            ref = diagnose.reference(model, other, lambda: None)
            assert ref.float64 is not None and ref.float64.dtype == torch.float64
            row = diagnose.run_tool("wrong", model, example, other, ref)
        finally:
            del diagnose.CAPTURES["wrong"]
        assert row.verdict == "differs: values differ", (scale, row.largest_difference)
        assert row.largest_difference > 0


class Stack(nn.Module):
    """Four linear layers; records, while each runs, how many of the model's parameters are float64."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(32, 32) for _ in range(4))
        self.float64_seen: list[int] = []

    def forward(self, x):
        for layer in self.layers:
            self.float64_seen.append(sum(p.dtype == torch.float64 for p in self.parameters()))
            x = torch.tanh(layer(x))
        return x


def test_the_float64_reference_holds_one_modules_copy_at_a_time_and_equals_a_whole_float64_run() -> None:
    torch.manual_seed(0)
    model = Stack().to(torch.bfloat16)
    x = torch.randn(4, 32, dtype=torch.bfloat16)
    ref = diagnose.reference(model, ((x,), {}), lambda: None, checks=False)
    assert ref.float64 is not None and ref.float64.dtype == torch.float64
    assert max(model.float64_seen[-4:]) == 0  # the parent's loop runs outside every Linear's forward
    inside = []
    hook = model.layers[2].register_forward_hook(
        lambda m, a, o: inside.append(sorted({p.dtype for p in model.parameters()}, key=str)))
    diagnose.reference(model, ((x,), {}), lambda: None, checks=False)
    hook.remove()
    assert inside[-1] == [torch.bfloat16, torch.float64]  # only layers[2]'s own weight and bias, while it runs
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())  # all put back
    whole = model.double()
    expected = whole(x.double())
    model.to(torch.bfloat16)
    assert torch.equal(ref.float64, expected)


class TiedHead(nn.Module):
    """Uses its embedding's weight in its own forward, outside the embedding's: the per-module swap cannot work."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.mix = nn.Linear(16, 16)

    def forward(self, ids):
        return nn.functional.linear(torch.relu(self.mix(self.embed(ids))), self.embed.weight)


def test_a_model_using_a_weight_outside_its_module_still_gets_a_float64_reference() -> None:
    torch.manual_seed(0)
    model = TiedHead().to(torch.bfloat16)
    ref = diagnose.reference(model, ((torch.randint(0, 50, (2, 5)),), {}), lambda: None, checks=False)
    assert ref.float64 is not None and ref.float64.dtype == torch.float64
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())


def test_the_batch_of_1_is_judged_against_a_float64_reference_below_float32() -> None:
    torch.manual_seed(0)
    model = Mlp().to(torch.bfloat16)
    example = ((torch.randn(4, 16, dtype=torch.bfloat16),), {})
    [(size, inputs, ref)] = diagnose._batch_of_one(model, lambda n, seed: like(example, seed, batch=n), lambda: None)
    assert size == 1 and inputs[0][0].shape[0] == 1
    assert isinstance(ref, diagnose.Reference) and ref.float64 is not None


def test_the_row_reports_the_largest_difference_it_saw() -> None:
    row = examine(Mlp(), ((torch.randn(2, 16),), {}), tools=["export"])["export"]
    assert row.ok and row.largest_difference is not None and row.largest_difference < 1e-4


# -- B: unchanged means unchanged ---------------------------------------------------------


class Untidy(nn.Module):
    """Every kind of state the audit found a diagnosis left changed."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))
        self.v = nn.Parameter(torch.ones(4))
        self.cfg = types.SimpleNamespace(scale=1)
        self.state = [{"n": 0}]
        self.cache = [torch.zeros(4)]

    def forward(self, x):
        self.w.requires_grad_(False)
        self.v.data = self.v.data * 2
        self.cfg.scale += 1
        self.state[0]["n"] += 1
        self.cache[0].add_(1)
        return x * self.w


def test_a_diagnosis_puts_back_flags_rebound_data_nested_containers_objects_and_tensors_in_lists() -> None:
    model = Untidy()
    result = examine(model, X, tools=TRACERS)
    assert result.unchanged, result.left_changed
    assert model.w.requires_grad and torch.equal(model.v, torch.ones(4))
    assert model.cfg.scale == 1 and model.state == [{"n": 0}] and torch.equal(model.cache[0], torch.zeros(4))


def test_a_write_through_data_is_found_by_comparing_values_and_put_back() -> None:
    model = nn.Linear(2, 2)
    before = model.weight.detach().clone()
    snapshot = Snapshot(model)
    model.weight.data.mul_(3)  # moves no _version
    assert snapshot.differences() == ["a tensor of shape (2, 2): its values changed (written back at the end)"]
    assert torch.equal(model.weight, before) and snapshot.differences() == []


def test_a_train_mode_batch_norms_running_statistics_are_put_back_after_every_tool() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).train()
    before = {name: b.clone() for name, b in model.named_buffers()}
    result = examine(model, ((torch.randn(2, 4),), {}), tools=["symbolic_trace", "concrete_trace", "export"])
    assert result.unchanged and result.left_changed == [], result.left_changed
    assert all(torch.equal(b, before[name]) for name, b in model.named_buffers())
    assert all(row.verdict == "matches eager" for row in result.results), result


def test_a_diagnosis_leaves_the_callers_random_generators_as_they_were() -> None:
    torch.manual_seed(123)
    random.seed(123)
    np.random.seed(123)
    expected = (torch.rand(1), random.random(), np.random.rand())
    torch.manual_seed(123)
    random.seed(123)
    np.random.seed(123)
    examine(PythonRandom(), X, tools=["symbolic_trace"])
    assert (torch.rand(1), random.random(), np.random.rand()) == expected


def test_a_diagnosis_keeps_the_callers_pending_alarm_and_its_remaining_time() -> None:
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(time.monotonic()))
    try:
        start = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, 30)
        examine(nn.Linear(4, 4), X, tools=["symbolic_trace"], timeout=5)
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < remaining <= 30 - (time.monotonic() - start) + 0.5
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        examine(nn.Linear(4, 4), X, tools=["symbolic_trace"], timeout=5)
        time.sleep(0.3)
        assert fired, "the caller's timer never fired"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# -- C: the command ------------------------------------------------------------------------


def test_the_command_stops_a_model_that_hangs_in_eager_within_its_timeout(tmp_path, capsys) -> None:
    file = tmp_path / "sleepy.py"
    file.write_text("import time, torch\nclass S(torch.nn.Module):\n    def forward(self, x):\n"
                    "        time.sleep(3600)\n        return x\nmodel = S()\n")
    start = time.monotonic()
    assert main([str(file), "--input", "2x4", "--timeout", "1", "--tools", "export"]) == 2
    assert time.monotonic() - start < 30
    assert "took longer than the time limit (1 s)" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "message"), [
    ("2x4:int64:0", "HIGH must be from 1 to"),
    ("2x4:int64:-5", "HIGH must be from 1 to"),
    ("2x4:int32:99999999999", "HIGH must be from 1 to 2147483648 for int32"),
    ("2x4:float32:9", "HIGH is for integer dtypes (token ids); a floating input is drawn from a normal distribution: "
                      "write 2x4:float32"),
    ("2x4:bool:7", "write 2x4:bool"),
    ("100000x100000x100", "too large an input"),
])
def test_every_part_of_an_input_is_checked_and_the_message_says_what_to_write(text, message) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_input(text)


@pytest.mark.parametrize(("files", "argv", "message"), [
    ({}, ["fxguide.models:TinyMLP", "--input", "2x4", "--tools", "library_route"],
     "TinyMLP comes from neither timm nor torchvision"),
    ({}, ["torch.nn:Linear", "--input", "2x4"], "the factory must take no arguments"),
    ({"f.py": "import torch\ndef bad():\n    return torch.nn.Linear(4, 4), (torch.ones(2, 4),), [1]\n"},
     ["f.py:bad"], "the keyword inputs (the third item) must be a dict"),
    ({"f.py": "def bad():\n    raise ValueError('factory failed')\n"}, ["f.py:bad"],
     "calling bad() raised ValueError: factory failed"),
    ({"f.py": "x = (\n"}, ["f.py"], "running the file raised SyntaxError"),
    ({"f.py": "raise RuntimeError('fails at import')\n"}, ["f.py"], "running the file raised RuntimeError"),
    ({}, ["."], "not a folder or a relative module name"),
    ({}, ["fxguide.models:TinyMLP", "--input", "2x4", "--device", "nowhere"], "--device nowhere"),
])
def test_the_command_says_what_was_wrong_instead_of_a_traceback(files, argv, message, tmp_path, monkeypatch,
                                                                 capsys) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert main(argv) == 2
    assert message in capsys.readouterr().err


# -- H: any device, any dtype ------------------------------------------------------------


def test_the_command_casts_the_model_and_its_inputs_to_dtype(capsys) -> None:
    assert main(["fxguide.models:TinyMLP", "--input", "2x4", "--dtype", "bfloat16", "--tools", "export",
                 "--format", "json"]) == 0
    assert "2x4 bfloat16" in capsys.readouterr().out


def test_inputs_made_for_the_diagnosis_follow_the_examples_device_and_dtype() -> None:
    example = ((torch.ones(2, 3, dtype=torch.float16), torch.ones(2, 3, device="meta")), {})
    (half, meta), _ = like(example, seed=1, batch=5)
    assert (half.dtype, half.shape[0], meta.device.type, meta.shape[0]) == (torch.float16, 5, "meta", 5)


def test_on_the_meta_device_a_diagnosis_says_it_cannot_compare_values() -> None:
    model = nn.Linear(4, 4, device="meta")
    row = examine(model, ((torch.ones(2, 4, device="meta"),), {}), tools=["symbolic_trace"])["symbolic_trace"]
    assert row.verdict == "not compared: tensors on the meta device hold no values"


def test_an_expanded_input_is_copied_by_its_storage_not_every_element() -> None:
    x = torch.ones(1, 4).expand(10**10, 4)
    (copy,), _ = clone(((x,), {}))
    assert copy.stride() == x.stride() and copy.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    with pytest.raises(ValueError, match="pass a smaller example or your own second input"):
        like(((x,), {}), seed=1)


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: examine(nn.LazyLinear(3), ((torch.ones(2, 4),), {})), ValueError,
     "lazy parameters not yet initialized .*call the model once"),
    (lambda: examine(nn.Linear(4, 4), X, tools=None), ValueError, "tools must be a non-empty list or tuple"),
    (lambda: diagnose.describe_inputs(None), TypeError, "inputs must be \\(args, kwargs\\)"),
    (lambda: diagnose.Diagnosis(None, None, results=None), TypeError, "model and inputs must be str"),
    (lambda: diagnose.captures.symbolic_trace(None, (), {}), TypeError, "model must be a torch.nn.Module"),
    (lambda: diagnose.captures.unbound_defaults(nn.Linear(1, 1), (1, 2, 3), {}), TypeError,
     "the inputs do not fit Linear.forward"),
    (lambda: diagnose.captures.batch_dims(None, (), {}), TypeError, "model must be a torch.nn.Module"),
    (lambda: diagnose.captures.export(nn.Linear(1, 1), "x", {}), TypeError, "args must be a tuple"),
])
def test_bad_arguments_to_diagnose_and_its_captures_say_what_was_wrong(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


def test_the_compare_submodule_stays_reachable_from_the_package() -> None:
    assert diagnose.compare.like is like


# -- a cause decided by where the error arose --------------------------------------------------


class OwnNumber(nn.Module):  # the model's own code turns tensor data into a Python int
    def forward(self, x):
        return x * len([0] * int(x.abs().argmax()))


def test_a_quantized_modules_specialized_integer_links_the_quantized_section_and_the_same_error_elsewhere_does_not():
    quantized = nn.Sequential(torch.ao.nn.quantized.Quantize(scale=0.1, zero_point=0, dtype=torch.quint8),
                              torch.ao.nn.quantized.DeQuantize())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized tensors are deprecated
        rows = [examine(model, ((torch.randn(2, 4),), {}), tools=["export_strict"])["export_strict"]
                for model in (quantized, OwnNumber())]
    assert all("Could not extract specialized integer" in row.error for row in rows), [r.error for r in rows]
    assert [row.section.anchor for row in rows] == ["diagnose-quantized", "export-real-check"]
    assert "frames" not in rows[0].record() and "frames" not in rows[0].to_dict()  # local paths stay out


def test_a_decode_step_given_its_cache_is_judged_each_call_on_its_own_copy_and_each_refusal_classified(llama) -> None:
    ids = torch.randint(0, 100, (2, 8))
    with torch.no_grad():
        filled = llama(ids).past_key_values  # a DynamicCache: each call appends to the one it is given
    keys = filled.layers[0].keys.clone()
    step = ((torch.randint(0, 100, (2, 1)),), {"past_key_values": filled})
    result = examine(llama, step, tools=["concrete_trace", "export", "export_dynamic_batch", "compile_fullgraph"])
    assert torch.equal(filled.layers[0].keys, keys), "the diagnosis changed the caller's cache"
    assert result["compile_fullgraph"].verdict == "matches eager", result  # not "nondeterministic": a copy per call
    for tool in ("export", "export_dynamic_batch"):  # the batch of 3 resizes the cache too, so it was tried
        assert result[tool].cause.name == "an output or input of a type export cannot flatten", result[tool].error
    assert result["concrete_trace"].cause.section.anchor == "concrete-traced-objects"
    assert "unclassified" not in str(result)


class Held:  # an object holding tensors, as a cache is one; not a pytree container
    def __init__(self, tensors, note="kept"):
        self.tensors, self.note = tensors, note


def test_clone_and_like_copy_the_tensors_an_object_holds_and_like_resizes_them_to_the_batch() -> None:
    held = Held([torch.ones(2, 3)])
    (copied,), _ = clone(((held,), {}))
    assert copied is not held and copied.tensors[0] is not held.tensors[0] and copied.note == "kept"
    assert torch.equal(copied.tensors[0], held.tensors[0])
    (x, other), _ = like(((torch.ones(2, 4), held), {}), seed=1, batch=5)
    assert x.shape == (5, 4) and other.tensors[0].shape == (5, 3) and not torch.equal(other.tensors[0][:2], held.tensors[0])
    assert held.tensors[0].shape == (2, 3) and Held([1]).tensors == clone(((Held([1]),), {}))[0][0].tensors


class Shifted(nn.Module):  # its second input has no batch dimension
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
        return self.linear(x) + shift


def test_a_dynamic_batch_row_not_tried_for_an_unbatched_input_links_the_batch_section_and_batch_lets_it_run() -> None:
    shift = torch.randn(4)
    example = ((torch.randn(2, 4), shift), {})
    row = examine(Shifted(), example, tools=["export_dynamic_batch"])["export_dynamic_batch"]
    assert row.verdict == "not tried" and row.error.startswith("eager fails on a batch of 3: RuntimeError: ")
    assert row.section.anchor == "diagnose-batch", row.cause

    def batch(size: int, seed: int):
        return (torch.randn(size, 4, generator=torch.Generator().manual_seed(seed)), shift), {}

    assert examine(Shifted(), example, batch=batch, tools=["export_dynamic_batch"])["export_dynamic_batch"].verdict \
        == "matches eager"


class ReturnsHolder(nn.Module):  # returns an object of a class FX cannot write into a graph
    def forward(self, x: torch.Tensor) -> Held:
        return Held([x + 1])


def test_symbolic_tracing_an_output_object_links_the_section_on_objects_and_the_concrete_tracer_rebuilds_it() -> None:
    result = examine(ReturnsHolder(), ((torch.randn(2, 3),), {}), tools=["symbolic_trace", "concrete_trace"])
    assert result["symbolic_trace"].error_type == "NotImplementedError", result
    assert result["symbolic_trace"].section.anchor == "concrete-traced-objects"
    assert result["concrete_trace"].verdict == "matches eager", result
