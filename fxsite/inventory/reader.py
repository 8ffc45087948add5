"""Read one module's messages: its raises, its graph-break calls, and the messages its exception classes make.

:class:`Reader` walks a module's syntax tree knowing the function (and its
assignments, :class:`~fxsite.inventory.templates.Scope`) each statement is in,
and records in :class:`Found`:

- ``raise Error(<message>)``, ``raise Error(...).with_traceback(tb)``, and
  ``raise error`` of an error made earlier in the function; a message held in
  a variable is read from its assignments, one message for each branch of an
  ``if`` that assigns it;
- calls of a helper that only raises (``def error_fn(what): raise
  ValueError(f"infer_schema(func): {what} ...")``): the helper's message with
  the call's arguments in it, raised where the helper is called;
- Dynamo's ``unimplemented(gb_type=..., explanation=..., ...)`` calls;
- in an exception module, each class's own message (``super().__init__(...)``).
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field

from fxsite.inventory.sources import EXCEPTION_MODULES, Source
from fxsite.inventory.templates import Scope, build, finish, has_words

_GRAPH_BREAK_CALLS = ("unimplemented", "unimplemented_v2", "unimplemented_with_warning")
_MESSAGE_KEYWORDS = ("msg", "message")


@dataclass
class Found:
    """What the modules hold: messages (subsystem, class, template, place), graph-break calls (type and
    explanation templates, place), and per subsystem the raises with no literal words."""

    messages: list[tuple[str, str, str, dict]] = field(default_factory=list)
    graph_breaks: list[tuple[str, str, dict]] = field(default_factory=list)
    wordless: Counter = field(default_factory=Counter)


def _name(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _raiser(node: ast.FunctionDef) -> ast.Call | None:
    """The error a helper whose body is one ``raise Error(...)`` (after a docstring) raises, else ``None``."""
    body = node.body[1:] if node.body and isinstance(node.body[0], ast.Expr) \
        and isinstance(node.body[0].value, ast.Constant) else node.body
    return body[0].exc if len(body) == 1 and isinstance(body[0], ast.Raise) and isinstance(body[0].exc, ast.Call) \
        else None


class Reader(ast.NodeVisitor):
    """Walks one module of ``source`` (``relative``: its path in site-packages), recording into ``found``."""

    def __init__(self, source: Source, relative: str, user_facing: frozenset[str], found: Found) -> None:
        self.source, self.relative, self.user_facing, self.found = source, relative, user_facing, found
        self.names: list[str] = []
        self.scopes: list[Scope] = [Scope(None)]
        self.classes: list[str] = []
        self.exception_module = relative in EXCEPTION_MODULES
        self.raisers: dict[str, tuple[ast.FunctionDef, ast.Call]] = {}
        self.calls: list[tuple[ast.Call, Scope, str]] = []  # calls of plain names: a helper's, once all are known

    def read(self, tree: ast.Module) -> None:
        """Record the module's messages; the calls of its raising helpers last (a helper may be defined after)."""
        self.visit(tree)
        for call, scope, function in self.calls:
            if call.func.id in self.raisers:  # type: ignore[attr-defined]
                self._helper(call, scope, function, *self.raisers[call.func.id])  # type: ignore[attr-defined]

    def _nested(self, node: ast.AST, name: str, scope: Scope | None) -> None:
        self.names.append(name)
        if scope is not None:
            self.scopes.append(scope)
        self.generic_visit(node)
        self.names.pop()
        if scope is not None:
            self.scopes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if isinstance(node, ast.FunctionDef) and (raised := _raiser(node)) is not None:
            self.raisers[node.name] = (node, raised)
        self._nested(node, node.name, Scope(node))

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(node.name)
        self._nested(node, node.name, None)
        self.classes.pop()

    def _function(self) -> str:
        return ".".join(self.names) or "<module>"

    def _place(self, node: ast.AST, function: str = "") -> dict:
        return {"file": self.relative, "line": node.lineno, "function": function or self._function()}

    def _templates(self, expr: ast.expr, line: int, scope: Scope | None = None) -> list[str]:
        """The templates ``expr`` may make: one, or one per branch that assigns the name it is."""
        scope = scope or self.scopes[-1]
        if isinstance(expr, ast.Name) and expr.id not in scope.bound:
            made = scope.alternatives(expr.id, line)
            if made:
                return list(dict.fromkeys(finish("".join(build(part, scope, line) for part in way)) for way in made))
        return [finish(build(expr, scope, line))]

    def visit_Raise(self, node: ast.Raise) -> None:
        self.generic_visit(node)
        call = node.exc
        if isinstance(call, ast.Name):  # `raise error`, made earlier in the function: the call that made it
            made = self.scopes[-1].before(call.id, node.lineno)
            call = made[0] if made and len(made) == 1 else None
        if not isinstance(call, ast.Call):
            return
        if isinstance(call.func, ast.Attribute) and call.func.attr == "with_traceback" \
                and isinstance(call.func.value, ast.Call):
            call = call.func.value  # `raise Error(...).with_traceback(tb)`
        self._raised(call, node, self.scopes[-1])

    def _raised(self, call: ast.Call, node: ast.AST, scope: Scope, function: str = "") -> None:
        kind = _name(call.func)
        if kind and not (self.source.user_facing_only and kind not in self.user_facing):
            self._message(kind, call, node, scope, function)

    def _message(self, kind: str, call: ast.Call, node: ast.AST, scope: Scope, function: str = "") -> None:
        arguments = [*call.args, *(k.value for k in call.keywords if k.arg in _MESSAGE_KEYWORDS)]
        for argument in arguments:
            templates = [] if isinstance(argument, ast.Starred) else [
                template for template in self._templates(argument, node.lineno, scope) if has_words(template)]
            if templates:
                self.found.messages.extend((self.source.subsystem, kind, template, self._place(node, function))
                                           for template in templates)
                return
        self.found.wordless[self.source.subsystem] += 1

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        name = _name(node.func)
        keywords = {keyword.arg: keyword.value for keyword in node.keywords}
        if name in _GRAPH_BREAK_CALLS and "gb_type" in keywords:
            explanation = keywords.get("explanation")
            self.found.graph_breaks.append((self._templates(keywords["gb_type"], node.lineno)[0],
                                            "" if explanation is None else
                                            self._templates(explanation, node.lineno)[0], self._place(node)))
        elif isinstance(node.func, ast.Name):
            self.calls.append((node, self.scopes[-1], self._function()))
        # an exception class's own message: `super().__init__(f"No working C++ compiler found ...")`
        elif (self.exception_module and self.classes and name == "__init__" and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Call) and _name(node.func.value.func) == "super"):
            self._message(self.classes[-1], node, node, self.scopes[-1])

    def _helper(self, call: ast.Call, scope: Scope, function: str, helper: ast.FunctionDef, raised: ast.Call) -> None:
        """A call of a helper that only raises: its message, the call's arguments in place of its parameters."""
        parameters = [argument.arg for argument in (*helper.args.posonlyargs, *helper.args.args)]
        given = dict(zip(parameters, call.args))
        given.update((keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg)
        bound = {name: build(value, scope, call.lineno) for name, value in given.items()}
        self._raised(raised, call, Scope(helper, bound), function)
