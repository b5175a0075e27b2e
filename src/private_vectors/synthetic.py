"""Synthetic sentences from Faker: sentences with PII and plain ones, for training and labelling.

Used by TextCrafter's PII classifier training (``benchmarks/learned_training.py``) and tests;
the text stage labels them with :class:`~private_vectors.text.light.LightDetector`.
"""

from __future__ import annotations

from datetime import date

__all__ = ["synthetic_pii_sentences", "synthetic_plain_sentences"]

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
