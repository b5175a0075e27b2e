"""Generated documents with planted personal data, for training, tests and benchmarks.

* :func:`synthetic_pii_sentences` / :func:`synthetic_plain_sentences`: Faker sentences with and
  without PII (TextCrafter's PII classifier training, ``benchmarks/learned_training.py``; the
  text stage labels them with :class:`~private_vectors.text.light.LightDetector`);
* :func:`contact_documents`: documents naming people, places, e-mails and phone numbers from
  small fixed lists (restore records: ``benchmarks/restore.py`` and the restore tests);
* :func:`people_corpus`: one document per person from a FakeNameGenerator identity file, with
  names outside every vocabulary the package ships, so a name found in a store is a name the
  text stage missed (the every-path leak test and ``benchmarks/text_rules.py``);
* :func:`first_hour_corpus`: short notes a new user tries first (names in normal and lower case,
  ages, cities, street addresses, e-mails, phones, the name as metadata), with what was planted
  in each (the audit's count-what-is-on-disk test).
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import Described, InvalidParameterError

__all__ = ["CONTACT_CITIES", "CONTACT_FIRST", "CONTACT_LAST", "FIRST_HOUR_TEMPLATES", "PEOPLE_TEMPLATES", "PeopleCorpus",
           "PlantedCorpus", "contact_documents", "first_hour_corpus", "people_corpus", "shipped_words",
           "synthetic_pii_sentences", "synthetic_plain_sentences"]

_PII_TEMPLATES = (
    "My name is {name} and you can reach me at {email}.",
    "Please call {name} on {phone} before Friday.",
    "{name} lives at {street}, {city}.",
    "Send the invoice to {email}, attention {name}.",
    "The card ending in {card} belongs to {name}.",
    "Patient {name}, born {date}, was admitted to the ward.",
    "Contact {name} at {phone} or {email} about the lease.",
    "Her social security number is {ssn}.",
    "Wire the deposit to IBAN {iban} in the name of {name}.",
    "{name} logged in from {ip} yesterday.",
    "Our new address is {street}, {city}, {country}.",
    "I met {name} in {city} last summer; her number is {phone}.",
    "Dear {name}, your appointment on {date} is confirmed.",
    "The package for {name} was delivered to {street}.",
    "{name} was born on {date} in {city}.",
)
_PLAIN_TEMPLATES = (
    "The committee will review the proposal next week.",
    "Regular exercise improves sleep quality and mood.",
    "The recipe calls for two cups of flour and a pinch of salt.",
    "Stock markets fell sharply after the announcement.",
    "The museum opens an exhibition on modern sculpture.",
    "Heavy rain is expected across the region tonight.",
    "The software update fixes several security issues.",
    "Students must submit their essays by the end of the month.",
    "A new study links air pollution to heart disease.",
    "The team won the match after extra time.",
    "Prices of fresh vegetables rose during the winter.",
    "The train was delayed because of a signal failure.",
)


_FIRST_DATE, _LAST_DATE = date(1930, 1, 1), date(2010, 12, 31)  # fixed range: seeded output never depends on today


def synthetic_pii_sentences(n: int, *, seed: int | None = None, locale: str = "en_US") -> list[str]:
    """``n`` sentences each containing PII (names, e-mails, phones, cards, addresses…), from Faker.

    Args:
        n: how many.
        seed: Faker seed (tests/benchmarks); None = unseeded.
        locale: Faker locale.
    """
    from faker import Faker

    fake = Faker(locale)
    if seed is not None:
        fake.seed_instance(seed)
    out = []
    for i in range(int(n)):
        template = _PII_TEMPLATES[i % len(_PII_TEMPLATES)] if seed is None else fake.random_element(_PII_TEMPLATES)
        out.append(template.format(
            name=fake.name(), email=fake.email(), phone=fake.phone_number(), street=fake.street_address(),
            city=fake.city(), country=fake.country(), card=fake.credit_card_number(),
            date=fake.date_between_dates(_FIRST_DATE, _LAST_DATE).isoformat(),
            ssn=fake.ssn(), iban=fake.iban(), ip=fake.ipv4()))
    return out


def synthetic_plain_sentences(n: int, *, seed: int | None = None) -> list[str]:
    """``n`` sentences without PII: fixed topical templates plus Faker lorem sentences."""
    from faker import Faker

    fake = Faker("en_US")
    if seed is not None:
        fake.seed_instance(seed)
    out = []
    for i in range(int(n)):
        out.append(_PLAIN_TEMPLATES[i % len(_PLAIN_TEMPLATES)] if i % 2 == 0 else fake.sentence(nb_words=10).lower().capitalize())
    return out


CONTACT_FIRST = ("Amelia", "James", "Maria", "David", "Sarah", "Michael", "Emma", "Robert", "Olivia", "Daniel", "Laura",
          "Thomas", "Hannah", "Peter", "Sofia", "George")
CONTACT_LAST = ("Okafor", "Johnson", "Lopez", "Smith", "Brown", "Garcia", "Miller", "Wilson", "Anderson", "Taylor",
         "Martinez", "Harris", "Clark", "Lewis", "Walker", "Young")
CONTACT_CITIES = ("Lagos", "Madrid", "Chicago", "Boston", "Berlin", "Paris", "London", "Denver", "Seattle", "Dublin")
"""The values :func:`contact_documents` draws from."""


def contact_documents(n: int, seed: int = 0) -> list[str]:
    """``n`` documents naming people, places, e-mails and phone numbers (deterministic for a seed)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        first, last, city = rng.choice(CONTACT_FIRST), rng.choice(CONTACT_LAST), rng.choice(CONTACT_CITIES)
        phone = f"+1 415 555 {rng.randrange(1000, 9999)}"
        email = f"{first.lower()}.{last.lower()}@mail{i % 7}.com"
        out.append(f"{first} {last} flew to {city} on {rng.choice(['Monday', 'Friday'])}. Contact {email} or call "
                   f"{phone}. Later Ms {last}'s assistant wrote about the <PERSON> tag.")
    return out


PEOPLE_TEMPLATES = (
    "{name} met the planning committee on Tuesday to discuss the harbour budget.",
    "The report prepared by {name} describes the water quality survey in detail.",
    "Yesterday {name} signed the lease for the workshop near the station.",
    "According to the nurse, {name} was admitted after a fall in the garden.",
)
"""The sentences of :func:`people_corpus` (one name each)."""


@lru_cache(maxsize=1)
def shipped_words() -> frozenset[str]:
    """Case-folded words of the surrogate pool and of every text vocabulary the package ships."""
    data = Path(str(resources.files("private_vectors").joinpath("data")))
    pool = json.loads((data / "text" / "surrogate_pool_v1.json").read_text(encoding="utf-8"))
    words = {w.casefold() for part in ("first", "last", "cities") for w in pool[part]}
    for path in data.rglob("*"):
        if path.is_file() and path.suffix in {".txt", ".json", ".csv", ".tsv"}:
            words |= {w.casefold() for w in re.findall(r"\w+", path.read_text(encoding="utf-8"))}
    return frozenset(words)


@dataclass(frozen=True)
class PeopleCorpus:
    """Documents naming one person each, named again in an ``author`` metadata field.

    Attributes:
        people: (given name, surname) per document.
        ids, texts, metadatas: what a store is given.
    """

    people: tuple[tuple[str, str], ...]
    ids: list[str]
    texts: list[str]
    metadatas: list[dict[str, Any]]

    def truth(self) -> set[str]:
        """The planted values, case-folded: full names, given names and surnames."""
        return {v.casefold() for first, last in self.people for v in (f"{first} {last}", first, last)}

    def missed(self, outputs: Sequence[str]) -> set[str]:
        """The planted values still present in ``outputs`` (what the text stage returned)."""
        blob = "\n".join(outputs).casefold()
        return {v for v in self.truth() if v in blob}


def _usable_names(names_csv: str | Path, n: int, templates: Sequence[str]) -> list[tuple[str, str]]:
    """The first ``n`` (given name, surname) of a FakeNameGenerator file that are distinct, ASCII,
    five letters or more, in no vocabulary the package ships and in no word of ``templates``."""
    shipped = shipped_words()
    template_words = {w.casefold() for t in templates for w in re.findall(r"\w+", t)}
    seen: set[str] = set()
    people: list[tuple[str, str]] = []
    with Path(names_csv).open(encoding="utf-8-sig") as f:
        for row in csv.DictReader(f):
            first, last = row["GivenName"], row["Surname"]
            parts = (first.casefold(), last.casefold())
            if not all(p.isascii() and p.isalpha() and len(p) >= 5 for p in parts):
                continue
            if any(p in shipped or p in seen or any(p in w or w in p for w in template_words if len(w) > 3)
                   for p in parts):
                continue
            seen.update(parts)
            people.append((first, last))
            if len(people) == n:
                break
    if len(people) < n:
        raise InvalidParameterError("names_csv", f"at least {n} usable names", Described(str(names_csv)),
                                    note=f"found {len(people)}")
    return people


def people_corpus(names_csv: str | Path, n: int = 200) -> PeopleCorpus:
    """``n`` documents, one person each, from a FakeNameGenerator identity file.

    Names are distinct, ASCII, at least five letters, in no vocabulary the package ships
    (:func:`shipped_words`) and in no template word, taken in file order.

    Args:
        names_csv: a FakeNameGenerator CSV (``GivenName``, ``Surname`` columns).
        n: how many documents.

    Raises:
        InvalidParameterError: the file has fewer than ``n`` usable names.
    """
    people = _usable_names(names_csv, n, PEOPLE_TEMPLATES)
    texts = [PEOPLE_TEMPLATES[i % len(PEOPLE_TEMPLATES)].format(name=f"{first} {last}")
             for i, (first, last) in enumerate(people)]
    metas: list[dict[str, Any]] = [{"author": f"{first} {last}", "n": i} for i, (first, last) in enumerate(people)]
    return PeopleCorpus(tuple(people), [f"doc-{i}" for i in range(n)], texts, metas)


FIRST_HOUR_TEMPLATES = (
    "{name} ({age}) moved to {city} last spring; write to {email}.",
    "meeting notes: {name}, {age}, asked about the invoice. call back on {phone}.",
    "Call {name} at {phone}.",
    "{name} lives at {house} {street} street in {city}.",
    "Dear {name}, your parcel for {house} {street} street, {city} is ready to collect.",
)
"""The documents of :func:`first_hour_corpus`: what a new user tries first."""

FIRST_HOUR_CITIES = ("reykjavik", "porto", "graz", "brno", "tartu", "ghent", "aarhus", "bergen", "turku", "bilbao",
                     "gdansk", "utrecht", "leipzig", "seville", "krakow", "salzburg")
FIRST_HOUR_STREETS = ("elm", "mill", "church", "station", "harbour", "orchard", "meadow", "chapel")

_FIRST_HOUR_FIELDS = {"name": "PERSON", "email": "EMAIL_ADDRESS", "phone": "PHONE_NUMBER", "city": "LOCATION",
                      "age": "AGE", "street": "STREET_ADDRESS"}


@dataclass(frozen=True)
class PlantedCorpus:
    """Documents with the values planted in each, by type (as written in the document).

    Attributes:
        ids, texts, metadatas: what a store is given (``author`` metadata: the person's name).
        planted: per document, {type: [values]} (``PERSON``, ``EMAIL_ADDRESS``, ``PHONE_NUMBER``,
            ``LOCATION``, ``AGE``, ``STREET_ADDRESS``), the name also in the metadata.
    """

    ids: list[str]
    texts: list[str]
    metadatas: list[dict[str, Any]]
    planted: list[dict[str, list[str]]]


def first_hour_corpus(names_csv: str | Path, n: int = 200, seed: int = 0) -> PlantedCorpus:
    """``n`` short documents a new user might store: one person each (every other name in lower
    case), with an age, a city (in lower case, from :data:`FIRST_HOUR_CITIES`), a street address,
    an e-mail address (no name in it) or a phone number, and the person's name as ``author``
    metadata. Names as in :func:`people_corpus`; the rest seeded."""
    rng = random.Random(seed)
    people = _usable_names(names_csv, n, FIRST_HOUR_TEMPLATES)
    ids, texts, metas, planted = [], [], [], []
    for i, (first, last) in enumerate(people):
        name = f"{first} {last}" if i % 2 == 0 else f"{first} {last}".lower()
        values = {"name": name, "age": str(rng.randrange(19, 90)), "city": rng.choice(FIRST_HOUR_CITIES),
                  "email": f"k{i:03d}{rng.choice('xqzw')}@post{i % 5}.example.org",
                  "phone": rng.choice((f"555-0{i:03d}", f"+1 415 555 {1000 + i}", f"020 7946 {1000 + i}")),
                  "house": str(rng.randrange(2, 99)), "street": rng.choice(FIRST_HOUR_STREETS)}
        template = FIRST_HOUR_TEMPLATES[i % len(FIRST_HOUR_TEMPLATES)]
        texts.append(template.format(**values))
        used = {k for k in _FIRST_HOUR_FIELDS if "{" + k + "}" in template}
        mine = {_FIRST_HOUR_FIELDS[k]: [values[k]] for k in used if k != "street"}
        if "street" in used:
            mine["STREET_ADDRESS"] = [f"{values['house']} {values['street']} street"]
        planted.append(mine)
        ids.append(f"note-{i:03d}")
        metas.append({"author": name, "n": i})
    return PlantedCorpus(ids, texts, metas, planted)
