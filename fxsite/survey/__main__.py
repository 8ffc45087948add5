"""``python -m fxsite.survey [--sample] [--zoo Z] [-n N] [--out PATH]``: run the survey and merge it.

The models run as pytest tests (``fxsite/survey/zoo_tests.py``) sharded over
``-n`` pytest-xdist workers, each model limited by pytest-timeout; then the
records are merged into ``drift/torch-<version>/survey.json`` (or ``--out``).

``--timm-families`` surveys nothing: it prints the entries of
``fxsite.survey.catalogue.TIMM_MODELS`` for the installed timm (the smallest
model of each family), to paste into that file after timm changes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from fxsite.survey.plan import SAMPLE
from fxsite.survey.data import ROOT, merge, records_dir, survey_path, versions

MODEL_TIMEOUT = 1800  # seconds for one model, all tools: past it the worker is replaced


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fxsite.survey", description=__doc__.splitlines()[0])
    parser.add_argument("--sample", action="store_true", help="only the fixed sample that `make test` re-runs")
    parser.add_argument("--zoo", action="append", choices=("torchvision", "timm", "transformers"),
                        help="only this zoo (repeatable); records of earlier runs are kept and merged")
    parser.add_argument("--model", action="append", metavar="ZOO/NAME",
                        help="only this model (repeatable), e.g. torchvision/resnet18")
    parser.add_argument("-n", "--workers", default="auto", help="pytest-xdist workers (default: auto)")
    parser.add_argument("--out", type=Path, help="the merged JSON (default: drift/torch-<version>/survey.json; "
                                                 "with --sample, _build/survey/sample.json)")
    parser.add_argument("--resume", action="store_true", help="skip the models that already have a record made by the current survey code")
    parser.add_argument("--merge-only", action="store_true", help="do not run anything: merge the records")
    parser.add_argument("--timm-families", action="store_true", help="print TIMM_MODELS for the installed timm")
    options = parser.parse_args(argv)
    if options.timm_families:
        from fxsite.survey.catalogue import smallest_timm_models

        for family, (name, params, size) in sorted(smallest_timm_models().items()):
            print(f'    "{family}": ("{name}", {params}, {size}),')
        return 0

    torch_version = versions()["torch"]
    folder = records_dir(torch_version) / ("sample" if options.sample else "")
    folder.mkdir(parents=True, exist_ok=True)
    parts = (options.zoo or []) + (options.model or [])
    selection = "sample" if options.sample else ",".join(parts) if parts else "all"
    if not options.merge_only:
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--no-header",
                   "-o", "addopts=", "-n", str(options.workers), f"--timeout={MODEL_TIMEOUT}",
                   "--timeout-method=thread", str(Path(__file__).with_name("zoo_tests.py"))]
        env = {**os.environ, "FXSURVEY_SELECT": selection, "FXSURVEY_RECORDS": str(folder), "HF_HUB_OFFLINE": "1",
               "FXSURVEY_RESUME": "1" if options.resume else "0", "OMP_NUM_THREADS": "1"}
        start = time.time()
        done = subprocess.run(command, cwd=ROOT, env=env)
        run = {"selection": selection, "workers": options.workers, "wall_seconds": round(time.time() - start, 1),
               "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start)), "pytest_exit": done.returncode}
        (folder / f"run-{int(start)}.json").write_text(json.dumps(run, indent=1) + "\n")
        print(f"survey: {selection} ran in {run['wall_seconds']:.0f} s on {options.workers} worker(s)")
    document = merge(folder, list(SAMPLE) if options.sample else None)
    out = options.out or (folder / "sample.json" if options.sample else survey_path(torch_version))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=1) + "\n")
    print(f"survey: {sum(m['status'] == 'surveyed' for m in document['models'])} of "
          f"{len(document['models'])} models surveyed -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
