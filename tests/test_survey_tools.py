"""One tool's side effects on the model never reach the tools run after it (the survey, through fxguide.diagnose)."""

from __future__ import annotations

import torch
from torch import nn

import fxguide.diagnose as diagnose
from fxsite.survey import tools
from fxsite.survey.catalogue import Entry


class TrainModeRaises(nn.Module):
    """A detection model's contract, in small: in train mode it wants targets."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, x):
        if self.training:
            raise AssertionError("targets should not be None when in training mode")
        return self.linear(x)


def entry() -> Entry:
    return Entry("torchvision", "test", "train_mode_raises", TrainModeRaises,
                 lambda batch, seed: ((torch.randn(batch, 3, generator=torch.Generator().manual_seed(seed)),), {}),
                 "x 1x3")


def test_a_tool_that_fails_in_train_mode_leaves_the_next_tools_an_eval_model(monkeypatch) -> None:
    def switches_to_train_and_fails(model, args, kwargs):
        model.train()
        raise RuntimeError("this capture failed halfway")

    monkeypatch.setitem(diagnose.CAPTURES, "symbolic_trace", switches_to_train_and_fails)
    record = tools.survey_model(entry())
    assert record["tools"]["symbolic_trace"]["error"] == "this capture failed halfway"
    for tool in ("concrete_trace", "export", "export_dynamic_batch"):
        assert record["tools"][tool]["matches"], (tool, record["tools"][tool])


def test_the_library_routes_run_after_every_other_tool() -> None:
    assert tools.RUN_ORDER[-1] == "library_route" and set(tools.RUN_ORDER) == set(tools.TOOLS)
    assert diagnose.TOOLS[-1] == "library_route"
    assert [t for t in diagnose.TOOLS if t in tools.RUN_ORDER] == list(tools.RUN_ORDER)
