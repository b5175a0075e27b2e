"""The light detector (regex entities, word-list names), the synthetic generators, presidio data."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from private_vectors.errors import InvalidParameterError, InvalidTypeError, ModelNotAvailableError
from private_vectors.eval.synthetic import synthetic_pii_sentences, synthetic_plain_sentences
from private_vectors.text.light import LightDetector, contains_pii, detect_pii

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="module")
def det() -> LightDetector:
    return LightDetector()


@pytest.mark.parametrize(
    ("text", "entity", "value"),
    [
        ("Write to jane.doe+news@example.co.uk today.", "EMAIL_ADDRESS", "jane.doe+news@example.co.uk"),
        ("Call me on +1 (555) 123-4567 tonight.", "PHONE_NUMBER", "+1 (555) 123-4567"),
        ("What is the limit for card 4454794511390933?", "CREDIT_CARD", "4454794511390933"),
        ("His SSN is 078-05-1120.", "US_SSN", "078-05-1120"),
        ("Pay into GB82 WEST 1234 5698 7654 32 please.", "IBAN_CODE", "GB82 WEST 1234 5698 7654 32"),
        ("The login came from 192.168.10.254 again.", "IP_ADDRESS", "192.168.10.254"),
        ("She was born on 3/29/1982 in a small town.", "DATE_TIME", "3/29/1982"),
        ("They moved to 42 Elm Street last year.", "LOCATION", "42 Elm Street"),
        ("Yesterday I met Maria Lopez at the station.", "PERSON", "Maria Lopez"),
        ("We flew from Lisbon to the coast.", "LOCATION", "Lisbon"),
    ],
)
def test_detects_each_entity_type(det: LightDetector, text: str, entity: str, value: str) -> None:
    spans = det.detect(text)
    assert any(s.label == entity and text[s.start:s.end] == value for s in spans), spans


def test_checksums_reject_lookalike_numbers(det: LightDetector) -> None:
    assert "CREDIT_CARD" not in det.entity_types("Order 4454794511390934 shipped.")  # Luhn fails
    assert "IBAN_CODE" not in det.entity_types("Code GB83 WEST 1234 5698 7654 32 is wrong.")  # mod-97 fails


@pytest.mark.parametrize(
    "text",
    [
        "The weather is nice today.",
        "Regular exercise improves sleep quality and mood.",
        "A man is playing a guitar on the stage.",
        "Patients with chronic cough were treated with inhaled steroids.",
        "May I have the report by Monday?",
        "The results improved by 12 percent in 2019.",
    ],
)
def test_plain_sentences_are_clean(det: LightDetector, text: str) -> None:
    assert det.detect(text) == []
    assert not contains_pii(text)


def test_entities_filter_and_redact() -> None:
    text = "Mail Maria Lopez at maria@example.org."
    only_mail = LightDetector(entities=["EMAIL_ADDRESS"])
    assert only_mail.entity_types(text) == {"EMAIL_ADDRESS"}
    assert LightDetector().redact(text) == "Mail <PERSON> at <EMAIL_ADDRESS>."
    assert {s.label for s in detect_pii(text)} == {"PERSON", "EMAIL_ADDRESS"}


def test_synthetic_generators() -> None:
    det = LightDetector()
    pii = synthetic_pii_sentences(60, seed=3)
    assert pii == synthetic_pii_sentences(60, seed=3)
    assert len(set(pii)) == 60
    assert sum(det.contains_pii(t) for t in pii) >= 58
    plain = synthetic_plain_sentences(40, seed=3)
    assert sum(det.contains_pii(t) for t in plain) <= 2


def test_parameter_errors() -> None:
    with pytest.raises(InvalidTypeError):
        LightDetector().detect(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        LightDetector(entities=["SHOE_SIZE"])
    with pytest.raises(InvalidTypeError):
        LightDetector(entities="PERSON")
    with pytest.raises(InvalidParameterError):
        LightDetector(min_score=1.5)


def test_presidio_requested_but_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "presidio_analyzer", None)  # as if not installed: import raises
    with pytest.raises(ModelNotAvailableError):
        LightDetector(use_presidio=True)


@pytest.mark.skipif(not (DATA / "pii" / "synth_dataset_v2.json").exists(), reason="needs ../shared/data/pii/synth_dataset_v2.json (benchmarks/README.md: Set-up); not present")
def test_recall_on_presidio_synthetic_data(det: LightDetector) -> None:
    rows = json.loads((DATA / "pii" / "synth_dataset_v2.json").read_text(encoding="utf-8"))
    with_spans = [r for r in rows if r["spans"]]
    without = [r for r in rows if not r["spans"]]
    found = sum(det.contains_pii(r["full_text"]) for r in with_spans)
    false_pos = sum(det.contains_pii(r["full_text"]) for r in without)
    assert found / len(with_spans) >= 0.65
    assert false_pos / len(without) <= 0.05
    for etype in ("EMAIL_ADDRESS", "CREDIT_CARD", "IP_ADDRESS"):
        spans = [(r, s) for r in rows for s in r["spans"] if s["entity_type"] == etype]
        hit = sum(any(p.start < s["end_position"] and p.end > s["start_position"] for p in det.detect(r["full_text"]))
                  for r, s in spans)
        assert hit / len(spans) >= 0.95, etype
