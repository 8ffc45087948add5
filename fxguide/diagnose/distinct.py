"""How telling a line of a message template is: whether its literal text tells torch's message from other code's.

A template such as ``{} is not supported`` or ``{} object has no attribute {}``
holds words any code prints; recognising a paste by it would claim errors of
plain Python and of other libraries as torch's. :func:`distinctive` scores the
literal text's terms (an identifier of code, ``fw_metadata`` or
``torch.fx``, says most; words common in error messages and Python's own names
say nothing) and asks for :data:`MIN_POINTS`. :func:`whole_words` gives the
words a lookup may index a line by: those a filled-in value cannot extend.
"""

from __future__ import annotations

import builtins
import re

from fxguide.diagnose.torch_messages import parts

TOKEN = re.compile(r"[A-Za-z_]\w*")
"""A word as the lookup indexes a template line by it, and reads it in a paste."""
_TERM = re.compile(r"[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)*(?:\(\))?")  # a word, `torch.fx`, `train()`; `e.g.` is none
_WORD = re.compile(r"[A-Za-z]{3,}")
# Words that say nothing about which message it is: English's small words, and the vocabulary of Python's own
# messages ("object has no attribute", "takes 2 positional arguments but 3 were given"): Python's builtin names
# count for nothing too, and so do the dunder names every class has
_COMMON = frozenset("""
    the and for not are was were has have had can cannot must should would could will with that this these those from
    but got get than then into its all any one only when which what where who how why you your use used using
    expected expect found given valid invalid instead please make sure type types value values object objects
    argument arguments attribute attributes positional keyword unexpected missing required supported unsupported
    support error errors failed fail does did doesn don isn aren there their been being also more other such same
    each either neither both yet now just like see try trying takes take index key module name defined
    import callable iterable subscriptable instance function method class self args kwargs none true false nonetype
    item items element elements number numbers string strings line file
""".split()) | {name.lower() for name in dir(builtins)}
# Python's own special names (every class has them); torch's own (`__torch_function__`) are identifiers
_PYTHON_DUNDERS = frozenset(name for kind in (object, type, int, float, list, dict, tuple, str, set, BaseException,
                                              type(len), type(lambda: 0), type(builtins), property, classmethod)
                            for name in dir(kind) if name.startswith("__")) | {
    "__main__", "__enter__", "__exit__", "__iter__", "__next__", "__len__", "__bool__", "__index__", "__getitem__",
    "__setitem__", "__delitem__", "__contains__", "__get__", "__set__", "__delete__", "__post_init__", "__slots__",
    "__wrapped__", "__func__", "__self__", "__code__", "__globals__", "__await__", "__aiter__", "__anext__"}
_ACRONYM = re.compile(r"[A-Z]{3,}")
_IDENTIFIER = re.compile(r"[A-Za-z0-9]_|_[A-Za-z0-9]|[a-z][A-Z]|[A-Za-z]\d|\.|\(\)$")
MIN_POINTS = 3
"""The least score a recognisable template line's literal text has. An identifier of code (``fw_metadata``,
``SymFloat``, ``torch.fx``, ``train()``, ``__torch_function__``) 3 points, an acronym (``STFT``) 2, any other word
of three letters or more 1 (``data-dependent`` is two); common words, Python's builtin and special names 0."""
PHRASE_WORDS = 8
"""... or a phrase this long (words of two letters or more) with :data:`MIN_POINTS` - 1 points (``Expected positional
argument for parameter {}, but one was not passed in!``)."""
_PHRASE_WORD = re.compile(r"[A-Za-z]{2,}")
WHOLE_WORDS = 6
"""... or, for a whole message (a template with no wildcard, found as all of a pasted message under its own exception
type, :func:`distinctive` with ``whole``), a sentence this long with :data:`MIN_POINTS` - 2 points: ``Calling eval()
is not supported yet.`` (``eval`` is a builtin's name, so only ``Calling`` counts). Shorter or emptier sentences
(``value must not be None``, ``Not yet implemented``) stay anyone's."""


def _points(term: str) -> int:
    bare = term.removesuffix("()")
    if bare.lower() in _COMMON or bare in _PYTHON_DUNDERS:
        return 0
    return 3 if _IDENTIFIER.search(term) else 2 if _ACRONYM.fullmatch(term) else 1 if _WORD.fullmatch(term) else 0


def distinctive(text: str, whole: bool = False) -> bool:
    """Whether a template line's literal text tells its message from other code's: at least :data:`MIN_POINTS`
    points (each term counted once), or one less in a phrase of :data:`PHRASE_WORDS` words; or, ``whole`` (the line
    is a whole message without wildcards, matched from its first character to its last under its exception type),
    two less in a sentence of :data:`WHOLE_WORDS` words.

    >>> distinctive("symbolically traced variables cannot be used as inputs to control flow")
    True
    >>> distinctive("fw_metadata must not be None"), distinctive("Calling train() is not supported yet.")
    (True, True)
    >>> distinctive("{} object has no attribute {}"), distinctive("Expected {} but got {}")
    (False, False)
    >>> distinctive("int() argument must be a string, a bytes-like object or a real number, not {}")
    False
    >>> sentence = "Calling eval() is not supported yet."
    >>> distinctive(sentence), distinctive(sentence, whole=True)
    (False, True)
    >>> distinctive("value must not be None", whole=True), distinctive("Not yet implemented", whole=True)
    (False, False)
    """
    literal = parts(text)
    points = sum(_points(term) for term in {term for part in literal for term in _TERM.findall(part)})
    phrase = len(_PHRASE_WORD.findall(" ".join(literal)))
    return (points >= MIN_POINTS or points == MIN_POINTS - 1 and phrase >= PHRASE_WORDS
            or whole and points >= MIN_POINTS - 2 and phrase >= WHOLE_WORDS)


def whole_words(literal: tuple[str, ...]) -> set[str]:
    """The words of the literal parts that a filled-in value cannot extend: not touching a wildcard."""
    words = set()
    for index, part in enumerate(literal):
        for match in TOKEN.finditer(part):
            glued_left = match.start() == 0 and index > 0
            glued_right = match.end() == len(part) and index < len(literal) - 1
            if not glued_left and not glued_right and len(match[0]) >= 3:
                words.add(match[0])
    return words


__all__ = ["MIN_POINTS", "PHRASE_WORDS", "TOKEN", "WHOLE_WORDS", "distinctive", "whole_words"]
