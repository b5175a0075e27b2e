"""The keyed entity index: what the text stage replaced, as HMACs, so it is found again.

An entity detected in one document is replaced wherever it appears — in the other documents of
its batch, in later batches, and in queries (which are short and often lower case, where a
small NER model finds nothing). The index remembers each replaced entity under keyed HMACs,
never its text:

* ``ent``: the whole entity, normalised (:func:`~private_vectors.text.surrogates.normalise_token`);
* ``tok``: each word of a person's name that is no stop word, no form of address and no plain
  English word (so a surname alone is found again);
* ``low``: a name-list word the documents also write in lower case (an ordinary word: queries do
  not truecase it).

Each entry's value is the entity's label; a value starting with :data:`WEAK` marks an entity
found on weak evidence (:func:`strong_evidence`): queries match it, documents do not.

Interface: one call of the text stage on documents is one *job*, in two steps, so that the
stored result depends neither on how the job is split into batches nor on their order:

1. detection, then keyed facts of each document (:class:`JobFacts`: ``entity_facts`` for every
   span it replaces, ``text_facts`` for the words it writes in lower case): HMACs, labels and
   counts, merged commutatively over the whole job;
2. ``JobIndex.freeze(facts)``: the job's frozen index (a word written in lower case by two texts
   of the job is ordinary: never indexed; a strong entry beats a weak one; of two labels, the
   one more spans gave, then the first in sorted order);
3. ``spans(text, view(job.entries), any_case=False, ordinary=job_words(job))``: the second pass
   against the job's index over the stored one; ``relabel(text, span, view)``: a span takes
   the label its entity had;
4. ``commit_job(job, remembered)`` (:func:`job_changes`), with the entries of every replaced
   span; ``take_changes()`` gives what a store must write.

Queries use ``spans(text)`` (any case) and ``ordinary(word)``. ``get_state()`` /
``load_state()`` / ``check_state()`` move the index to and from a store (JSON-safe: HMACs and
labels); ``defer(loader)`` loads a stored index on first use. Without a key the index lives
under a random per-instance key: it works in memory but cannot be restored elsewhere.

The job's keyed facts and frozen index (:class:`~.job_index.JobFacts`,
:class:`~.job_index.JobIndex`, :class:`~.job_index.KeyedWords`, :func:`~.job_index.job_changes`)
live in :mod:`private_vectors.text.job_index`.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections import ChainMap
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from ..errors import ConfigMismatchError, Described, InvalidParameterError
from .job_index import WEAK, JobFacts, JobIndex, KeyedWords, job_changes
from .overlap import OverlapIndex, TakenRanges
from .rules.ordinary_words import WORD
from .scores import SCORES
from .shapes import acronym, looks_like_a_name
from .spans import Span
from .surrogates import TITLES, normalise_token
from .traits import KEYED_INDEX, PATTERN, PRECISE, has
from .vocabulary import PARTICLES, common_words, english_words, stop_words
from .wordlist import COMMON_CAPITALISED, name_words

__all__ = ["INDEX_STATE_TYPE", "EntityIndex", "strong_evidence"]

INDEX_STATE_TYPE = "sanitizer-query-index"
INDEX_VERSION = 1
_PARTICLE_SET = frozenset(PARTICLES)
_MAC_MEMO_MAX = 100_000
"""HMACs remembered (by kind and value) during one call of the text stage before the memo starts
again: a batch's words and word runs recur across its documents, and a lookup costs far less than
an HMAC. The memo is emptied when the call ends (:meth:`EntityIndex.remembering`)."""


@lru_cache(maxsize=1)
def index_stop_words() -> frozenset[str]:
    """Words never indexed alone: common capitalised words, forms of address, "I", stop words."""
    stop = {w.casefold() for w in COMMON_CAPITALISED} | set(TITLES) | {"i", "i'm", "i’m", "i've", "i'd", "i'll"}
    return frozenset(stop) | stop_words()


def strong_evidence(text: str, span: Span, raw: Sequence[Span], index: OverlapIndex | None = None) -> bool:
    """Whether ``span`` is found on evidence strong enough to replace the entity in other
    documents: a validated pattern (regex, cue/shape identifier), a score of at least 0.9, a
    full name on one line with each part capitalised (not all caps) and name-shaped, or two
    independent recognizers (``raw``: the document's detected spans; ``index``, an
    :class:`~.overlap.OverlapIndex` of them, reads only those near ``span``); never an all-caps
    word of at most four letters ("RNA", "CI", "RT")."""
    if acronym(text[span.start:span.end]):
        return False
    if has(span, PATTERN) or span.score >= SCORES.strong:
        return True
    value = text[span.start:span.end]
    words = value.split()
    if span.label == "PERSON" and len(words) >= 2 and "\n" not in value \
            and all(w[:1].isupper() and not w.isupper() for w in words) and looks_like_a_name(value):
        return True
    near = raw if index is None else index.overlapping(span)
    found_by = {s.detector for s in near if s.start < span.end and span.start < s.end}
    return len(found_by) >= 2


def label_of(value: str) -> str:
    """The label of an index value (weak entries carry a prefix)."""
    return value[len(WEAK):] if value.startswith(WEAK) else value


def plain_word(token: str) -> bool:
    """An English word that is no known name ("phone", "producer", "corporation"): a word of a
    person span that is not indexed alone (the whole span still is)."""
    return token in english_words() and token not in name_words()[0]


class EntityIndex:
    """The keyed entity index of one text stage (see the module docstring).

    Args:
        key: the index subkey (bytes; redacted by the caller's ``SecretBytes``).
        check: a callable giving the state header's key fields (``type``, ``version``,
            ``keyed``, ``key_id``, ``key_salt``) and a callable that checks a header's.
        case_veto: in documents, a word run starting in lower case is not looked up (see
            :meth:`spans`); the learned recognizer's spans may need it off.
    """

    def __init__(self, key: bytes, *, header: Callable[[], dict[str, Any]],
                 check: Callable[[Mapping[str, Any]], bool], case_veto: bool = True) -> None:
        self._key = key
        self._hmac = hmac.new(key, digestmod=hashlib.sha256)  # keyed once; copied per value
        self._macs: dict[tuple[str, str], str] = {}  # memo of one call (never in the state): remembering()
        self._remembering = 0  # calls inside remembering(); the memo is used only then
        self._header = header
        self._check = check
        self.case_veto = case_veto
        self._entries: dict[str, str] = {}
        self._changes: dict[str, str | None] = {}  # entries added (label) or removed (None) since taken
        self._pending: Any = None  # a loader of a stored index, run on first use (lazy reopen)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"EntityIndex(entries={len(self._entries)})"

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def entries_view(self) -> Mapping[str, str]:
        """The stored entries (read-only use)."""
        return self._entries

    # -- keys ----------------------------------------------------------------------------
    def mac(self, kind: str, value: str) -> str:
        """The HMAC of ``value`` under ``kind`` (``ent``, ``tok``, ``low``); remembered inside
        :meth:`remembering` only."""
        out = self._macs.get((kind, value))
        if out is None:
            h = self._hmac.copy()
            h.update(kind.encode() + b"\x00" + value.encode("utf-8"))
            out = h.hexdigest()[:32]
            if self._remembering:
                if len(self._macs) >= _MAC_MEMO_MAX:
                    self._macs.clear()
                self._macs[(kind, value)] = out
        return out

    @contextmanager
    def remembering(self) -> Iterator[None]:
        """Remember HMACs while the block runs, then forget them: the memo holds words of the
        texts, so it lives no longer than one call of the text stage."""
        with self._lock:
            self._remembering += 1
        try:
            yield
        finally:
            with self._lock:
                self._remembering -= 1
                if not self._remembering:
                    self._macs.clear()

    def entries(self, label: str, original: str, ordinary: Collection[str] = frozenset(), *,
                weak: bool = False) -> dict[str, str]:
        """Entries of one replaced entity (its whole text, and a person's name words); none for
        a word in ``ordinary`` (written in lower case elsewhere in the job) or an English word
        that is no known name (:func:`plain_word`). ``weak`` entries serve queries only."""
        return {mac: value for mac, value, words in self._entry_words(label, original, weak)
                if not (words and all(w in ordinary for w in words))}

    def _entry_words(self, label: str, original: str, weak: bool) -> list[tuple[str, str, tuple[str, ...]]]:
        """``(HMAC, value, words)`` of one entity's entries: the entry is dropped when every one
        of its (normalised) words is an ordinary word."""
        out = []
        value = WEAK + label if weak else label
        stop = index_stop_words()
        if label == "PERSON":
            lower = original.islower()
            for m in WORD.finditer(original):
                tok = normalise_token(m.group(0))
                # a name's words are capitalised: "add" of a span "add Esa Uppa" is not one
                if len(tok) >= 2 and tok not in stop and (lower or m.group(0)[0].isupper()) and not plain_word(tok):
                    out.append((self.mac("tok", tok), value, (tok,)))
        norm = normalise_token(original)
        if norm and norm not in stop and not (norm.isdigit() and len(norm) <= 3):  # "34": a bare number names no one
            out.append((self.mac("ent", norm), value, tuple(norm.split())))
        return out

    # -- one job: keyed facts in any order, then a frozen job index -------------------------
    def entity_facts(self, facts: JobFacts, label: str, original: str, *, weak: bool = False) -> None:
        """Add one entity the first step replaces to ``facts``: its entries, each guarded by the
        ``low`` HMACs of its words (dropped when the job finds them all ordinary)."""
        for mac, value, words in self._entry_words(label, original, weak):
            facts.add_entry(mac, value, [self.mac("low", w) for w in words])

    def text_facts(self, facts: JobFacts, text: str) -> None:
        """Add what one text says about case to ``facts``: the ``low`` HMAC of each word it writes
        in lower case (counted once per text; a text all in lower case says nothing), with the
        stored entries such a word removes once the job finds it ordinary and whether it is a
        name-list word (then marked :data:`ORDINARY` for queries)."""
        if text.islower():
            return
        stored = self.view()
        names, places = name_words()
        for w in {normalise_token(m.group(0)) for m in WORD.finditer(text) if m.group(0).islower()}:
            low = self.mac("low", w)
            facts.lower[low] = facts.lower.get(low, 0) + 1
            if stored:
                held = [m for m in (self.mac("tok", w), self.mac("ent", w)) if m in stored]
                if held:
                    facts.drops[low] = sorted(set(facts.drops.get(low, [])) | set(held))
            if w in names or w in places:
                facts.names.add(low)

    def job_words(self, job: JobIndex) -> KeyedWords:
        """The job's ordinary words as a set of words (``word in`` HMACs the word)."""
        return KeyedWords(self.mac, job.ordinary)

    def commit_job(self, job: JobIndex, remembered: Mapping[str, str]) -> None:
        """Write a finished job into the index (:func:`job_changes`) and note the changes."""
        self.load_pending()
        with self._lock:
            for mac, value in job_changes(self._entries, job, remembered).items():
                if value is None:
                    self._entries.pop(mac, None)
                else:
                    self._entries[mac] = value
                self._changes[mac] = value

    # -- reading -------------------------------------------------------------------------
    def view(self, batch: Mapping[str, str] | None = None) -> Mapping[str, str]:
        """The index as a batch sees it: ``batch`` entries over the stored ones (not copied)."""
        self.load_pending()
        return self._entries if batch is None else ChainMap(batch, self._entries)  # type: ignore[arg-type]

    def ordinary(self, word: str) -> bool:
        """Whether ingested documents wrote ``word`` in lower case (a keyed entry, never the word)."""
        return bool(self._entries) and self.mac("low", normalise_token(word)) in self._entries

    def relabel(self, text: str, span: Span, view: Mapping[str, str]) -> Span:
        """``span`` with the label its entity had at ingest, so its surrogate stays the same kind."""
        if not view or has(span, PRECISE):
            return span
        original = text[span.start:span.end]
        found = view.get(self.mac("ent", normalise_token(original)))
        label = None if found is None else label_of(found)
        if label is None and span.label != "PERSON":
            toks = [normalise_token(m.group(0)) for m in WORD.finditer(original)]
            toks = [t for t in toks if len(t) >= 2 and t not in index_stop_words()]
            if toks and all(label_of(view.get(self.mac("tok", t)) or "") == "PERSON" for t in toks):
                label = "PERSON"
        if label is None or label == span.label:
            return span
        return Span(span.start, span.end, label, span.score, span.detector)

    def spans(self, text: str, view: Mapping[str, str] | None = None, *, any_case: bool = True,
              ordinary: Collection[str] = frozenset()) -> list[Span]:
        """Spans of indexed entities found again in ``text`` (detector ``"keyed-index"``).

        Queries (``any_case``) match in any case. In a document a single word matches only
        where it is capitalised (unless the whole document is lower case), so an indexed name
        that is also a word ("Will", "Rose") is not replaced in running text; word runs made only
        of ``ordinary`` words are not looked up, nor (:attr:`case_veto`) word runs that start in
        lower case but for a particle ("van der Berg") with a common word among them; weak
        entries and all-caps words of at most four letters do not propagate, and in lower case
        only a person's full name does."""
        index = self.view() if view is None else view
        if not index:
            return []
        strict = not any_case and not text.islower()
        words = list(WORD.finditer(text))
        keys = [normalise_token(w.group(0)) for w in words]
        # per word, once: whether the job writes it in lower case, whether it is a common word
        plain = [k in ordinary for k in keys] if ordinary else None
        common = common_words()
        usual = [k in common for k in keys] if strict and self.case_veto else None
        busy = TakenRanges()
        out: list[Span] = []
        for n in (4, 3, 2, 1):
            for i in range(len(words) - n + 1):
                if plain is not None and all(plain[i:i + n]):
                    continue
                a, b = words[i].start(), words[i + n - 1].end()
                lowered = strict and not (text[a].isupper() or (n > 1 and (text[a].isdigit() or keys[i] in _PARTICLE_SET)))
                if lowered and usual is not None and any(usual[i:i + n]):
                    continue  # in a document an entity starts with a capital ("Okafor"), a number or "van"
                if text[a:b].endswith(("'s", "’s")):  # "Okafor's": the possessive is not the name's
                    b -= 2
                while b > a and text[b - 1] in ".'’-":  # a sentence's full stop is not the entity's
                    b -= 1
                if busy.overlaps(a, b):
                    continue
                label = self._lookup(text[a:b], index, n)
                if label is not None and not any_case and (
                        label.startswith(WEAK) or (lowered and (label != "PERSON" or n < 2)) or acronym(text[a:b])):
                    label = None
                if label is not None:
                    out.append(Span(a, b, label_of(label), SCORES.certain, KEYED_INDEX))
                    busy.add(a, b)
        return out

    def _lookup(self, value: str, index: Mapping[str, str], n: int) -> str | None:
        norm = normalise_token(value)
        label = index.get(self.mac("ent", norm))
        if (label is None or label.startswith(WEAK)) and n == 1:
            label = index.get(self.mac("tok", norm)) or label
        return label

    # -- writing -------------------------------------------------------------------------
    def add(self, entries: Mapping[str, str]) -> None:
        """Add entries and note the new or changed ones; a weak entry never replaces a strong one."""
        with self._lock:
            for mac, label in entries.items():
                held = self._entries.get(mac)
                if label.startswith(WEAK) and held is not None and not held.startswith(WEAK):
                    continue
                if held != label:
                    self._entries[mac] = label
                    self._changes[mac] = label

    def discard(self, macs: Iterable[str]) -> int:
        """Remove entries (a deleted document's, no other document holding them) and note the
        removals; returns how many were held."""
        self.load_pending()
        with self._lock:
            held = [m for m in macs if m in self._entries]
            for mac in held:
                del self._entries[mac]
                self._changes[mac] = None
        return len(held)

    def take_changes(self) -> dict[str, str | None]:
        """The entries added or changed (HMAC -> label) and removed (HMAC -> None) since the last
        call: what a store must write after a batch (its cost is the batch's, not the index's)."""
        with self._lock:
            out, self._changes = self._changes, {}
        return out

    # -- state ---------------------------------------------------------------------------
    def header(self) -> dict[str, Any]:
        """:meth:`get_state` without its entries (what a store records once, next to them)."""
        return {"type": INDEX_STATE_TYPE, "version": INDEX_VERSION, **self._header()}

    def get_state(self) -> dict[str, Any]:
        """The index as JSON-safe data: HMACs and labels, never names."""
        self.load_pending()
        with self._lock:
            entries = dict(self._entries)
        return {**self.header(), "entries": entries}

    def check_state(self, state: Mapping[str, Any]) -> None:
        """Refuse a saved index header made under another key."""
        if not isinstance(state, Mapping) or state.get("type") != INDEX_STATE_TYPE:
            raise InvalidParameterError("state", "a dict from Sanitizer.get_state()", Described("<not a query index>"))
        if not self._check(state):
            raise ConfigMismatchError("load_state: the query index was made under a different key (or without "
                                      "a key, whose random per-instance key cannot be restored)")

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Add a saved index (from :meth:`get_state`); refuses one made under another key."""
        self.check_state(state)
        entries = state.get("entries") or {}
        if not isinstance(entries, Mapping):
            raise InvalidParameterError("state['entries']", "a mapping HMAC -> label", Described("<not a mapping>"))
        with self._lock:
            self._entries.update({str(k): str(v) for k, v in entries.items()})

    def defer(self, loader: Callable[[], Mapping[str, Any] | None]) -> None:
        """Load a stored index lazily: ``loader()`` is called (once) before the index is next read."""
        with self._lock:
            self._pending = loader

    @property
    def pending(self) -> bool:
        """Whether a deferred stored index is still to be loaded."""
        return self._pending is not None

    def load_pending(self) -> None:
        if self._pending is None:
            return
        with self._lock:
            loader, self._pending = self._pending, None
        if loader is not None:
            state = loader()
            if state is not None:
                self.load_state(state)
