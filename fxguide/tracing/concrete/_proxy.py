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
from fxguide.tracing.concrete.questions import _OFF

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
            self.tracer.decide_type(self)  # the answer holds while the value's type does
            raise AttributeError(f"{type(value).__name__!r} object has no attribute {name!r}")
        if not isinstance(value, torch.Tensor):  # a Python number's attributes depend on its type (int, float)
            self.tracer.decide_type(self)
        if name in _CONCRETE_ATTRIBUTES and isinstance(value, torch.Tensor):
            return self.tracer.decide_attribute(self, name)  # type: ignore[arg-type]
        if getattr(value, name) is None:  # x.grad_fn of a leaf: `is None` must get eager mode's answer
            return self.tracer.decide_attribute(self, name)  # type: ignore[arg-type]
        return ConcreteAttribute(self, name)  # type: ignore[arg-type]

    @property
    def __class__(self) -> type:  # type: ignore[override]
        # v.__class__ in the model's code is the example value's type (guarded); isinstance()
        # and everything else outside the model keep seeing the proxy's own class.
        frame = sys._getframe(1)
        if _is_user_frame(frame) and _reads_class(frame):  # v.__class__ written in the model's code
            return self.tracer.decide_type(self)  # type: ignore[no-any-return]
        return type(self)

    def __round__(self, ndigits: Any = None) -> Any:
        args = (self,) if ndigits is None else (self, ndigits)
        return self.tracer.create_proxy("call_function", round, args, {})

    def __divmod__(self, other: Any) -> Any:
        return self.tracer.create_proxy("call_function", divmod, (self, other), {})

    def __rdivmod__(self, other: Any) -> Any:
        return self.tracer.create_proxy("call_function", divmod, (other, self), {})

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
        return self.tracer.decide_scalar(self, "float() of", "float")  # type: ignore[arg-type]

    def __str__(self) -> str:
        if not _is_user_frame(sys._getframe(1)):
            return repr(self)
        return self.tracer.decide_text(self, str, (), "str() of", "str")  # type: ignore[no-any-return]

    def __format__(self, spec: str) -> str:
        if not _is_user_frame(sys._getframe(1)):
            return format(repr(self), spec)
        return self.tracer.decide_text(self, format, (spec,), "an f-string or format() of", "format")  # type: ignore[no-any-return]

    def __hash__(self) -> int:
        if not _is_user_frame(sys._getframe(1)):
            return id(self)
        return hash(self.tracer.decide_scalar(self, "a dict key, set member or hash() of", "hash"))  # type: ignore[arg-type]

    def __contains__(self, item: Any) -> bool:
        # `item in x` asks the value (Tensor.__contains__ and friends), as a guarded branch.
        found = self.tracer.create_proxy("call_function", operator.contains, (self, item), {})
        return self.tracer.to_bool(found)

    def __setitem__(self, key: Any, value: Any) -> None:
        # x[i] = v: recorded as operator.setitem, applied in place as in eager mode.
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})

    def __setattr__(self, name: str, value: Any) -> None:
        # x.data = y, x.note = 1 in the model's code: eager mode sets it on the tensor, a graph would not.
        if name not in _PROXY_FIELDS and _is_user_frame(sys._getframe(1)):
            self.tracer._refuse(f"setting the attribute {name!r} of a traced value",
                                "a graph records operations on tensors, not Python attributes set on them, so the "
                                "tensors its calls make would not have it; return the value alongside the tensor "
                                "instead", "python-state")
        object.__setattr__(self, name, value)


#: The stand-in's own attributes (set by torch.fx when it makes one).
_PROXY_FIELDS = frozenset({"node", "tracer", "root", "attr", "_node"})


def _in_place(op: Any) -> Any:
    """``x += y`` on a traced tensor: recorded as the in-place operator, so the graph updates it in place too."""
    def method(self: _ConcreteMixin, other: Any) -> Any:
        if "inplace" in _OFF or not isinstance(self.tracer.peek(self), torch.Tensor):
            return NotImplemented  # a Python number or tuple: Python computes `x = x + y`, a new value
        return self.tracer.create_proxy("call_function", op, (self, other), {})

    method.__name__ = f"__{op.__name__}__"
    return method


for _op in (operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv, operator.imod,
            operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor, operator.ilshift,
            operator.irshift):
    setattr(_ConcreteMixin, f"__{_op.__name__}__", _in_place(_op))
del _op


_CLASS_READS: dict[Any, frozenset[int]] = {}


def _reads_class(frame: Any) -> bool:
    """Whether ``frame`` is executing ``.__class__`` itself (not a C function such as isinstance looking it up)."""
    code = frame.f_code
    if code not in _CLASS_READS:
        import dis

        _CLASS_READS[code] = frozenset(i.offset for i in dis.get_instructions(code)
                                       if i.opname in ("LOAD_ATTR", "LOAD_METHOD") and i.argval == "__class__")
    return frame.f_lasti in _CLASS_READS[code]


class ConcreteProxy(_ConcreteMixin, fx.Proxy):
    """A ``Proxy`` whose tracer knows the value it has for the example input."""

    def __repr__(self) -> str:
        if _is_user_frame(sys._getframe(1)):  # repr(v) in the model's code: the value's repr
            return self.tracer.decide_text(self, repr, (), "repr() of", "repr")  # type: ignore[no-any-return]
        return f"ConcreteProxy({self.node.name})"


class ConcreteAttribute(_ConcreteMixin, Attribute):
    """An attribute access (``x.shape``) on a :class:`ConcreteProxy`."""

    def __init__(self, root: fx.Proxy, attr: str) -> None:
        if not isinstance(root, _ConcreteMixin) or not isinstance(attr, str):
            raise TypeError(f"ConcreteAttribute: root must be a ConcreteProxy and attr a str, got "
                            f"{type(root).__name__} and {type(attr).__name__}; the tracer makes these for x.attr")
        super().__init__(root, attr)

    def __repr__(self) -> str:
        if _is_user_frame(sys._getframe(1)):
            return self.tracer.decide_text(self, repr, (), "repr() of", "repr")  # type: ignore[no-any-return]
        return f"ConcreteAttribute({self.attr})"


def _has_proxy(tree: Any) -> bool:
    return any(isinstance(leaf, fx.Proxy) for leaf in pytree.tree_leaves(tree))


