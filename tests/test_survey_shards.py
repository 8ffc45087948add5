"""The survey splits into shards that CI runs side by side, and merges back without losing a model."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fxsite.drift.report import REFERENCE_TORCH
from fxsite.survey.catalogue import catalogue
from fxsite.survey.data import ShardError, merge, merge_shards, record_path, survey_path
from fxsite.survey.plan import SAMPLE, shards


@pytest.fixture(scope="module")
def committed() -> dict[str, dict]:
    document = json.loads(survey_path(REFERENCE_TORCH).read_text())
    return {f"{m['zoo']}/{m['model']}": m for m in document["models"]}


@pytest.fixture
def sample_records(tmp_path, committed):
    """A records folder holding the committed records of the survey's fixed sample."""
    for key in SAMPLE:
        path = record_path(tmp_path, catalogue()[key])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(committed[key]))
    return tmp_path


def shard_documents(folder, keys: list[str], count: int, seconds: dict[str, float]) -> list[dict]:
    """What ``python -m fxsite.survey --shard i/N`` writes for each shard of ``keys``."""
    return [{**merge(folder, part), "shard": {"index": i, "count": count, "keys": part, "all": keys}}
            for i, part in enumerate(shards(keys, count, seconds), start=1)]


@pytest.mark.parametrize("count", [1, 2, 3, 8, 300])
def test_shards_partition_the_catalogue(count: int, committed) -> None:
    keys = list(catalogue())
    seconds = {k: m["seconds"] for k, m in committed.items() if "seconds" in m}
    parts = shards(keys, count, seconds)
    assert len(parts) == count
    flat = [k for part in parts for k in part]
    assert sorted(flat) == sorted(keys) and len(flat) == len(set(flat))
    loads = [sum(seconds.get(k, 0.0) for k in part) for part in parts]
    if count <= len(keys):  # no shard carries more than the lightest one plus its longest model
        assert max(loads) - min(loads) <= max(seconds.values())


def test_merging_the_shards_of_a_sample_equals_the_unsharded_document(sample_records, committed) -> None:
    keys = list(SAMPLE)
    whole = merge(sample_records, keys)
    merged = merge_shards(shard_documents(sample_records, keys, 3, {k: committed[k]["seconds"] for k in keys}))
    assert merged["shards"] == {"count": 3, "missing": [], "failed": []}
    for field in whole:
        if field != "runs":
            assert merged[field] == whole[field], field


def test_a_missing_shard_is_named_and_its_models_stay_listed(sample_records, committed) -> None:
    keys = list(SAMPLE)
    documents = shard_documents(sample_records, keys, 3, {k: committed[k]["seconds"] for k in keys})
    lost = documents.pop(1)["shard"]["keys"]
    merged = merge_shards(documents)
    assert merged["shards"]["missing"] == ["2/3"] and not merged["complete"]
    by_key = {f"{m['zoo']}/{m['model']}": m for m in merged["models"]}
    assert list(by_key) == keys and merged["missing"] == len(lost)
    assert all(by_key[k]["status"] == "not surveyed" and "shard(s) 2/3 missing" in by_key[k]["reason"] for k in lost)


def test_a_shard_whose_models_lack_records_is_named_as_failed(sample_records, committed) -> None:
    keys = list(SAMPLE)
    first = shards(keys, 2, {k: committed[k]["seconds"] for k in keys})[0]
    record_path(sample_records, catalogue()[first[0]]).unlink()
    merged = merge_shards(shard_documents(sample_records, keys, 2, {k: committed[k]["seconds"] for k in keys}))
    assert merged["shards"]["failed"] == [f"1/2: 1 of its {len(first)} models have no record"]
    assert merged["missing"] == 1


def test_shards_of_different_environments_or_runs_are_refused(sample_records, committed) -> None:
    keys = list(SAMPLE)
    documents = shard_documents(sample_records, keys, 2, {k: committed[k]["seconds"] for k in keys})
    documents[1]["versions"] = {**documents[1]["versions"], "torch": "0.0.0"}
    with pytest.raises(ShardError, match="shard 2/2 has versions"):
        merge_shards(documents)
    with pytest.raises(ShardError, match="given twice"):
        merge_shards([documents[0], documents[0]])


def test_the_merge_command_exits_1_and_names_a_missing_shard(sample_records, committed, tmp_path) -> None:
    keys = list(SAMPLE)
    documents = shard_documents(sample_records, keys, 3, {k: committed[k]["seconds"] for k in keys})
    files = []
    for document in documents[:2]:
        files.append(tmp_path / f"shard-{document['shard']['index']}-of-3.json")
        files[-1].write_text(json.dumps(document))
    out = tmp_path / "survey.json"
    done = subprocess.run([sys.executable, "-m", "fxsite.survey", "merge", *map(str, files), "--out", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert "shard 3/3 is missing" in done.stderr
    assert json.loads(out.read_text())["shards"]["missing"] == ["3/3"]


def test_a_run_of_one_zoo_keeps_the_other_zoos_committed_records(sample_records, committed) -> None:
    # the folder holds this run's records (the sample's transformers models); the rest comes from the committed survey
    document = json.loads(survey_path(REFERENCE_TORCH).read_text())
    chosen = [k for k in SAMPLE if k.startswith("transformers/")]
    for key in SAMPLE:
        if key not in chosen:
            record_path(sample_records, catalogue()[key]).unlink()
    merged = merge(sample_records, list(SAMPLE), document, chosen)
    by_key = {f"{m['zoo']}/{m['model']}": m for m in merged["models"]}
    assert merged["missing"] == 0 and all(by_key[k] == committed[k] for k in SAMPLE)
    assert all(run in merged["runs"] for run in document["runs"])
    # without the committed survey, the other zoos' models would be listed as not surveyed
    assert merge(sample_records, list(SAMPLE))["missing"] == len(SAMPLE) - len(chosen)


def test_a_selected_model_without_a_record_is_not_surveyed_never_its_old_record(sample_records) -> None:
    document = json.loads(survey_path(REFERENCE_TORCH).read_text())
    record_path(sample_records, catalogue()["transformers/gpt2"]).unlink()
    merged = merge(sample_records, list(SAMPLE), document, ["transformers/gpt2"])
    gpt2 = next(m for m in merged["models"] if m["model"] == "gpt2")
    assert gpt2["status"] == "not surveyed" and merged["missing"] == 1
    with pytest.raises(ValueError, match="give both kept"):
        merge(sample_records, list(SAMPLE), document)


def test_a_model_the_catalogue_skips_is_listed_with_its_reason_and_not_missing(tmp_path) -> None:
    skipped = next(e for e in catalogue().values() if e.skip)
    merged = merge(tmp_path, [skipped.key])
    assert merged["missing"] == 0 and merged["models"][0]["reason"] == skipped.skip
