"""The attacker who reads the store: what a copy of it gives away in clear, before any vector.

The harness's threat model hands the attacker the store: its vectors, **the text it keeps** and
its configuration. Whatever the store keeps readable (the stored document text, readable
metadata values) is read, not inferred, so it is leaked at every ε: noise on the vectors does
not touch it. :func:`text_reader` scores that attacker with the leakage metric of the vector
attackers (SPARSE paper eq. 13, :func:`private_vectors.eval.metrics.leakage`): a sensitive token
instance of a victim document counts as recovered when it is a word of what the store keeps of
that document in clear, compared as the attackers compare tokens
(:func:`~private_vectors.eval.attacks.normalize_token`: lower case, edge punctuation stripped).

It is a floor for a clear-text store, not a ceiling: it credits no guess from context (the
linking attacker of the entity task, :class:`~private_vectors.eval.linking.LinkingAttacker`, does
that with a directory) and no inference from the re-encoded text (an attacker who reads the text
can also encode it, noiselessly, with the public encoder: the row's ε = ∞ vector figures). A
sealed store keeps no document text (a keyed marker stands in for it), so its reader recovers
only words that happen to be readable metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["readable_words", "text_reader"]


def readable_words(text: str | None) -> set[str]:
    """The normalised words of ``text`` (empty for None): the harness's word tokens
    (:func:`~private_vectors.eval.datasets.span_tokens`), normalised as the attackers' tokens."""
    from .attacks import normalize_token
    from .datasets import span_tokens

    if not text:
        return set()
    return {w for w in (normalize_token(t) for t in span_tokens(text)) if w}


def text_reader(tokens: Sequence[Sequence[str]], kept: Sequence[str | None], idx: Iterable[int]) -> dict[str, float]:
    """The store reader's leakage on the documents ``idx`` (the vector attackers' victim split).

    Leakage = Σ_s Σ_{t ∈ T(s)} 1[t is a word of kept(s)] / Σ_s |T(s)| over the victim documents
    s (repeats count, as in SPARSE eq. 13), T(s) the sensitive tokens of s and kept(s) the text
    the store keeps of s in clear (document text and readable metadata values, joined; None =
    nothing readable).

    Args:
        tokens: the true sensitive tokens of every document of the leakage set.
        kept: what the store keeps of each of them in clear (same order; None = nothing).
        idx: the victim documents' positions.

    Returns:
        ``leakage_text`` (NaN when the victims hold no sensitive token) and ``text_docs_readable``:
        the share of victim documents with at least one sensitive token readable.
    """
    from .attacks import normalize_token

    if len(tokens) != len(kept):
        raise ValueError(f"kept: expected {len(tokens)} entries (one per document), received {len(kept)}")
    hits: list[bool] = []
    docs: list[bool] = []
    for i in idx:
        words = readable_words(kept[i])
        mine = [normalize_token(t) in words for t in tokens[i] if normalize_token(t)]
        hits += mine
        docs.append(any(mine))
    return {"leakage_text": float(np.mean(hits)) if hits else float("nan"),
            "text_docs_readable": float(np.mean(docs)) if docs else float("nan")}
