"""Messages of torch that Python's standard library raises in the same words: not evidence of torch's capture stack.

Dynamo re-raises ``attempted relative import beyond top-level package`` as
importlib does; ``torch.export`` copies ``commonpath() arg is an empty
sequence`` from ``posixpath``. A reader who pastes one of these met Python's
error as often as torch's, so the inventory marks them (``"python"``: the
standard-library file that has the words) and the lookup does not recognise
them. Found by reading the standard library's source lines (never importing
it): a line that holds every literal part of a template, in order.
"""

from __future__ import annotations

import re
import sysconfig
from pathlib import Path

from fxsite.inventory.templates import literal_parts

_WORD = re.compile(r"[A-Za-z_]{4,}")
_SKIPPED = ("test", "idlelib", "tkinter", "lib2to3", "site-packages", "dist-packages", "turtledemo", "ensurepip")
_MIN_PART = 12  # a template whose longest literal part is shorter says too little to be compared


def _parts(template: str) -> list[str]:
    """The literal parts of the template's line with the most literal text."""
    return max((literal_parts(line) for line in template.split("\n")), key=lambda parts: sum(map(len, parts)))


def python_files(stdlib: Path | None = None) -> list[Path]:
    """The standard library's own modules (its tests, IDLE and Tk left out)."""
    root = Path(stdlib or sysconfig.get_paths()["stdlib"])
    return [path for path in sorted(root.rglob("*.py")) if path.relative_to(root).parts[0] not in _SKIPPED]


def in_python(templates: dict[str, str], stdlib: Path | None = None) -> dict[str, str]:
    """Of ``templates`` (id -> template), those a source line of the standard library holds, in order: id ->
    the file (relative to the standard library)."""
    root = Path(stdlib or sysconfig.get_paths()["stdlib"])
    by_word: dict[str, list[tuple[str, list[str]]]] = {}
    for key, template in templates.items():
        parts = _parts(template)
        longest = max(parts, key=len, default="")
        words = _WORD.findall(longest)
        if len(longest) >= _MIN_PART and words:
            by_word.setdefault(max(words, key=len), []).append((key, parts))
    found: dict[str, str] = {}
    for path in python_files(root):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if "'" not in line and '"' not in line:
                continue
            for word in set(_WORD.findall(line)) & by_word.keys():
                for key, parts in by_word[word]:
                    if key not in found and _in_order(line, parts):
                        found[key] = path.relative_to(root).as_posix()
    return found


def _in_order(line: str, parts: list[str]) -> bool:
    at = 0
    for part in parts:
        at = line.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return True


__all__ = ["in_python", "python_files"]
