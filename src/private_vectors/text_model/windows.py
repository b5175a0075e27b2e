"""Whole documents in strided windows, and token labels back to character spans.

A document is tokenized once (WordPiece, with character offsets), cut into windows of at most
``window - 2`` tokens (``[CLS]`` and ``[SEP]`` added to each) that start every ``stride`` tokens,
so nothing is truncated. Each token takes its logits from the window in which it sits farthest
from an edge: the one where it has the most context on both sides (the "maximum context" rule of
Devlin et al., "BERT", NAACL 2019, used for long SQuAD documents).

Labels are BIO tags (Ramshaw & Marcus, 1995). A word is its first WordPiece and the ``##``
pieces that follow; it takes the tag of its first piece. A span opens at ``B-X``, or at ``I-X``
after a tag of another type (the lenient reading of the CoNLL evaluation script), and continues
over ``I-X``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Window", "best_window", "decode", "plan_windows", "read_whole", "word_groups", "words"]


@dataclass(frozen=True)
class Window:
    """Tokens ``start:end`` of a document, to be read as ``[CLS] tokens [SEP]``."""

    start: int
    end: int


def plan_windows(n_tokens: int, window: int, stride: int) -> list[Window]:
    """Windows of at most ``window - 2`` tokens every ``stride`` tokens, covering all ``n_tokens``
    (one empty window for an empty document)."""
    size = window - 2
    if size < 1 or not 0 < stride <= size:
        raise ValueError(f"window {window} and stride {stride}: need window > 2 and 0 < stride <= window - 2")
    if n_tokens <= size:
        return [Window(0, n_tokens)]
    out = []
    start = 0
    while True:
        end = min(start + size, n_tokens)
        out.append(Window(start, end))
        if end == n_tokens:
            return out
        start += stride


def best_window(n_tokens: int, windows: Sequence[Window]) -> np.ndarray:
    """For each token, the index of the window where it has the most context on its scarcer side."""
    best = np.zeros(n_tokens, dtype=np.int64)
    room = np.full(n_tokens, -1, dtype=np.int64)
    for w_i, w in enumerate(windows):
        idx = np.arange(w.start, w.end)
        r = np.minimum(idx - w.start, w.end - 1 - idx)
        better = r > room[idx]
        best[idx[better]] = w_i
        room[idx[better]] = r[better]
    return best


def words(pieces: Sequence[str]) -> list[list[int]]:
    """Token indices grouped into words (a ``##`` piece joins the word before it)."""
    out: list[list[int]] = []
    for i, p in enumerate(pieces):
        if p.startswith("##") and out:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def word_groups(word_ids: Sequence[int | None]) -> list[list[int]]:
    """Token indices grouped by the word index a fast tokenizer reports for each token (tokens
    without a word, such as special tokens, are left out)."""
    out: list[list[int]] = []
    last: int | None = None
    for i, w in enumerate(word_ids):
        if w is None:
            last = None
            continue
        if out and w == last:
            out[-1].append(i)
        else:
            out.append([i])
        last = w
    return out


def decode(pieces: Sequence[str] | Sequence[Sequence[int]], offsets: Sequence[tuple[int, int]], probs: np.ndarray,
           tags: Sequence[str]) -> list[tuple[int, int, str, float]]:
    """Character spans ``(start, end, type, score)`` from per-token class probabilities.

    Args:
        pieces: the WordPiece strings of the document, or its tokens already grouped into words
            (lists of token indices, see :func:`word_groups`).
        offsets: each token's character offsets in the document.
        probs: (tokens × classes) probabilities.
        tags: the class names (``"O"``, ``"B-PERSON"``, ``"I-PERSON"``, ...).

    The score of a span is the mean, over its words, of the probability of the word's tag.
    """
    out: list[tuple[int, int, str, float]] = []
    current: _Open | None = None
    groups: list[list[int]] = (words([str(p) for p in pieces]) if pieces and isinstance(pieces[0], str)
                               else [[int(i) for i in g] for g in pieces])
    for word in groups:
        first = word[0]
        k = int(np.argmax(probs[first]))
        tag = tags[k]
        kind = tag[2:] if tag != "O" else None
        end = int(offsets[word[-1]][1])
        if kind is not None and current is not None and current.kind == kind and tag.startswith("I-"):
            current.end = end
            current.scores.append(float(probs[first, k]))
            continue
        if current is not None:
            out.append(current.span())
            current = None
        if kind is not None:
            current = _Open(int(offsets[first][0]), end, kind, [float(probs[first, k])])
    if current is not None:
        out.append(current.span())
    return out


@dataclass
class _Open:
    start: int
    end: int
    kind: str
    scores: list[float]

    def span(self) -> tuple[int, int, str, float]:
        return self.start, self.end, self.kind, sum(self.scores) / len(self.scores)


def read_whole(lengths: Sequence[int], size: int, stride: int, batch_size: int, n_tags: int,
               run: Callable[[list[tuple[int, Window]]], list[np.ndarray]],
               batch_tokens: int | None = None) -> list[np.ndarray]:
    """Per-token probabilities of whole documents read in windows.

    Args:
        lengths: each document's number of tokens.
        size: tokens per window (without special tokens).
        stride: tokens between window starts.
        batch_size: at most this many windows per call of ``run``.
        batch_tokens: at most this many padded tokens (windows × the widest, special tokens
            included) per call of ``run``, so short texts share one call and long ones do not
            make it large (None: ``batch_size`` alone decides).
        n_tags: number of classes.
        run: given ``(document index, window)`` jobs of similar length, the (window tokens × classes)
            probabilities of each.

    Returns:
        One (tokens × classes) array per document; each token's row comes from the window where it
        has the most context (:func:`best_window`).
    """
    plans = [plan_windows(n, size + 2, stride) for n in lengths]
    jobs = [(t, w) for t, ws in enumerate(plans) for w in ws if w.end > w.start]
    jobs.sort(key=lambda j: -(j[1].end - j[1].start))
    got: dict[tuple[int, int], np.ndarray] = {}
    for batch in _batches(jobs, batch_size, batch_tokens):
        for (t, w), probs in zip(batch, run(batch), strict=True):
            got[(t, w.start)] = probs
    out = []
    for t, n in enumerate(lengths):
        p = np.zeros((n, n_tags), dtype=np.float32)
        if n:
            choice = best_window(n, plans[t])
            for w_i, w in enumerate(plans[t]):
                rows = np.nonzero(choice == w_i)[0]
                p[rows] = got[(t, w.start)][rows - w.start]
        out.append(p)
    return out


def _batches(jobs: list[tuple[int, Window]], batch_size: int, batch_tokens: int | None
             ) -> list[list[tuple[int, Window]]]:
    """Consecutive runs of ``jobs`` (sorted longest first) of at most ``batch_size`` windows and,
    padded to their first (widest) window plus two special tokens, ``batch_tokens`` tokens."""
    out: list[list[tuple[int, Window]]] = []
    for job in jobs:
        if out:
            last = out[-1]
            width = last[0][1].end - last[0][1].start + 2
            if len(last) < batch_size and (batch_tokens is None or (len(last) + 1) * width <= batch_tokens):
                last.append(job)
                continue
        out.append([job])
    return out
