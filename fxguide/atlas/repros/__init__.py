"""Reproductions of the messages users meet most: each raises one of torch's messages under one tool, with its fix.

Where the atlas asks what a tool does with a construct, a *reproduction* starts
from the other end: a message a reader pasted. Each is a tiny module (or, for a
message that no capture tool raises, a function) that raises ONE message under ONE
named tool, with the entry of the inventory (:mod:`fxguide.diagnose.torch_messages`)
the lookup recognises it as (none for a message raised where the inventory does not
look), the cause in a sentence, and a fix that runs under the same tool and matches
eager mode. :func:`reproduce` runs one and says whether the
message was raised, which inventory entries :func:`fxguide.diagnose.recognise.recognise`
finds in it, and whether the fix matched eager.

Module reproductions run under a key of :data:`fxguide.atlas.tools.TOOLS` and their
fix is judged by :func:`fxguide.atlas.judge.run`, like an atlas row. Call
reproductions (``tool`` names the call, such as ``ep.module().train()``) are
functions that raise; their fix returns ``(got, expected)``, compared by
:func:`fxguide.atlas.judge.same`. The reproductions live one subsystem a module in
this package (``dynamo``, ``compile_api``, ``aot_autograd``, ``control_flow``,
``export``, ``fx``, ``custom_ops``, ``func``, ``pt2e``);
``docs/atlas/messages.md`` runs them all (:mod:`fxguide.atlas.messages`).

>>> "dynamo" in group_names()
True
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import pkgutil
import re
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ContextManager

import torch

from fxguide.atlas import Case, two_inputs
from fxguide.atlas.judge import CAPTURE_SEED, run, same, watched
from fxguide.atlas.tools import TOOLS


@dataclass(frozen=True)
class Repro:
    """One reproduction: the message (short), its inventory entry, the tool, the code, the cause, the fix."""

    message: str
    group: str
    tool: str
    entry: str
    """The id of the inventory entry the lookup recognises the raised message as (``GB0170``, or a message's hash
    id); empty where it recognises none (a message raised where the harvest does not look, or one it misses)."""
    cause: str
    code: Callable[..., Any]
    """An ``nn.Module`` class run under ``tool``, or a function that raises when called."""
    inputs: Callable[[], tuple[tuple, tuple]] = two_inputs
    around: Callable[[], ContextManager[Any]] = contextlib.nullcontext
    """A setting the reproduction needs around its capture (a Dynamo config)."""
    missed: str = ""
    """The id of the inventory entry the raised message is, when the lookup does not recognise it yet (a gap
    to close)."""
    says: str = ""
    """A regular expression for the words that identify the raised message (names and numbers as wildcards), for a
    reproduction with no inventory entry: ``python -m fxguide.explain`` answers a pasted text it finds in with this
    reproduction's cause. Empty: the message as written here, without a closing note in parentheses."""

    @property
    def identified_by(self) -> str:
        """:attr:`says`, or the message itself (its closing parenthesis of notes left out) as a literal pattern."""
        return self.says or re.escape(re.sub(r"\s*\([^()]*\)\s*$", "", self.message))

    @property
    def anchor(self) -> str:
        """The id of the reproduction's row on the messages page (``msg-dynamo-boolbranch-compile-fullgraph``)."""
        return "msg-" + "-".join(re.sub(r"[^a-z0-9]+", "-", part.lower()).strip("-")
                                 for part in (self.group, self.code.__name__, self.tool))

    @property
    def module(self) -> bool:
        """Whether the reproduction is a module run under a capture tool (else a call that raises)."""
        return self.tool in TOOLS

    @property
    def fix(self) -> tuple[Callable[..., Any], Callable[[], ContextManager[Any]]] | None:
        """The fix and the setting it needs (the fix given for this tool, else the code's fix), or ``None``."""
        return _FIXES.get((self.code, self.tool)) or _FIXES.get((self.code, ""))

    @property
    def source(self) -> str:
        """The reproduction's code, as the page shows it."""
        return source_of(self.code)


def source_of(code: Callable[..., Any]) -> str:
    """The source of a class or function, without the decorator that registers it."""
    lines = textwrap.dedent(inspect.getsource(code)).strip().splitlines()
    start = next(number for number, line in enumerate(lines) if line.startswith(("class ", "def ")))
    return "\n".join(lines[start:])


_REPROS: dict[str, list[Repro]] = {}
_FIXES: dict[tuple[Callable[..., Any], str], tuple[Callable[..., Any], Callable[[], ContextManager[Any]]]] = {}


def repro(message: str, *, tool: str, entry: str, cause: str,
          inputs: Callable[[], tuple[tuple, tuple]] = two_inputs,
          around: Callable[[], ContextManager[Any]] = contextlib.nullcontext, missed: str = "", says: str = ""
          ) -> Callable[[Any], Any]:
    """Register the decorated module class (run under ``tool``) or function (called) as a reproduction.

    The group is the module that calls ``repro``, so a model defined in one group can be registered again, under
    another tool, by another: ``repro(..., tool="export strict")(dynamo.BoolBranch)``.
    """
    group = sys._getframe(1).f_globals["__name__"].rsplit(".", 1)[-1]

    def register(code: Any) -> Any:
        _REPROS.setdefault(group, []).append(Repro(message, group, tool, entry, cause, code, inputs, around, missed,
                                                   says))
        return code
    return register


def fix_of(code: Any, *, tool: str = "", around: Callable[[], ContextManager[Any]] = contextlib.nullcontext
           ) -> Callable[[Any], Any]:
    """Register the decorated class or function as the fix of the reproduction ``code`` (under ``tool`` only, when
    given: one model may raise under two tools and want another fix under each).

    A module fix runs under the reproduction's tool; a call fix returns ``(got, expected)``.
    """
    def register(fix: Any) -> Any:
        _FIXES[(code, tool)] = (fix, around)
        return fix
    return register


def group_names() -> list[str]:
    """The subsystems, one module each in this package."""
    return [info.name for info in pkgutil.iter_modules(__path__)]


def all_repros() -> list[Repro]:
    """Every reproduction, group by group, in the order their modules define them."""
    for name in group_names():
        importlib.import_module(f"{__name__}.{name}")
    return [item for name in group_names() for item in _REPROS.get(name, [])]


@dataclass(frozen=True)
class Reproduction:
    """What running a reproduction gave."""

    repro: Repro
    error: str
    """The message raised, ``Type: text`` (cleaned of paths and addresses); empty when nothing was raised."""
    recognised: tuple[str, ...]
    """The inventory entry ids :func:`~fxguide.diagnose.recognise.recognise` finds in the raised text."""
    fix_matches: bool
    fix_note: str = ""

    @property
    def raised(self) -> bool:
        """Whether the reproduction raised."""
        return bool(self.error)

    @property
    def hit(self) -> bool | None:
        """Whether the recorded entry is among those recognised; ``None`` for a reproduction that records none."""
        return self.repro.entry in self.recognised if self.repro.entry else None


def pasted(error: BaseException) -> str:
    """The error as a traceback's last line prints it: ``module.Type: message``."""
    kind = type(error)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    return f"{name}: {error}"


_CLASS_LIST = re.compile(r"<class '[^']+'>(?:, <class '[^']+'>)+")


def cleaned(text: str, lines: int = 12) -> str:
    """``text`` without what changes between machines (paths, addresses, Dynamo's user-code stack), cut to ``lines``."""
    text = text.split("\nfrom user code:")[0]
    text = re.sub(r" at 0x[0-9a-f]+", "", text)
    text = re.sub(r"\b\d{9,}\b", "<id>", text)  # an object's id() (Dynamo's FakeIdVariable)
    text = _CLASS_LIST.sub(lambda found: ", ".join(sorted(found[0].split(", "))), text)  # a set of types, printed
    text = re.sub(r'File "[^"]*[/\\]', 'File "', text)
    text = re.sub(r"(?<![\w.])/[\w./-]+/([\w.-]+)", r"\1", text)
    text = re.sub(r"(?<![\w./-])[\w.-][\w./-]*/(fxguide/[\w/]+\.py)", r"\1", text)  # a copy's relative path
    kept = [line.rstrip() for line in text.strip().splitlines()
            if line.strip() and "TORCHDYNAMO_VERBOSE" not in line and "TORCH_LOGS" not in line]
    return "\n".join(kept[:lines] + (["..."] if len(kept) > lines else []))


def _raise(item: Repro) -> str:
    """What ``item`` raised, as pasted; under ``compile`` (graph breaks allowed), the first graph break's reason."""
    from torch._dynamo.utils import counters
    with item.around(), watched(CAPTURE_SEED):
        try:
            if item.module:
                first, _ = item.inputs()
                TOOLS[item.tool](item.code(), first).run(*first)
            else:
                item.code()
        except Exception as error:  # noqa: BLE001 - the error is the reproduction's point
            return pasted(error)
    reasons = list(counters["graph_break"]) if item.tool == "compile" else []
    return f"Graph break: {reasons[0]}" if reasons else ""


def _fixed(item: Repro) -> tuple[bool, str]:
    found = item.fix
    if found is None:
        return False, "no fix"
    fix, around = found
    if item.module:
        cell = run(Case(item.message, item.group, fix, "", item.inputs, around=around), item.tool)
        return cell.kind == "same", cell.short
    with around(), watched(CAPTURE_SEED):
        try:
            got, expected = fix()
        except Exception as error:  # noqa: BLE001
            return False, f"raises {type(error).__name__}"
    return same(got, expected), ""


def reproduce(item: Repro) -> Reproduction:
    """Run ``item`` under its tool, recognise what it raised, and run its fix."""
    from fxguide.diagnose.recognise import recognise
    text = _raise(item)
    torch._dynamo.reset()
    found = tuple(hit.entry.id for hit in recognise(text)) if text else ()
    matches, note = _fixed(item)
    torch._dynamo.reset()
    return Reproduction(item, cleaned(text), found, matches, note)


__all__ = ["Reproduction", "Repro", "all_repros", "cleaned", "fix_of", "group_names", "pasted", "repro", "reproduce",
           "source_of"]
