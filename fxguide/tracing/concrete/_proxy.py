"""The proxies of a concrete trace: each conversion to a Python value is answered from the example and recorded."""

from __future__ import annotations

import operator
import sys
from collections.abc import Iterator
from typing import Any

import torch
import torch.fx as fx
from torch.fx.proxy import Attribute
from torch.utils import _pytree as pytree

from fxguide.tracing.concrete._frames import _is_user_frame

#: Tensor attributes answered with their real value (and guarded): they depend on
#: the input's dtype and device only, and code passes them to functions that
#: need real objects (``torch.finfo(x.dtype)``, ``torch.autocast(x.device.type)``).
_CONCRETE_ATTRIBUTES = frozenset({"dtype", "device", "layout", "is_cuda", "is_sparse", "is_quantized", "is_meta"})


class _ConcreteMixin:
    """Conversions to Python values, answered from the example's value and recorded."""

    tracer: Any  # the ConcreteTracer (which imports this module)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = self.tracer.peek(self)  # type: ignore[arg-type]
        if not hasattr(value, name):  # a typo fails as in eager mode; hasattr() gets the real answer
            raise AttributeError(f"{type(value).__name__!r} object has no attribute {name!r}")
        if name in _CONCRETE_ATTRIBUTES and isinstance(value, torch.Tensor):
            return self.tracer.decide_attribute(self, name)  # type: ignore[arg-type]
        return ConcreteAttribute(self, name)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self.tracer.decide_len(self)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[fx.Proxy]:
        # Also for unpacking (a, b = x.shape): the element count is checked too.
        return self.tracer.iter(self)  # type: ignore[arg-type]

    def __index__(self) -> int:
        return self.tracer.decide_int(self, operator.index)  # type: ignore[arg-type]

    def __int__(self) -> int:
        return self.tracer.decide_int(self, int)  # type: ignore[arg-type]

    def __float__(self) -> float:
        return self.tracer.decide_scalar(self, "float() of")  # type: ignore[arg-type]

    def __str__(self) -> str:
        if not _is_user_frame(sys._getframe(1)):
            return repr(self)
        return str(self.tracer.decide_scalar(self, "str() of"))  # type: ignore[arg-type]

    def __format__(self, spec: str) -> str:
        if not _is_user_frame(sys._getframe(1)):
            return format(repr(self), spec)
        return format(self.tracer.decide_scalar(self, "an f-string or format() of"), spec)  # type: ignore[arg-type]

    def __hash__(self) -> int:
        if not _is_user_frame(sys._getframe(1)):
            return id(self)
        return hash(self.tracer.decide_scalar(self, "a dict key, set member or hash() of"))  # type: ignore[arg-type]

    def __contains__(self, item: Any) -> bool:
        # `item in x` asks the value (Tensor.__contains__ and friends), as a guarded branch.
        found = self.tracer.create_proxy("call_function", operator.contains, (self, item), {})
        return self.tracer.to_bool(found)

    def __setitem__(self, key: Any, value: Any) -> None:
        # x[i] = v: recorded as operator.setitem, applied in place as in eager mode.
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


class ConcreteProxy(_ConcreteMixin, fx.Proxy):
    """A ``Proxy`` whose tracer knows the value it has for the example input."""

    def __repr__(self) -> str:
        return f"ConcreteProxy({self.node.name})"


class ConcreteAttribute(_ConcreteMixin, Attribute):
    """An attribute access (``x.shape``) on a :class:`ConcreteProxy`."""

    def __repr__(self) -> str:
        return f"ConcreteAttribute({self.attr})"


def _has_proxy(tree: Any) -> bool:
    return any(isinstance(leaf, fx.Proxy) for leaf in pytree.tree_leaves(tree))


