"""fxguide.diagnose: every tool on the reader's model, each failure classified and linked, the model left as it was."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import fxguide
import fxguide.diagnose as diagnose
from fxguide.diagnose import causes, examine, messages, safety
from fxguide.diagnose.__main__ import main
from fxguide.diagnose.compare import like
from fxguide.diagnose.safety import Snapshot
from fxguide.models import TinyMLP

FAST = ("symbolic_trace", "concrete_trace", "export")


class Branchy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:  # a branch on data: symbolic_trace refuses it
            return self.linear(x)
        return -x


class Caching(nn.Module):
    """Fills a list and a dict on each call, and rebinds an attribute: the side effects a cache has."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.seen: list[int] = []
        self.cache: dict[str, torch.Tensor] = {}
        self.table = None

    def forward(self, x):
        self.seen.append(1)
        self.cache["last"] = x
        self.table = torch.ones(1)
        return self.linear(x)


def test_the_package_is_callable_and_a_model_every_tool_handles_is_ok() -> None:
    result = fxguide.diagnose(TinyMLP(), torch.randn(2, 4))
    assert [r.tool for r in result.results] == [t for t in diagnose.TOOLS if t != "library_route"]
    assert result.ok and all(r.verdict == "matches eager" and r.nodes for r in result.results)
    assert "TinyMLP on 2x4 float32" in str(result)


def test_a_failure_has_its_type_its_line_in_the_model_a_cause_and_a_guide_section() -> None:
    result = examine(Branchy(), ((torch.randn(2, 4),), {}), tools=FAST)
    row = result["symbolic_trace"]
    assert (row.captured, row.error_type) == (False, "TraceError")
    line = Branchy.forward.__code__.co_firstlineno + 1
    assert row.where == f"tests/test_diagnose.py:{line} in forward"
    assert row.cause.name == "control flow on a traced value"
    assert row.section.path == "reference/errors.html#error-control-flow"
    assert row.section.url() == causes.published_site() + "reference/errors.html#error-control-flow"
    assert not result.ok and result["export"].cause.name == "a branch on data"


def test_an_unclassified_failure_points_to_the_tools_own_section(monkeypatch) -> None:
    def fails(model, args, kwargs):
        raise RuntimeError("a message no cause class knows")

    monkeypatch.setitem(diagnose.CAPTURES, "export", fails)
    row = examine(TinyMLP(), ((torch.randn(2, 4),), {}), tools=["export"])["export"]
    assert row.cause is None and row.section == causes.TOOL_SECTIONS["export"]
    assert json.loads(diagnose.Diagnosis("m", "x", [row]).to_json())["tools"][0]["cause"] == "unclassified"


def test_a_tool_past_its_time_limit_times_out_and_the_next_tool_still_runs(monkeypatch) -> None:
    def hangs(model, args, kwargs):
        time.sleep(30)

    monkeypatch.setitem(diagnose.CAPTURES, "symbolic_trace", hangs)
    start = time.perf_counter()
    # 4 s: the tools that follow must finish within it on a loaded machine (export took over 0.5 s under a full
    # test run, and an export stopped half-way leaves torch's patches in place for later tests)
    result = examine(TinyMLP(), ((torch.randn(2, 4),), {}), tools=FAST, timeout=4)
    assert time.perf_counter() - start < 25
    assert (result["symbolic_trace"].error_type, result["symbolic_trace"].error) == ("Timeout", "took longer than 4 s")
    assert result["concrete_trace"].ok and result["export"].ok


def test_whatever_a_tool_raises_becomes_its_row(monkeypatch) -> None:
    def recurses(model, args, kwargs):
        return recurses(model, args, kwargs)

    monkeypatch.setitem(diagnose.CAPTURES, "symbolic_trace", recurses)
    result = examine(TinyMLP(), ((torch.randn(2, 4),), {}), tools=FAST)
    assert result["symbolic_trace"].error_type == "RecursionError"
    assert result["concrete_trace"].ok


def test_a_tool_that_changes_the_model_and_fails_leaves_it_as_it_was(monkeypatch) -> None:
    model = Caching()
    relu, weight = F.relu, model.linear.weight.detach().clone()
    attributes = dict(vars(model))

    def vandal(model, args, kwargs):
        model.train()
        model.extra = "left behind"
        del model.table
        model.seen.extend([7, 8])
        model.cache["junk"] = torch.zeros(1)
        with torch.no_grad():
            model.linear.weight.mul_(0)
        F.relu = lambda x: x  # a patched torch function
        raise RuntimeError("failed halfway")

    monkeypatch.setitem(diagnose.CAPTURES, "symbolic_trace", vandal)
    model.eval()
    result = examine(model, ((torch.randn(2, 4),), {}), tools=("symbolic_trace", "concrete_trace", "export"))
    assert F.relu is relu, "the patched torch function was not put back"
    assert not model.training and vars(model).keys() == attributes.keys()
    assert model.table is None and model.seen == [] and model.cache == {}
    assert torch.equal(model.linear.weight, weight)
    assert result.unchanged and result["export"].ok
    # The concrete tracer refuses a model whose forward grows a list it holds (a graph would not grow it).
    assert result["concrete_trace"].error_type == "UnguardableError" and "self.seen" in result["concrete_trace"].error


def test_snapshot_names_what_changed_before_it_puts_it_back() -> None:
    model = Caching()
    snapshot = Snapshot(model)
    model(torch.randn(2, 4))
    found = snapshot.differences()
    assert "the model: attribute 'table' rebound" in found
    assert "the contents of a list the model holds changed" in found
    assert "the contents of a dict the model holds changed" in found
    snapshot.restore()
    assert snapshot.differences() == []


def test_snapshot_puts_back_a_function_fx_wrap_registered_in_another_module(monkeypatch) -> None:
    # Tracing patches what torch.fx.wrap registered while it runs; a tool stopped half-way leaves the patch.
    from torch.fx import _symbolic_trace as fx_trace
    monkeypatch.setattr(fx_trace, "_wrapped_fns_to_patch", dict(fx_trace._wrapped_fns_to_patch))
    helpers = type(sys)("fxguide_test_wrapped_helpers")
    monkeypatch.setitem(sys.modules, helpers.__name__, helpers)
    exec("import torch.fx\ndef scale(x):\n    return x * 2\ntorch.fx.wrap('scale')\n", vars(helpers))
    original = helpers.scale
    snapshot = Snapshot(TinyMLP())
    helpers.scale = lambda x: x  # what an interrupted trace leaves behind
    assert f"{helpers.__name__}.scale changed" in snapshot.differences()
    snapshot.restore()
    assert helpers.scale is original and snapshot.differences() == []


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda: examine(lambda x: x, ((torch.ones(1),), {})), TypeError, "model must be a torch.nn.Module"),
    (lambda: examine(TinyMLP(), ((torch.ones(2, 4),), {}), tools="export"), ValueError, "tools must be"),
    (lambda: examine(TinyMLP(), ((torch.ones(2, 4),), {}), tools=["trace"]), ValueError, "tools must be"),
    (lambda: examine(TinyMLP(), ((torch.ones(2, 4),), {}), timeout=True), ValueError, "timeout must be"),
    (lambda: examine(TinyMLP(), (torch.ones(2, 4),)), TypeError, "inputs must be \\(args, kwargs\\)"),
    (lambda: examine(TinyMLP(), ((torch.ones(2, 4),), {}), batch=3), TypeError, "batch must be a function"),
    (lambda: like(((torch.ones(1),), {}), seed=True), TypeError, "seed must be an int"),
    (lambda: like(((torch.ones(1),), {}), seed=0, batch=0), ValueError, "batch must be a positive int"),
    (lambda: like(torch.ones(1), seed=0), TypeError, "inputs must be \\(args, kwargs\\)"),
    (lambda: diagnose.run_tool("trace", TinyMLP(), ((), {}), ((), {}), None), ValueError, "unknown tool 'trace'"),
    (lambda: diagnose.call(5, ((), {})), TypeError, "module must be callable"),
    (lambda: Snapshot("model"), TypeError, "model must be a torch.nn.Module"),
    (lambda: causes.classify(None), TypeError, "text, tool and traceback must be str"),
    (lambda: causes.classify("TraceError: x", traceback=None), TypeError, "text, tool and traceback must be str"),
    (lambda: messages.normalize(b"bytes"), TypeError, "message must be a str"),
    (lambda: messages.origin("not an exception"), TypeError, "exc must be an exception"),
    (lambda: safety.time_limit("1").__enter__(), ValueError, "seconds must be a number"),
])
def test_bad_arguments_say_what_was_wrong(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


def test_the_second_input_keeps_structure_dtypes_and_valid_token_ids() -> None:
    ids = torch.tensor([[3, 9, 4]])
    (x, [y]), kwargs = like(((torch.zeros(1, 3), [ids]), {"mask": torch.ones(1, 3, dtype=torch.bool)}), seed=1, batch=3)
    assert x.shape == (3, 3) and not torch.equal(x, torch.zeros(3, 3))
    assert y.shape == (1, 3), "a tensor inside a list keeps its size (the list's length is the batch)"
    assert y.dtype == torch.int64 and 3 <= int(y.min()) and int(y.max()) <= 9
    assert kwargs["mask"].dtype == torch.bool and kwargs["mask"].shape == (3, 3)


def test_markdown_escapes_cells_and_links_to_the_guide() -> None:
    row = diagnose.ToolResult("symbolic_trace", captured=False, error_type="TraceError",
                              error="symbolically traced variables cannot be used as inputs to control flow | x")
    text = diagnose.Diagnosis("A|B", "1x3 float32", [row]).to_markdown()
    assert "A\\|B" in text and "flow \\| x" in text
    assert "](" + causes.published_site() + "reference/errors.html#error-control-flow)" in text


def test_every_cause_of_the_reference_survey_has_a_class_and_a_section() -> None:
    from fxsite.drift.report import REFERENCE_TORCH
    from fxsite.survey.causes import causes as survey_causes
    from fxsite.survey.data import survey_path

    models = json.loads(survey_path(REFERENCE_TORCH).read_text())["models"]
    unclassified = [f"{c.stage}: {c.example} ({', '.join(c.models)})" for c in survey_causes(models) if c.link is None]
    assert not unclassified, "add a cause class to fxguide/diagnose/causes.py for:\n" + "\n".join(unclassified)


def test_every_guide_section_a_cause_or_tool_links_to_exists_in_the_built_site(built_site: Path) -> None:
    sections = {cause.section for cause in causes.CAUSES} | set(causes.TOOL_SECTIONS.values())
    missing = []
    for section in sorted(sections, key=lambda s: s.path):
        page = built_site / "html" / f"{section.page}.html"
        if not page.is_file():
            missing.append(f"{section.path}: no page")
        elif section.anchor and not re.search(rf'id="{re.escape(section.anchor)}"', page.read_text()):
            missing.append(f"{section.path}: no element with that id")
    assert not missing, missing


# -- the command ------------------------------------------------------------------------


def test_the_command_exits_0_when_every_tool_matches_and_1_when_one_fails(capsys) -> None:
    assert main(["fxguide.models:TinyMLP", "--input", "2x4", "--tools", ",".join(FAST)]) == 0
    assert "matches eager" in capsys.readouterr().out
    assert main(["fxguide.models.dynamic:DataBranch", "--input", "2x4", "--tools", "symbolic_trace",
                 "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["tools"][0]["error_type"] == "TraceError"


def test_the_command_reads_a_python_file_that_defines_the_model_and_its_inputs(tmp_path, capsys) -> None:
    file = tmp_path / "mine.py"
    file.write_text("import torch\nmodel = torch.nn.Linear(3, 2)\nexample_inputs = (torch.ones(5, 3),)\n")
    assert main([str(file), "--tools", "export", "--format", "markdown"]) == 0
    assert "| export, non-strict | matches eager |" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["no.such.module:f", "--input", "2"], "cannot import 'no.such.module'"),
    (["fxguide.models:TinyMLP"], "gives no inputs: pass --input SHAPE"),
    (["fxguide.models:TinyMLP", "--input", "2xa"], "a shape is sizes joined by x"),
    (["fxguide.models:TinyMLP", "--input", "2x4:int8"], "unknown dtype 'int8'"),
    (["fxguide.models:TinyMLP", "--input", "2x4", "--tools", "trace"], "unknown ['trace']"),
])
def test_the_command_exits_2_and_says_what_to_pass_when_it_cannot_make_the_model(argv, message, capsys) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_the_command_runs_as_a_module() -> None:
    done = subprocess.run([sys.executable, "-m", "fxguide.diagnose", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--input" in done.stdout
    assert math.isfinite(diagnose.TIMEOUT)


class WritesIntoItsInput(nn.Module):
    def forward(self, x):
        x.add_(1)
        return x * 2


def test_a_model_that_writes_into_its_input_is_compared_on_fresh_copies() -> None:
    x = torch.randn(2, 3)
    before = x.clone()
    result = examine(WritesIntoItsInput(), ((x,), {}), tools=FAST)
    assert result.ok, [(r.tool, r.verdict) for r in result.results]
    assert torch.equal(x, before), "the reader's example was written into"


def test_an_output_that_cannot_be_compared_is_a_failed_comparison_not_a_crash() -> None:
    import dataclasses

    @dataclasses.dataclass
    class Out:
        y: torch.Tensor

    class ReturnsADataclass(nn.Module):
        def forward(self, x):
            return Out(x + 1)

    row = examine(ReturnsADataclass(), ((torch.randn(2, 3),), {}), tools=["symbolic_trace"])["symbolic_trace"]
    assert row.ok  # compared field by field


def test_a_model_that_fails_eagerly_on_the_example_raises_its_own_error_with_a_note() -> None:
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied") as raised:
        diagnose.diagnose(nn.Linear(5, 5), torch.randn(2, 3))
    assert any("in eager mode on the example inputs" in note for note in raised.value.__notes__)


def test_the_dynamic_batch_row_resizes_tensors_passed_directly_and_keeps_lists_static() -> None:
    class Stacks(nn.Module):
        def forward(self, xs, y):
            return torch.stack(xs).sum(0) + y.sum()

    result = examine(Stacks(), (([torch.randn(2, 3), torch.randn(2, 3)], torch.randn(4, 3)), {}),
                     tools=["export_dynamic_batch"])
    assert result.ok, result["export_dynamic_batch"].verdict


def test_below_float32_a_large_element_does_not_widen_a_small_elements_tolerance():
    from fxguide.diagnose.compare import compare

    reference = torch.tensor([100.0, 0.01], dtype=torch.float64)
    eager = reference.to(torch.bfloat16)
    wrong = torch.tensor([100.0, 0.06], dtype=torch.bfloat16)  # the small element is off by five times its size
    assert compare(eager, eager, reference) == ""
    assert compare(wrong, eager, reference) != "", "the 0.05 error at a 0.01 element must not pass"
    nudged = eager.clone()
    nudged[0] += 0.5  # one unit of bfloat16's precision at 100: within the large element's own tolerance
    assert compare(nudged, eager, reference) == ""


def test_run_tool_and_release_refuse_what_they_cannot_use():
    from fxguide._torch_range import release
    from fxguide.diagnose import run_tool

    x = ((torch.ones(2),), {})
    with pytest.raises(TypeError, match="model must be an nn.Module or a function"):
        run_tool("symbolic_trace", None, x, x, torch.ones(2))
    for parts in (-1, 0, True, 1.5):
        with pytest.raises(ValueError, match="parts must be a positive int"):
            release("2.14.1", parts=parts)


class _CountsCalls(nn.Module):
    calls = 0  # a class attribute a forward changes
    seen: list = []  # a container held by the class

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.generator = torch.Generator().manual_seed(0)  # drawn from in forward

    def forward(self, x):
        type(self).calls += 1
        type(self).seen.append(x.shape[0])
        return self.linear(x) + torch.rand(x.shape, generator=self.generator)


def test_a_snapshot_puts_back_class_attributes_and_a_model_owned_generator():
    from fxguide.diagnose.safety import Snapshot

    model = _CountsCalls()
    state = model.generator.get_state()
    snapshot = Snapshot(model)
    model(torch.ones(2, 3))
    found = snapshot.differences()
    assert any("calls changed" in line for line in found), found
    assert any("list the model holds changed" in line for line in found), found
    assert any("torch.Generator" in line for line in found), found
    snapshot.restore()
    assert _CountsCalls.calls == 0 and _CountsCalls.seen == [] and torch.equal(model.generator.get_state(), state)
    assert snapshot.differences() == []
