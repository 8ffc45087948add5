"""The survey as pytest tests: one test per model, so pytest-xdist shards the zoos.

Run it through ``python -m fxsite.survey`` (``make survey``), which sets
``FXSURVEY_SELECT`` (``all``, ``sample`` or zoo names separated by commas) and
``FXSURVEY_RECORDS`` (the folder the records go to). The file name does not
start with ``test_``: a plain ``pytest`` run does not collect it.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from fxsite.survey.catalogue import ZOOS, catalogue
from fxsite.survey.plan import SAMPLE, run_order
from fxsite.survey.data import fxguide_key, is_current, record_path, records_dir, write_record
from fxsite.survey.tools import survey_model


def selected(selection: str) -> list[str]:
    """Catalogue keys for ``all``, ``sample`` or a comma-separated list of zoos and model keys."""
    keys = list(catalogue())
    if selection == "all":
        return keys
    if selection == "sample":
        return list(SAMPLE)
    names = [z.strip() for z in selection.split(",") if z.strip()]
    unknown = sorted(set(names) - set(ZOOS) - set(keys))
    if unknown:
        raise ValueError(f"FXSURVEY_SELECT: unknown {unknown}; expected 'all', 'sample', "
                         f"or zoos ({', '.join(ZOOS)}) and model keys (zoo/name)")
    return [k for k in keys if k in names or k.split("/")[0] in names]


def _folder() -> Path:
    return Path(os.environ.get("FXSURVEY_RECORDS") or records_dir())


def pytest_generate_tests(metafunc) -> None:
    if "model_key" in metafunc.fixturenames:
        keys = selected(os.environ.get("FXSURVEY_SELECT", "all"))
        if os.environ.get("FXSURVEY_RESUME") == "1":
            key = fxguide_key()
            keys = [k for k in keys if not is_current(record_path(_folder(), catalogue()[k]), key)]
        keys = run_order(keys)
        metafunc.parametrize("model_key", keys, ids=keys)


def test_model(model_key: str) -> None:
    # One intra-op thread per worker: workers share the cores, and oversubscribed
    # threads slow every model down many times over.
    torch.set_num_threads(1)
    entry = catalogue()[model_key]
    record = survey_model(entry)
    assert write_record(_folder(), entry, record).exists()
