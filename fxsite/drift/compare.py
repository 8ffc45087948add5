"""Compare what the build showed with what was recorded, and say it like a reviewer."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from fxsite.drift.extract import Snippet, relative
from fxsite.drift.snapshots import Expected, snapshot_path

SAME = "same"
CHANGED = "changed"
NEWLY_RAISING = "newly raising"
NEWLY_HANGS = "newly hangs"  # stopped at the build's time limit (fxsite/sphinx/limits.py)
NO_LONGER_RAISING = "no longer raising"
NOT_RECORDED = "not recorded"
NO_LONGER_SHOWN = "no longer shown"
# Not drift: the snippet could not run because a library the checked torch cannot install is missing.
MISSING_LIBRARY = "missing library"
# Not drift either: the recorded expectations of the source could not be read (a damaged store file).
UNREADABLE = "unreadable expectation"
# Not drift: the output differs only in digits a CPU's kernels or thread count decide (a report made on one
# machine, checked on another). The output check still fails on it: such a value should be shown as a bound
# (tests/test_cpu_independence.py finds them on one machine).
ROUNDING = "rounding-level difference"
DRIFT = (CHANGED, NEWLY_RAISING, NEWLY_HANGS, NO_LONGER_RAISING, NOT_RECORDED, NO_LONGER_SHOWN)
_NO_MODULE = re.compile(r"^ModuleNotFoundError: No module named '([\w.]+)'")


@dataclass(frozen=True)
class Finding:
    """The verdict on one snippet; ``message`` is empty when it is the same."""

    source: str
    index: int
    line: int
    status: str
    diff: str = ""
    message: str = ""


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def rounding_only(expected: str, actual: str, *, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """Whether ``actual`` differs from ``expected`` only in numbers, each within ``atol + rtol * |value|``.

    Such a difference is what another CPU's kernels or thread count make of a float32
    value printed at full precision, not a change in what torch computes.

    >>> rounding_only("max difference 1.19e-07; allclose: True", "max difference 5.96e-08; allclose: True")
    True
    >>> rounding_only("Greatest absolute difference: 0.4484431743621826 at index (3, 1)",
    ...               "Greatest absolute difference: 0.44844305515289307 at index (3, 1)")
    True
    >>> rounding_only("within 0.0010 of float", "within 0.2058 of float")
    False
    >>> rounding_only("index (3, 1)", "index (3, 2)"), rounding_only("a = 1", "a = 1")
    (False, False)
    """
    if expected == actual:
        return False
    if _NUMBER.split(expected) != _NUMBER.split(actual):  # the same text between numbers: as many numbers
        return False
    for old, new in zip(_NUMBER.findall(expected), _NUMBER.findall(actual)):
        if old == new:
            continue
        if re.fullmatch(r"[-+]?\d+", old) and re.fullmatch(r"[-+]?\d+", new):
            return False  # counts, indices, sizes: never rounding
        a, b = float(old), float(new)
        if abs(a - b) > atol + rtol * max(abs(a), abs(b)):
            return False
    return True


def _shown(s: Snippet) -> str:
    return "\n".join(part for part in (s.output, s.raised or "") if part)


def missing_library(raised: str | None, unavailable: Mapping[str, str]) -> str | None:
    """The library of ``unavailable`` whose absence made a snippet raise, if that is why it raised.

    >>> missing_library("ModuleNotFoundError: No module named 'torchvision.ops'", {"torchvision": "..."})
    'torchvision'
    >>> missing_library("ModuleNotFoundError: No module named 'scipy'", {"torchvision": "..."}) is None
    True
    """
    match = _NO_MODULE.match(raised or "")
    if not match:
        return None
    top = match.group(1).split(".")[0]
    return next((lib for lib in unavailable if lib.lower().replace("-", "_") == top), None)


def compare(
    source: str, expected: dict[int, Expected] | None, actual: list[Snippet], torch_version: str,
    *, unavailable: Mapping[str, str] | None = None,
) -> list[Finding]:
    """One :class:`Finding` per snippet of ``source`` (shown or recorded).

    ``unavailable`` maps a library the checked torch cannot install to why. From the
    first snippet that fails to import one, every snippet of ``source`` that does not
    show its recorded output is reported as :data:`MISSING_LIBRARY` (it could not
    run), not as drift.
    """
    findings = _compare(source, expected, actual, torch_version)
    if not unavailable:
        return findings
    blocked: str | None = None
    raised_by = {s.index: s.raised for s in actual}
    marked = []
    for f in findings:
        blocked = blocked or missing_library(raised_by.get(f.index), unavailable)
        if blocked and f.status != SAME:
            kind = "cell" if source.endswith(".md") else "block"
            f = Finding(source, f.index, f.line, MISSING_LIBRARY,
                        message=f"{source}, {kind} {f.index} (line {f.line}), torch {torch_version}: needs {blocked}, "
                                f"{unavailable[blocked]}; not run, not counted as drift")
        marked.append(f)
    return marked


def _compare(
    source: str, expected: dict[int, Expected] | None, actual: list[Snippet], torch_version: str
) -> list[Finding]:
    snap = relative(snapshot_path(source))
    if expected is None:
        return [
            Finding(source, 0, 0, NOT_RECORDED,
                    message=f"{source}: no expected outputs recorded ({snap} is missing); run `make update-expected`")
        ]
    kind = "cell" if source.endswith(".md") else "block"
    findings = []
    by_index = {s.index: s for s in actual}
    for s in actual:
        where = f"{s.where}, torch {torch_version}"
        exp = expected.get(s.index)
        if s.hung:  # never recorded: a snippet that hangs is drift whatever it showed before
            findings.append(Finding(source, s.index, s.line, NEWLY_HANGS,
                                    message=f"{where}: now hangs on torch {torch_version}, the build stopped it "
                                            f"({s.raised})"))
            continue
        if s.expects_raise and s.raised is None and (exp is None or not exp.raises):
            findings.append(Finding(source, s.index, s.line, NO_LONGER_RAISING,
                                    message=f"{where}: tagged raises-exception but no longer raises on torch "
                                            f"{torch_version} — update the guide"))
            continue
        shown = _shown(s)
        if exp is None:
            if shown:
                findings.append(Finding(source, s.index, s.line, NOT_RECORDED,
                                        message=f"{where}: output not recorded in {snap}; run `make update-expected`"))
            continue
        if exp.raises and s.raised is None:
            status = NO_LONGER_RAISING
            headline = f"no longer raises on torch {torch_version} — update the guide"
        elif s.raised is not None and not exp.raises:
            status, headline = NEWLY_RAISING, f"now raises {s.raised.split(':')[0]} on torch {torch_version}"
        elif shown == exp.output:
            findings.append(Finding(source, s.index, s.line, SAME))
            continue
        elif rounding_only(exp.output, shown):
            status, headline = ROUNDING, ("differs only in digits at rounding level: the CPU's kernels or thread "
                                          "count, not torch; show that value as a bound, a verdict or a count "
                                          "(tests/test_cpu_independence.py)")
        else:
            status, headline = CHANGED, "output changed"
        diff = "\n".join(
            difflib.unified_diff(
                exp.output.splitlines(), shown.splitlines(),
                fromfile=f"expected ({snap})", tofile=f"actual (torch {torch_version})", lineterm="",
            )
        )
        findings.append(Finding(source, s.index, s.line, status, diff, f"{where}: {headline}\n{diff}"))
    for index, exp in expected.items():
        if index not in by_index:
            findings.append(Finding(source, index, exp.line, NO_LONGER_SHOWN,
                                    message=f"{source}, {kind} {index} (line {exp.line}): recorded in {snap} but the "
                                            f"{kind} no longer exists; run `make update-expected`"))
    return sorted(findings, key=lambda f: f.index)
