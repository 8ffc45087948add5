"""The models of the export pages behave as the pages say, and refuse wrong arguments."""

from __future__ import annotations

import pytest
import torch

from fxguide.models.capture import JsonLogged, KeepFirst


def test_keep_first_caps_the_count_at_the_rows_in_eager():
    rows = torch.arange(5.0)
    assert KeepFirst()(rows, torch.tensor(2)).tolist() == [0.0, 2.0]
    assert KeepFirst()(rows, torch.tensor(9)).shape == (5,)
    with pytest.raises(RuntimeError):  # torch._check checks in eager too
        KeepFirst(checked=True)(rows, torch.tensor(9))


def test_keep_first_exports_only_with_the_check():
    rows, count = torch.arange(5.0), torch.tensor(3)
    with pytest.raises(torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode):
        torch.export.export(KeepFirst(), (rows, count))
    program = torch.export.export(KeepFirst(checked=True), (rows, count))
    assert program.module()(rows, torch.tensor(4)).tolist() == [0.0, 2.0, 4.0, 6.0]


def test_json_logged_prints_a_line_and_scales(capsys):
    assert JsonLogged(3)(torch.ones(2)).tolist() == [3.0, 3.0]
    assert capsys.readouterr().out == '{"rows": 2, "scale": 3.0, "input": "Tensor"}\n'


@pytest.mark.parametrize(("build", "says"), [
    (lambda: KeepFirst(checked=1), "checked must be a bool"),
    (lambda: JsonLogged("2"), "scale must be a number"),
    (lambda: JsonLogged(True), "scale must be a number"),
])
def test_wrong_arguments_are_refused_with_what_to_pass(build, says):
    with pytest.raises(TypeError, match=says):
        build()
