"""Which models a survey run takes, and in which order (not what a model's record says).

Kept apart from :mod:`fxsite.survey.catalogue` and :mod:`fxsite.survey.tools`,
whose sources key every record (:func:`fxsite.survey.data.fxguide_key`): changing
the sample or the order of a run does not make the committed records stale.
"""

from __future__ import annotations

import re

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
