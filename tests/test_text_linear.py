"""Sanitizing time grows with a document's length, not with its square: the span questions the
rules and the keyed index ask (which spans overlap this one) read only the spans nearby, and a
whole document's pass costs a number of Python calls proportional to its length. Counted, not
timed, so a loaded machine does not fail it (``benchmarks/long_document.py`` times it)."""

from __future__ import annotations

import cProfile
import pstats
import random
from pathlib import Path

import pytest

import private_vectors
from private_vectors.text import Sanitizer, Span
from private_vectors.text.overlap import OverlapIndex, TakenRanges
from private_vectors.text.shapes import overlaps

_FIRST = ["Ottoline", "Bartholomew", "Marisol", "Ingrid", "Tomasz", "Aiyana", "Keanu", "Priya", "Zebulon",
          "Hallgrim", "Saanvi", "Amelia", "Lars", "Oksana", "Emeka", "Yusuf", "Fenella", "Ruairi"]
_LAST = ["Vanderpump", "Quist", "Etxeberria", "Solberg", "Wrobel", "Redcloud", "Kahale", "Raghunathan",
         "Quartermaine", "Okafor", "Brandt", "Lindqvist", "Adeyemi", "Kowalczyk", "Thorsen", "Moreau"]
_CITIES = ["Reykjavik", "Galway", "Bilbao", "Gdansk", "Bozeman", "Hilo", "Berlin", "Leeds", "Lagos"]
_TEMPLATES = [
    "{p} met {q} in {c} on Monday.",
    "Call {p} at 555-01{n:02d} about the lease.",
    "{p}, {a}, lives at {n} Elm Street in {c}.",
    "The invoice for {p} was sent to {q} in {c}.",
    "{p} asked {q} whether the flat in {c} was free.",
]


def name_dense(chars: int, seed: int = 0) -> str:
    """A document of about ``chars`` characters naming people, places, ages and phones in
    every sentence (seeded; no data set needed)."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < chars:
        person = lambda: f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"  # noqa: E731
        s = rng.choice(_TEMPLATES).format(p=person(), q=person(), c=rng.choice(_CITIES),
                                          a=rng.randint(18, 90), n=rng.randint(1, 99))
        out.append(s)
        size += len(s) + 1
    return " ".join(out)


def _random_spans(n: int, length: int, rng: random.Random) -> list[Span]:
    spans = []
    for _ in range(n):
        a = rng.randrange(length)
        b = a + rng.choice([0, 1, 3, 8, 20, 70, 200])
        spans.append(Span(a, b, rng.choice(["PERSON", "LOCATION"]), 0.5, rng.choice(["presidio", "tagger", "names"])))
    return spans


def test_the_overlap_index_answers_as_a_scan_does_in_the_order_given() -> None:
    rng = random.Random(3)
    spans = _random_spans(400, 3000, rng)
    index = OverlapIndex(spans)
    for q in [*spans, *_random_spans(200, 3200, rng)]:
        assert index.overlapping(q) == [s for s in spans if overlaps(s, q)]
    assert OverlapIndex([]).overlapping(Span(0, 5, "PERSON", 1.0, "x")) == []


def test_taken_ranges_answer_as_a_scan_does() -> None:
    rng = random.Random(5)
    taken, scan = TakenRanges(), []
    for _ in range(3000):
        a = rng.randrange(5000)
        b = a + rng.choice([0, 0, 1, 2, 5, 30])
        hit = any(a < e and s < b for s, e in scan)
        assert taken.overlaps(a, b) == hit
        if not hit:
            taken.add(a, b)
            scan.append((a, b))


def test_the_overlap_index_compares_a_number_of_spans_linear_in_the_spans() -> None:
    def checks(n: int) -> int:
        spans = _random_spans(n, 40 * n, random.Random(n))  # the same density at every size
        index = OverlapIndex(spans)
        for s in spans:
            index.overlapping(s)
        return index.checks

    small, large = checks(500), checks(2000)
    assert large <= 5 * small, (small, large)  # a scan of every span per span: 16 times


def _calls_in_library(sanitizer: Sanitizer, text: str) -> int:
    """Python calls (generator steps included) in this library's code while one document is
    sanitized, as cProfile counts them."""
    root = str(Path(private_vectors.__file__).parent)
    profile = cProfile.Profile()
    profile.enable()
    sanitizer.document_spans([text])
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    return sum(calls for (path, _, _), (_, calls, _, _, _) in stats.items() if path.startswith(root))


@pytest.mark.parametrize("detector", ["rules", pytest.param("model", marks=pytest.mark.slow)])
def test_a_four_times_longer_document_costs_about_four_times_the_calls(detector: str) -> None:
    sanitizer = Sanitizer(detector=detector)
    sanitizer.document_spans([name_dense(2000, seed=9)])  # recognizers loaded
    small = _calls_in_library(sanitizer, name_dense(5000))
    large = _calls_in_library(sanitizer, name_dense(20_000))
    assert large <= 5 * small, (small, large)  # quadratic passes: 13.5 times (measured before they went)
