"""Numbers in results tables are no phone or card numbers, and a score joins no place; real phones,
cards, streets and postcodes in contact tables and CSV rows are still found."""

from __future__ import annotations

import pytest

from private_vectors.text import Span
from private_vectors.text.recognizers.numbers import card_evidence, phone_evidence
from private_vectors.text.recognizers.regex import RegexDetector
from private_vectors.text.rules import BUILTIN_RULES, RuleContext, RulePipeline, StageSettings
from private_vectors.text.rules.model_phones import refusal

RESULTS = [
    "Golf: Tiger Woods 69 67 138, Ernie Els 70 68 138",
    "Robert Allenby ( Australia ) 69 71 71 73 , Miguel Angel Martin ( Spain ) 75 70 71 68",
    "Fall of wickets: 1-12 2-45 3-101 4-156 5-201",
    "Peter Nicol ( Scotland ) beat Derek Ryan ( Ireland ) 15-6 15-9 11-15 15-10 .",
    "Jiri Novak ( Czech Republic ) 6-3 1-6 6-3 4-6 6-4 Paul Haarhuis ( Netherlands )",
    "Puchon 3 1 0 6 1 10\nChonan 3 0 1 13 10 9",
    "Samsung 49 5 56 .468 14",
    "Canadian dollar 639.55 639.38\nM1 63.02 62.83 57.50",
]
CONTACTS = [
    ("name,phone,card\nAmelia Okafor,+44 20 7946 0958,4111 1111 1111 1111", ["+44 20 7946 0958"], ["4111 1111 1111 1111"]),
    ("Okafor;(613) 235-6745;4111111111111111", ["(613) 235-6745"], ["4111111111111111"]),
    ("Phone:\n0490 75 40 81\nFax: 9498777106", ["0490 75 40 81", "9498777106"], []),
    ("Mobile: 432 03 163\nDesk: +1-903-140-4508x769", ["432 03 163", "+1-903-140-4508x769"], []),
    ("Call Ottoline Vanderpump at 555-0142.", ["555-0142"], []),
    ("416 60 039 office", ["416 60 039"], []),
    ("Amex 3782 822463 10005 on file", [], ["3782 822463 10005"]),
    ("-- Warsaw Newsroom +48 22 653 9700", ["+48 22 653 9700"], []),
]


def _found(text: str, label: str) -> list[str]:
    return [text[s.start:s.end].strip() for s in RegexDetector().spans([text])[0] if s.label == label]


@pytest.mark.parametrize("text", RESULTS)
def test_results_are_no_phone_or_card_numbers(text):
    assert _found(text, "PHONE_NUMBER") == [] and _found(text, "CREDIT_CARD") == []


@pytest.mark.parametrize("text, phones, cards", CONTACTS)
def test_contact_rows_keep_their_phones_and_cards(text, phones, cards):
    assert sorted(_found(text, "PHONE_NUMBER")) == sorted(phones)
    assert _found(text, "CREDIT_CARD") == cards


def test_the_evidence_is_named():
    text = "Call me at 555-0142; results 69 67 138."
    assert phone_evidence(text, 11, 19) == "a phone word before it"
    assert phone_evidence("x 555-0142", 2, 10) == "an exchange and line number"
    assert phone_evidence("Woods 69 67 138", 6, 15) is None
    assert card_evidence("4111 1111 1111 1111", 0, 19) == "written as card numbers are"
    assert card_evidence("15-6 15-9 11-15 15-10", 0, 21) is None
    assert card_evidence("Visa: 1-12 2-45 3-101 4-156", 6, 27) == "a card word before it"


def test_model_phones_need_the_same_evidence():
    text = "Puchon 3 1 0 6 1 10 and the desk on +353 1 676 9779"
    table, desk = text.index("3 1 0"), text.index("+353")
    spans = [Span(table, table + 12, "PHONE_NUMBER", 0.75, "presidio"), Span(desk, len(text), "PHONE_NUMBER", 0.75, "presidio")]
    kept = BUILTIN_RULES["model-phones"]().apply(text, spans, RuleContext(StageSettings()))
    assert kept == spans[1:]


def test_model_phones_explain_each_decision():
    """explain() names why model-phones dropped a model's phone (the failed test) or kept it (the evidence)."""
    text = "Puchon 3 1 0 6 1 10 and the desk on +353 1 676 9779"
    table, desk = text.index("3 1 0"), text.index("+353")
    spans = [Span(table, table + 12, "PHONE_NUMBER", 0.75, "presidio"), Span(desk, len(text), "PHONE_NUMBER", 0.75, "presidio")]
    context = RuleContext(StageSettings(), decisions=[])
    RulePipeline([BUILTIN_RULES["model-phones"]()]).run("document", text, spans, context)
    why = {(d.action, d.start): d.reason for d in context.decisions}
    assert why == {("dropped", table): "no phone number: no phone word beside it, no writing convention of phones, "
                                       "not grouped as its plan writes it",
                   ("kept", desk): "a phone number: a phone word before it"}
    assert refusal("Samsung 49 5 56", 8, 15) == ("fewer than seven digits", None)


@pytest.mark.parametrize("text", ["Soccer: Japan 2 Syria 1 (halftime 1-0)", "Pohang 3 Ulsan 2 ( halftime 1-0 )",
                                  "American League\nDETROIT 4 Kansas City 1\nMinnesota 6 MILWAUKEE 1",
                                  "287 Ian Woosnam 70 76 71 70", "AUSTRALIA 228-9 IN 50 OVERS",
                                  "Government cash balances 3.54 - 0.629 +0.089\nGovt securities 463.73"])
def test_a_score_joins_no_place(text):
    assert _found(text, "LOCATION") == []


@pytest.mark.parametrize("text, street", [
    ("The address of Persint is 6750 Koskikatu 25 Apt. 864", "6750 Koskikatu 25 Apt. 864"),
    ("It's in Λεωφόρος Συγγρού 119 Nino Point\n Apt. 658", "119 Nino Point\n Apt. 658"),
    ("Sara Schwarz\n    28245 Puruntie 82 Apt. 595", "28245 Puruntie 82 Apt. 595"),
    ("He lives at 12 Seneca Street, Leeds LS6 2AB", "12 Seneca Street, Leeds"),
])
def test_streets_and_postcodes_are_still_found(text, street):
    assert any(street in f for f in _found(text, "LOCATION"))


@pytest.mark.parametrize("text, phone", [("| Dominic Middleton | +44(0)29 2018805 |", "+44(0)29 2018805"),
                                         ("Hans Dietz,(00937) 865797,krzy", "(00937) 865797"),
                                         ("| Michelle Sanchez | 001-987-532-3634x3886 |", "001-987-532-3634x3886"),
                                         ("Phone: +49 (0) 5996 147750", "+49 (0) 5996 147750")])
def test_long_subscriber_groups_and_extensions_are_phones(text, phone):
    assert _found(text, "PHONE_NUMBER") == [phone]


@pytest.mark.parametrize("text, street", [("| 60975 Jessica Squares | East", "60975 Jessica Squares"),
                                          ("Flat 2 Kathryn Trail", "Flat 2 Kathryn Trail"),
                                          ("Wagenknechtplatz 28-65", "Wagenknechtplatz 28-65"),
                                          ("Bayram-Roht-Platz 7/3", "Bayram-Roht-Platz 7/3"),
                                          ("95, boulevard de Duval", "95, boulevard de Duval"),
                                          ("Address: Loeksingel 184", "Loeksingel 184")])
def test_street_forms_of_contact_tables(text, street):
    assert street in _found(text, "LOCATION")


def test_a_spring_of_a_year_is_no_street():
    assert _found("Spring 2010 was wet", "LOCATION") == []
