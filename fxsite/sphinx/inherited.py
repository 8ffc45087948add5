"""Resolve a reference to an inherited method where the method is documented.

In the docstring of ``class NodeProfiler(torch.fx.Interpreter)``, ``:meth:`run```
means ``Interpreter.run``; Sphinx looks only for ``NodeProfiler.run``, which is
not documented (it is inherited), and leaves the reference unresolved. This
walks the class's bases and links to the first one whose member *is*
documented on the site (for torch.fx classes: the reference page).
"""

from __future__ import annotations

import importlib
import inspect

from docutils import nodes
from sphinx.util.nodes import make_refnode

_KINDS = {"meth", "attr", "obj", "func", "prop"}


def _class(module: str, qualname: str) -> type | None:
    try:
        obj = importlib.import_module(module)
    except ImportError:
        return None
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj if inspect.isclass(obj) else None


def defining_class(cls: type, member: str) -> type | None:
    """The first class in ``cls``'s method resolution order that defines ``member`` itself.

    >>> import torch.fx as fx
    >>> class Mine(fx.Interpreter):
    ...     pass
    >>> defining_class(Mine, "run") is fx.Interpreter
    True
    """
    if not inspect.isclass(cls):
        raise TypeError(f"defining_class: expected a class, got {type(cls).__name__}")
    return next((owner for owner in cls.__mro__ if member in vars(owner)), None)


def resolve(app, env, node, contnode) -> nodes.reference | None:
    if node.get("refdomain") != "py" or node.get("reftype") not in _KINDS:
        return None
    member, module, qualname = node["reftarget"].lstrip("~."), node.get("py:module"), node.get("py:class")
    if not (module and qualname) or "." in member:
        return None
    cls = _class(module, qualname)
    owner = defining_class(cls, member) if cls else None
    if owner is None or owner is cls:
        return None
    objects = env.domains["py"].objects  # fullname -> (docname, node_id, objtype, aliased)
    suffix = f".{owner.__qualname__}.{member}"
    for fullname, entry in objects.items():
        if fullname.endswith(suffix) and _class(fullname[: -len(suffix)], owner.__qualname__) is owner:
            return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, fullname)
    return None


def setup(app) -> None:
    app.connect("missing-reference", resolve)
