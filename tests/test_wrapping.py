"""torch.fx.wrap, module scope and decorator: recorded as one call, run on real values."""

from __future__ import annotations

import pytest
import torch
import torch.fx as fx

from fxguide.tracing import wrapping


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_module_scope_wrap_records_len():
    gm = fx.symbolic_trace(wrapping.divide_by_rows)
    assert len in _targets(gm)
    x = torch.ones(4, 2)
    torch.testing.assert_close(gm(x), x / 4)
    torch.testing.assert_close(gm(torch.ones(5, 2)), torch.full((5, 2), 0.2))


def test_decorated_helper_is_recorded_when_called_through_its_module():
    gm = fx.symbolic_trace(lambda x: x.reshape(-1, wrapping.as_int(x.shape[1] / 2), 2))
    assert any(getattr(t, "__name__", "") == "as_int" for t in _targets(gm))
    assert gm(torch.ones(3, 6)).shape == (3, 3, 2)
    assert gm(torch.ones(3, 8)).shape == (3, 4, 2)


def test_a_copy_imported_by_name_is_not_patched():
    from fxguide.tracing.wrapping import as_int

    with pytest.raises(TypeError, match="not 'Proxy'"):
        fx.symbolic_trace(lambda x: x.reshape(-1, as_int(x.shape[1] / 2), 2))


def test_all_of_checks_at_run_time():
    def f(x):
        torch._assert(wrapping.all_of(x.dim() == 2, x.shape[1] == 4), "expected (batch, 4)")
        return x

    gm = fx.symbolic_trace(f)
    gm(torch.ones(2, 4))
    with pytest.raises(AssertionError, match="expected"):
        gm(torch.ones(2, 3))
    with pytest.raises(ValueError):
        wrapping.all_of()


def test_fresh_noise_is_recorded_only_when_given_a_traced_argument():
    gm = fx.symbolic_trace(lambda x: x + wrapping.fresh_noise(x.shape[-1]))
    assert not torch.equal(gm(torch.zeros(3)), gm(torch.zeros(3)))
    # With only constant arguments a wrapped function runs at trace time: its result is baked in.
    for baked in (fx.symbolic_trace(lambda x: x + torch.randn(3)),
                  fx.symbolic_trace(lambda x: x + wrapping.fresh_noise(3))):
        assert torch.equal(baked(torch.zeros(3)), baked(torch.zeros(3)))
        assert hasattr(baked, "_tensor_constant0")
    with pytest.raises(ValueError):
        wrapping.fresh_noise(0)


def test_helpers_reject_bad_input():
    with pytest.raises(TypeError, match="as_int"):
        wrapping.as_int("x")
    with pytest.raises(TypeError, match="sizes_tensor"):
        wrapping.sizes_tensor([1, 2])
    with pytest.raises(TypeError, match="divide_by_rows"):
        wrapping.divide_by_rows([1, 2])
