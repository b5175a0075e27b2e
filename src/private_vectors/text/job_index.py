"""One job of the keyed entity index, as keyed facts: what the text stage's first step learns
from the job's documents, merged in any order, and the frozen index the second step replaces
against (see :mod:`private_vectors.text.entity_index` for the whole interface).

Everything here is HMACs, labels and counts: JSON-safe, never words, so a job's facts can be
built on several workers and merged (the merge is commutative and associative).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import Described, InvalidParameterError

__all__ = [
    "ORDINARY",
    "WEAK",
    "JobFacts",
    "JobIndex",
    "KeyedWords",
    "elect",
    "job_changes",
    "merge_values",
    "stronger",
]

WEAK = "~"
"""Prefix of the value of an entry found on weak evidence."""
ORDINARY = "ORDINARY"
"""Label of a ``low`` entry: a name-list word the documents also write in lower case."""


def stronger(a: str, b: str) -> str:
    """Of two values of one entry: a strong entry beats a weak one; among equals, the first
    label in sorted order (so the result depends on neither the order nor the partitioning)."""
    weak_a, weak_b = a.startswith(WEAK), b.startswith(WEAK)
    if weak_a != weak_b:
        return b if weak_a else a
    return min(a, b)


def elect(votes: Mapping[str, int]) -> str:
    """The value of an entry the job's spans gave several: strong evidence beats weak; then the
    label given by the most spans; of equals, the first in sorted order."""
    strong = {v: n for v, n in votes.items() if not v.startswith(WEAK)}
    pool = strong or votes
    return min(pool, key=lambda v: (-pool[v], v))


def merge_values(into: dict[str, str], entries: Mapping[str, str]) -> None:
    """Merge entries into ``into`` with :func:`stronger` (commutative and associative)."""
    for mac, value in entries.items():
        held = into.get(mac)
        into[mac] = value if held is None else stronger(held, value)


@dataclass
class JobFacts:
    """What the first step of a job learns from its documents, as keyed facts only.

    Built per document or batch (:meth:`EntityIndex.entity_facts`, :meth:`EntityIndex.text_facts`)
    and merged with :meth:`merge` in any order and grouping: the merge is commutative and
    associative, so a job split over workers and partitions gives the same facts.

    Attributes:
        votes: entry HMAC -> {value: number of spans} (value: the label; :data:`WEAK` prefix on
            weak evidence); :meth:`JobIndex.freeze` elects one value (:func:`elect`).
        guards: entry HMAC -> the ``low`` HMACs of its words (the entry is dropped when the job
            finds all of them ordinary).
        lower: ``low`` HMAC of a word -> number of texts that write it in lower case.
        drops: ``low`` HMAC -> stored entries (of earlier jobs) the word removes once ordinary.
        names: ``low`` HMACs of name-list words.
    """

    votes: dict[str, dict[str, int]] = field(default_factory=dict)
    guards: dict[str, list[str]] = field(default_factory=dict)
    lower: dict[str, int] = field(default_factory=dict)
    drops: dict[str, list[str]] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)

    def add_entry(self, mac: str, value: str, guard: list[str]) -> None:
        held = self.votes.setdefault(mac, {})
        held[value] = held.get(value, 0) + 1
        self.guards.setdefault(mac, guard)  # an HMAC names one text, so one guard

    def merge(self, other: JobFacts) -> JobFacts:
        """Add ``other``'s facts to these (in place) and return them."""
        for mac, votes in other.votes.items():
            held = self.votes.setdefault(mac, {})
            for value, n in votes.items():
                held[value] = held.get(value, 0) + int(n)
        for mac, guard in other.guards.items():
            self.guards.setdefault(mac, list(guard))
        for low, n in other.lower.items():
            self.lower[low] = self.lower.get(low, 0) + int(n)
        for low, held in other.drops.items():
            self.drops[low] = sorted(set(self.drops.get(low, [])) | set(held))
        self.names |= set(other.names)
        return self

    @classmethod
    def merged(cls, parts: Iterable[JobFacts | Mapping[str, Any]]) -> JobFacts:
        """One :class:`JobFacts` of many (facts or their :meth:`to_json` dicts)."""
        out = cls()
        for part in parts:
            out.merge(part if isinstance(part, JobFacts) else cls.from_json(part))
        return out

    def to_json(self) -> dict[str, Any]:
        """JSON-safe facts (HMACs, labels, counts)."""
        return {"votes": {k: dict(v) for k, v in self.votes.items()}, "guards": dict(self.guards), "lower": dict(self.lower),
                "drops": dict(self.drops), "names": sorted(self.names)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JobFacts:
        if not isinstance(data, Mapping):
            raise InvalidParameterError("facts", "a JobFacts.to_json() dict", Described(type(data).__name__))
        return cls({str(k): {str(v): int(n) for v, n in votes.items()} for k, votes in (data.get("votes") or {}).items()},
                   {str(k): [str(x) for x in v] for k, v in (data.get("guards") or {}).items()},
                   {str(k): int(v) for k, v in (data.get("lower") or {}).items()},
                   {str(k): [str(x) for x in v] for k, v in (data.get("drops") or {}).items()},
                   {str(x) for x in data.get("names") or ()})


@dataclass(frozen=True)
class JobIndex:
    """The frozen index of one job, decided over all its documents (:meth:`freeze`).

    The second step replaces against :attr:`entries` over the index of earlier jobs; a word is
    ordinary when at least ``min_texts`` texts of the *job* write it in lower case.

    Attributes:
        entries: the job's entries, those whose words are all ordinary dropped.
        ordinary: ``low`` HMACs of the job's ordinary words.
        removed: stored entries the job's ordinary words remove.
        marked: ``low`` HMACs of ordinary name-list words (marked for queries).
    """

    entries: Mapping[str, str]
    ordinary: frozenset[str]
    removed: tuple[str, ...] = ()
    marked: tuple[str, ...] = ()

    @classmethod
    def freeze(cls, facts: JobFacts, *, min_texts: int = 2) -> JobIndex:
        ordinary = frozenset(low for low, n in facts.lower.items() if n >= min_texts)
        entries = {mac: elect(votes) for mac, votes in facts.votes.items()
                   if not (facts.guards.get(mac) and all(g in ordinary for g in facts.guards[mac]))}
        removed = sorted({mac for low in ordinary for mac in facts.drops.get(low, ())})
        return cls(entries, ordinary, tuple(removed), tuple(sorted(ordinary & facts.names)))

    def to_json(self) -> dict[str, Any]:
        return {"entries": dict(self.entries), "ordinary": sorted(self.ordinary), "removed": list(self.removed),
                "marked": list(self.marked)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JobIndex:
        if not isinstance(data, Mapping) or "entries" not in data:
            raise InvalidParameterError("job", "a JobIndex.to_json() dict", Described(type(data).__name__))
        return cls({str(k): str(v) for k, v in data["entries"].items()}, frozenset(map(str, data.get("ordinary", ()))),
                   tuple(map(str, data.get("removed", ()))), tuple(map(str, data.get("marked", ()))))


def job_changes(stored: Mapping[str, str], job: JobIndex, remembered: Mapping[str, str]) -> dict[str, str | None]:
    """What a finished job changes in an index holding ``stored``: the job's entries (a weak
    one never replaces a strong one), its ordinary words' entries removed and name-list ones
    marked, then the entries of every replaced span (``remembered``, merged with
    :func:`merge_values`). HMAC -> value, or None for a removal."""
    out: dict[str, str | None] = {}

    def held(mac: str) -> str | None:
        return out[mac] if mac in out else stored.get(mac)

    def add(entries: Mapping[str, str]) -> None:
        for mac in sorted(entries):
            value, now = entries[mac], held(mac)
            if value.startswith(WEAK) and now is not None and not now.startswith(WEAK):
                continue
            if now != value:
                out[mac] = value

    add(job.entries)
    for mac in job.removed:
        if held(mac) is not None:
            out[mac] = None
    add({low: ORDINARY for low in job.marked})
    add(remembered)
    return {mac: v for mac, v in out.items() if v != stored.get(mac)}


class KeyedWords(Collection[str]):
    """A set of words known only by their ``low`` HMACs: ``word in words`` HMACs the word with
    ``mac`` (the entity index's keyed HMAC; answers cached). Iterating gives the HMACs, never words."""

    def __init__(self, mac: Callable[[str, str], str], macs: frozenset[str]) -> None:
        self._mac, self._macs = mac, macs
        self._seen: dict[str, bool] = {}

    def __contains__(self, word: object) -> bool:
        if not isinstance(word, str) or not self._macs:
            return False
        hit = self._seen.get(word)
        if hit is None:
            if len(self._seen) > 200_000:
                self._seen.clear()
            hit = self._seen[word] = self._mac("low", word) in self._macs
        return hit

    def __len__(self) -> int:
        return len(self._macs)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._macs))

    def __repr__(self) -> str:
        return f"KeyedWords({len(self._macs)})"
