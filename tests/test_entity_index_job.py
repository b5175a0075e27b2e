"""One job of the text stage in two steps: keyed facts merged in any order, then a frozen index.

Cheap (a regex-only text stage and a handful of documents); the Ray path's test is in
``tests/test_ray.py``.
"""

from __future__ import annotations

import itertools
import random

import pytest

from private_vectors.text import Sanitizer, job_steps
from private_vectors.text.job_index import WEAK, JobFacts, JobIndex, elect, job_changes, stronger

KEY = "entity-index-job-test-key-7Qm2"

# "Okafor" is detected in the first document only (a full name); the others name him alone, where no
# recognizer finds him (checked below) and the second pass must whichever batch or order the first document comes in. "gene" is written in
# lower case by two texts: an ordinary word, never indexed, even though one text capitalises it.
DOCS = [
    "Dr. Amelia Okafor signed the discharge report on 3 May.",
    "Results went to Okafor; the gene panel was negative.",
    "Ask Okafor about the gene panel.",
    "Gene Brennan reviewed the gene panel with the family.",
    "The Okafor file was closed.",
    "No name appears in this note about the gene panel.",
]


@pytest.fixture(scope="module")
def sanitizer() -> Sanitizer:
    return Sanitizer("PII", key=KEY)


def test_stronger_is_order_free() -> None:
    values = ["LOCATION", "PERSON", WEAK + "ORGANIZATION", WEAK + "LOCATION"]
    results = {stronger(stronger(a, b), stronger(c, d)) for a, b, c, d in itertools.permutations(values)}
    assert results == {"LOCATION"}  # strong beats weak, then the first label in sorted order
    assert stronger(WEAK + "PERSON", WEAK + "LOCATION") == WEAK + "LOCATION"


def test_a_job_elects_the_label_most_spans_gave() -> None:
    assert elect({"LOCATION": 1, "PERSON": 3, WEAK + "ORGANIZATION": 9}) == "PERSON"
    assert elect({"PERSON": 2, "LOCATION": 2}) == "LOCATION"
    assert elect({WEAK + "PERSON": 1, WEAK + "LOCATION": 2}) == WEAK + "LOCATION"


def test_facts_merge_in_any_order_and_grouping(sanitizer: Sanitizer) -> None:
    items, found = job_steps.detect(sanitizer, DOCS)
    parts = [job_steps.job_facts(sanitizer, [t], [s]) for t, s in zip(items, found, strict=True)]
    whole = JobIndex.freeze(job_steps.job_facts(sanitizer, items, found))
    rng = random.Random(0)
    for _ in range(6):
        order = parts[:]
        rng.shuffle(order)
        cut = rng.randrange(1, len(order))
        grouped = JobFacts.merged([JobFacts.merged(order[:cut]), JobFacts.merged(order[cut:])])
        assert JobIndex.freeze(JobFacts.merged([JobFacts.from_json(grouped.to_json())])) == whole
    assert whole.entries and whole.ordinary  # entities and ordinary words, as HMACs
    assert "okafor" not in str(whole.to_json()).lower()


def _two_steps(sanitizer: Sanitizer, partitions: list[list[int]]) -> dict[int, str]:
    """The job split into partitions: facts per partition, merged; then each partition replaced."""
    detected = {}
    for part in partitions:
        items, found = job_steps.detect(sanitizer, [DOCS[i] for i in part])
        detected[tuple(part)] = (items, found)
    job = job_steps.freeze_job([job_steps.job_facts(sanitizer, *detected[tuple(p)]) for p in reversed(partitions)])
    out = {}
    for part in partitions:
        texts, _, _ = job_steps.apply_job(sanitizer, *detected[tuple(part)], job)
        out.update(zip(part, texts, strict=True))
    return out


def test_the_stored_text_does_not_depend_on_partitioning_or_order() -> None:
    whole = Sanitizer("PII", key=KEY).apply(DOCS)
    assert all("Okafor" not in t for t in whole)  # found again where no detector found it
    assert "the gene panel" in whole[3]  # an ordinary word stays
    rng = random.Random(1)
    for _ in range(4):
        idx = list(range(len(DOCS)))
        rng.shuffle(idx)
        cut = rng.randrange(1, len(idx))
        got = _two_steps(Sanitizer("PII", key=KEY), [idx[:cut], idx[cut:]])
        assert [got[i] for i in range(len(DOCS))] == whole
        shuffled = Sanitizer("PII", key=KEY).apply([DOCS[i] for i in idx])
        assert dict(zip(idx, shuffled, strict=True)) == dict(enumerate(whole))


def test_a_batch_alone_misses_what_the_job_finds() -> None:
    # the reason for one job index: the note naming Okafor alone, protected in a batch of its own
    # (with the recognizers alone: the default tagger finds this surname by itself)
    alone = Sanitizer("PII", key=KEY, detector="rules").apply([DOCS[1]])[0]
    assert "Okafor" in alone
    assert "Okafor" not in Sanitizer("PII", key=KEY, detector="rules").apply(DOCS)[1]


def test_the_index_after_a_job_does_not_depend_on_order() -> None:
    states = []
    for seed in range(3):
        order = DOCS[:]
        random.Random(seed).shuffle(order)
        san = Sanitizer("PII", key=KEY)
        san.apply(order)
        states.append(san.get_state()["entries"])
    assert states[0] and all(s == states[0] for s in states)


def test_job_changes_weak_never_replaces_strong_and_ordinary_words_are_removed() -> None:
    stored = {"a": "PERSON", "b": "LOCATION", "c": WEAK + "PERSON"}
    job = JobIndex({"a": WEAK + "LOCATION", "c": "PERSON", "d": "PERSON"}, frozenset({"l1"}), removed=("b",),
                   marked=("l1",))
    changes = job_changes(stored, job, {"e": "PERSON", "a": "PERSON"})
    assert changes == {"b": None, "c": "PERSON", "d": "PERSON", "l1": "ORDINARY", "e": "PERSON"}


def test_a_later_job_sees_the_earlier_one(sanitizer: Sanitizer) -> None:
    san = Sanitizer("PII", key=KEY)
    san.apply(DOCS[:1])
    assert "Okafor" not in san.apply(["A letter from Okafor arrived."])[0]


def test_hmacs_are_remembered_during_one_call_only(sanitizer: Sanitizer, monkeypatch) -> None:
    import hashlib
    import hmac as hmac_module

    from private_vectors.text import entity_index

    index = sanitizer.index
    fresh = hmac_module.new(sanitizer.keys.index_key, b"tok\x00okafor", hashlib.sha256).hexdigest()[:32]
    assert index.mac("tok", "okafor") == fresh and not index._macs  # outside a call: nothing remembered
    monkeypatch.setattr(entity_index, "_MAC_MEMO_MAX", 2)
    with index.remembering():
        assert index.mac("tok", "okafor") == fresh and index.mac("tok", "okafor") == fresh
        assert index.mac("ent", "okafor") != fresh  # the kind is part of the message
        for word in ("memo-a", "memo-b", "memo-c"):
            index.mac("low", word)
        assert 0 < len(index._macs) <= 2  # bounded: the memo starts again
    assert not index._macs
    sanitizer.apply(DOCS)
    sanitizer.apply_queries(["what did okafor sign"])
    assert not index._macs  # a call's words are forgotten when it returns
