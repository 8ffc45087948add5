"""Which models a survey run takes, and in which order (not what a model's record says).

Kept apart from :mod:`fxsite.survey.catalogue` and :mod:`fxsite.survey.tools`,
whose sources key every record (:func:`fxsite.survey.data.fxguide_key`): changing
the sample or the order of a run does not make the committed records stale.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping

from fxsite.survey.catalogue import ZOOS

# A fixed sample, fast to run, that spans the zoos, categories and outcomes: `make test`
# re-runs it and compares with the committed survey (tests/test_survey_sample.py).
SAMPLE: tuple[str, ...] = (
    "transformers/distilbert", "transformers/gpt2", "transformers/whisper",
    "timm/cspnext_tiny", "timm/crossvit_tiny_240",
    "torchvision/squeezenet1_1", "torchvision/mobilenet_v3_small", "torchvision/r3d_18",
)

# Slow to build or to capture on a CPU: surveyed after the others, so that a survey
# stopped early still covers every zoo and category.
_SLOW = re.compile(r"128gf|32gf|16gf|vit_h|vit_l|101|wide_|_b7|_v2_l|(?<!v3_)large|swin3d_b|swin_v2_b|swin_b|mvit|"
                   r"maskrcnn|keypointrcnn|vgg1[69]")


def run_order(keys: list[str]) -> list[str]:
    """``keys`` interleaved zoo by zoo (transformers, timm, torchvision), slow models last.

    >>> run_order(["torchvision/a", "torchvision/vit_h_14", "torchvision/b", "timm/x", "transformers/y"])
    ['transformers/y', 'timm/x', 'torchvision/a', 'torchvision/b', 'torchvision/vit_h_14']
    """
    slow = [k for k in keys if _SLOW.search(k)]
    queues = [[k for k in keys if k.startswith(zoo + "/") and k not in slow] for zoo in reversed(ZOOS)]
    ordered = []
    while any(queues):
        ordered += [queue.pop(0) for queue in queues if queue]
    return ordered + slow


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/N"`` as ``(i, N)``, 1 <= i <= N.

    >>> parse_shard("2/8")
    (2, 8)
    >>> parse_shard("9/8")
    Traceback (most recent call last):
    ...
    ValueError: shard '9/8': expected i/N with 1 <= i <= N, e.g. 1/8
    """
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    index, count = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
    if not 1 <= index <= count:
        raise ValueError(f"shard {text!r}: expected i/N with 1 <= i <= N, e.g. 1/8")
    return index, count


def shards(keys: list[str], count: int, seconds: Mapping[str, float]) -> list[list[str]]:
    """``keys`` split into ``count`` shards of about equal recorded time.

    Longest first, each model to the shard with the least time so far (a model
    with no recorded time counts as the median of the others). Every key is in
    exactly one shard; the split depends only on the keys and the times.

    >>> shards(["a", "b", "c", "d"], 2, {"a": 9.0, "b": 5.0, "c": 4.0, "d": 1.0})
    [['a', 'd'], ['b', 'c']]
    """
    if count < 1:
        raise ValueError(f"shards: count must be at least 1, got {count}")
    known = [seconds[k] for k in keys if k in seconds]
    default = statistics.median(known) if known else 1.0
    cost = {k: float(seconds.get(k, default)) for k in keys}
    loads: list[tuple[float, int, list[str]]] = [(0.0, i, []) for i in range(count)]
    for key in sorted(keys, key=lambda k: (-cost[k], k)):
        total, i, members = min(loads)
        members.append(key)
        loads[i] = (total + cost[key], i, members)
    return [members for _, _, members in sorted(loads, key=lambda load: load[1])]
