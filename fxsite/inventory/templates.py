"""A message's template, read from the expression that builds it: literal text, and a wildcard where a value goes.

``raise TraceError(f"Proxy {name} cannot be iterated")`` holds the template
``Proxy {} cannot be iterated``: what torch always prints, and ``{}`` for what
it fills in. Read from the source with :mod:`ast` (never by importing it, so a
torch in another environment is read as well as this one's). The template is
written in :meth:`str.format`'s convention: ``{}`` is a wildcard, ``{{`` and
``}}`` are literal braces.

Understood: string constants, f-strings, ``+``, ``%`` and ``.format()`` on a
literal, ``sep.join([...])`` of a list written out, ``textwrap.dedent`` and the
``strip`` methods, and a name assigned (or ``+=``-extended) earlier in the same
function. Anything else is a wildcard.
"""

from __future__ import annotations

import ast
import re
import textwrap

WILD = "\x00"  # a wildcard inside a template being built; format() turns it into "{}"
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?[diouxXeEfFgGcrsa%]")
_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
_WORD = re.compile(r"[A-Za-z]{2,}")
_MAX_DEPTH = 8  # names resolved through names, at most


# the if statements a statement is in, outermost first: (id of the if, 0 in its body or 1 in its else)
Branch = tuple[tuple[int, int], ...]


class Scope:
    """The assignments of one function, by name, in source order: a name used in a ``raise`` reads the last
    assignment before it (and the ``+=`` after that one), or, when that assignment is in a branch of an ``if``,
    the last one of each other branch too (:meth:`alternatives`). ``bound``: names whose text is known already
    (a helper's parameters, given at its call)."""

    def __init__(self, function: ast.AST | None, bound: dict[str, str] | None = None) -> None:
        self.bound = bound or {}
        self._function = function
        self._read: dict[str, list[tuple[int, str, ast.expr, Branch]]] | None = None

    @property
    def _writes(self) -> dict[str, list[tuple[int, str, ast.expr, Branch]]]:
        """The assignments by name, read on first use (most functions raise no message held in a name)."""
        if self._read is None:
            self._read = {}
            for node, branch in _own_nodes(self._function) if self._function is not None else ():
                target, value, op = _write(node)
                if target is not None:
                    self._read.setdefault(target, []).append((node.lineno, op, value, branch))
            for writes in self._read.values():
                writes.sort(key=lambda write: write[0])
        return self._read

    def before(self, name: str, line: int) -> list[ast.expr] | None:
        """The expressions that make ``name`` as it is at ``line``: its last assignment, then each ``+=``."""
        found = self.alternatives(name, line)
        return found[0] if found else None

    def alternatives(self, name: str, line: int) -> list[list[ast.expr]]:
        """Each way ``name`` may be made at ``line``: the last assignment before it, and the last of each other
        branch of the ``if`` statements that assignment is in; each with the ``+=`` that follow it there."""
        writes = [write for write in self._writes.get(name, ()) if write[0] < line]
        assigned = [i for i, write in enumerate(writes) if write[1] == "="]
        if not assigned:
            return []
        last = assigned[-1]
        path = writes[last][3]
        chosen = {path: last}
        for depth, (if_id, side) in enumerate(path):
            for i in assigned:
                other = writes[i][3]
                if other[:depth] == path[:depth] and len(other) > depth and other[depth] == (if_id, 1 - side):
                    chosen[other] = i  # the last assignment of that branch
        return [[writes[i][2], *(w[2] for w in writes[i + 1:] if w[1] == "+=" and w[3] == writes[i][3])]
                for i in sorted(chosen.values(), reverse=True)]


def _write(node: ast.AST) -> tuple[str | None, ast.expr | None, str]:
    """``(name, value, "=" or "+=")`` of an assignment to a plain name, else ``(None, None, "")``."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value, "="
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return node.target.id, node.value, "="
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name):
        return node.target.id, node.value, "+="
    return None, None, ""


def _own_nodes(function: ast.AST):
    """The nodes of ``function``'s body with the ``if`` branches each is in; not those of the functions and
    classes defined in it."""
    stack: list[tuple[ast.AST, Branch]] = [(child, ()) for child in ast.iter_child_nodes(function)]
    while stack:
        node, branch = stack.pop()
        yield node, branch
        if isinstance(node, ast.If):
            stack.append((node.test, branch))
            stack.extend((child, (*branch, (id(node), 0))) for child in node.body)
            stack.extend((child, (*branch, (id(node), 1))) for child in node.orelse)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend((child, branch) for child in ast.iter_child_nodes(node))


def build(expr: ast.expr, scope: Scope, line: int, depth: int = 0) -> str:
    """The text ``expr`` makes, with :data:`WILD` for every value not known from the source."""
    if depth > _MAX_DEPTH:
        return WILD
    again = lambda part: build(part, scope, line, depth + 1)  # noqa: E731 - one recursion, three uses
    if isinstance(expr, ast.Constant):
        return expr.value.replace(WILD, "") if isinstance(expr.value, str) else WILD
    if isinstance(expr, ast.JoinedStr):  # a value is a wildcard, unless it is a helper's parameter (`{what}`)
        return "".join(again(value) if isinstance(value, ast.Constant) else scope.bound[value.value.id]
                       if isinstance(value.value, ast.Name) and value.value.id in scope.bound and not
                       value.format_spec and value.conversion == -1 else WILD for value in expr.values)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return again(expr.left) + again(expr.right)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):
        left = again(expr.left)
        return _PERCENT.sub(lambda m: "%" if m[0] == "%%" else WILD, left) if left != WILD else WILD
    if isinstance(expr, ast.Name) and expr.id in scope.bound:
        return scope.bound[expr.id]
    if isinstance(expr, ast.Name):
        made = scope.before(expr.id, line)
        return "".join(again(value) for value in made) if made else WILD
    if isinstance(expr, ast.Call):
        return _call(expr, again)
    return WILD


def _call(expr: ast.Call, again) -> str:
    func = expr.func
    method = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if method == "format" and isinstance(func, ast.Attribute):
        text = again(func.value)
        return _FIELD.sub(lambda m: m[0][0] if m[0] in ("{{", "}}") else WILD, text) if text != WILD else WILD
    if method == "join" and isinstance(func, ast.Attribute) and len(expr.args) == 1 \
            and isinstance(expr.args[0], (ast.List, ast.Tuple)) and not any(
                isinstance(element, ast.Starred) for element in expr.args[0].elts):
        return again(func.value).join(again(element) for element in expr.args[0].elts)
    if method in ("dedent", "cleandoc") and len(expr.args) == 1:
        return textwrap.dedent(again(expr.args[0]))
    if method in ("strip", "lstrip", "rstrip") and isinstance(func, ast.Attribute) and not expr.args:
        return getattr(again(func.value), method)()
    if method == "str" and isinstance(func, ast.Name) and len(expr.args) == 1:
        return again(expr.args[0])
    return WILD


def finish(text: str) -> str:
    """``text`` as a template: braces doubled, runs of wildcards one ``{}``, the ends stripped."""
    text = re.sub(f"{WILD}+", WILD, text.strip())
    return text.replace("{", "{{").replace("}", "}}").replace(WILD, "{}")


def from_registry(text: str, code: bool = False) -> str:
    """A graph-break registry text as a template. The registry holds an f-string's source (``{fn}`` where a value
    goes); for an explanation built otherwise (``code``), the expression's code, its first string's ``f`` left out
    (``"Failed to compare {self} " + f"because {other} ..."``, ``str(e)``, ``msg``): that is read as the expression.
    A type that is a private name (``_gb_type``) is a variable's, not a type."""
    if not code and text.isidentifier() and text.startswith("_"):
        return "{}"
    expr = None
    if code:
        try:
            expr = ast.parse(text.strip(), mode="eval").body
        except SyntaxError:
            pass
    if isinstance(expr, (ast.BinOp, ast.Call, ast.JoinedStr, ast.Name)) \
            or isinstance(expr, ast.Constant) and text.strip()[:1] in "'\"":
        text = build(expr, Scope(None), 0)
    return finish(_FIELD.sub(lambda m: m[0][0] if m[0] in ("{{", "}}") else WILD, text))


def literal_parts(line: str) -> list[str]:
    """The literal parts of one line of a template, stripped, the empty ones left out.

    >>> literal_parts("commonpath() arg is {} of {{x}}")
    ['commonpath() arg is', 'of {x}']
    """
    pieces = _FIELD.split(line.replace("{{", "\0").replace("}}", "\1"))
    return [piece.replace("\0", "{").replace("\1", "}").strip() for piece in pieces if piece.strip()]


def has_words(template: str) -> bool:
    """Whether ``template`` holds a literal word (two letters or more) besides its wildcards."""
    return bool(_WORD.search(template.replace("{}", " ")))


__all__ = ["WILD", "Scope", "build", "finish", "from_registry", "has_words", "literal_parts"]
