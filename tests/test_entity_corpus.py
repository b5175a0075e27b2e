"""The entity-retrieval corpus (bench/entity.py) on the shared presidio templates and
FakeNameGenerator identities (skipped when ../shared/data/pii is absent)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from private_vectors.errors import ArtefactError, InvalidParameterError
from private_vectors.eval.entity import (
    QUERY_TEMPLATES,
    load_identities,
    load_templates,
    make_entity_corpus,
    split_templates,
)

PII = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pii"
pytestmark = pytest.mark.skipif(
    not (PII / "templates.txt").is_file() or not (PII / "FakeNameGenerator.com_3000.csv").is_file(),
    reason="../shared/data/pii (templates.txt, FakeNameGenerator.com_3000.csv) not present")


@pytest.fixture(scope="module")
def corpus():
    return make_entity_corpus(PII, n_identities=200, n_docs=800, n_person_queries=150, n_city_queries=30, seed=3)


def test_seeded_same_seed_same_corpus_other_seed_differs(corpus) -> None:
    again = make_entity_corpus(PII, n_identities=200, n_docs=800, n_person_queries=150, n_city_queries=30, seed=3)
    assert again.texts == corpus.texts and again.queries == corpus.queries and again.qrels == corpus.qrels
    other = make_entity_corpus(PII, n_identities=200, n_docs=800, n_person_queries=150, n_city_queries=30, seed=4)
    assert other.texts != corpus.texts


def test_documents_unique_and_spans_point_at_their_values(corpus) -> None:
    texts = corpus.texts
    assert len(set(texts)) == len(texts) >= 780  # duplicates are re-drawn
    for d in corpus.documents:
        assert d.values("PERSON") == [corpus.identities[d.identity].name]  # exactly one full name, its owner's
        for a, b, _, value, _ in d.spans:
            assert d.text[a:b] == value
        assert "{{" not in d.text


def test_zipf_frequencies(corpus) -> None:
    counts = sorted(corpus.identity_counts().values(), reverse=True)
    # rank-frequency on log-log axes: slope ≈ −s (s = 1) over the well-populated head
    head = [c for c in counts if c >= 3]
    slope = np.polyfit(np.log(np.arange(1, len(head) + 1)), np.log(head), 1)[0]
    assert -1.4 < slope < -0.6, slope
    # the most frequent identity owns about 1/H_200 of the documents (≈ 17 %); a uniform draw would give ≈ 1 %
    h = sum(1 / r for r in range(1, 201))
    assert abs(counts[0] / len(corpus.documents) - 1 / h) < 0.05
    assert counts[-1] >= 1 and len(counts) < 200  # rare identities own one document or none


def test_person_queries_relevance_is_the_persons_documents(corpus) -> None:
    person = corpus.person_queries()
    assert len(person) == 150
    by_id = {d.id: d for d in corpus.documents}
    for q in person:
        name = corpus.query_entity[q]
        kind = corpus.query_kind[q]
        assert corpus.queries[q] == QUERY_TEMPLATES[kind].format(name=name)
        expected = {d.id for d in corpus.documents if corpus.identities[d.identity].name == name}
        assert set(corpus.qrels[q]) == expected and expected
        assert all(name in by_id[i].text for i in expected)
        assert not any(name in d.text for d in corpus.documents if d.id not in expected)
    kinds = {corpus.query_kind[q] for q in person}
    assert kinds == {"about", "phone"}


def test_city_queries_relevance(corpus) -> None:
    city_q = [q for q, k in corpus.query_kind.items() if k == "city"]
    assert 0 < len(city_q) <= 30
    for q in city_q:
        city = corpus.query_entity[q]
        assert corpus.queries[q] == f"orders shipped to {city}"
        rel = set(corpus.qrels[q])
        pattern = re.compile(rf"(?<!\w){re.escape(city)}(?!\w)")
        for d in corpus.documents:
            own = corpus.identities[d.identity].city == city and bool(pattern.search(d.text))
            assert (d.id in rel) == own


def test_attacker_split_is_identity_and_document_disjoint(corpus) -> None:
    split = corpus.attacker_split(0.5, seed=1)
    assert not set(split.attacker_identities) & set(split.victim_identities)
    assert not set(split.attacker_docs) & set(split.victim_docs)
    assert len(split.attacker_docs) + len(split.victim_docs) == len(corpus.documents)
    by_id = {d.id: d for d in corpus.documents}
    a_texts = {by_id[i].text for i in split.attacker_docs}
    assert not a_texts & {by_id[i].text for i in split.victim_docs}
    a_names = {corpus.identities[i].name for i in split.attacker_identities}
    assert not any(n in by_id[i].text for i in split.victim_docs for n in a_names)
    assert 0.3 < len(split.attacker_docs) / len(corpus.documents) < 0.75
    assert corpus.attacker_split(0.5, seed=1) == split
    with pytest.raises(InvalidParameterError, match="attacker_share"):
        corpus.attacker_split(1.0)


def test_sensitive_tokens_and_retrieval_view(corpus) -> None:
    sens = corpus.sensitive()
    assert len(sens) == len(corpus.documents)
    d0 = corpus.documents[0]
    who = corpus.identities[d0.identity]
    assert who.given_name in sens.tokens[0] and who.surname.split()[-1] in sens.tokens[0]
    ds = corpus.retrieval()
    assert set(ds.corpus) == {d.id for d in corpus.documents} and ds.qrels == corpus.qrels


def test_lowercase_queries() -> None:
    low = make_entity_corpus(PII, n_identities=50, n_docs=100, n_person_queries=20, n_city_queries=0,
                             lowercase_share=1.0, seed=0)
    assert all(q == q.lower() for q in low.queries.values())


def test_templates_and_identities_loaded() -> None:
    subject, attribute = split_templates(load_templates(PII))
    assert len(subject) > 20 and len(attribute) > 40
    assert all(t.count("{{") >= 1 for t in subject)
    people = load_identities(PII)
    assert len(people) > 2900 and len({p.name.lower() for p in people}) == len(people)
    assert not any("\ufeff" in p.name for p in people)


def test_bad_parameters_and_missing_data(tmp_path: Path) -> None:
    with pytest.raises(ArtefactError, match="shared/data/pii"):
        make_entity_corpus(tmp_path)
    with pytest.raises(InvalidParameterError, match="zipf_s"):
        make_entity_corpus(PII, zipf_s=0)
    with pytest.raises(InvalidParameterError, match="n_identities"):
        make_entity_corpus(PII, n_identities=10**6)
