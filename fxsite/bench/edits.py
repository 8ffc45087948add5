"""The edits ``make bench`` times rebuilds after: new each run, so no cache can have seen them."""

from __future__ import annotations


def edit(text: str, suffix: str, kind: str, run: int) -> str:
    r"""``text`` with an edit no cache can have seen: run ``run`` of kind ``code`` or ``prose``.

    A code edit of a page adds a comment at the end of its first code cell (the cell
    runs again, its output stays the same, so ``make check`` still passes); of a
    script, a comment line at its end. A prose edit adds a paragraph at the end of a page.

    >>> edit("# T\n\n```{code-cell} python\nx = 1\n```\n", ".md", "code", 2)
    '# T\n\n```{code-cell} python\nx = 1\n# bench edit 2\n```\n'
    >>> edit("# T\n", ".md", "prose", 1)
    '# T\n\nA bench edit, 1.\n'
    """
    if kind not in {"code", "prose"} or (suffix == ".py" and kind == "prose"):
        raise ValueError(f"edit: no {kind} edit for a {suffix} source")
    if suffix == ".py":
        return text + f"\n# bench edit {run}\n"
    if kind == "prose":
        return text.rstrip("\n") + f"\n\nA bench edit, {run}.\n"
    start = text.index("```{code-cell}")
    end = text.index("\n```", text.index("\n", start))
    return text[:end] + f"\n# bench edit {run}" + text[end:]
