"""Expected outputs, one plain-text file per page or script under ``tests/expected``.

A snapshot reads like the page it belongs to::

    === cell 3 (line 43) ===
    graph():
        %x : [num_users=1] = placeholder[target=x]
    ...
    === cell 7 (line 90) raises ===
    TraceError: symbolically traced variables cannot be used as inputs to control flow

``make update-expected`` rewrites them all from the installed torch; the
resulting ``git diff`` is the review of what changed.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from fxsite.drift.extract import ROOT, Snippet

EXPECTED = ROOT / "tests" / "expected"
_HEADER = re.compile(r"^=== (cell|block) (\d+) \(line (\d+)\)( raises)? ===$")


@dataclass(frozen=True)
class Expected:
    index: int
    line: int
    output: str
    raises: bool


def digest(output: str) -> str:
    """A short fingerprint of one recorded output, so a report can tell which version of it it checked.

    >>> digest("tensor([1.])")
    '3790d2e15e05'
    """
    if not isinstance(output, str):
        raise TypeError(f"digest: expected the recorded output as str, got {type(output).__name__}")
    return hashlib.sha256(output.encode()).hexdigest()[:12]


def snapshot_path(source: str) -> Path:
    """Where the expectations of ``source`` (e.g. ``docs/quickstart.md``) live."""
    if not isinstance(source, str) or not source.startswith(("docs/", "gallery/")):
        raise ValueError(f"snapshot_path: source must be a path like 'docs/page.md' or 'gallery/x.py', got {source!r}")
    return EXPECTED / (source + ".txt")


def dumps(source: str, snippets: list[Snippet], torch_version: str) -> str:
    """The snapshot text for ``snippets`` (cells that show nothing are left out)."""
    kind = "cell" if source.endswith(".md") else "block"
    parts = [
        f"# Expected outputs of {source}, recorded on torch {torch_version}.",
        "# Re-record with `make update-expected`; review the change with `git diff`.",
    ]
    for s in snippets:
        if not s.output and s.raised is None:
            continue
        parts.append("")
        parts.append(f"=== {kind} {s.index} (line {s.line}){' raises' if s.raised else ''} ===")
        body = s.raised if s.raised is not None else s.output
        if s.raised is not None and s.output:
            body = s.output + "\n" + s.raised
        parts.append(body)
    return "\n".join(parts) + "\n"


def loads(text: str) -> dict[int, Expected]:
    """Parse a snapshot file into expectations by cell or block number."""
    found: dict[int, Expected] = {}
    current: tuple[int, int, bool] | None = None
    body: list[str] = []

    def close() -> None:
        if current is not None:
            index, line, raises = current
            found[index] = Expected(index, line, "\n".join(body).strip("\n"), raises)

    for raw in text.splitlines():
        match = _HEADER.match(raw)
        if match:
            close()
            current, body = (int(match.group(2)), int(match.group(3)), bool(match.group(4))), []
        elif current is not None:
            body.append(raw)
        elif raw and not raw.startswith("#"):
            raise ValueError(f"snapshot: text before the first '=== cell N (line L) ===' header: {raw!r}")
    close()
    return found


def load(source: str) -> dict[int, Expected] | None:
    """The expectations of ``source``, or None when none were recorded yet."""
    path = snapshot_path(source)
    return loads(path.read_text()) if path.is_file() else None


def write(source: str, snippets: list[Snippet], torch_version: str) -> Path:
    path = snapshot_path(source)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(source, snippets, torch_version))
    return path
