"""Hashtags and handles read as the words they join: ``#JohnSmith``, ``@john_smith``, ``#johnsmith``.

A tag (``#`` or ``@`` then word characters, not inside a word, an e-mail address or a URL) is cut
into words at underscores, digits and case changes (``JohnSmith``, ``JSmith``), and a run of one
case that is no word itself is cut into the fewest whole words of the default encoder's WordPiece
vocabulary that spell it (dynamic programming over the string; a run no sequence of such words
spells stays whole). A detector then reads the *view* of a text, where each tag is written as its
words, and :meth:`TagView.original` maps a span of the view back onto the text, widened to the
whole tag when it touches one: a name inside a tag replaces the tag.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = ["TAG", "TagView", "as_words", "split_run", "tag_view", "tag_views", "tag_words"]

TAG = re.compile(r"(?<![\w#@/.:=&?+-])[#@](\w+)")
"""A hashtag or handle: ``#`` or ``@`` not after a word, a URL or an address, then word characters."""
_LONGEST = 24


def split_run(run: str, vocabulary: Collection[str]) -> list[str]:
    """The fewest vocabulary words (two letters or more) that spell ``run`` (all lower or all upper
    case) casefolded, ties broken by the longest shortest word; ``[run]`` when ``run`` is mixed
    case, a word itself, shorter than four letters, or no sequence of words spells it."""
    low = run.casefold()
    if not (run.islower() or run.isupper()) or len(low) != len(run) or low in vocabulary or len(run) < 4:
        return [run]
    best: list[tuple[int, int, int] | None] = [None] * (len(low) + 1)  # (pieces, -shortest, start)
    best[0] = (0, -_LONGEST, 0)
    for end in range(2, len(low) + 1):
        for start in range(max(0, end - _LONGEST), end - 1):
            prev = best[start]
            if prev is None or low[start:end] not in vocabulary:
                continue
            cand = (prev[0] + 1, max(prev[1], start - end), start)
            if best[end] is None or cand[:2] < best[end][:2]:  # type: ignore[index]
                best[end] = cand
    if best[-1] is None or best[-1][0] < 2:
        return [run]
    cuts, end = [], len(low)
    while end:
        start = best[end][2]  # type: ignore[index]
        cuts.append(run[start:end])
        end = start
    return cuts[::-1]


def _case_pieces(run: str) -> list[str]:
    """``run`` cut before an upper-case letter that follows a lower-case one or that starts a
    capitalised word after capitals (``JohnSmith`` → John, Smith; ``JSmith`` → J, Smith)."""
    out, start = [], 0
    for i in range(1, len(run)):
        prev, here, nxt = run[i - 1], run[i], run[i + 1] if i + 1 < len(run) else ""
        if here.isupper() and (prev.islower() or (prev.isupper() and nxt.islower())):
            out.append(run[start:i])
            start = i
    return [*out, run[start:]]


def tag_words(body: str, vocabulary: Collection[str]) -> list[tuple[int, int]]:
    """The words of a tag's body (without ``#``/``@``) as ``(start, end)`` offsets into it."""
    out = []
    for m in re.finditer(r"[^\W\d_]+|\d+", body):
        pos = m.start()
        for piece in _case_pieces(m.group()):
            for word in split_run(piece, vocabulary):
                out.append((pos, pos + len(word)))
                pos += len(word)
    return out


@dataclass(frozen=True)
class TagView:
    """A text with its tags written as words, and how to go back."""

    text: str
    """The view: each tag's mark kept, its words separated by spaces."""
    origin: tuple[int, ...]
    """For each character of the view, the index of the character of the text it stands for."""
    tags: tuple[tuple[int, int], ...]
    """Each cut tag's ``(start, end)`` in the original text, mark included."""

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The text's span for the view's ``[start, end)``, widened to every tag it touches."""
        a, b = self.origin[start], self.origin[end - 1] + 1
        for t0, t1 in self.tags:
            if t0 < b and a < t1:
                a, b = min(a, t0), max(b, t1)
        return a, b


def tag_view(text: str, vocabulary: Collection[str]) -> TagView:
    """``text`` with each tag of two words or more written as ``# word word``."""
    parts: list[str] = []
    origin: list[int] = []
    tags = []
    pos = 0
    for m in TAG.finditer(text):
        words = tag_words(m.group(1), vocabulary)
        if len(words) < 2:
            continue
        parts.append(text[pos:m.start()])
        origin.extend(range(pos, m.start()))
        body = m.start(1)
        parts.append(text[m.start()] + " ")
        origin.extend((m.start(), body))
        for i, (a, b) in enumerate(words):
            if i:
                parts.append(" ")
                origin.append(body + a)
            parts.append(text[body + a:body + b])
            origin.extend(range(body + a, body + b))
        pos = m.end()
        tags.append((m.start(), m.end()))
    if not tags:
        return TagView(text, tuple(range(len(text))), ())
    parts.append(text[pos:])
    origin.extend(range(pos, len(text)))
    return TagView("".join(parts), tuple(origin), tuple(tags))


def tag_views(texts: Sequence[str], vocabulary: Collection[str]) -> list[TagView]:
    """:func:`tag_view` of each text."""
    return [tag_view(t, vocabulary) for t in texts]


def as_words(text: str, start: int, end: int) -> str:
    """``text[start:end]`` as the rules weigh its shape: a whole tag, or a tag's body without its
    mark, as its words (``#MaryRuiz`` → ``Mary Ruiz``; the default encoder's vocabulary cuts
    joined words); any other text as is."""
    value = text[start:end]
    body = value[1:] if value[:1] in "#@" else value
    mark = start if value[:1] in "#@" else start - 1
    if mark < 0 or not body or not re.fullmatch(r"\w+", body):
        return value
    m = TAG.match(text, mark)
    if m is None or m.end(1) != end:
        return value
    from .vocabulary import encoder_words

    return " ".join(body[a:b] for a, b in tag_words(body, encoder_words()))
