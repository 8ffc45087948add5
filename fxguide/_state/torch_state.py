"""torch's and Python's global state that a call can change: modes, settings, global module hooks, random generators.

:class:`Settings` records torch's global settings (grad, inference and autocast modes, the default dtype,
deterministic algorithms, matmul precision, anomaly detection, the thread count) and its global module hook
registries (``torch.nn.modules.module._global_*``); :class:`Generators` records the random generators of
torch (the CPU's and every initialized CUDA device's), NumPy and Python. Each names what changed and puts it
back. The getters are bound when this module is imported, so they answer truly even while a tracer patches
``torch.is_grad_enabled`` and its kind.
"""

from __future__ import annotations

import functools
import random
import sys
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.modules import module as _module

_GET_RNG, _SET_RNG = torch.get_rng_state, torch.set_rng_state


def _autocast(device: str) -> tuple[bool, torch.dtype]:
    return torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)


def _set_autocast(device: str, state: tuple[bool, torch.dtype]) -> None:
    torch.set_autocast_enabled(device, state[0])
    torch.set_autocast_dtype(device, state[1])


def _deterministic() -> tuple[bool, bool]:
    return torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()


def _set_deterministic(state: tuple[bool, bool]) -> None:
    torch.use_deterministic_algorithms(state[0], warn_only=state[1])


def _anomaly() -> tuple[bool, bool]:
    return torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()


def _set_anomaly(state: tuple[bool, bool]) -> None:
    torch.set_anomaly_enabled(*state)


#: torch's global settings: (what it is, in words; how to read it; how to set it, or None where nothing can).
SETTINGS: tuple[tuple[str, Callable[[], Any], Callable[[Any], Any] | None], ...] = (
    ("grad mode (torch.is_grad_enabled())", torch.is_grad_enabled, torch._C._set_grad_enabled),
    ("inference mode (torch.is_inference_mode_enabled())", torch.is_inference_mode_enabled, None),
    ("autocast on the CPU (torch.is_autocast_enabled('cpu'))", functools.partial(_autocast, "cpu"),
     functools.partial(_set_autocast, "cpu")),
    ("autocast on CUDA (torch.is_autocast_enabled('cuda'))", functools.partial(_autocast, "cuda"),
     functools.partial(_set_autocast, "cuda")),
    ("the autocast cache (torch.is_autocast_cache_enabled())", torch.is_autocast_cache_enabled,
     torch.set_autocast_cache_enabled),
    ("the default dtype (torch.get_default_dtype())", torch.get_default_dtype, torch.set_default_dtype),
    ("deterministic algorithms (torch.use_deterministic_algorithms)", _deterministic, _set_deterministic),
    ("the float32 matmul precision (torch.set_float32_matmul_precision)", torch.get_float32_matmul_precision,
     torch.set_float32_matmul_precision),
    ("anomaly detection (torch.autograd.set_detect_anomaly)", _anomaly, _set_anomaly),
    ("the number of threads (torch.set_num_threads)", torch.get_num_threads, torch.set_num_threads),
)

#: torch's global module hook registries (register_module_forward_hook and its kind), by name.
HOOKS = tuple(name for name, value in vars(_module).items() if name.startswith("_global_") and isinstance(value, dict))
#: Those whose hooks run when a module is called (the others run when one is built).
CALL_HOOKS = tuple(name for name in HOOKS if "forward" in name or "backward" in name)


def hooks_registered() -> list[str]:
    """The global module hook registries a module call runs that hold hooks now."""
    return [name for name in CALL_HOOKS if getattr(_module, name)]


class Settings:
    """torch's global settings and global module hooks as they are now; :meth:`changes` names those that moved."""

    def __init__(self) -> None:
        self.values = [get() for _, get, _ in SETTINGS]
        self.hooks = {name: dict(getattr(_module, name)) for name in HOOKS}

    def changes(self) -> list[str]:
        found = [name for (name, get, _), value in zip(SETTINGS, self.values) if get() != value]
        found += [f"the global module hooks (torch.nn.modules.module.{name})" for name, saved in self.hooks.items()
                  if list(getattr(_module, name).items()) != list(saved.items())]
        return found

    def restore(self) -> None:
        for (_, get, put), value in zip(SETTINGS, self.values):
            if put is not None and get() != value:
                put(value)
        for name, saved in self.hooks.items():
            registry = getattr(_module, name)
            if list(registry.items()) != list(saved.items()):
                registry.clear()
                registry.update(saved)


def torch_rng() -> tuple[torch.Tensor, ...]:
    """The states of torch's default generators: the CPU's, and every initialized CUDA device's."""
    return (_GET_RNG(), *(torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else ()))


def same_rng(a: tuple[torch.Tensor, ...], b: tuple[torch.Tensor, ...]) -> bool:
    """Whether two :func:`torch_rng` results agree (on the devices both have: CUDA may be initialized in between)."""
    return all(torch.equal(x, y) for x, y in zip(a, b))


def _set_torch_rng(states: tuple[torch.Tensor, ...]) -> None:
    _SET_RNG(states[0])
    if len(states) > 1:
        torch.cuda.set_rng_state_all(states[1:])


class Generators:
    """The random generators of torch, NumPy (when imported) and Python as they are now."""

    TORCH = "torch's global random generator"
    PYTHON = "Python's random generator (the random module)"
    NUMPY = "NumPy's global random generator (numpy.random)"

    def __init__(self) -> None:
        self.torch = torch_rng()
        self.python = random.getstate()
        numpy = sys.modules.get("numpy")
        self.numpy = (numpy, numpy.random.get_state()) if numpy is not None else None

    def _numpy_moved(self) -> bool:
        if self.numpy is None:
            return False
        numpy, saved = self.numpy
        now = numpy.random.get_state()
        return not (numpy.array_equal(now[1], saved[1]) and now[0] == saved[0] and tuple(now[2:]) == tuple(saved[2:]))

    def changes(self) -> list[str]:
        """Which generators moved since they were recorded."""
        found = [] if same_rng(torch_rng(), self.torch) else [self.TORCH]
        found += [self.PYTHON] if random.getstate() != self.python else []
        return found + ([self.NUMPY] if self._numpy_moved() else [])

    def restore(self) -> None:
        _set_torch_rng(self.torch)
        random.setstate(self.python)
        if self.numpy is not None:
            self.numpy[0].random.set_state(self.numpy[1])
