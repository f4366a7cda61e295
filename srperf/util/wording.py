"""Counts in English for the lines srperf prints: ``1 search``, ``2 searches``, ``no trials``."""

from __future__ import annotations

_IRREGULAR = {"search": "searches", "VNF": "VNFs", "was": "were", "is": "are"}


def plural(word: str, n: int) -> str:
    """``word`` as it reads after the count ``n``: singular for 1, plural otherwise."""
    if n == 1:
        return word
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def count(n: int, word: str, zero: str | None = None) -> str:
    """``n`` and ``word`` in agreement: ``count(1, "search")`` is ``1 search``,
    ``count(3, "trial")`` ``3 trials``; at 0, ``zero`` if given (e.g. ``"no"``)
    stands for the number: ``count(0, "trial", zero="no")`` is ``no trials``."""
    number = zero if n == 0 and zero is not None else str(n)
    return f"{number} {plural(word, n)}"


__all__ = ["count", "plural"]
