"""``python -m fxsite.survey [--sample] [--zoo Z] [--shard i/N] [-n N] [--out PATH]``: run the survey and merge it.

The models run as pytest tests (``fxsite/survey/zoo_tests.py``) sharded over
``-n`` pytest-xdist workers, each model limited by pytest-timeout; then the
records are merged into ``drift/torch-<version>/survey.json`` (or ``--out``).

``--shard i/N`` runs the i-th of N shards of the catalogue, balanced by the
models' recorded times, and writes ``_build/survey/shard-i-of-N.json`` (one
machine or CI job per shard). ``python -m fxsite.survey merge FILE... [--out PATH]``
combines the shard files of one run into the survey file; a missing or failed
shard is named, and makes the exit status 1.

``--timm-families`` surveys nothing: it prints the entries of
``fxsite.survey.catalogue.TIMM_MODELS`` for the installed timm (the smallest
model of each family), to paste into that file after timm changes;
``--hf-types`` likewise prints ``HF_TYPES`` and ``HF_NOT_BUILT`` (every model
type of the installed transformers, built small and run once, or the reason not).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from fxsite.drift.report import REFERENCE_TORCH
from fxsite.survey.catalogue import catalogue
from fxsite.survey.plan import SAMPLE, parse_shard, shards
from fxsite.survey.data import ROOT, ShardError, merge, merge_shards, records_dir, survey_path, versions

MODEL_TIMEOUT = 1800  # seconds for one model, all tools: past it the worker is replaced


def shard_keys(index: int, count: int, torch_version: str) -> list[str]:
    """The catalogue keys of shard ``index`` of ``count``, balanced by the committed survey's model times
    (this torch's survey, else the reference torch's)."""
    path = survey_path(torch_version)
    path = path if path.exists() else survey_path(REFERENCE_TORCH)
    seconds = ({f"{m['zoo']}/{m['model']}": m["seconds"] for m in json.loads(path.read_text())["models"] if "seconds" in m}
               if path.exists() else {})
    return shards(list(catalogue()), count, seconds)[index - 1]


def merge_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m fxsite.survey merge",
                                     description="combine the shard files of one survey run")
    parser.add_argument("files", nargs="+", type=Path, help="shard-i-of-N.json files (any order)")
    parser.add_argument("--out", type=Path, help="default: drift/torch-<version>/survey.json")
    options = parser.parse_args(argv)
    try:
        document = merge_shards([json.loads(path.read_text()) for path in options.files])
    except (ShardError, OSError, json.JSONDecodeError, KeyError) as exc:
        print(f"survey merge: {exc}", file=sys.stderr)
        return 2
    out = options.out or survey_path(document["versions"]["torch"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=1) + "\n")
    problems = document["shards"]["missing"] + document["shards"]["failed"]
    print(f"survey merge: {len(options.files)} of {document['shards']['count']} shards, "
          f"{sum(m['status'] == 'surveyed' for m in document['models'])} of {len(document['models'])} models surveyed -> {out}")
    for shard in document["shards"]["missing"]:
        print(f"survey merge: shard {shard} is missing: its models are listed as not surveyed", file=sys.stderr)
    for shard in document["shards"]["failed"]:
        print(f"survey merge: shard {shard}", file=sys.stderr)
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["merge"]:
        return merge_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m fxsite.survey", description=__doc__.splitlines()[0])
    parser.add_argument("--sample", action="store_true", help="only the fixed sample that `make test` re-runs")
    parser.add_argument("--zoo", action="append", choices=("torchvision", "timm", "transformers"),
                        help="only this zoo (repeatable); records of earlier runs are kept and merged")
    parser.add_argument("--model", action="append", metavar="ZOO/NAME",
                        help="only this model (repeatable), e.g. torchvision/resnet18")
    parser.add_argument("--shard", metavar="i/N", help="only the i-th of N shards balanced by recorded time")
    parser.add_argument("-n", "--workers", default="auto", help="pytest-xdist workers (default: auto)")
    parser.add_argument("--out", type=Path, help="the merged JSON (default: drift/torch-<version>/survey.json; "
                                                 "with --sample, _build/survey/sample.json)")
    parser.add_argument("--resume", action="store_true", help="skip the models that already have a record made by the current survey code")
    parser.add_argument("--merge-only", action="store_true", help="do not run anything: merge the records")
    parser.add_argument("--timm-families", action="store_true", help="print TIMM_MODELS for the installed timm")
    parser.add_argument("--hf-types", action="store_true",
                        help="print HF_TYPES and HF_NOT_BUILT for the installed transformers (minutes)")
    options = parser.parse_args(argv)
    if options.timm_families:
        from fxsite.survey.catalogue import smallest_timm_models

        for family, (name, params, size) in sorted(smallest_timm_models().items()):
            print(f'    "{family}": ("{name}", {params}, {size}),')
        return 0

    if options.hf_types:
        from fxsite.survey.catalogue import hf_types

        probed = hf_types()
        print("HF_TYPES: dict[str, tuple[str, str, int, int, int]] = {")
        print("\n".join(f"    {t!r}: {v!r}," for t, v in probed.items() if not isinstance(v, str)) + "\n}")
        print("HF_NOT_BUILT: dict[str, str] = {")
        print("\n".join(f"    {t!r}: {v!r}," for t, v in probed.items() if isinstance(v, str)) + "\n}")
        return 0

    torch_version = versions()["torch"]
    folder = records_dir(torch_version) / ("sample" if options.sample else "")
    folder.mkdir(parents=True, exist_ok=True)
    shard = keys = None
    if options.shard:
        try:
            shard = parse_shard(options.shard)
        except ValueError as exc:
            parser.error(str(exc))
        if options.sample or options.zoo or options.model:
            parser.error("--shard takes the whole catalogue: leave out --sample, --zoo and --model")
        keys = shard_keys(*shard, torch_version)
    parts = keys or (options.zoo or []) + (options.model or [])
    selection = "sample" if options.sample else ",".join(parts) if parts else "all"
    if not options.merge_only:
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--no-header",
                   "-o", "addopts=", "-n", str(options.workers), f"--timeout={MODEL_TIMEOUT}",
                   "--timeout-method=thread", str(Path(__file__).with_name("zoo_tests.py"))]
        env = {**os.environ, "FXSURVEY_SELECT": selection, "FXSURVEY_RECORDS": str(folder), "HF_HUB_OFFLINE": "1",
               "FXSURVEY_RESUME": "1" if options.resume else "0", "OMP_NUM_THREADS": "1"}
        start = time.time()
        done = subprocess.run(command, cwd=ROOT, env=env)
        run = {"selection": f"shard {options.shard}" if shard else selection, "workers": options.workers, "wall_seconds": round(time.time() - start, 1),
               "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start)), "pytest_exit": done.returncode}
        (folder / f"run-{int(start)}.json").write_text(json.dumps(run, indent=1) + "\n")
        print(f"survey: {selection} ran in {run['wall_seconds']:.0f} s on {options.workers} worker(s)")
    kept = chosen = None
    committed = survey_path(torch_version)
    if parts and not shard and not options.sample and not options.out and committed.exists():
        # a --zoo or --model run: the other models keep their committed records
        from fxsite.survey.zoo_tests import selected
        kept, chosen = json.loads(committed.read_text()), selected(selection)
    document = merge(folder, list(SAMPLE) if options.sample else keys, kept, chosen)
    if shard:
        document["shard"] = {"index": shard[0], "count": shard[1], "keys": keys, "all": list(catalogue())}
    default = (folder / "sample.json" if options.sample else
               folder.parent / f"shard-{shard[0]}-of-{shard[1]}.json" if shard else survey_path(torch_version))
    out = options.out or default
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"survey: {sum(m['status'] == 'surveyed' for m in document['models'])} of "
          f"{len(document['models'])} models surveyed -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
