"""Entity-retrieval corpus: documents carrying PII about people, and queries naming them.

Documents are built with a fixed seed from the presidio-research templates
(``../shared/data/pii/templates.txt``) and the FakeNameGenerator identities
(``../shared/data/pii/FakeNameGenerator.com_3000.csv``). Each document is about exactly one
identity: one *subject* sentence naming the person in full (a template with exactly one
full-name slot and no other name slot) and, with probability ``attribute_share``, one
*attribute* sentence (a template without a name slot) filled with the same identity's city,
address, phone, e-mail, employer... Values no identity carries (card numbers, IBANs, dates)
come from a Faker instance seeded with the same seed.

Identities own documents with **Zipf-distributed frequencies**: each document's owner is drawn
from p(rank r) ∝ r^(−s) over ``n_identities`` identities (Zipf 1949; a frequency/linking
attacker is meaningless when every identity is equally common).

Queries name an entity: ``"What do the records say about <name>?"``, ``"<name>'s phone
number"`` (relevant = every document about that person) and ``"orders shipped to <city>"``
(relevant = every document that mentions the city). Query identities are drawn uniformly
from the identities that own at least one document, so rare people are asked about as often
as frequent ones.

:meth:`EntityCorpus.attacker_split` splits by identity (and therefore by document: every
document belongs to one identity): an attacker trains on the documents of some people and is
scored on the documents of others.
"""

from __future__ import annotations

import csv
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ArtefactError, InvalidParameterError
from .datasets import RetrievalDataset, SensitiveDataset, span_tokens

__all__ = [
    "QUERY_TEMPLATES",
    "EntityCorpus",
    "EntityDocument",
    "EntitySplit",
    "Identity",
    "load_identities",
    "load_templates",
    "make_entity_corpus",
]

TEMPLATES_FILE = "templates.txt"
IDENTITIES_FILE = "FakeNameGenerator.com_3000.csv"

#: Query wording per kind; ``{name}`` / ``{city}`` are filled with the entity.
QUERY_TEMPLATES: dict[str, str] = {
    "about": "What do the records say about {name}?",
    "phone": "{name}'s phone number",
    "city": "orders shipped to {city}",
}
PERSON_KINDS = ("about", "phone")

_FULL_NAME_SLOTS = frozenset({"person", "name", "name_female", "name_male"})
_OTHER_NAME_SLOTS = frozenset({"first_name", "last_name", "first_name_male", "first_name_female",
                               "first_name_nonbinary", "last_name_male", "last_name_female"})
# slot -> (presidio-style label, whether the value belongs to the document's identity)
_IDENTITY_SLOTS: dict[str, str] = {
    "person": "PERSON", "name": "PERSON", "name_female": "PERSON", "name_male": "PERSON",
    "prefix": "TITLE", "prefix_male": "TITLE", "prefix_female": "TITLE",
    "city": "LOCATION", "address": "LOCATION", "street_name": "LOCATION", "building_number": "LOCATION",
    "country": "LOCATION", "state_abbr": "LOCATION", "zipcode": "LOCATION", "postcode": "LOCATION",
    "phone_number": "PHONE_NUMBER", "email": "EMAIL_ADDRESS", "organization": "ORGANIZATION",
    "job": "TITLE", "age": "AGE", "date_of_birth": "DATE_TIME",
}
_FAKER_SLOTS: dict[str, tuple[str, str]] = {  # slot -> (Faker method, label)
    "secondary_address": ("secondary_address", "LOCATION"),
    "credit_card_number": ("credit_card_number", "CREDIT_CARD"),
    "iban": ("iban", "IBAN_CODE"),
    "ssn": ("ssn", "US_SSN"),
    "ip_address": ("ipv4", "IP_ADDRESS"),
    "url": ("url", "URL"),
    "year": ("year", "DATE_TIME"),
    "date_time": ("date", "DATE_TIME"),
    "day_of_week": ("day_of_week", "DATE_TIME"),
}
_SLOT = re.compile(r"\{\{(\w+)\}\}")
_LATIN = re.compile(r"^[\u0000-\u024F\s]+$")


# --------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Identity:
    """One FakeNameGenerator row, reduced to the fields the templates use."""

    given_name: str
    surname: str
    title: str
    gender: str
    street_address: str
    city: str
    state: str
    zipcode: str
    country: str
    email: str
    phone: str
    company: str
    occupation: str
    age: str
    birthday: str

    @property
    def name(self) -> str:
        """The full name, ``"Given Surname"``."""
        return f"{self.given_name} {self.surname}"

    def address(self) -> str:
        """One-line postal address."""
        return f"{self.street_address}, {self.city}, {self.state} {self.zipcode}".replace(" ,", ",")

    def building_and_street(self) -> tuple[str, str]:
        """The street address split into (building number, street name)."""
        m = re.match(r"^(\d+\w?)\s+(.+)$", self.street_address) or None
        if m:
            return m.group(1), m.group(2)
        m = re.match(r"^(.+?)\s+(\d+\w?)$", self.street_address)
        if m:
            return m.group(2), m.group(1)
        return "1", self.street_address


@dataclass(frozen=True)
class EntityDocument:
    """A generated document about one identity.

    Attributes:
        id: stable id (``"ent-00042"``).
        text: the document.
        identity: index into :attr:`EntityCorpus.identities`.
        spans: ``(start, end, label, value, own)`` for every filled slot; ``own`` is True when
            the value belongs to the document's identity (name, city, phone...).
    """

    id: str
    text: str
    identity: int
    spans: tuple[tuple[int, int, str, str, bool], ...]

    def values(self, label: str | None = None, *, own_only: bool = True) -> list[str]:
        """The filled values (optionally of one label; by default the identity's own only)."""
        return [v for _, _, lab, v, own in self.spans
                if (label is None or lab == label) and (own or not own_only)]


@dataclass(frozen=True)
class EntitySplit:
    """Identity- and document-disjoint attacker / victim split."""

    attacker_identities: list[int]
    victim_identities: list[int]
    attacker_docs: list[str]
    victim_docs: list[str]


@dataclass(frozen=True)
class EntityCorpus:
    """Documents, queries and relevance judgements of the entity-retrieval task."""

    documents: list[EntityDocument]
    identities: list[Identity]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    query_kind: dict[str, str]
    query_entity: dict[str, str]
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def texts(self) -> list[str]:
        return [d.text for d in self.documents]

    def identity_counts(self) -> Counter[int]:
        """Documents per identity index."""
        return Counter(d.identity for d in self.documents)

    def retrieval(self, name: str = "entity") -> RetrievalDataset:
        """The task as a BEIR-style :class:`RetrievalDataset` (binary relevance)."""
        return RetrievalDataset(name=name, corpus={d.id: d.text for d in self.documents},
                                queries=dict(self.queries), qrels={q: dict(r) for q, r in self.qrels.items()})

    def person_queries(self) -> list[str]:
        """Ids of the queries that name a person."""
        return [q for q, k in self.query_kind.items() if k in PERSON_KINDS]

    def sensitive(self, doc_ids: Sequence[str] | None = None) -> SensitiveDataset:
        """Documents with their sensitive tokens (word tokens of the identity's own values)."""
        by_id = {d.id: d for d in self.documents}
        docs = [by_id[i] for i in doc_ids] if doc_ids is not None else self.documents
        return SensitiveDataset("entity", [d.text for d in docs],
                                [[w for v in d.values() for w in span_tokens(v)] for d in docs], "spans")

    def attacker_split(self, attacker_share: float = 0.5, *, seed: int = 0) -> EntitySplit:
        """Split identities (hence documents) into attacker-train and victim sets.

        Identities are shuffled with ``seed`` and cut so that about ``attacker_share`` of the
        *documents* go to the attacker; no identity and no document text is on both sides.
        """
        if not 0.0 < attacker_share < 1.0:
            raise InvalidParameterError("attacker_share", "a number in (0, 1)", attacker_share)
        counts = self.identity_counts()
        people = sorted(counts)
        random.Random(seed).shuffle(people)
        target, total = attacker_share * len(self.documents), 0
        attacker: set[int] = set()
        for i in people:
            if total >= target and attacker:
                break
            attacker.add(i)
            total += counts[i]
        if len(attacker) == len(people):  # keep at least one victim identity
            attacker.discard(people[-1])
        a_docs = [d.id for d in self.documents if d.identity in attacker]
        v_docs = [d.id for d in self.documents if d.identity not in attacker]
        return EntitySplit(sorted(attacker), sorted(set(people) - attacker), a_docs, v_docs)


# --------------------------------------------------------------------------- loading
def _pii_file(root: str | Path, name: str) -> Path:
    p = Path(root) / name
    if not p.is_file():
        raise ArtefactError(f"entity corpus: {p} does not exist (expected the shared data folder "
                            f"../shared/data/pii with {TEMPLATES_FILE} and {IDENTITIES_FILE})")
    return p


def load_templates(root: str | Path) -> list[str]:
    """The presidio-research templates (one per line; literal ``\\n`` becomes a newline)."""
    lines = _pii_file(root, TEMPLATES_FILE).read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines:
        t = line.replace("\\n", "\n").replace("\\,", ",").replace("\ufffd", "-").strip()
        if t:
            out.append(t)
    return out


def _clean(value: str) -> str:
    return " ".join(value.replace("\ufeff", "").split())


def load_identities(root: str | Path) -> list[Identity]:
    """FakeNameGenerator identities, one per distinct full name (first occurrence kept)."""
    with _pii_file(root, IDENTITIES_FILE).open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    seen: set[str] = set()
    out = []
    for r in rows:
        g = {k: _clean(v or "") for k, v in r.items() if k}
        ident = Identity(g["GivenName"], g["Surname"], g["Title"], g["Gender"], g["StreetAddress"], g["City"],
                         g["State"], g["ZipCode"], g["CountryFull"], g["EmailAddress"], g["TelephoneNumber"],
                         g["Company"], g["Occupation"], g["Age"], g["Birthday"])
        if not ident.given_name or not ident.surname or ident.name.lower() in seen:
            continue
        seen.add(ident.name.lower())
        out.append(ident)
    return out


# --------------------------------------------------------------------------- generation
def _slots(template: str) -> list[str]:
    return _SLOT.findall(template)


def _supported(template: str) -> bool:
    return all(s in _IDENTITY_SLOTS or s in _FAKER_SLOTS for s in _slots(template))


def split_templates(templates: Sequence[str]) -> tuple[list[str], list[str]]:
    """(subject templates: exactly one full-name slot and no other name slot,
    attribute templates: no name slot, at least one identity slot); only fillable ones."""
    subject, attribute = [], []
    for t in templates:
        slots = _slots(t)
        if not slots or not _supported(t) or any(s in _OTHER_NAME_SLOTS for s in slots):
            continue
        n_full = sum(s in _FULL_NAME_SLOTS for s in slots)
        if n_full == 1:
            subject.append(t)
        elif n_full == 0 and any(s in _IDENTITY_SLOTS for s in slots):
            attribute.append(t)
    return subject, attribute


def _identity_value(slot: str, who: Identity) -> str:
    building, street = who.building_and_street()
    values = {
        "person": who.name, "name": who.name, "name_female": who.name, "name_male": who.name,
        "prefix": who.title, "prefix_male": who.title, "prefix_female": who.title,
        "city": who.city, "address": who.address(), "street_name": street, "building_number": building,
        "country": who.country, "state_abbr": who.state, "zipcode": who.zipcode, "postcode": who.zipcode,
        "phone_number": who.phone, "email": who.email, "organization": who.company, "job": who.occupation,
        "age": who.age, "date_of_birth": who.birthday,
    }
    return values[slot] or "unknown"


def _fill(template: str, who: Identity, faker: Any) -> tuple[str, list[tuple[int, int, str, str, bool]]]:
    """Fill ``template``; returns the text and its spans (offsets into the text)."""
    out, spans, pos = [], [], 0
    length = 0
    for m in _SLOT.finditer(template):
        before = template[pos:m.start()]
        out.append(before)
        length += len(before)
        slot = m.group(1)
        if slot in _IDENTITY_SLOTS:
            value, label, own = _identity_value(slot, who), _IDENTITY_SLOTS[slot], True
        else:
            method, label = _FAKER_SLOTS[slot]
            value, own = str(getattr(faker, method)()), False
        spans.append((length, length + len(value), label, value, own))
        out.append(value)
        length += len(value)
        pos = m.end()
    out.append(template[pos:])
    return "".join(out), spans


def _zipf_owners(n_docs: int, n_identities: int, s: float, rng: random.Random) -> list[int]:
    weights = [1.0 / (r ** s) for r in range(1, n_identities + 1)]
    return rng.choices(range(n_identities), weights=weights, k=n_docs)


def make_entity_corpus(root: str | Path, *, n_identities: int = 300, n_docs: int = 1000,
                       zipf_s: float = 1.0, attribute_share: float = 0.7, n_person_queries: int = 200,
                       n_city_queries: int = 50, lowercase_share: float = 0.0, seed: int = 0) -> EntityCorpus:
    """Build the entity-retrieval corpus (deterministic given the data and ``seed``).

    Args:
        root: the folder holding ``templates.txt`` and ``FakeNameGenerator.com_3000.csv``
            (``../shared/data/pii``).
        n_identities: identities that may own documents (rank r gets weight r^(−zipf_s)).
        n_docs: documents.
        zipf_s: Zipf exponent s > 0.
        attribute_share: probability that a document has a second, attribute sentence.
        n_person_queries: queries naming a person (kinds ``about`` and ``phone`` alternate);
            capped at 2 × the identities that own documents.
        n_city_queries: ``orders shipped to <city>`` queries (Latin-script cities only).
        lowercase_share: share of queries written in lower case (short lower-case queries
            are where NER misses names).
        seed: the only source of randomness (Python ``random`` and Faker).

    Raises:
        ArtefactError: a data file is missing.
        InvalidParameterError: a parameter is out of range.
    """
    _check(n_identities=n_identities, n_docs=n_docs, zipf_s=zipf_s, attribute_share=attribute_share,
           n_person_queries=n_person_queries, n_city_queries=n_city_queries, lowercase_share=lowercase_share)
    from faker import Faker

    subject, attribute = split_templates(load_templates(root))
    pool = load_identities(root)
    rng = random.Random(seed)
    if n_identities > len(pool):
        raise InvalidParameterError("n_identities", f"at most {len(pool)} (distinct identities in the data)",
                                    n_identities)
    identities = rng.sample(pool, n_identities)  # rank order = Zipf rank
    faker = Faker("en_US")
    faker.seed_instance(seed)
    owners = _zipf_owners(n_docs, n_identities, zipf_s, rng)
    docs: list[EntityDocument] = []
    seen: set[str] = set()
    for owner in owners:
        for _ in range(20):  # re-draw on an exact duplicate text
            text, spans = _fill(rng.choice(subject), identities[owner], faker)
            if rng.random() < attribute_share:
                extra, extra_spans = _fill(rng.choice(attribute), identities[owner], faker)
                sep = " " if text.rstrip()[-1:] in ".?!\"" else ". "
                off = len(text) + len(sep)
                text = f"{text}{sep}{extra}"
                spans += [(a + off, b + off, lab, v, own) for a, b, lab, v, own in extra_spans]
            if text not in seen:
                break
        else:
            continue
        seen.add(text)
        docs.append(EntityDocument(f"ent-{len(docs):05d}", text, owner, tuple(spans)))
    queries, qrels, kinds, entity = _make_queries(docs, identities, rng, n_person_queries, n_city_queries,
                                                  lowercase_share)
    config = {"n_identities": n_identities, "n_docs": n_docs, "zipf_s": zipf_s,
              "attribute_share": attribute_share, "seed": seed, "subject_templates": len(subject),
              "attribute_templates": len(attribute), "lowercase_share": lowercase_share}
    return EntityCorpus(docs, identities, queries, qrels, kinds, entity, config)


def _make_queries(docs: list[EntityDocument], identities: list[Identity], rng: random.Random, n_person: int,
                  n_city: int, lowercase_share: float
                  ) -> tuple[dict[str, str], dict[str, dict[str, int]], dict[str, str], dict[str, str]]:
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    kinds: dict[str, str] = {}
    entity: dict[str, str] = {}
    by_person: dict[int, list[str]] = {}
    for d in docs:
        by_person.setdefault(d.identity, []).append(d.id)
    people = sorted(by_person)
    asked = rng.sample(people, len(people)) * 2  # each person at most once per kind
    for j, person in enumerate(asked[:n_person]):
        first = j % len(people) if people else 0  # the second pass asks each person the other kind
        kind = PERSON_KINDS[(first + (j >= len(people))) % len(PERSON_KINDS)]
        name = identities[person].name
        _add_query(queries, qrels, kinds, entity, f"q-{kind}-{j:04d}", kind, QUERY_TEMPLATES[kind].format(name=name),
                   name, {d: 1 for d in by_person[person]}, rng, lowercase_share)
    mentions: dict[str, list[str]] = {}
    for d in docs:  # a document is about a city when it names its identity's city
        city = identities[d.identity].city
        if re.search(rf"(?<!\w){re.escape(city)}(?!\w)", d.text):
            mentions.setdefault(city, []).append(d.id)
    cities = sorted(c for c in mentions if _LATIN.match(c))
    for j, city in enumerate(rng.sample(cities, min(n_city, len(cities)))):
        _add_query(queries, qrels, kinds, entity, f"q-city-{j:04d}", "city", QUERY_TEMPLATES["city"].format(city=city),
                   city, {d: 1 for d in mentions[city]}, rng, lowercase_share)
    return queries, qrels, kinds, entity


def _add_query(queries: dict[str, str], qrels: dict[str, dict[str, int]], kinds: dict[str, str],
               entity: dict[str, str], qid: str, kind: str, text: str, value: str, rel: dict[str, int],
               rng: random.Random, lowercase_share: float) -> None:
    if rng.random() < lowercase_share:
        text = text.lower()
    queries[qid], qrels[qid], kinds[qid], entity[qid] = text, rel, kind, value


def _check(**params: float) -> None:
    for name in ("n_identities", "n_docs"):
        v = params[name]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InvalidParameterError(name, "an int >= 1", v)
    for name in ("n_person_queries", "n_city_queries"):
        v = params[name]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InvalidParameterError(name, "an int >= 0", v)
    if not isinstance(params["zipf_s"], (int, float)) or not params["zipf_s"] > 0:
        raise InvalidParameterError("zipf_s", "a number > 0", params["zipf_s"])
    for name in ("attribute_share", "lowercase_share"):
        v = params[name]
        if not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
            raise InvalidParameterError(name, "a number in [0, 1]", v)
