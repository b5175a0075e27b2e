"""R(s, C): remove a concept's tokens from a sentence and tidy what is left.

The SPARSE paper (§3.1) builds the negative set D⁻ = {R(s, C)} by deleting the concept's
tokens from each sentence of D⁺. Here that deletion is exact and documented:

* tokens match on word boundaries only: ``"Ann"`` never removes part of ``"Annual"``;
* matching is **case-insensitive by default** (``"monday"`` removes ``"Monday"``); pass
  ``case_sensitive=True`` to match the exact case;
* multi-word tokens (``"New York"``) match with any run of whitespace between their words,
  and longer tokens win over shorter ones they contain (``"New York City"`` before ``"York"``);
* every occurrence is removed (repeated tokens), together with a directly following
  possessive ``'s`` (``"Maria's"`` → nothing, not a stray ``'s``);
* afterwards whitespace and punctuation are tidied: runs of whitespace become one space,
  no space before ``, . ; : ! ? )``, separators left doubled (``", ,"``) collapse, empty
  brackets disappear and leading separators are dropped. Words that are not concept tokens are
  never removed or reordered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..errors import InvalidParameterError, InvalidTypeError

__all__ = ["find_tokens", "remove_spans", "remove_tokens", "tidy"]

_POSSESSIVE = r"(?:['’]s\b)?"


def _token_pattern(tokens: Iterable[str], case_sensitive: bool) -> re.Pattern[str] | None:
    cleaned: list[str] = []
    for i, tok in enumerate(tokens):
        if not isinstance(tok, str):
            raise InvalidTypeError(f"tokens[{i}]", "a str", tok)
        words = tok.split()
        if words:
            cleaned.append(r"\s+".join(re.escape(w) for w in words))
    if not cleaned:
        return None
    # longest first so multi-word tokens win over their parts; dedupe keeps the regex small
    alternatives = sorted(set(cleaned), key=lambda p: (-len(p), p))
    body = "|".join(alternatives)
    flags = 0 if case_sensitive else re.IGNORECASE
    return re.compile(rf"(?<!\w)(?:{body})(?!\w){_POSSESSIVE}", flags)


def _canonical(tokens: Sequence[str], case_sensitive: bool) -> dict[str, str]:
    """Map a normalised surface form (whitespace collapsed, lower-cased if insensitive) to its token."""
    out: dict[str, str] = {}
    for tok in tokens:
        key = " ".join(tok.split())
        out.setdefault(key if case_sensitive else key.lower(), tok)
    return out


def find_tokens(text: str, tokens: Sequence[str], *, case_sensitive: bool = False) -> list[tuple[int, int, str]]:
    """Occurrences of ``tokens`` in ``text``: ``(start, end, token as listed)`` left to right.

    The span includes a possessive ``'s`` that follows a token; the returned token is the
    canonical spelling from ``tokens`` (so case variants group together).
    """
    if not isinstance(text, str):
        raise InvalidTypeError("text", "a str", text)
    if isinstance(tokens, str):
        raise InvalidTypeError("tokens", "a list of strings", tokens, note="wrap a single token in a list")
    try:
        tokens = list(tokens)
    except TypeError as exc:  # None, numbers and other non-iterables
        raise InvalidTypeError("tokens", "a list of strings", tokens) from exc
    pattern = _token_pattern(tokens, case_sensitive)
    if pattern is None:
        return []
    canon = _canonical(tokens, case_sensitive)
    found = []
    for m in pattern.finditer(text):
        surface = re.sub(r"['’]s$", "", m.group(0)) if re.search(r"['’]s$", m.group(0)) else m.group(0)
        key = " ".join(surface.split())
        key = key if case_sensitive else key.lower()
        found.append((m.start(), m.end(), canon.get(key, surface)))
    return found


_SEP = r"[,;:]"


def tidy(text: str) -> str:
    """Tidy whitespace and punctuation left behind by a removal (see the module docstring)."""
    out = re.sub(r"\s+", " ", text)
    out = re.sub(r"\(\s*\)|\[\s*\]|\"\s*\"", " ", out)  # empty brackets / quotes
    out = re.sub(r"\s+([,.;:!?)\]])", r"\1", out)  # no space before closing punctuation
    out = re.sub(r"([(\[])\s+", r"\1", out)  # no space after opening brackets
    # separators left doubled: ", ," -> ","; ", ." -> "."; ": ," -> ":"
    prev = None
    while prev != out:
        prev = out
        out = re.sub(rf"({_SEP})\s*{_SEP}", r"\1", out)
        out = re.sub(rf"{_SEP}\s*([.!?])", r"\1", out)
        out = re.sub(r"([.!?])\s*[,;:]", r"\1", out)
    out = re.sub(rf"^\s*(?:{_SEP}|[-–—])\s*", "", out)  # leading separator
    out = re.sub(r"\s+", " ", out)
    return out.strip()


def remove_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """Delete character spans ``[start, end)`` from ``text`` (overlaps allowed), then :func:`tidy`."""
    if not isinstance(text, str):
        raise InvalidTypeError("text", "a str", text)
    keep = [True] * len(text)
    for start, end in spans:
        if not (0 <= start <= end <= len(text)):
            raise InvalidParameterError("spans", f"0 <= start <= end <= {len(text)}", (start, end))
        for i in range(start, end):
            keep[i] = False
    pieces: list[str] = []
    for i, ch in enumerate(text):
        if keep[i]:
            pieces.append(ch)
        elif i == 0 or keep[i - 1]:
            pieces.append(" ")  # a removed run becomes one space, so neighbours never glue
    return tidy("".join(pieces))


def remove_tokens(text: str, tokens: Sequence[str], *, case_sensitive: bool = False) -> str:
    """R(s, C): ``text`` without any of ``tokens`` (SPARSE §3.1), tidied.

    Args:
        text: the sentence s.
        tokens: the concept's tokens C (single words or multi-word phrases).
        case_sensitive: match exact case only (default False: case-insensitive).

    Returns:
        The sentence with every occurrence of every token removed; whitespace and
        punctuation tidied as described in the module docstring. A text without concept
        tokens comes back tidied but otherwise unchanged.
    """
    matches = find_tokens(text, tokens, case_sensitive=case_sensitive)
    return remove_spans(text, [(s, e) for s, e, _ in matches])
