"""Detection: running the recognizers over a batch, with chunks, time limits, fallback and progress.

Each text is normalised (:mod:`.normalise`) and cut into overlapping chunks; an all-lower-case
chunk (a query, a chat message) has its known name and place words capitalised for the NER
model (same length, so offsets hold). Every recognizer sees the chunks in groups of at most
:data:`DETECT_GROUP` chunks and :data:`DETECT_CHARS` characters (:func:`detect_groups`); the
``detection``-stage rules run per chunk on what the recognizers read, the spans are mapped back
to the original text, and the ``document``-stage rules run there.

Faults never let raw text through silently: a recognizer that raises or exceeds ``timeout``
raises :class:`DetectionError` unless the user chose ``on_error="fallback"`` (the regex and
word-list recognizers replace the failed one for that call; recorded in ``faults`` and warned)
or ``on_error="redact_all"`` (the caller makes every text of the failed call ``<REDACTED>``).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .._detect_threads import call_with_timeout
from ..errors import PrivateVectorsError
from .normalise import normalise
from .recognizers.regex import RegexDetector
from .recognizers.wordlist import WordListDetector
from .rules import RuleContext, RulePipeline
from .spans import Detector, Span, chunk_text
from .traits import reading
from .wordlist import truecase

__all__ = ["DEFAULT_TIMEOUT", "DETECT_CHARS", "DETECT_GROUP", "ON_ERROR", "Detection", "DetectionError",
           "detect_groups", "detection_progress"]

ON_ERROR: tuple[str, ...] = ("raise", "fallback", "redact_all")
DEFAULT_TIMEOUT = 60.0
"""Seconds one recognizer may take for one group of texts (:func:`detect_groups`) before
:class:`DetectionError` (nothing of the batch is returned, so nothing of it is stored)."""
DETECT_GROUP = 64
"""Most texts (chunks) one recognizer call sees: with :data:`DETECT_CHARS`, the timeout's unit
and the progress step."""
DETECT_CHARS = 50_000
"""Most characters one recognizer call sees (a single longer chunk goes alone), so the time one
call takes follows the amount of text, not the number of texts: long documents are read in
more calls, each well within the time limit, and none is left unread."""
_OVERLAP = 200
_PROGRESS: contextvars.ContextVar[Callable[[float], None] | None] = contextvars.ContextVar(
    "private_vectors_detection_progress", default=None)
# (a progress hook without a parameter on every recognizer: tests/test_process_state.py::
# test_detection_progress_reaches_the_detection_loop)


def detect_groups(lengths: Sequence[int], most: int | None = None, chars: int | None = None) -> list[range]:
    """Consecutive index ranges over texts of the given ``lengths``, each of at most ``most``
    texts and ``chars`` characters (or one text, when that text alone is longer); together they
    cover every text once. Defaults: :data:`DETECT_GROUP` and :data:`DETECT_CHARS`."""
    most = DETECT_GROUP if most is None else most
    chars = DETECT_CHARS if chars is None else chars
    out: list[range] = []
    start, size = 0, 0
    for i, n in enumerate(lengths):
        if i > start and (i - start >= most or size + n > chars):
            out.append(range(start, i))
            start, size = i, 0
        size += n
    if start < len(lengths):
        out.append(range(start, len(lengths)))
    return out


class DetectionError(PrivateVectorsError, RuntimeError):
    """A recognizer raised or timed out; no text was returned for that call."""


@contextlib.contextmanager
def detection_progress(report: Callable[[float], None]) -> Iterator[None]:
    """Call ``report(fraction)`` as detection of a batch advances (a progress bar's hook)."""
    token = _PROGRESS.set(report)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


class Detection:
    """Runs recognizers over texts (see the module docstring).

    Args:
        recognizers: the recognizers, cheap ones first.
        rules: the rule pipeline (its ``detection`` and ``document`` stages run here).
        on_error: one of :data:`ON_ERROR`.
        timeout: seconds one recognizer may take for one group (None: no limit).
        chunk_size: characters per chunk.
        traits: the traits of recognizers no registry holds, by span name (:func:`~.traits.reading`).
    """

    def __init__(self, recognizers: Sequence[Detector], rules: RulePipeline, *, on_error: str,
                 timeout: float | None, chunk_size: int, traits: Mapping[str, frozenset[str]] | None = None) -> None:
        self.recognizers = list(recognizers)
        self.traits = traits or {}
        self.rules = rules
        self.on_error = on_error
        self.timeout = timeout
        self.chunk_size = chunk_size
        self.faults: list[dict[str, Any]] = []

    def _run(self, recognizer: Detector, texts: list[str]) -> list[list[Span]]:
        if self.timeout is None:
            return recognizer.spans(texts)
        return call_with_timeout(recognizer.spans, texts, timeout=self.timeout)  # on a thread that stays alive

    def run(self, texts: list[str], context: RuleContext, ordinary: Callable[[str], bool] | None = None
            ) -> list[list[Span]] | None:
        """Spans per text on its original offsets, after the detection and document rules; None
        when a recognizer failed under ``on_error="redact_all"``. ``ordinary(word)`` true keeps a
        lower-case word as it is when a chunk is truecased."""
        forms = [normalise(t) for t in texts]
        pieces: list[tuple[int, int, str]] = []  # (text index, offset, chunk)
        for i, t in enumerate(texts):
            if t.strip():
                pieces.extend((i, off, c) for off, c in chunk_text(forms[i].text, self.chunk_size, _OVERLAP))
        found: list[list[Span]] = [[] for _ in texts]
        if not pieces:
            return found
        chunks = [truecase(c, ordinary) if c.islower() else c for _, _, c in pieces]
        per_piece = self._recognize(chunks, len(texts))
        if per_piece is None:
            return None
        with reading(self.traits):
            for (i, off, _), chunk, spans in zip(pieces, chunks, per_piece, strict=True):
                spans = self.rules.run("detection", chunk, spans, context)
                found[i].extend(forms[i].spans_back([s.shifted(off) for s in spans]))
            return [self.rules.run("document", t, s, context) for t, s in zip(texts, found, strict=True)]

    def _recognize(self, chunks: list[str], n_texts: int) -> list[list[Span]] | None:
        groups = detect_groups([len(c) for c in chunks])
        report = _PROGRESS.get()
        per_piece: list[list[Span]] = [[] for _ in chunks]
        for d, rec in enumerate(self.recognizers):
            found: list[list[Span]] = []
            try:
                for group in groups:  # the timeout holds per group, so a long batch is no fault
                    found.extend(self._run(rec, chunks[group.start:group.stop]))
                    if report is not None:
                        report((d + group.stop / len(chunks)) / len(self.recognizers))
                if len(found) != len(chunks):
                    raise DetectionError(f"detector {rec.name!r} returned {len(found)} results for "
                                         f"{len(chunks)} texts")
                result: list[list[Span]] | None = found
            except Exception as exc:
                result = self._fault(rec, exc, chunks, n_texts)
            if result is None:
                return None
            for acc, spans in zip(per_piece, result, strict=True):
                acc.extend(spans)
        return per_piece

    def _fault(self, failed: Detector, exc: Exception, chunks: list[str], n_texts: int) -> list[list[Span]] | None:
        kind = "timed out" if isinstance(exc, concurrent.futures.TimeoutError) else f"raised {type(exc).__name__}"
        self.faults.append({"detector": failed.name, "error": kind, "texts": n_texts, "action": self.on_error})
        if self.on_error == "raise":
            raise DetectionError(f"detector {failed.name!r} {kind}; no text was sanitized or returned "
                                 "(choose on_error='fallback' or 'redact_all' to continue)") from exc
        warnings.warn(f"Sanitizer: detector {failed.name!r} {kind}; on_error={self.on_error!r} applied", stacklevel=5)
        if self.on_error == "redact_all":
            return None
        out: list[list[Span]] = [[] for _ in chunks]
        backups: list[Detector] = [WordListDetector()]
        if not isinstance(failed, RegexDetector):
            backups.insert(0, RegexDetector())
        for b in backups:
            for acc, spans in zip(out, b.spans(chunks), strict=True):
                acc.extend(spans)
        return out
