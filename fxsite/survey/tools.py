"""Survey one catalogue model: build it, make its inputs, and run it through :mod:`fxguide.diagnose`.

The capture tools, the comparison with eager, the time limit per tool and the
model put back after each tool are fxguide's (:func:`fxguide.diagnose.examine`):
the survey and a reader's own diagnosis run the same code. The survey adds the
catalogue's inputs (a batch of 1 from one seed to capture on, another seed to
compare on; batches of 2 and 3 for the dynamic-batch export) and a time limit
on building the model.

The survey's tools (:data:`TOOLS`) are a subset of the diagnosis's: it leaves
out strict export and ``torch.compile``, which would add about half again to a
run of the whole catalogue.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import torch

from fxguide.diagnose import EXAMPLE_SEED, OTHER_SEED, TIMEOUT, call, examine
from fxguide.diagnose.messages import describe
from fxguide.diagnose.safety import ToolTimeout, time_limit
from fxsite.survey.catalogue import Entry

TOOLS = ("symbolic_trace", "library_route", "concrete_trace", "export", "export_dynamic_batch")
# In fxguide.diagnose.TOOLS order: the library routes run last (their extractors switch the
# model to train mode and back, which resets mode-dependent caches).
RUN_ORDER = ("symbolic_trace", "concrete_trace", "export", "export_dynamic_batch", "library_route")

# The fields the sample test compares; timings, places and differences are not compared.
COMPARED = ("captured", "error_type", "error", "nodes", "matches", "mismatch")


def survey_model(entry: Entry, timeout: float = TIMEOUT) -> dict[str, Any]:
    """Build ``entry``'s model and run every tool on it; the record the survey stores."""
    record: dict[str, Any] = {"zoo": entry.zoo, "category": entry.category, "model": entry.name,
                              "input": entry.shape, "status": "surveyed", "reason": "", "tools": {}}
    if entry.skip:
        record.update(status="not surveyed", reason=entry.skip)
        return record
    start = time.perf_counter()
    try:
        with time_limit(timeout), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            model = entry.build().eval()
            record["params"] = sum(p.numel() for p in model.parameters())
            record["build_seconds"] = round(time.perf_counter() - start, 2)
            example, other = entry.make_inputs(1, EXAMPLE_SEED), entry.make_inputs(1, OTHER_SEED)
            t = time.perf_counter()
            call(model, example)
            eager_other = call(model, other)
            record["eager_seconds"] = round((time.perf_counter() - t) / 2, 3)
    except (Exception, ToolTimeout) as exc:
        record.update(status="not surveyed", reason="could not build or run eagerly: {}: {}".format(*describe(exc)))
        return record
    diagnosis = examine(model, example, other, batch=entry.make_inputs, tools=RUN_ORDER, timeout=timeout,
                        eager_other=eager_other)
    ran = {result.tool: result.record() for result in diagnosis.results}
    record["tools"] = {tool: ran.get(tool) for tool in RUN_ORDER}  # None: no library route for this zoo
    record["seconds"] = round(time.perf_counter() - start, 2)
    return record
