"""A fixed sample of the model-zoo survey re-runs through fxguide.diagnose and must reproduce the committed results.

The sample (``fxsite.survey.plan.SAMPLE``) spans the three zoos and the
outcomes (captured, failed, captured but different from eager). Each model is
diagnosed again here, with every tool of :data:`fxguide.diagnose.TOOLS` and the
catalogue's inputs, and compared, tool by tool, with
``drift/torch-<version>/survey.json`` for the installed torch (the reference
torch's file when this torch has none yet): whether it captured, the error,
the node count and the comparison with eager. Timings are not compared. The
same run checks that the diagnosis left the model exactly as it was.
"""

from __future__ import annotations

import json

import pytest
import torch

import fxguide.diagnose as diagnose
from fxsite.drift.report import REFERENCE_TORCH
from fxsite.survey import data
from fxsite.survey.catalogue import ZOOS, catalogue
from fxsite.survey.plan import SAMPLE
from fxsite.survey.data import survey_path, versions
from fxsite.survey.tools import COMPARED, EXAMPLE_SEED, OTHER_SEED, RUN_ORDER


@pytest.fixture(scope="module")
def committed_survey() -> tuple[str, dict]:
    torch_version = versions()["torch"]
    path = survey_path(torch_version)
    if not path.exists():
        path = survey_path(REFERENCE_TORCH)
    models = json.loads(path.read_text())["models"]
    return str(path.relative_to(path.parents[2])), {m["zoo"] + "/" + m["model"]: m for m in models}


def compared(record: dict) -> dict:
    """The part of a model's record that a re-run must reproduce (no timings)."""
    tools = {tool: (None if result is None else {k: result.get(k) for k in COMPARED})
             for tool, result in record.get("tools", {}).items()}
    return {"status": record["status"], "reason": record.get("reason", ""), "tools": tools}


def diff(committed: dict, now: dict) -> list[str]:
    """Readable differences between two compared records, one line per changed field.

    >>> diff({"status": "surveyed", "reason": "", "tools": {"export": {"nodes": 3}}},
    ...      {"status": "surveyed", "reason": "", "tools": {"export": {"nodes": 4}}})
    ['export.nodes: committed 3, now 4']
    """
    lines = [f"{field}: committed {committed[field]!r}, now {now[field]!r}"
             for field in ("status", "reason") if committed[field] != now[field]]
    for tool in sorted(set(committed["tools"]) | set(now["tools"])):
        old, new = committed["tools"].get(tool), now["tools"].get(tool)
        if old is None or new is None:
            if old != new:
                lines.append(f"{tool}: committed {json.dumps(old)}, now {json.dumps(new)}")
            continue
        lines += [f"{tool}.{key}: committed {old.get(key)!r}, now {new.get(key)!r}"
                  for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]
    return lines


def test_the_sample_spans_every_zoo_and_is_small() -> None:
    assert {key.split("/")[0] for key in SAMPLE} == set(ZOOS)
    assert 8 <= len(SAMPLE) <= 12
    assert set(SAMPLE) <= set(catalogue())


def state(model: torch.nn.Module) -> dict:
    """What a diagnosis must leave as it was, read independently of fxguide's Snapshot."""
    return {
        "tensors": {k: v.detach().clone() for k, v in model.state_dict(keep_vars=True).items()
                    if isinstance(v, torch.Tensor)},
        "modules": {name: (m.training, {k: id(v) for k, v in vars(m).items()})
                    for name, m in model.named_modules(remove_duplicate=False)},
        "functional": dict(vars(torch.nn.functional)),
    }


def changes(before: dict, after: dict) -> list[str]:
    found = [f"module {name!r} changed (mode or attributes)" for name in before["modules"]
             if before["modules"][name] != after["modules"].get(name)]
    found += [f"{key} changed" for key, value in before["tensors"].items()
              if key not in after["tensors"] or not torch.equal(value, after["tensors"][key])]
    found += [f"torch.nn.functional.{name} changed" for name, value in before["functional"].items()
              if after["functional"].get(name) is not value]
    return found


@pytest.mark.long  # every tool of fxguide.diagnose on one model: 5 to 20 s each
@pytest.mark.parametrize("model_key", SAMPLE)
def test_a_sample_model_diagnoses_as_its_committed_survey_record_and_is_left_unchanged(
        model_key: str, committed_survey) -> None:
    source, models = committed_survey
    assert model_key in models, f"{model_key} is not in {source}: run `python -m fxsite.survey` and commit it"
    entry = catalogue()[model_key]
    torch.manual_seed(0)
    model = entry.build().eval()
    before = state(model)
    result = diagnose.examine(model, entry.make_inputs(1, EXAMPLE_SEED), entry.make_inputs(1, OTHER_SEED),
                              batch=entry.make_inputs, tools=diagnose.TOOLS)
    assert not changes(before, state(model)) and result.unchanged, changes(before, state(model))
    ran = {r.tool: r.record() for r in result.results}
    assert {"export_strict", "compile_fullgraph"} <= set(ran)  # the diagnosis's own rows ran too
    now = compared({"status": "surveyed", "reason": "", "tools": {tool: ran.get(tool) for tool in RUN_ORDER}})
    changes_ = diff(compared(models[model_key]), now)
    assert not changes_, (f"{model_key} surveys differently from {source}:\n  " + "\n  ".join(changes_)
                          + "\nIf torch changed on purpose, re-run `make survey` and commit the new survey.json.")


def test_records_are_keyed_on_the_code_that_surveys_and_nothing_else() -> None:
    sources = {p.relative_to(data.ROOT).as_posix() for p in data.survey_sources()}
    assert {"fxsite/survey/tools.py", "fxsite/survey/catalogue.py", "fxguide/diagnose/captures.py",
            "fxguide/diagnose/compare.py", "fxguide/diagnose/safety.py"} <= sources
    # the concrete tracer is a package: every one of its files decides what concrete_trace gives
    tracer = {p.relative_to(data.ROOT).as_posix() for p in (data.ROOT / "fxguide/tracing/concrete").glob("*.py")}
    assert len(tracer) > 1 and tracer <= sources, tracer - sources
    # merging and rendering records, the links of causes, and fxguide's teaching modules do not
    # change what a model gives
    assert not sources & {"fxsite/survey/data.py", "fxsite/survey/causes.py", "fxguide/display/__init__.py",
                          "fxguide/diagnose/causes.py", "fxguide/_torch_range.py"}


def test_resume_reruns_a_record_made_by_other_survey_code(tmp_path) -> None:
    current, other, missing = tmp_path / "current.json", tmp_path / "other.json", tmp_path / "missing.json"
    current.write_text(json.dumps({"model": "m", "fxguide": data.fxguide_key()}))
    other.write_text(json.dumps({"model": "m", "fxguide": "0123456789ab"}))
    assert data.is_current(current)
    assert not data.is_current(other) and not data.is_current(missing)


@pytest.fixture
def without_torchvision(monkeypatch):
    """The catalogue as a torch without a torchvision build sees it (a drift target, for example)."""
    from fxsite.survey import catalogue as catalogue_module

    real = catalogue_module.importlib.import_module

    def import_module(name, *args):
        if name.split(".")[0] in {"torchvision", "timm"}:
            raise ModuleNotFoundError(f"No module named {name.split('.')[0]!r}")
        return real(name, *args)

    for cached in (catalogue_module.catalogue, catalogue_module.unavailable_zoos):
        cached.cache_clear()
    monkeypatch.setattr(catalogue_module.importlib, "import_module", import_module)
    yield
    for cached in (catalogue_module.catalogue, catalogue_module.unavailable_zoos):
        cached.cache_clear()


def test_a_zoo_whose_library_does_not_import_is_named_unavailable_not_hidden(without_torchvision, tmp_path):
    from fxsite.survey.catalogue import unavailable_zoos

    assert set(unavailable_zoos()) == {"torchvision", "timm"}
    assert {key.split("/")[0] for key in catalogue()} == {"transformers"}
    document = data.merge(tmp_path)
    assert document["unavailable"]["torchvision"] == "ModuleNotFoundError: No module named 'torchvision'"
    assert document["complete"] is False  # no record yet, and two zoos unavailable
