"""The news / social-media scorer (benchmarks/real_text.py): documents rebuilt from CoNLL files,
halves of the news split, and the recall / precision it reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from _scripts import load_script

rt = load_script("benchmarks/real_text.py", "real_text_bench")

SAMPLE = """-DOCSTART- O

EU B-ORG
rejects O
German B-MISC
call O

Peter B-PER
Blackburn I-PER
in O
BRUSSELS B-LOC

-DOCSTART- O

Smith B-PER
wins O
"""


def test_documents_are_rebuilt_with_their_entities() -> None:
    docs = [rt.document(d) for d in rt.parse(SAMPLE)]
    assert [d.text for d in docs] == ["EU rejects German call\nPeter Blackburn in BRUSSELS", "Smith wins"]
    first = docs[0]
    assert [(first.text[s:e], lab) for s, e, lab in first.entities] == [
        ("EU", "ORG"), ("German", "MISC"), ("Peter Blackburn", "PER"), ("BRUSSELS", "LOC")]


def test_recall_per_label_and_precision_against_any_entity() -> None:
    doc = rt.document(rt.parse(SAMPLE)[0])
    # tokens: EU rejects German call Peter Blackburn in BRUSSELS; replace EU, rejects, Peter, BRUSSELS
    masks = [[True, True, False, False, True, False, False, True]]
    s = rt.score([doc], masks)
    assert s["recall"] == {"LOC": 1.0, "MISC": 0.0, "ORG": 1.0, "PER": 0.5}
    assert s["precision"] == pytest.approx(3 / 4) and s["replaced_tokens"] == 4


def test_news_halves_split_the_documents_in_file_order() -> None:
    data = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    if not (data / rt.NEWS).is_file():
        pytest.skip("no ../shared/data")
    first, second = rt.load_news(data, "first"), rt.load_news(data, "second")
    assert len(first) == 108 and len(second) == 108
    assert not {d.text for d in first} & {d.text for d in second}


def test_recased_documents_keep_their_gold_offsets() -> None:
    doc = rt.Document("Maria lives in Straße Köln", ((0, 5, "person"), (15, 26, "location")))
    upper, lower = rt.recased(doc, "upper"), rt.recased(doc, "lower")
    assert upper.text == "MARIA LIVES IN STRAßE KÖLN" and lower.text == "maria lives in straße köln"
    assert upper.entities == lower.entities == doc.entities
    assert [upper.text[s:e] for s, e, _ in upper.entities] == ["MARIA", "STRAßE KÖLN"]


def test_tab_dev_reads_dev_rows_and_their_direct_and_quasi_identifiers(tmp_path: Path) -> None:
    import json

    def row(split: str, text: str, entities: list[tuple[int, int, str, str]]) -> str:
        return json.dumps({"metadata": {"provenance": {"dataset_type": split}}, "text": text, "entities": [
            {"start_offset": s, "end_offset": e, "entity_type": t, "identifier_type": i} for s, e, t, i in entities]})

    path = tmp_path / rt.TAB
    path.parent.mkdir(parents=True)
    path.write_text("\n".join([
        row("train", "Ann Lee sued.", [(0, 7, "PERSON", "DIRECT")]),
        row("dev", "Mr Okafor lives in Leeds since 1999.",
            [(3, 9, "PERSON", "DIRECT"), (19, 24, "LOC", "QUASI"), (31, 35, "DATETIME", "NO_MASK")])]) + "\n")
    docs = rt.load_tab_dev(tmp_path)
    assert len(docs) == 1
    assert [(docs[0].text[s:e], lab) for s, e, lab in docs[0].entities] == [("Okafor", "PERSON"), ("Leeds", "LOC")]
    lower = rt.recased(docs[0], "lower")
    assert [lower.text[s:e] for s, e, _ in lower.entities] == ["okafor", "leeds"]
