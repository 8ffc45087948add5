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

from fxguide._checks import string
from fxsite.drift.extract import ROOT, Snippet

EXPECTED = ROOT / "tests" / "expected"
_HEADER = re.compile(r"^=== (cell|block) (\d+) \(line (\d+)\)( raises)? ===$")
# Body lines that could be read as structure (a header, a merge-conflict marker) or
# that start with the escape itself are written with one leading backslash.
_NEEDS_ESCAPE = re.compile(r"^(===|<<<<<<<|>>>>>>>|\|\|\|\|\|\|\||\\)")
_CONFLICT = re.compile(r"^(<<<<<<<|>>>>>>>|\|\|\|\|\|\|\||=======$|======= )")


class SnapshotError(ValueError):
    """A file of the expected-output store cannot be read as a snapshot; the message says where and why."""


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
    return hashlib.sha256(string("digest", "output", output).encode()).hexdigest()[:12]


def snapshot_path(source: str, expected: Path | None = None) -> Path:
    """Where the expectations of ``source`` (e.g. ``docs/quickstart.md``) live; always inside the store.

    >>> snapshot_path("docs/../../../etc/passwd.md")
    Traceback (most recent call last):
    ...
    ValueError: snapshot_path: source must be a path like 'docs/page.md' or 'gallery/x.py' inside the repository, got 'docs/../../../etc/passwd.md'
    """
    store = Path(expected or EXPECTED)
    parts = source.split("/") if isinstance(source, str) else []
    if (not parts or parts[0] not in {"docs", "gallery"} or not source.endswith((".md", ".py"))
            or any(p in {"", ".", ".."} for p in parts) or "\\" in source or "\0" in source):
        raise ValueError(f"snapshot_path: source must be a path like 'docs/page.md' or 'gallery/x.py' inside the "
                         f"repository, got {source!r}")
    path = store / (source + ".txt")
    if not path.resolve().is_relative_to(store.resolve()):
        raise ValueError(f"snapshot_path: {path} leads out of the store {store} (through a symbolic link); "
                         f"remove the link and run `make update-expected`")
    return path


def _escape(line: str) -> str:
    return "\\" + line if _NEEDS_ESCAPE.match(line) else line


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
        parts.extend(_escape(line) for line in body.splitlines())
    return "\n".join(parts) + "\n"


def loads(text: str, where: str = "snapshot") -> dict[int, Expected]:
    """Parse a snapshot file into expectations by cell or block number.

    Anything :func:`dumps` cannot have written is refused with a :class:`SnapshotError`
    naming ``where`` and the line: text before the first header, a merge-conflict
    marker, a malformed header, the same cell twice.
    """
    found: dict[int, Expected] = {}
    current: tuple[int, int, bool] | None = None
    body: list[str] = []

    def close() -> None:
        if current is not None:
            index, line, raises = current
            found[index] = Expected(index, line, "\n".join(body).strip("\n"), raises)

    for number, raw in enumerate(text.splitlines(), 1):
        match = _HEADER.match(raw)
        if _CONFLICT.match(raw):
            raise SnapshotError(f"{where}, line {number}: merge-conflict marker {raw[:20]!r} (a merge left both "
                                "sides; re-record instead of resolving by hand)")
        if match:
            close()
            index = int(match.group(2))
            if index in found:
                raise SnapshotError(f"{where}, line {number}: {match.group(1)} {index} is recorded twice")
            current, body = (index, int(match.group(3)), bool(match.group(4))), []
        elif raw.startswith("==="):
            raise SnapshotError(f"{where}, line {number}: malformed header {raw[:60]!r} (expected "
                                "'=== cell N (line L) ===' or '=== block N (line L) ===', optionally ' raises')")
        elif current is not None:
            body.append(raw[1:] if raw.startswith("\\") else raw)
        elif raw and not raw.startswith("#"):
            raise SnapshotError(f"{where}, line {number}: text before the first '=== cell N (line L) ===' "
                                f"header: {raw[:60]!r}")
    close()
    return found


def read(path: Path) -> dict[int, Expected]:
    """The expectations in the snapshot file ``path``; a damaged file raises :class:`SnapshotError` naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise SnapshotError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    return loads(text, str(path))


def load(source: str) -> dict[int, Expected] | None:
    """The expectations of ``source``, or None when none were recorded yet."""
    path = snapshot_path(source)
    return read(path) if path.is_file() else None


def damage(expected: Path | None = None) -> dict[Path, str]:
    """Every file of the store that is not a readable snapshot, with what is wrong with it.

    The store holds only ``docs/**.md.txt`` and ``gallery/*.py.txt`` files written by
    ``make update-expected``; anything else (a README, a file with a merge-conflict
    marker, a link leading elsewhere) is listed here. ``make update-expected`` repairs all of it.
    """
    store = Path(expected or EXPECTED)
    found: dict[Path, str] = {}
    if not store.is_dir():
        return found
    for path in sorted(store.rglob("*")):
        relative = path.relative_to(store).as_posix()
        if path.is_symlink():
            found[path] = "a symbolic link: the store holds plain files only"
        elif path.is_dir():
            continue
        elif not (relative.startswith(("docs/", "gallery/")) and relative.endswith((".md.txt", ".py.txt"))):
            found[path] = ("not a snapshot: the store holds only docs/<page>.md.txt and gallery/<script>.py.txt "
                           "files written by `make update-expected`")
        else:
            try:
                read(path)
            except SnapshotError as error:
                found[path] = str(error).removeprefix(f"{path}, ").removeprefix(f"{path}: ")
    return found


def write(source: str, snippets: list[Snippet], torch_version: str, expected: Path | None = None) -> Path:
    path = snapshot_path(source, expected)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        path.unlink()  # write the file itself, never through a link
    path.write_text(dumps(source, snippets, torch_version))
    return path
