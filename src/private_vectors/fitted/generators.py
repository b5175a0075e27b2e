"""Offline corpus generators for the built-in concepts.

Each generator yields ``(sentence, masked sentence, removed values)`` triples built from
templates whose slots are filled with Faker values (several locales) or with the word
lists shipped under ``private_vectors/data/concepts/``. The masked sentence is R(s, C):
the filled-in values removed by character span, then tidied (:func:`remove_spans`).

Values are drawn from a finite, seeded pool per slot (``pool_size``), so each value
recurs in several sentences: the concept-subspace estimator groups pairs by removed value.
No network and no ``shared/`` data are needed.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any, TypeVar

import numpy as np

from .._calendar import MONTHS, WEEKDAYS
from .removal import remove_spans

__all__ = ["BUILTIN_TEMPLATES", "LOCALES", "fill_template", "generate", "generate_swaps", "generic_templates",
           "word_list"]

LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL")
"""Faker locales the generators draw names, addresses and phone numbers from."""

Triple = tuple[str, str, tuple[str, ...]]
T = TypeVar("T")


@cache
def word_list(name: str) -> tuple[str, ...]:
    """A shipped word list (``data/concepts/<name>.txt``), comments and blanks dropped."""
    text = resources.files("private_vectors").joinpath("data", "concepts", f"{name}.txt").read_text("utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def generic_templates() -> tuple[str, ...]:
    """The built-in generic corpus: sentences with one ``{}`` slot."""
    return word_list("generic_templates")


# -- slot pools ------------------------------------------------------------------------------
def _fakers(seed: int) -> list[Any]:
    from faker import Faker

    out: list[Any] = []
    for i, loc in enumerate(LOCALES):
        f = Faker(loc)
        f.seed_instance(seed * 131 + i)
        out.append(f)
    return out


def _draw(fakers: list[Any], rng: np.random.Generator, method: str, size: int,
          english_only: bool = False) -> list[str]:
    pool: list[str] = []
    tries = 0
    while len(pool) < size and tries < size * 5:
        tries += 1
        f = fakers[0] if english_only else fakers[int(rng.integers(len(fakers)))]
        value = " ".join(str(getattr(f, method)()).split())
        if value and value not in pool:
            pool.append(value)
    return pool


def _ages(rng: np.random.Generator, size: int) -> list[str]:
    forms = ("{}-year-old", "{} years old", "aged {}", "{} years of age")
    return [forms[int(rng.integers(len(forms)))].format(int(rng.integers(1, 96))) for _ in range(size)]


_LAST_DAY = datetime(2025, 1, 1, tzinfo=UTC)
"""The latest moment a generated date or time is drawn from (Faker's default is the current
clock, so the same seed gave different times from one minute to the next)."""


def _dates(fakers: list[Any], rng: np.random.Generator, size: int) -> list[str]:
    patterns = ("%B %d, %Y", "%d %B %Y", "%d/%m/%Y", "%m/%d/%Y", "%Y-%m-%d", "%B %Y", "%b %d")
    f = fakers[0]
    return [str(f.date(pattern=patterns[int(rng.integers(len(patterns)))], end_datetime=_LAST_DAY)) for _ in range(size)]


def _names(names: tuple[str, ...], rng: np.random.Generator, size: int) -> list[str]:
    """``size`` English names drawn from ``names`` (Faker draws weekdays and months from dates up
    to the current clock, so a seed would not give the same ones every day)."""
    return [names[int(i)] for i in rng.integers(len(names), size=size)]


def _pool_builders() -> dict[str, Callable[[list[Any], np.random.Generator, int], list[str]]]:
    return {
        "name": lambda f, r, n: _draw(f, r, "name", n),
        "first_name": lambda f, r, n: _draw(f, r, "first_name", n),
        "last_name": lambda f, r, n: _draw(f, r, "last_name", n),
        "address": lambda f, r, n: _draw(f, r, "street_address", n),
        "email": lambda f, r, n: _draw(f, r, "email", n),
        "phone": lambda f, r, n: _draw(f, r, "phone_number", n),
        "card": lambda f, r, n: _draw(f, r, "credit_card_number", n, english_only=True),
        "ssn": lambda f, r, n: _draw(f, r, "ssn", n, english_only=True),
        "iban": lambda f, r, n: _draw(f, r, "iban", n),
        "license": lambda f, r, n: _draw(f, r, "license_plate", n),
        "city": lambda f, r, n: _draw(f, r, "city", n),
        "state": lambda f, r, n: _draw(f, r, "state", n, english_only=True),
        "country": lambda f, r, n: _draw(f, r, "country", n, english_only=True),
        "weekday": lambda f, r, n: _names(WEEKDAYS, r, min(n, 7)),
        "month": lambda f, r, n: _names(MONTHS, r, min(n, 12)),
        "date": lambda f, r, n: _dates(f, r, n),
        "time": lambda f, r, n: [str(f[0].time(pattern="%H:%M", end_datetime=_LAST_DAY)) for _ in range(n)],
        "gender": lambda f, r, n: list(word_list("demographic_terms")),
        "age": lambda f, r, n: _ages(r, n),
        "disease": lambda f, r, n: list(word_list("medical_diseases")),
        "symptom": lambda f, r, n: list(word_list("medical_symptoms")),
    }


# -- templates -------------------------------------------------------------------------------
BUILTIN_TEMPLATES: dict[str, tuple[str, ...]] = {
    concept: word_list(f"templates_{concept}")
    for concept in ("PII", "person", "location", "datetime", "demographic", "medical")
}
"""Templates of each built-in concept (``data/concepts/templates_<concept>.txt``); ``{slot}`` names
the value pool."""


def fill_template(template: str, values: Mapping[str, Callable[[], str]]) -> tuple[str, list[tuple[int, int]], list[str]]:
    """Fill ``{slot}`` fields one by one, recording each inserted value's character span."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    removed: list[str] = []
    pos = 0
    for literal, field, _spec, _conv in string.Formatter().parse(template):
        out.append(literal)
        pos += len(literal)
        if field is None:
            continue
        value = values[field]()
        spans.append((pos, pos + len(value)))
        removed.append(value)
        out.append(value)
        pos += len(value)
    return "".join(out), spans, removed


def _sample(concept: str, n: int, random_state: int, pool_size: int,
            make: Callable[[str, Mapping[str, Callable[[], str]]], T | None]) -> Iterator[T]:
    """Yield ``n`` items ``make(template, pickers)`` (None = skip) over seeded template draws.

    Each slot's picker draws from a finite seeded pool of ``pool_size`` values.
    """
    rng = np.random.default_rng(random_state)
    templates = BUILTIN_TEMPLATES[concept]
    fields = {f for t in templates for _, f, _, _ in string.Formatter().parse(t) if f}
    builders = _pool_builders()
    fakers = _fakers(random_state) if fields - {"gender", "age", "disease", "symptom"} else []
    pools = {f: builders[f](fakers, rng, pool_size) for f in sorted(fields)}
    pickers: dict[str, Callable[[], str]] = {
        f: (lambda p=p: p[int(rng.integers(len(p)))]) for f, p in pools.items()  # type: ignore[misc]
    }
    made = 0
    while made < n:
        item = make(templates[int(rng.integers(len(templates)))], pickers)
        if item is not None:
            made += 1
            yield item


def generate(concept: str, n: int, *, random_state: int = 0, pool_size: int = 200) -> Iterator[Triple]:
    """Yield ``n`` (sentence, masked sentence, removed values) triples for a built-in concept.

    Args:
        concept: a key of :data:`BUILTIN_TEMPLATES`.
        n: number of triples.
        random_state: seed (generation is reproducible; it is not noise).
        pool_size: distinct values per slot.
    """

    def triple(template: str, pickers: Mapping[str, Callable[[], str]]) -> Triple | None:
        text, spans, removed = fill_template(template, pickers)
        masked = remove_spans(text, spans)
        return None if not masked or masked == text else (text, masked, tuple(removed))

    yield from _sample(concept, n, random_state, pool_size, triple)


def generate_swaps(concept: str, n: int, *, random_state: int = 0, pool_size: int = 200
                   ) -> Iterator[tuple[str, str]]:
    """Yield ``n`` pairs of one template filled twice with independently drawn values.

    Where :func:`generate`'s pairs (s, R(s)) differ in *whether* the concept is present, these
    differ only in *which* value fills it: Φ(s₁) − Φ(s₂) spans the directions that carry the
    value's identity (``benchmarks/identity_subspace.py`` estimates a noise subspace from them).
    Pairs whose two fillings happen to coincide are skipped.

    Args:
        concept: a key of :data:`BUILTIN_TEMPLATES`.
        n: number of pairs.
        random_state: seed (generation is reproducible; it is not noise).
        pool_size: distinct values per slot.
    """

    def swap(template: str, pickers: Mapping[str, Callable[[], str]]) -> tuple[str, str] | None:
        first, second = fill_template(template, pickers)[0], fill_template(template, pickers)[0]
        return None if first == second else (first, second)

    yield from _sample(concept, n, random_state, pool_size, swap)
